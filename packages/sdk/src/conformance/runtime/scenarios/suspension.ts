// Suspension boundaries: a client tool, an approval (reason client_tool) and awaited children; the
// order beforeTool → suspension commit → onAgentSuspended, and the fresh run a resume starts.
import { z } from 'zod';
import { defineAgent, defineTool } from '../../../define.js';
import { AgentError } from '../../../errors.js';
import { createScriptedModel } from '../../../testing/scripted-model.js';
import { at, call, complete, row, run, session, storedRun, storedSession, toolCall } from '../expect.js';
import { agent, askTool, calls, deleteTool, INITIAL, lastPromptText, text } from '../fixtures.js';
import type { RuntimeScenario } from '../scenario.js';

const R1 = run(1);
const R2 = run(2);
const R3 = run(3);
const S1 = session(1);
const S2 = session(2);
const C1 = call(1);
const C2 = call(2);

function pendingIds(result: { readonly suspension?: { readonly pending: readonly { readonly toolCallId: string }[] } }): string[] {
  const ids = result.suspension?.pending.map((p) => p.toolCallId) ?? [];
  if (ids.length === 0) throw new Error('the run did not suspend on a pending call');
  return ids;
}

/** Suspension reasons (client tool, approval, children), their order, and the runs that resume them. */
export const suspensionScenarios: readonly RuntimeScenario[] = [
  {
    name: 'suspend/client-tool',
    topic: 'suspension',
    description:
      'a client tool suspends the run: beforeTool, then the suspension commit, then onAgentSuspended(client_tool, the pending call), which sees the run stored as suspended (rules 93–96, D10)',
    async run(t) {
      const a = agent(t, {
        tools: [askTool],
        steps: [calls(['ask', { question: 'which file?' }])],
        layers: [{ hooks: { onAgentSuspended: async (ctx) => t.note('run status in onAgentSuspended', (await t.runtime.getRun(ctx.runId))?.status) } }],
      });
      await t.result(await t.execute(a, 'clean up', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('clean up'),
        at(R1, 0).message(0, row.user('clean up')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'ask', { question: 'which file?' }))),
        at(R1, 0).beforeTool(C1, 'ask', { question: 'which file?' }),
        at(R1, 1).suspended('client_tool', [C1]),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      notes: [{ label: 'run status in onAgentSuspended', value: 'suspended' }],
      runs: [storedRun(R1, S1, 'start', 'suspended', { result: { status: 'suspended', steps: 1, state: INITIAL } })],
      sessions: [storedSession(S1, R1, INITIAL, [row.user('clean up'), row.assistant('', toolCall(C1, 'ask', { question: 'which file?' }))])],
    },
  },
  {
    name: 'suspend/approval',
    topic: 'suspension',
    description: 'a call that needs approval suspends with reason client_tool and the call pending; the tool does not run (rules 94, 96, C17, D10)',
    async run(t) {
      const a = agent(t, {
        tools: [deleteTool],
        steps: [calls(['remove', { path: '/etc/x' }])],
        layers: [{ hooks: { onAgentSuspended: async (ctx) => t.note('run status in onAgentSuspended', (await t.runtime.getRun(ctx.runId))?.status) } }],
      });
      await t.result(await t.execute(a, 'delete it', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('delete it'),
        at(R1, 0).message(0, row.user('delete it')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'remove', { path: '/etc/x' }))),
        at(R1, 0).beforeTool(C1, 'remove', { path: '/etc/x' }),
        at(R1, 1).suspended('client_tool', [C1]),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      notes: [{ label: 'run status in onAgentSuspended', value: 'suspended' }],
      runs: [storedRun(R1, S1, 'start', 'suspended', { result: { status: 'suspended', steps: 1, state: INITIAL } })],
      sessions: [storedSession(S1, R1, INITIAL, [row.user('delete it'), row.assistant('', toolCall(C1, 'remove', { path: '/etc/x' }))])],
    },
  },
  {
    name: 'suspend/awaiting-children',
    topic: 'suspension',
    description:
      'a tool that awaits a child session suspends the parent with reason awaiting_children listing the child; the child is a new turn (onAgentStart true); the resumed parent gets its outcome (rules 87, 94, 96)',
    async run(t) {
      const parentSession = t.sessionId();
      const childSession = t.sessionId();
      const child = defineAgent({ name: 'child', llmConfig: { model: createScriptedModel([text('child result')]) }, hooks: t.hooks() });
      const delegate = defineTool({
        name: 'delegate',
        description: 'Starts a child agent and waits for it.',
        inputSchema: z.object({}),
        execute: async (_input, ctx) => {
          const handle = await t.execute(child, 'sub task', { sessionId: childSession, parentSessionId: ctx.sessionId });
          await t.result(handle);
          return ctx.awaitChildren([{ sessionId: handle.sessionId, agentType: child.name }]);
        },
      });
      const parent = agent(t, {
        name: 'parent',
        tools: [delegate],
        steps: [calls(['delegate', {}]), text('merged')],
        layers: [{ hooks: { onAgentSuspended: async (ctx) => t.note('run status in onAgentSuspended', (await t.runtime.getRun(ctx.runId))?.status) } }],
      });
      await t.result(await t.execute(parent, 'go', { sessionId: parentSession }));
      await t.result(await t.resume(parentSession, { mode: 'continue' }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'delegate', {}))),
        at(R1, 0).beforeTool(C1, 'delegate', {}),
        at(R2, 0).start('sub task'),
        at(R2, 0).message(0, row.user('sub task')),
        at(R2, 0).beforeLLM(1, 0),
        at(R2, 0).afterLLM('text'),
        at(R2, 0).message(1, row.assistant('child result')),
        at(R2, 0).exit('text', 1),
        complete(R2, 1, 'text', 'child result'),
        at(R1, 1).suspended('awaiting_children', [], [S2]),
        at(R3, 0).resumed(R1),
        at(R3, 0).message(2, row.tool(C1, 'delegate', [{ sessionId: S2, status: 'completed', output: 'child result' }])),
        at(R3, 0).afterTool(C1, 'delegate', {}, [{ sessionId: S2, status: 'completed', output: 'child result' }]),
        at(R3, 0).beforeLLM(4, 1),
        at(R3, 0).afterLLM('text'),
        at(R3, 0).message(3, row.assistant('merged')),
        at(R3, 0).exit('text', 1),
        complete(R3, 1, 'text', 'merged'),
      ],
      entries: [
        { entry: 'execute', session: S1, run: R1 },
        { entry: 'execute', session: S2, run: R2 },
        { entry: 'resume', session: S1, run: R3 },
      ],
      notes: [{ label: 'run status in onAgentSuspended', value: 'suspended' }],
      runs: [
        storedRun(R1, S1, 'start', 'suspended', { result: { status: 'suspended', steps: 1, state: INITIAL } }),
        storedRun(R2, S2, 'start', 'completed', { output: 'child result', result: { status: 'completed', exitReason: 'text', output: 'child result', steps: 1, state: {} } }),
        storedRun(R3, S1, 'resumed', 'completed', { output: 'merged', result: { status: 'completed', exitReason: 'text', output: 'merged', steps: 1, state: INITIAL } }),
      ],
      sessions: [
        storedSession(S1, R3, INITIAL, [
          row.user('go'),
          row.assistant('', toolCall(C1, 'delegate', {})),
          row.tool(C1, 'delegate', [{ sessionId: S2, status: 'completed', output: 'child result' }]),
          row.assistant('merged'),
        ]),
        storedSession(S2, R2, {}, [row.user('sub task'), row.assistant('child result')]),
      ],
    },
  },
  {
    name: 'suspend/answers-one-of-two',
    topic: 'suspension',
    description:
      'answering one of two pending calls starts a run that delivers it and suspends again at once on the other; the second answer continues (rules 93, 95, 101, 107)',
    async run(t) {
      const sessionId = t.sessionId();
      const a = agent(t, { tools: [askTool], steps: [calls(['ask', { question: 'a?' }], ['ask', { question: 'b?' }]), text('both answered')] });
      const [first, second] = pendingIds(await t.result(await t.execute(a, 'go', { sessionId })));
      await t.result(await t.submitToolResult(sessionId, first ?? '', 'A'));
      await t.result(await t.submitToolResult(sessionId, second ?? '', 'B'));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'ask', { question: 'a?' }), toolCall(C2, 'ask', { question: 'b?' }))),
        at(R1, 0).beforeTool(C1, 'ask', { question: 'a?' }),
        at(R1, 0).beforeTool(C2, 'ask', { question: 'b?' }),
        at(R1, 1).suspended('client_tool', [C1, C2]),
        at(R2, 0).resumed(R1),
        at(R2, 0).message(2, row.tool(C1, 'ask', 'A')),
        at(R2, 0).afterTool(C1, 'ask', { question: 'a?' }, 'A'),
        at(R2, 0).suspended('client_tool', [C2]),
        at(run(3), 0).resumed(R2),
        at(run(3), 0).message(3, row.tool(C2, 'ask', 'B')),
        at(run(3), 0).afterTool(C2, 'ask', { question: 'b?' }, 'B'),
        at(run(3), 0).beforeLLM(5, 1),
        at(run(3), 0).afterLLM('text'),
        at(run(3), 0).message(4, row.assistant('both answered')),
        at(run(3), 0).exit('text', 1),
        complete(run(3), 1, 'text', 'both answered'),
      ],
      entries: [
        { entry: 'execute', session: S1, run: R1 },
        { entry: 'submitToolResult', session: S1, run: R2 },
        { entry: 'submitToolResult', session: S1, run: R3 },
      ],
      runs: [
        storedRun(R1, S1, 'start', 'suspended', { result: { status: 'suspended', steps: 1, state: INITIAL } }),
        storedRun(R2, S1, 'resumed', 'suspended', { result: { status: 'suspended', steps: 0, state: INITIAL } }),
        storedRun(R3, S1, 'resumed', 'completed', { output: 'both answered', result: { status: 'completed', exitReason: 'text', output: 'both answered', steps: 1, state: INITIAL } }),
      ],
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
    topic: 'suspension',
    description: 'a rejected approval never runs the tool: the resumed run appends a permission_denied result and afterTool reports it blocked; the model gets the reason (C13, D4)',
    async run(t) {
      const sessionId = t.sessionId();
      const a = agent(t, {
        tools: [deleteTool],
        steps: [
          calls(['remove', { path: '/etc' }]),
          (options) => {
            t.note('the model saw the reason', lastPromptText(options.prompt).includes('never touch /etc'));
            return text('ok, I will not');
          },
        ],
      });
      const [id] = pendingIds(await t.result(await t.execute(a, 'delete it', { sessionId })));
      await t.result(await t.reject(sessionId, id ?? '', { reason: 'never touch /etc' }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('delete it'),
        at(R1, 0).message(0, row.user('delete it')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'remove', { path: '/etc' }))),
        at(R1, 0).beforeTool(C1, 'remove', { path: '/etc' }),
        at(R1, 1).suspended('client_tool', [C1]),
        at(R2, 0).resumed(R1),
        at(R2, 0).message(2, row.toolError(C1, 'remove', 'permission_denied')),
        at(R2, 0).afterToolError(C1, 'remove', { path: '/etc' }, 'permission_denied', true),
        at(R2, 0).beforeLLM(4, 1),
        at(R2, 0).afterLLM('text'),
        at(R2, 0).message(3, row.assistant('ok, I will not')),
        at(R2, 0).exit('text', 1),
        complete(R2, 1, 'text', 'ok, I will not'),
      ],
      entries: [
        { entry: 'execute', session: S1, run: R1 },
        { entry: 'reject', session: S1, run: R2 },
      ],
      notes: [{ label: 'the model saw the reason', value: true }],
      runs: [
        storedRun(R1, S1, 'start', 'suspended', { result: { status: 'suspended', steps: 1, state: INITIAL } }),
        storedRun(R2, S1, 'resumed', 'completed', { output: 'ok, I will not', result: { status: 'completed', exitReason: 'text', output: 'ok, I will not', steps: 1, state: INITIAL } }),
      ],
      sessions: [
        storedSession(S1, R2, INITIAL, [
          row.user('delete it'),
          row.assistant('', toolCall(C1, 'remove', { path: '/etc' })),
          row.toolError(C1, 'remove', 'permission_denied'),
          row.assistant('ok, I will not'),
        ]),
      ],
    },
  },
  {
    name: 'suspend/approve-with-edited-input',
    topic: 'suspension',
    description: 'an approval with edited arguments runs them through beforeTool again, then the tool with them; afterTool reports the effective input the tool ran with (D3)',
    async run(t) {
      const sessionId = t.sessionId();
      const a = agent(t, { tools: [deleteTool], steps: [calls(['remove', { path: '/tmp/a' }]), text('done')] });
      const [id] = pendingIds(await t.result(await t.execute(a, 'delete it', { sessionId })));
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
    topic: 'suspension',
    description: 'two concurrent approvals of one call: exactly one resumes the session, the other is refused with a typed error and fires no hook; the tool runs once',
    async run(t) {
      const sessionId = t.sessionId();
      const a = agent(t, { tools: [deleteTool], steps: [calls(['remove', { path: '/tmp/a' }]), text('done')] });
      const [id] = pendingIds(await t.result(await t.execute(a, 'delete it', { sessionId })));
      const settled = await Promise.allSettled([t.runtime.approve(sessionId, id ?? ''), t.runtime.approve(sessionId, id ?? '')]);
      const winners = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
      const refusals = settled.flatMap((s) => (s.status === 'rejected' ? [s.reason as unknown] : []));
      t.note('approvals that resumed the session', winners.length);
      t.note('refusals with a typed conflict', refusals.filter((e) => AgentError.isInstance(e) && ['state_conflict', 'session_not_suspended'].includes(e.code)).length);
      for (const handle of winners) await t.result(handle);
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
        at(R2, 0).state('tool', { count: 0, log: ['deleted /tmp/a'] }, 'remove'),
        at(R2, 0).message(2, row.tool(C1, 'remove', { removed: '/tmp/a' })),
        at(R2, 0).afterTool(C1, 'remove', { path: '/tmp/a' }, { removed: '/tmp/a' }),
        at(R2, 0).beforeLLM(4, 1),
        at(R2, 0).afterLLM('text'),
        at(R2, 0).message(3, row.assistant('done')),
        at(R2, 0).exit('text', 1, { remove: 1 }),
        complete(R2, 1, 'text', 'done'),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      notes: [
        { label: 'approvals that resumed the session', value: 1 },
        { label: 'refusals with a typed conflict', value: 1 },
      ],
      runs: [
        storedRun(R1, S1, 'start', 'suspended', { result: { status: 'suspended', steps: 1, state: INITIAL } }),
        storedRun(R2, S1, 'resumed', 'completed', { output: 'done', result: { status: 'completed', exitReason: 'text', output: 'done', steps: 1, state: { count: 0, log: ['deleted /tmp/a'] } } }),
      ],
      sessions: [
        storedSession(S1, R2, { count: 0, log: ['deleted /tmp/a'] }, [
          row.user('delete it'),
          row.assistant('', toolCall(C1, 'remove', { path: '/tmp/a' })),
          row.tool(C1, 'remove', { removed: '/tmp/a' }),
          row.assistant('done'),
        ]),
      ],
    },
  },
  {
    name: 'suspend/client-error-result',
    topic: 'suspension',
    description: 'a client result submitted as an error becomes a tool_failed row and afterTool(success false) in the resumed run; the loop goes on (rules 74, 101)',
    async run(t) {
      const sessionId = t.sessionId();
      const a = agent(t, { tools: [askTool], steps: [calls(['ask', { question: 'read it?' }]), text('could not read')] });
      const [id] = pendingIds(await t.result(await t.execute(a, 'go', { sessionId })));
      await t.result(await t.submitToolResult(sessionId, id ?? '', 'no access', { isError: true }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'ask', { question: 'read it?' }))),
        at(R1, 0).beforeTool(C1, 'ask', { question: 'read it?' }),
        at(R1, 1).suspended('client_tool', [C1]),
        at(R2, 0).resumed(R1),
        at(R2, 0).message(2, row.toolError(C1, 'ask', 'tool_failed')),
        at(R2, 0).afterToolError(C1, 'ask', { question: 'read it?' }, 'tool_failed', false, 'no access'),
        at(R2, 0).beforeLLM(4, 1),
        at(R2, 0).afterLLM('text'),
        at(R2, 0).message(3, row.assistant('could not read')),
        at(R2, 0).exit('text', 1),
        complete(R2, 1, 'text', 'could not read'),
      ],
      entries: [
        { entry: 'execute', session: S1, run: R1 },
        { entry: 'submitToolResult', session: S1, run: R2 },
      ],
      runs: [
        storedRun(R1, S1, 'start', 'suspended', { result: { status: 'suspended', steps: 1, state: INITIAL } }),
        storedRun(R2, S1, 'resumed', 'completed', { output: 'could not read', result: { status: 'completed', exitReason: 'text', output: 'could not read', steps: 1, state: INITIAL } }),
      ],
      sessions: [
        storedSession(S1, R2, INITIAL, [
          row.user('go'),
          row.assistant('', toolCall(C1, 'ask', { question: 'read it?' })),
          row.toolError(C1, 'ask', 'tool_failed'),
          row.assistant('could not read'),
        ]),
      ],
    },
  },
  {
    name: 'suspend/blocked-client-tool',
    topic: 'suspension',
    description: 'a client call that beforeTool blocks never suspends the run: it gets the blocked result and the loop goes on (D4, C13)',
    async run(t) {
      const a = agent(t, {
        tools: [askTool],
        steps: [calls(['ask', { question: 'secret?' }]), text('fine')],
        layers: [{ hooks: { beforeTool: () => ({ block: true, reason: 'no questions' }) } }],
      });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'ask', { question: 'secret?' }))),
        at(R1, 0).beforeTool(C1, 'ask', { question: 'secret?' }),
        at(R1, 0).message(2, row.toolError(C1, 'ask', 'hook_blocked')),
        at(R1, 0).afterToolError(C1, 'ask', { question: 'secret?' }, 'hook_blocked', true),
        at(R1, 1).beforeLLM(4, 1),
        at(R1, 1).afterLLM('text'),
        at(R1, 1).message(3, row.assistant('fine')),
        at(R1, 1).exit('text', 2),
        complete(R1, 2, 'text', 'fine'),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      runs: [storedRun(R1, S1, 'start', 'completed', { output: 'fine', result: { status: 'completed', exitReason: 'text', output: 'fine', steps: 2, state: INITIAL } })],
      sessions: [
        storedSession(S1, R1, INITIAL, [
          row.user('go'),
          row.assistant('', toolCall(C1, 'ask', { question: 'secret?' })),
          row.toolError(C1, 'ask', 'hook_blocked'),
          row.assistant('fine'),
        ]),
      ],
    },
  },
];
