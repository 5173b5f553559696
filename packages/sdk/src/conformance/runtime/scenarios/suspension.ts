// Suspension boundaries: a client tool, an approval (reason client_tool) and awaited children; the
// order beforeTool → suspension commit → onAgentSuspended, and the fresh run a resume starts.
import { defineAgent, type ToolDefinition } from '../../../define.js';
import { AgentError } from '../../../errors.js';
import { createScriptedModel } from '../../../testing/scripted-model.js';
import { at, C1, C2, complete, R1, R2, R3, row, S1, S2, storedRun, storedSession, toolCall } from '../expect.js';
import { agent, askTool, calls, deleteTool, executeOnce, executeThen, INITIAL, inTopic, notesLastPrompt, pendingCallIds, suspendedStatusProbe, text, toolWithoutInput, type TopicScenario } from '../fixtures.js';
import { approvedRemoveTrace, blockedCall, callErrorRows, callRows, callsAndSuspends, callsTools, completedRun, completesWithText, entered, newTurn, resumesWithError, resumesWithResult, soleRunCompleted, soleRunSuspended, startsCalls, suspendedRun } from '../fragments.js';
import type { RuntimeScenario } from '../scenario.js';
import type { TraceToolCall } from '../trace.js';

/** The trace one approval of remove(/tmp/a) on the turn 'delete it' leaves (start/with-confirmation-resume), the model then saying 'done'. */
const approvedOnce = approvedRemoveTrace({ input: 'delete it', path: '/tmp/a', reply: 'done' });

/**
 * A scenario whose agent has `tool` and whose model's first reply asks for `call`, which suspends the
 * run on the turn `input`: the start work, {@link callsAndSuspends} (the call at row 1), and the run
 * stored suspended after its first step; onAgentSuspended sees the run stored as suspended.
 */
function suspendsOnFirstCall(name: string, description: string, tool: ToolDefinition, input: string, call: TraceToolCall): TopicScenario {
  return {
    name,
    description,
    run: (t) => executeOnce(t, { tools: [tool], steps: [calls([call.tool, call.args])], layers: [suspendedStatusProbe(t)] }, input),
    expected: {
      hooks: [...newTurn(R1, 0, input), ...callsAndSuspends(R1, 0, { messages: 2, tools: 1 }, 1, call)],
      ...soleRunSuspended(INITIAL, [row.user(input), row.assistant('', call)], [{ label: 'run status in onAgentSuspended', value: 'suspended' }]),
    },
  };
}

