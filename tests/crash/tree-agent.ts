// The agents of the sub-agent crash tests: a lead that fans out to two researcher children in one step
// and folds each finding into findings[callId], then finishes. Every reply depends only on the prompt,
// so a recovering process answers the same; every hook appends a JSON line, so the test can count what
// ran, in which process and how often.
import { appendFileSync } from 'node:fs';
import { z } from 'zod';
import { defineAgent, defineSubAgentTool, type AgentHooks, type Draft, type HookContext } from '@helix-agents/sdk';
import { crashPoint, createScriptedModel } from '@helix-agents/sdk/testing';

/** The lead's state: one finding per sub-agent call, and how many folds ran. */
export const LeadState = z.object({ findings: z.record(z.string(), z.string()).default({}), folds: z.number().default(0), log: z.array(z.string()).default([]) });
/** The lead's state type. */
export type LeadStateType = z.infer<typeof LeadState>;

/** One line of the hooks log. */
export interface TreeHookLine {
  readonly pid: number;
  readonly point: string;
  readonly agent: string;
  readonly sessionId: string;
  readonly runId: string;
  readonly attempt: number;
  readonly callId?: string;
  readonly startSignal?: boolean;
  readonly success?: boolean;
}

/** The sub-agent calls of the lead's first step. */
export const CALLS = ['c_alpha', 'c_beta'] as const;

/** The lead and its researcher; `hooksFile` receives one JSON line per hook invocation. */
export function createTree(hooksFile: string) {
  const log = (point: string, agent: string, ctx: HookContext, extra: Partial<TreeHookLine> = {}) => {
    const line: TreeHookLine = { pid: process.pid, point, agent, sessionId: ctx.sessionId, runId: ctx.runId, attempt: ctx.attempt, ...extra };
    appendFileSync(hooksFile, `${JSON.stringify(line)}\n`);
  };
  const researcherHooks: AgentHooks = {
    onAgentStart: (p, ctx) => log('onAgentStart', 'researcher', ctx, { startSignal: p.startSignal }),
    // "While a child runs": the child is past its start commit, in its first model call.
    beforeLLMCall: () => crashPoint('in_child_run'),
    onAgentComplete: (_p, ctx) => log('onAgentComplete', 'researcher', ctx),
    onAgentFail: (_p, ctx) => log('onAgentFail', 'researcher', ctx),
    onAgentSuperseded: (_p, ctx) => log('onAgentSuperseded', 'researcher', ctx),
  };
  const researcher = defineAgent({
    name: 'researcher',
    systemPrompt: 'Research the topic.',
    llmConfig: {
      model: createScriptedModel(
        [
          (options) => {
            const user = options.prompt.find((m) => m.role === 'user');
            const topic = user?.role === 'user' ? user.content.map((p) => (p.type === 'text' ? p.text : '')).join('') : '';
            return { text: `notes on ${topic}`, usage: { inputTokens: 5, outputTokens: 2 } };
          },
        ],
        { loop: true, recordCalls: false },
      ),
    },
    hooks: researcherHooks,
  });
  const research = defineSubAgentTool({ agent: researcher, name: 'research', inputSchema: z.object({ topic: z.string() }), input: (a) => a.topic });
  const leadHooks: AgentHooks<LeadStateType, { summary: string }> = {
    onAgentStart: (p, ctx) => {
      log('onAgentStart', 'lead', ctx, { startSignal: p.startSignal });
      ctx.updateState((d) => void d.log.push('start'));
    },
    beforeSubAgent: (p, ctx) => {
      log('beforeSubAgent', 'lead', ctx, { callId: p.call.id });
      ctx.updateState((d) => void d.log.push(`spawn ${p.call.id}`));
    },
    afterSubAgent: (p, ctx) => {
      log('afterSubAgent', 'lead', ctx, { callId: p.call.id, success: p.success });
      ctx.updateState((d: Draft<LeadStateType>) => {
        d.findings[p.call.id] = String(p.result);
        d.folds += 1;
      });
    },
    onAgentComplete: (_p, ctx) => {
      log('onAgentComplete', 'lead', ctx);
      ctx.updateState((d) => void d.log.push('complete'));
    },
    onAgentFail: (_p, ctx) => log('onAgentFail', 'lead', ctx),
    onAgentSuperseded: (_p, ctx) => log('onAgentSuperseded', 'lead', ctx),
  };
  const lead = defineAgent({
    name: 'lead',
    systemPrompt: 'Delegate, then summarize.',
    stateSchema: LeadState,
    outputSchema: z.object({ summary: z.string() }),
    llmConfig: {
      model: createScriptedModel(
        [
          (options) =>
            options.prompt.some((m) => m.role === 'tool')
              ? { toolCalls: [{ name: '__finish__', args: { summary: 'two topics covered' }, id: 'finish' }] }
              : { toolCalls: CALLS.map((id) => ({ name: 'research', args: { topic: id.slice(2) }, id })), usage: { inputTokens: 10, outputTokens: 4 } },
        ],
        { loop: true, recordCalls: false },
      ),
    },
    tools: [research],
    hooks: leadHooks,
  });
  return { lead, researcher };
}
