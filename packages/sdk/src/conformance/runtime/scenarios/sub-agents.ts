// Sub-agents: a tool whose call is a child run in a session of its own. The hook order of one call, a
// child that fails, a child's approval answered through the parent, a parent whose process stops while
// its child runs (it suspends on the child and resumes by itself), and a recovered parent re-attaching.
import { defineAgent, defineTool, type AgentConfig } from '../../../define.js';
import type { AgentHandle } from '../../../runtime/agent-runtime.js';
import { childSessionId, defineSubAgentTool } from '../../../sub-agent-tool.js';
import { createScriptedModel, scriptedError, type ScriptedStep, type ScriptedStepObject } from '../../../testing/scripted-model.js';
import { z } from 'zod';
import type { ScenarioContext } from '../context.js';
import { at, C1, fail, R1, R2, R3, R4, row, S1, S2, storedRun, storedSession, toolCall } from '../expect.js';
import { agent, appendToLog, calls, type Counter, INITIAL, inTopic, text, type TopicScenario } from '../fixtures.js';
import { callErrorRows, callRows, callsAndSuspends, callsTools, callSucceeds, childAnswers, completedRun, completesWithText, entered, foldsChild, newTurn, spawnsChild, suspendedRun, textExit } from '../fragments.js';
import type { HookLayer } from '../recorder.js';
import type { RuntimeScenario } from '../scenario.js';

/** A child agent `name` over `steps`, with `tools`, its hooks recorded (and the scenario's `layers`). */
function child(t: ScenarioContext, name: string, steps: readonly ScriptedStep[], options: { tools?: Parameters<typeof defineAgent>[0]['tools']; output?: boolean; maxSteps?: number; layers?: HookLayer[] } = {}): AgentConfig<unknown, unknown> {
  return defineAgent<unknown, unknown>({
    name,
    llmConfig: { model: createScriptedModel(steps), retry: { maxAttempts: 1 } },
    ...(options.tools ? { tools: options.tools } : {}),
    ...(options.output ? { outputSchema: z.object({ answer: z.string() }) as z.ZodType<unknown> } : {}),
    ...(options.maxSteps === undefined ? {} : { maxSteps: options.maxSteps }),
    hooks: t.hooks(...(options.layers ?? [])),
  });
}

/** The parent's fold: afterSubAgent logs `<success> <result>` (a hook write of the call). */
const fold: HookLayer<Counter, unknown> = {
  hooks: { afterSubAgent: (p, ctx) => appendToLog(ctx, `${p.success ? 'ok' : 'failed'} ${String(p.result)}`) },
};

/** The parent, asking the sub-agent tool `tool` once with `{ input }` (as the call `id` when given), then answering `reply`. */
function parent(t: ScenarioContext, tool: ReturnType<typeof defineSubAgentTool>, input: string, reply: string, options: { layers?: HookLayer<Counter, unknown>[]; id?: string } = {}) {
  const ask: ScriptedStepObject = options.id === undefined ? calls([tool.name, { input }]) : { toolCalls: [{ name: tool.name, args: { input }, id: options.id }] };
  return agent(t, { name: 'lead', tools: [tool], steps: [ask, text(reply)], layers: [fold, ...(options.layers ?? [])] });
}

/** The parent's prompts: its first call (system prompt and input, one tool), and its second (plus its reply and the call's row). */
const FIRST = { messages: 2, tools: 1 };
const SECOND = { messages: 4, tools: 1 };
/** The parent's state after one fold of `entry`. */
const folded = (entry: string) => ({ count: 0, log: [entry] });

/** Waits until the session's current run is stored as ended (completed, failed, interrupted). */
async function settled(t: ScenarioContext, sessionId: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    const session = await t.runtime.getSession(sessionId);
    const run = session?.currentRunId === undefined ? undefined : await t.runtime.getRun(session.currentRunId);
    if (run && ['completed', 'failed', 'interrupted'].includes(run.status)) return;
    await t.sleep(20);
  }
  throw new Error(`session ${sessionId} did not end`);
}