/** Suspension reasons (client tool, approval, children), their order, and the runs that resume them. */
export const suspensionScenarios: readonly RuntimeScenario[] = inTopic('suspension', [
  suspendsOnFirstCall(
    'suspend/client-tool',
    'a client tool suspends the run: beforeTool, then the suspension commit, then onAgentSuspended(client_tool, the pending call), which sees the run stored as suspended (rules 93–96, D10)',
    askTool,
    'clean up',
    toolCall(C1, 'ask', { question: 'which file?' }),
  ),
  suspendsOnFirstCall(
    'suspend/approval',
    'a call that needs approval suspends with reason client_tool and the call pending; the tool does not run (rules 94, 96, C17, D10)',
    deleteTool,
    'delete it',
    toolCall(C1, 'remove', { path: '/etc/x' }),
  ),
  {
    name: 'suspend/awaiting-children',
    description:
      'a tool that awaits a child session suspends the parent with reason awaiting_children listing the child; the child is a new turn (onAgentStart true); the resumed parent gets its outcome (rules 87, 94, 96)',
    async run(t) {
      const parentSession = t.sessionId();
      const childSession = t.sessionId();
      const child = defineAgent({ name: 'child', llmConfig: { model: createScriptedModel([text('child result')]) }, hooks: t.hooks() });
      const delegate = toolWithoutInput('delegate', 'Starts a child agent and waits for it.', async (ctx) => {
        const handle = await t.execute(child, 'sub task', { sessionId: childSession, parentSessionId: ctx.sessionId });
        await t.result(handle);
        return ctx.awaitChildren([{ sessionId: handle.sessionId, agentType: child.name }]);
      });
      const parent = agent(t, { name: 'parent', tools: [delegate], steps: [calls(['delegate', {}]), text('merged')], layers: [suspendedStatusProbe(t)] });
      await t.result(await t.execute(parent, 'go', { sessionId: parentSession }));
      await t.result(await t.resume(parentSession, { mode: 'continue' }));
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...startsCalls(R1, 0, { messages: 2, tools: 1 }, 1, toolCall(C1, 'delegate', {})),
        ...newTurn(R2, 0, 'sub task'),
        ...completesWithText(R2, 0, { messages: 1, tools: 0 }, 1, 'child result'),
        at(R1, 1).suspended('awaiting_children', [], [S2]),
        ...resumesWithResult(R3, R1, toolCall(C1, 'delegate', {}), [], 2, [{ sessionId: S2, status: 'completed', output: 'child result' }]),
        ...completesWithText(R3, 0, { messages: 4, tools: 1 }, 3, 'merged'),
      ],
      entries: [entered('execute', S1, R1), entered('execute', S2, R2), entered('resume', S1, R3)],
      notes: [{ label: 'run status in onAgentSuspended', value: 'suspended' }],
      runs: [suspendedRun(R1, S1, 'start', 1, INITIAL), completedRun(R2, S2, 'start', { exitReason: 'text', output: 'child result', steps: 1, state: {} }), completedRun(R3, S1, 'resumed', { exitReason: 'text', output: 'merged', steps: 1, state: INITIAL })],
      sessions: [
        storedSession(S1, R3, INITIAL, [row.user('go'), ...callRows(toolCall(C1, 'delegate', {}), [{ sessionId: S2, status: 'completed', output: 'child result' }]), row.assistant('merged')]),
        storedSession(S2, R2, {}, [row.user('sub task'), row.assistant('child result')]),
      ],
    },
  },
  {
    name: 'suspend/answers-one-of-two',
    description:
      'answering one of two pending calls starts a run that delivers it and suspends again at once on the other; the second answer continues (rules 93, 95, 101, 107)',
    async run(t) {
      const sessionId = t.sessionId();
      const a = agent(t, { tools: [askTool], steps: [calls(['ask', { question: 'a?' }], ['ask', { question: 'b?' }]), text('both answered')] });
      const [first, second] = pendingCallIds(await t.result(await t.execute(a, 'go', { sessionId })));
      await t.result(await t.submitToolResult(sessionId, first, 'A'));
      await t.result(await t.submitToolResult(sessionId, second ?? '', 'B'));
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...callsAndSuspends(R1, 0, { messages: 2, tools: 1 }, 1, toolCall(C1, 'ask', { question: 'a?' }), toolCall(C2, 'ask', { question: 'b?' })),
        ...resumesWithResult(R2, R1, toolCall(C1, 'ask', { question: 'a?' }), [], 2, 'A'),
        at(R2, 0).suspended('client_tool', [C2]),
        ...resumesWithResult(R3, R2, toolCall(C2, 'ask', { question: 'b?' }), [], 3, 'B'),
        ...completesWithText(R3, 0, { messages: 5, tools: 1 }, 4, 'both answered'),
      ],
      entries: [entered('execute', S1, R1), entered('submitToolResult', S1, R2), entered('submitToolResult', S1, R3)],
      runs: [suspendedRun(R1, S1, 'start', 1, INITIAL), suspendedRun(R2, S1, 'resumed', 0, INITIAL), completedRun(R3, S1, 'resumed', { exitReason: 'text', output: 'both answered', steps: 1, state: INITIAL })],
      sessions: [
        storedSession(S1, R3, INITIAL, [
          row.user('go'),
          row.assistant('', toolCall(C1, 'ask', { question: 'a?' }), toolCall(C2, 'ask', { question: 'b?' })),
          row.tool(C1, 'ask', 'A'),
          row.tool(C2, 'ask', 'B'),
          row.assistant('both answered'),
        ]),
      ],
    },
  },
  {
    name: 'suspend/reject',
    description: 'a rejected approval never runs the tool: the resumed run appends a permission_denied result and afterTool reports it blocked; the model gets the reason (C13, D4)',
    run: (t) =>
      executeThen(t, { tools: [deleteTool], steps: [calls(['remove', { path: '/etc' }]), notesLastPrompt(t, 'the model saw the reason', 'never touch /etc', text('ok, I will not'))] }, 'delete it', (sessionId, first) =>
        t.reject(sessionId, pendingCallIds(first)[0], { reason: 'never touch /etc' }),
      ),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'delete it'),
        ...callsAndSuspends(R1, 0, { messages: 2, tools: 1 }, 1, toolCall(C1, 'remove', { path: '/etc' })),
        ...resumesWithError(R2, R1, toolCall(C1, 'remove', { path: '/etc' }), 2, 'permission_denied', true),
        ...completesWithText(R2, 0, { messages: 4, tools: 1 }, 3, 'ok, I will not'),
      ],
      entries: [entered('execute', S1, R1), entered('reject', S1, R2)],
      notes: [{ label: 'the model saw the reason', value: true }],
      runs: [suspendedRun(R1, S1, 'start', 1, INITIAL), completedRun(R2, S1, 'resumed', { exitReason: 'text', output: 'ok, I will not', steps: 1, state: INITIAL })],
      sessions: [storedSession(S1, R2, INITIAL, [row.user('delete it'), ...callErrorRows(toolCall(C1, 'remove', { path: '/etc' }), 'permission_denied'), row.assistant('ok, I will not')])],
    },
  },
  {
    name: 'suspend/approve-with-edited-input',
    description: 'an approval with edited arguments runs them through beforeTool again (docs/rules.md, rule 222), then the tool with them; afterTool reports the effective input the tool ran with (D3)',
    async run(t) {
      const sessionId = t.sessionId();
      const a = agent(t, { tools: [deleteTool], steps: [calls(['remove', { path: '/tmp/a' }]), text('done')] });
      const [id] = pendingCallIds(await t.result(await t.execute(a, 'delete it', { sessionId })));
      await t.result(await t.approve(sessionId, id ?? '', { input: { path: '/tmp/b' } }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('delete it'),
        at(R1, 0).message(0, row.user('delete it')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'remove', { path: '/tmp/a' }))),
        at(R1, 0).beforeTool(C1, 'remove', { path: '/tmp/a' }),
        at(R1, 1).suspended('client_tool', [C1]),
        at(R2, 0).resumed(R1),
        // Edited arguments go through the beforeTool chain again (issue 14, item 1).
        at(R2, 0).beforeTool(C1, 'remove', { path: '/tmp/b' }),
        at(R2, 0).state('tool', { count: 0, log: ['deleted /tmp/b'] }, 'remove'),
        at(R2, 0).message(2, row.tool(C1, 'remove', { removed: '/tmp/b' })),
        at(R2, 0).afterTool(C1, 'remove', { path: '/tmp/b' }, { removed: '/tmp/b' }),
        at(R2, 0).beforeLLM(4, 1),
        at(R2, 0).afterLLM('text'),
        at(R2, 0).message(3, row.assistant('done')),
        at(R2, 0).exit('text', 1, { remove: 1 }),
        complete(R2, 1, 'text', 'done'),
      ],
      entries: [
        { entry: 'execute', session: S1, run: R1 },
        { entry: 'approve', session: S1, run: R2 },
      ],
      runs: [
        storedRun(R1, S1, 'start', 'suspended', { result: { status: 'suspended', steps: 1, state: INITIAL } }),
        storedRun(R2, S1, 'resumed', 'completed', { output: 'done', result: { status: 'completed', exitReason: 'text', output: 'done', steps: 1, state: { count: 0, log: ['deleted /tmp/b'] } } }),
      ],
      sessions: [
        storedSession(S1, R2, { count: 0, log: ['deleted /tmp/b'] }, [
          row.user('delete it'),
          row.assistant('', toolCall(C1, 'remove', { path: '/tmp/a' })),
          row.tool(C1, 'remove', { removed: '/tmp/b' }),
          row.assistant('done'),
        ]),
      ],
    },
  },
  {
    name: 'suspend/concurrent-approvals',
    description: 'two concurrent approvals of one call: exactly one resumes the session, the other is refused with a typed error and fires no hook; the tool runs once',
    async run(t) {
      const sessionId = t.sessionId();
      const a = agent(t, { tools: [deleteTool], steps: [calls(['remove', { path: '/tmp/a' }]), text('done')] });
      const [id] = pendingCallIds(await t.result(await t.execute(a, 'delete it', { sessionId })));
      const settled = await Promise.allSettled([t.runtime.approve(sessionId, id), t.runtime.approve(sessionId, id)]);
      const winners = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
      const refusals = settled.flatMap((s) => (s.status === 'rejected' ? [s.reason as unknown] : []));
      t.note('approvals that resumed the session', winners.length);
      t.note('refusals with a typed conflict', refusals.filter((e) => AgentError.isInstance(e) && ['state_conflict', 'session_not_suspended'].includes(e.code)).length);
      for (const handle of winners) await t.result(handle);
    },
    expected: {
      hooks: approvedOnce.hooks,
      entries: [entered('execute', S1, R1)],
      notes: [
        { label: 'approvals that resumed the session', value: 1 },
        { label: 'refusals with a typed conflict', value: 1 },
      ],
      runs: approvedOnce.runs,
      sessions: approvedOnce.sessions,
    },
  },
  {
    name: 'suspend/client-error-result',
    description: 'a client result submitted as an error becomes a tool_failed row and afterTool(success false) in the resumed run; the loop goes on (rules 74, 101)',
    run: (t) => executeThen(t, { tools: [askTool], steps: [calls(['ask', { question: 'read it?' }]), text('could not read')] }, 'go', (sessionId, first) => t.submitToolResult(sessionId, pendingCallIds(first)[0], 'no access', { isError: true })),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...callsAndSuspends(R1, 0, { messages: 2, tools: 1 }, 1, toolCall(C1, 'ask', { question: 'read it?' })),
        ...resumesWithError(R2, R1, toolCall(C1, 'ask', { question: 'read it?' }), 2, 'tool_failed', false, 'no access'),
        ...completesWithText(R2, 0, { messages: 4, tools: 1 }, 3, 'could not read'),
      ],
      entries: [entered('execute', S1, R1), entered('submitToolResult', S1, R2)],
      runs: [suspendedRun(R1, S1, 'start', 1, INITIAL), completedRun(R2, S1, 'resumed', { exitReason: 'text', output: 'could not read', steps: 1, state: INITIAL })],
      sessions: [storedSession(S1, R2, INITIAL, [row.user('go'), ...callErrorRows(toolCall(C1, 'ask', { question: 'read it?' }), 'tool_failed'), row.assistant('could not read')])],
    },
  },
  {
    name: 'suspend/blocked-client-tool',
    description: 'a client call that beforeTool blocks never suspends the run: it gets the blocked result and the loop goes on (D4, C13)',
    run: (t) =>
      executeOnce(t, {
        tools: [askTool],
        steps: [calls(['ask', { question: 'secret?' }]), text('fine')],
        layers: [{ hooks: { beforeTool: () => ({ block: true, reason: 'no questions' }) } }],
      }),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...callsTools(R1, 0, { messages: 2, tools: 1 }, 1, toolCall(C1, 'ask', { question: 'secret?' })),
        ...blockedCall(R1, 0, toolCall(C1, 'ask', { question: 'secret?' }), 2),
        ...completesWithText(R1, 1, { messages: 4, tools: 1 }, 3, 'fine'),
      ],
      ...soleRunCompleted({ exitReason: 'text', output: 'fine', steps: 2, state: INITIAL }, [row.user('go'), ...callErrorRows(toolCall(C1, 'ask', { question: 'secret?' }), 'hook_blocked'), row.assistant('fine')]),
    },
  },
]);
