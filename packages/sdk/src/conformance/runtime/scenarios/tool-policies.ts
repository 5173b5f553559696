// Tool policies every runtime must honour alike: a tool's retry policy (rule 157: the tries happen
// inside one call, so the hooks are those of one call) and dry runs (rule 156: a side-effecting tool is
// answered without running, its row marked stubbed, a read-only tool runs).
import { z } from 'zod';
import { defineTool } from '../../../define.js';
import type { ToolResultMessage } from '../../../messages.js';
import { C1, C2, R1, row, toolCall } from '../expect.js';
import { agent, calls, INITIAL, inTopic, text } from '../fixtures.js';
import { allowedCall, callsTools, completesWithText, newTurn, soleRunCompleted } from '../fragments.js';
import type { RuntimeScenario } from '../scenario.js';

/** Tries of the flaky tool, per session (a scenario runs once per runtime, each on a session of its own). */
const tries = new Map<string, number>();
/** Runs of the side-effecting tool, per session. */
const sends = new Map<string, number>();

/** A read whose first try fails: its retry policy runs it again. */
const flakyTool = defineTool({
  name: 'flaky',
  description: 'A read that fails once.',
  inputSchema: z.object({}),
  retry: { maxAttempts: 3, initialDelayMs: 1 },
  execute: (_input, ctx) => {
    const n = (tries.get(ctx.sessionId) ?? 0) + 1;
    tries.set(ctx.sessionId, n);
    if (n === 1) throw new Error('transient');
    return 'fetched';
  },
});

/** A side-effecting tool (a dry run stubs it). */
const sendTool = defineTool({
  name: 'send',
  description: 'Sends a message.',
  inputSchema: z.object({ to: z.string() }),
  sideEffects: true,
  execute: (input, ctx) => {
    sends.set(ctx.sessionId, (sends.get(ctx.sessionId) ?? 0) + 1);
    return `sent to ${input.to}`;
  },
  dryRun: (input) => `would send to ${input.to}`,
});

/** A read-only tool (a dry run runs it). */
const readTool = defineTool({ name: 'read', description: 'Reads.', inputSchema: z.object({}), execute: () => 'read it' });

/** Tool retries and dry runs. */
export const toolPolicyScenarios: readonly RuntimeScenario[] = inTopic('tools', [
  {
    name: 'tools/retry-policy',
    description: 'rule 157: a call whose first try fails runs again under its retry policy inside the same call: one beforeTool, one onMessage, one afterTool with the result of the second try',
    run: async (t) => {
      const sessionId = t.sessionId();
      await t.result(await t.execute(agent(t, { tools: [flakyTool], steps: [calls(['flaky', {}]), text('done')] }), 'go', { sessionId }));
      t.note('tries', tries.get(sessionId) ?? 0);
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...callsTools(R1, 0, { messages: 2, tools: 1 }, 1, toolCall(C1, 'flaky', {})),
        ...allowedCall(R1, 0, toolCall(C1, 'flaky', {}), [], 2, 'fetched'),
        ...completesWithText(R1, 1, { messages: 4, tools: 1 }, 3, 'done', { flaky: 1 }),
      ],
      ...soleRunCompleted({ exitReason: 'text', output: 'done', steps: 2, state: INITIAL }, [row.user('go'), row.assistant('', toolCall(C1, 'flaky', {})), row.tool(C1, 'flaky', 'fetched'), row.assistant('done')]),
      notes: [{ label: 'tries', value: 2 }],
    },
  },
  {
    name: 'tools/dry-run',
    description: "rule 156: execute({ dryRun: true }) answers the side-effecting call with the tool's dryRun() (its row marked stubbed) and runs the read-only one; the hooks are a normal run's",
    run: async (t) => {
      const sessionId = t.sessionId();
      await t.result(await t.execute(agent(t, { tools: [sendTool, readTool], steps: [calls(['send', { to: 'ann' }], ['read', {}]), text('done')] }), 'go', { sessionId, dryRun: true }));
      const rows = (await t.runtime.getSession(sessionId))?.messages.filter((m): m is ToolResultMessage => m.role === 'tool') ?? [];
      t.note('stubbed rows', rows.filter((r) => r.stubbed === true).map((r) => r.toolName));
      t.note('sends', sends.get(sessionId) ?? 0);
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...callsTools(R1, 0, { messages: 2, tools: 2 }, 1, toolCall(C1, 'send', { to: 'ann' }), toolCall(C2, 'read', {})),
        ...allowedCall(R1, 0, toolCall(C1, 'send', { to: 'ann' }), [], 2, 'would send to ann'),
        ...allowedCall(R1, 0, toolCall(C2, 'read', {}), [], 3, 'read it'),
        ...completesWithText(R1, 1, { messages: 5, tools: 2 }, 4, 'done', { send: 1, read: 1 }),
      ],
      ...soleRunCompleted({ exitReason: 'text', output: 'done', steps: 2, state: INITIAL }, [
        row.user('go'),
        row.assistant('', toolCall(C1, 'send', { to: 'ann' }), toolCall(C2, 'read', {})),
        row.tool(C1, 'send', 'would send to ann'),
        row.tool(C2, 'read', 'read it'),
        row.assistant('done'),
      ]),
      notes: [
        { label: 'stubbed rows', value: ['send'] },
        { label: 'sends', value: 0 },
      ],
    },
  },
]);