const research = toolCall(C1, 'research', { input: 'look' });
const delegate = toolCall(C1, 'delegate', { input: 'try' });
// The parent's call and the child's call have the same id: the answer's kind (an approval) tells them apart.
const mail = toolCall(C1, 'mail', { input: 'mail ana' });
const send = toolCall(C1, 'send', { to: 'ana' });

const scenarios: TopicScenario[] = [
  {
    name: 'subagent/hook-order',
    description:
      "one sub-agent call: beforeTool, beforeSubAgent, the child's whole run (a new turn: onAgentStart true, with the parent's session as ctx.parentSessionId), afterSubAgent (whose write folds into the parent), onStateChange, onMessage, afterTool; the parent gets the child's output (rules 78, 79, 87, 88)",
    async run(t) {
      const researcher = child(t, 'researcher', [text('found it')], { layers: [{ hooks: { onAgentStart: (_p, ctx) => t.note('child parentSessionId', ctx.parentSessionId) } }] });
      const lead = parent(t, defineSubAgentTool({ agent: researcher, name: 'research' }), 'look', 'merged');
      await t.result(await t.execute(lead, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...callsTools(R1, 0, FIRST, 1, research),
        ...spawnsChild(R1, 0, research, 'researcher'),
        ...childAnswers(R2, 'look', 'found it'),
        ...foldsChild(R1, 0, research, 'researcher', { success: true, result: 'found it' }, folded('ok found it'), 2),
        ...completesWithText(R1, 1, SECOND, 3, 'merged', { research: 1 }),
      ],
      entries: [entered('execute', S1, R1)],
      notes: [{ label: 'child parentSessionId', value: S1 }],
      runs: [completedRun(R1, S1, 'start', { exitReason: 'text', output: 'merged', steps: 2, state: folded('ok found it') }), storedRun(R2, S2, 'start', 'completed', { output: 'found it' })],
      sessions: [
        storedSession(S1, R1, folded('ok found it'), [row.user('go'), ...callRows(research, 'found it'), row.assistant('merged')]),
        storedSession(S2, R2, {}, [row.user('look'), row.assistant('found it')]),
      ],
    },
  },
  {
    name: 'subagent/child-fails',
    description:
      "a child that fails fires its own onAgentFail; the parent's afterSubAgent gets success false and the child's error, the parent's model gets a subagent_failed result, and the parent goes on (rule 79)",
    async run(t) {
      const broken = child(t, 'broken', [scriptedError(400, 'bad request')]);
      const lead = parent(t, defineSubAgentTool({ agent: broken, name: 'delegate' }), 'try', 'recovered');
      await t.result(await t.execute(lead, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...callsTools(R1, 0, FIRST, 1, delegate),
        ...spawnsChild(R1, 0, delegate, 'broken'),
        ...newTurn(R2, 0, 'try'),
        at(R2, 0).beforeLLM(1, 0),
        at(R2, 0).afterLLM('fail', 'provider_bad_request'),
        fail(R2, 0, 'provider_bad_request', false),
        ...foldsChild(R1, 0, delegate, 'broken', { success: false, error: 'provider_bad_request' }, folded('failed undefined'), 2),
        ...completesWithText(R1, 1, SECOND, 3, 'recovered', { delegate: 1 }),
      ],
      entries: [entered('execute', S1, R1)],
      runs: [completedRun(R1, S1, 'start', { exitReason: 'text', output: 'recovered', steps: 2, state: folded('failed undefined') }), storedRun(R2, S2, 'start', 'failed', { error: 'provider_bad_request' })],
      sessions: [
        storedSession(S1, R1, folded('failed undefined'), [row.user('go'), ...callErrorRows(delegate, 'subagent_failed'), row.assistant('recovered')]),
        storedSession(S2, R2, {}, [row.user('try')]),
      ],
    },
  },
  {
    name: 'subagent/child-approval-through-parent',
    description:
      "a child's call that needs approval suspends the child (client_tool) and the parent (awaiting_children, the child listed); approve() on the parent's session with the child's call id resumes the child (onAgentResumed), then the parent, which re-attaches to the child and folds its outcome; the approved call runs without a second beforeTool (rules 94, 96, 101, D3)",
    async run(t) {
      const parentResumed = t.deferred('the parent resumed');
      const sendTool = defineTool({
        name: 'send',
        description: 'Sends a mail (needs approval).',
        inputSchema: z.object({ to: z.string() }),
        needsApproval: true,
        // The approved call waits for the parent's onAgentResumed, so the two runs' hooks have one order.
        execute: async (input) => {
          await parentResumed.wait();
          return `sent to ${input.to}`;
        },
      });
      const mailer = child(t, 'mailer', [{ toolCalls: [{ name: 'send', args: { to: 'ana' }, id: 'c1' }] }, text('mailed')], { tools: [sendTool] });
      const sessionId = t.sessionId();
      const lead = parent(t, defineSubAgentTool({ agent: mailer, name: 'mail' }), 'mail ana', 'done', { id: 'c1', layers: [{ hooks: { onAgentResumed: () => parentResumed.resolve() } }] });
      const first = await t.result(await t.execute(lead, 'go', { sessionId }));
      const parentCall = first.suspension?.pending[0]?.toolCallId ?? '';
      const childSession = await t.runtime.getSession(childSessionId(sessionId, parentCall));
      const childRun = childSession?.currentRunId === undefined ? undefined : await t.runtime.getRun(childSession.currentRunId);
      const childCall = childRun?.suspension?.pending[0]?.toolCallId ?? '';
      await t.result(await t.approve(sessionId, childCall));
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...callsTools(R1, 0, FIRST, 1, mail),
        ...spawnsChild(R1, 0, mail, 'mailer'),
        ...newTurn(R3, 0, 'mail ana'),
        ...callsAndSuspends(R3, 0, { messages: 1, tools: 1 }, 1, send),
        at(R1, 1).suspended('awaiting_children', [], [S2]),
        at(R4, 0).resumed(R3),
        at(R2, 0).resumed(R1),
        ...callSucceeds(R4, 0, send, [], 2, 'sent to ana'),
        ...completesWithText(R4, 0, { messages: 3, tools: 1 }, 3, 'mailed', { send: 1 }),
        ...foldsChild(R2, 0, mail, 'mailer', { success: true, result: 'mailed' }, folded('ok mailed'), 2),
        ...completesWithText(R2, 0, SECOND, 3, 'done', { mail: 1 }),
      ],
      entries: [entered('execute', S1, R1), entered('approve', S1, R2)],
      runs: [
        suspendedRun(R1, S1, 'start', 1, INITIAL),
        completedRun(R2, S1, 'resumed', { exitReason: 'text', output: 'done', steps: 1, state: folded('ok mailed') }),
        storedRun(R3, S2, 'start', 'suspended'),
        storedRun(R4, S2, 'resumed', 'completed', { output: 'mailed' }),
      ],
      sessions: [
        storedSession(S1, R2, folded('ok mailed'), [row.user('go'), ...callRows(mail, 'mailed'), row.assistant('done')]),
        storedSession(S2, R4, {}, [row.user('mail ana'), ...callRows(send, 'sent to ana'), row.assistant('mailed')]),
      ],
    },
  },
  {
    name: 'subagent/parent-suspends-when-its-process-stops',
    description:
      "a process that stops (close()) while a parent's child is in its model call: the parent suspends with reason awaiting_children listing the child, the child is let go without a terminal hook; recover() elsewhere continues the child, and when it ends the parent resumes by itself (onAgentResumed) and folds it once (rules 94, 96, 101)",
    needs: ['secondProcess'],
    async run(t) {
      const inModel = t.deferred('the child model call started');
      // The first call (in the process that stops) never answers; the recovered child's call does.
      const researcher = child(t, 'researcher', [
        () => {
          inModel.resolve();
          return { text: 'never', delayMs: 60_000 };
        },
        text('found it'),
      ]);
      const lead = parent(t, defineSubAgentTool({ agent: researcher, name: 'research' }), 'look', 'merged');
      const sessionId = t.sessionId();
      const other = await t.processes().start();
      const handle = await t.executeOn(other, lead, 'go', { sessionId });
      await inModel.wait();
      await other.close();
      await t.result(handle);
      const recovered = await t.recover({ agents: [lead, researcher] });
      for (const h of recovered) await t.result(h);
      await settled(t, sessionId);
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...callsTools(R1, 0, FIRST, 1, research),
        ...spawnsChild(R1, 0, research, 'researcher'),
        ...newTurn(R2, 0, 'look'),
        at(R2, 0).beforeLLM(1, 0),
        // The parent suspends first; then the child is let go (its model call aborted, no terminal hook).
        at(R1, 1).suspended('awaiting_children', [], [S2]),
        at(R2, 0).afterLLM('fail', 'run_interrupted'),
        // recover() continues the child; once it ended, the parent resumes by itself and folds it.
        ...completesWithText(R2, 0, { messages: 1, tools: 0 }, 1, 'found it'),
        at(R3, 0).resumed(R1),
        ...foldsChild(R3, 0, research, 'researcher', { success: true, result: 'found it' }, folded('ok found it'), 2),
        ...completesWithText(R3, 0, SECOND, 3, 'merged', { research: 1 }),
      ],
      entries: [entered('execute', S1, R1), entered('recover', S2, R2)],
      runs: [
        suspendedRun(R1, S1, 'start', 1, INITIAL),
        completedRun(R2, S2, 'start', { exitReason: 'text', output: 'found it', steps: 1, state: {} }),
        storedRun(R3, S1, 'resumed', 'completed', { output: 'merged' }),
      ],
      sessions: [
        storedSession(S1, R3, folded('ok found it'), [row.user('go'), ...callRows(research, 'found it'), row.assistant('merged')]),
        storedSession(S2, R2, {}, [row.user('look'), row.assistant('found it')]),
      ],
    },
  },
  {
    name: 'recover/sub-agent-parent-reattaches',
    description:
      "a process that died in its child's first step commit: recover() continues both runs; the parent replays its recorded reply and spawn (no second beforeTool or beforeSubAgent), re-attaches to the child, which redoes its step, and folds its outcome once (issue 11 item 4; rules 23, 125)",
    needs: ['crashRecovery'],
    async run(t) {
      const researcher = child(t, 'researcher', [text('found it'), text('found it')]);
      const lead = parent(t, defineSubAgentTool({ agent: researcher, name: 'research' }), 'look', 'merged');
      const sessionId = t.sessionId();
      const doomed = await t.crashes().startDoomed('step');
      await t.executeOn(doomed.runtime, lead, 'go', { sessionId });
      await doomed.died;
      const handles = new Map<string, AgentHandle>();
      for (let i = 0; i < 250 && handles.size < 2; i++) {
        for (const h of await t.runtime.recover({ agents: [lead, researcher] })) handles.set(h.sessionId, h);
        if (handles.size < 2) await t.sleep(20);
      }
      for (const h of handles.values()) await t.result(h);
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...callsTools(R1, 0, FIRST, 1, research),
        ...spawnsChild(R1, 0, research, 'researcher'),
        // The child's first step, whose commit the dying process never made.
        ...newTurn(R2, 0, 'look'),
        at(R2, 0).beforeLLM(1, 0),
        ...textExit(R2, 0, 1, 'found it'),
        // Recovered: the parent replays its reply and its spawn silently; the child redoes its step.
        ...completesWithText(R2, 0, { messages: 1, tools: 0 }, 1, 'found it'),
        ...foldsChild(R1, 0, research, 'researcher', { success: true, result: 'found it' }, folded('ok found it'), 2),
        ...completesWithText(R1, 1, SECOND, 3, 'merged', { research: 1 }),
      ],
      entries: [entered('execute', S1, R1)],
      runs: [completedRun(R1, S1, 'start', { exitReason: 'text', output: 'merged', steps: 2, state: folded('ok found it') }), completedRun(R2, S2, 'start', { exitReason: 'text', output: 'found it', steps: 1, state: {} })],
      sessions: [
        storedSession(S1, R1, folded('ok found it'), [row.user('go'), ...callRows(research, 'found it'), row.assistant('merged')]),
        storedSession(S2, R2, {}, [row.user('look'), row.assistant('found it')]),
      ],
    },
  },
];

/** Sub-agent calls: hook order, failures, answers through the parent, a stopping process, recovery. */
export const subAgentScenarios: readonly RuntimeScenario[] = inTopic('sub-agents', scenarios);
