// The agent the crash matrix runs: deterministic (the scripted reply depends only on the prompt, so a
// recovering process answers the same), with a side-effecting tool that appends to a file and hooks
// that log every invocation, so the test can count what ran, where and how often.
import { appendFileSync } from 'node:fs';
import { z } from 'zod';
import { defineAgent, defineTool, type AgentHooks, type HookContext } from '@helix-agents/sdk';
import { crashPoint } from '@helix-agents/sdk/testing';
import { createScriptedModel, type ScriptedStepObject } from '@helix-agents/sdk/testing';

/** The agent's state. */
export const CrashState = z.object({ count: z.number().default(0), log: z.array(z.string()).default([]) });
/** The agent's state type. */
export type CrashStateType = z.infer<typeof CrashState>;

/** One line of the hooks log. */
export interface HookLogLine {
  readonly pid: number;
  readonly point: string;
  readonly phase: 'start' | 'done';
  readonly runId: string;
  readonly key: string;
  readonly attempt: number;
  readonly startSignal?: boolean;
}

function reply(assistantTurns: number): ScriptedStepObject {
  switch (assistantTurns) {
    case 0:
      return { toolCalls: [{ name: 'add', args: { by: 1 }, id: 's0_add' }, { name: 'send', args: { to: 'alice' }, id: 's0_send' }], usage: { inputTokens: 10, outputTokens: 3 } };
    case 1:
      return { toolCalls: [{ name: 'send', args: { to: 'bob' }, id: 's1_send' }, { name: 'add', args: { by: 2 }, id: 's1_add' }], usage: { inputTokens: 20, outputTokens: 3 } };
    default:
      return { toolCalls: [{ name: '__finish__', args: { answer: 'sent two' }, id: 's2_finish' }], usage: { inputTokens: 30, outputTokens: 4 } };
  }
}

/** Where the crash agent logs: fixed files, or files per session (a worker that serves many sessions). */
export type CrashAgentFiles = { readonly sideEffectsFile: string; readonly hooksFile: string } | { readonly filesFor: (sessionId: string) => { readonly sideEffectsFile: string; readonly hooksFile: string } };

/** The crash-test agent; `sideEffectsFile` and `hooksFile` receive one JSON line per tool effect / hook invocation. */
export function createCrashAgent(files: CrashAgentFiles) {
  const fileOf = (sessionId: string) => ('filesFor' in files ? files.filesFor(sessionId) : files);
  const log = (point: string, phase: 'start' | 'done', ctx: HookContext, extra: Partial<HookLogLine> = {}) => {
    const line: HookLogLine = { pid: process.pid, point, phase, runId: ctx.runId, key: ctx.idempotencyKey, attempt: ctx.attempt, ...extra };
    appendFileSync(fileOf(ctx.sessionId).hooksFile, `${JSON.stringify(line)}\n`);
  };
  const add = defineTool({
    name: 'add',
    description: 'adds to the counter',
    inputSchema: z.object({ by: z.number() }),
    execute: (input, ctx) => {
      ctx.updateState<CrashStateType>((d) => {
        d.count += input.by;
        d.log.push(`add ${input.by}`);
      });
      return { added: input.by };
    },
  });
  const send = defineTool({
    name: 'send',
    description: 'sends a message to someone (a side effect outside helix)',
    inputSchema: z.object({ to: z.string() }),
    sideEffects: true,
    execute: (input, ctx) => {
      appendFileSync(fileOf(ctx.sessionId).sideEffectsFile, `${JSON.stringify({ pid: process.pid, key: ctx.idempotencyKey, to: input.to })}\n`);
      // The at-most-once window: the effect happened, its result is not recorded yet.
      crashPoint('in_tool');
      ctx.updateState<CrashStateType>((d) => void d.log.push(`sent ${input.to}`));
      return { sent: input.to };
    },
  });
  const hooks: AgentHooks<CrashStateType, { answer: string }> = {
    onAgentStart: (payload, ctx) => {
      log('onAgentStart', 'start', ctx, { startSignal: payload.startSignal });
      ctx.updateState((d) => void d.log.push('start'));
      crashPoint('in_on_agent_start');
      log('onAgentStart', 'done', ctx, { startSignal: payload.startSignal });
    },
    onAgentComplete: (_payload, ctx) => {
      log('onAgentComplete', 'start', ctx);
      ctx.updateState((d) => void d.log.push('complete'));
      crashPoint('in_on_agent_complete');
      log('onAgentComplete', 'done', ctx);
    },
    onAgentFail: (_payload, ctx) => log('onAgentFail', 'done', ctx),
    onAgentSuperseded: (_payload, ctx) => log('onAgentSuperseded', 'done', ctx),
    beforeTool: (_payload, ctx) => log('beforeTool', 'done', ctx),
    afterTool: (_payload, ctx) => log('afterTool', 'done', ctx),
    onMessage: (_payload, ctx) => log('onMessage', 'done', ctx),
  };
  return defineAgent({
    name: 'crash-agent',
    systemPrompt: 'Send the messages.',
    stateSchema: CrashState,
    outputSchema: z.object({ answer: z.string() }),
    llmConfig: {
      model: createScriptedModel([(options) => reply(options.prompt.filter((m) => m.role === 'assistant').length)], { loop: true, recordCalls: false }),
    },
    tools: [add, send],
    hooks,
  });
}
