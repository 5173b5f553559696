// The start-signal table of the spec: every run fires exactly one start signal, chosen by how it began,
// and a turn's start work (onAgentStart and the initial onMessage) runs once per turn.
import { at, C1, C2, fail, R1, R2, row, S1, storedSession, toolCall } from '../expect.js';
import { agent, askTool, calls, deleteTool, executeOnce, incrementTool, INITIAL, inTopic, pendingCallIds, text } from '../fixtures.js';
import { callErrorRows, callRows, callsAndSuspends, callsTools, completedRun, completesWithText, entered, failedRun, incrementCall, newTurn, owedStartWork, resumesWithResult, soleRunCompleted, suspendedRun } from '../fragments.js';
import type { RuntimeScenario } from '../scenario.js';
import type { ExpectedTrace } from '../trace.js';

/**
 * The trace of start/with-confirmation-resume: a turn 'delete it' suspends on remove(/tmp/a), one
 * approval resumes it (the call runs, no second beforeTool) and the model then says 'done'.
 */
export const approvedOnceTrace: ExpectedTrace = {
  hooks: [
    ...newTurn(R1, 0, 'delete it'),
    ...callsAndSuspends(R1, 0, { messages: 2, tools: 1 }, 1, toolCall(C1, 'remove', { path: '/tmp/a' })),
    ...resumesWithResult(R2, R1, toolCall(C1, 'remove', { path: '/tmp/a' }), [{ count: 0, log: ['deleted /tmp/a'] }], 2, { removed: '/tmp/a' }),
    ...completesWithText(R2, 0, { messages: 4, tools: 1 }, 3, 'done', { remove: 1 }),
  ],
  entries: [entered('execute', S1, R1), entered('approve', S1, R2)],
  runs: [suspendedRun(R1, S1, 'start', 1, INITIAL), completedRun(R2, S1, 'resumed', { exitReason: 'text', output: 'done', steps: 1, state: { count: 0, log: ['deleted /tmp/a'] } })],
  sessions: [storedSession(S1, R2, { count: 0, log: ['deleted /tmp/a'] }, [row.user('delete it'), ...callRows(toolCall(C1, 'remove', { path: '/tmp/a' }), { removed: '/tmp/a' }), row.assistant('done')])],
};

/** The rows of the start-signal table, and the start work a run owes. */
export const startSignalScenarios: readonly RuntimeScenario[] = inTopic('start signals', [
  {
    name: 'start/execute',
    description: 'execute() begins a new turn: onAgentStart(startSignal true) before the initial onMessage and the first model call (rules 16, 25, 27, D1)',
    run: (t) => executeOnce(t, { steps: [text('hello back')] }, 'hi'),
    expected: {
      hooks: [...newTurn(R1, 0, 'hi'), ...completesWithText(R1, 0, { messages: 2, tools: 1 }, 1, 'hello back')],
      ...soleRunCompleted({ exitReason: 'text', output: 'hello back', steps: 1, state: INITIAL }, [row.user('hi'), row.assistant('hello back')]),
    },
  },
  {
    name: 'start/send',
    description: 'a chat send is a new turn: onAgentStart(true) again, its input appended after the committed conversation (rule 16)',
    async run(t) {
      const sessionId = t.sessionId();
      const a = agent(t, { steps: [text('one'), text('two')] });
      await t.result(await t.execute(a, 'first', { sessionId }));
      await t.result(await t.send(sessionId, 'second'));
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'first'),
        ...completesWithText(R1, 0, { messages: 2, tools: 1 }, 1, 'one'),
        ...newTurn(R2, 2, 'second'),
        ...completesWithText(R2, 0, { messages: 4, tools: 1 }, 3, 'two'),
      ],
      entries: [entered('execute', S1, R1), entered('send', S1, R2)],
      runs: [
        completedRun(R1, S1, 'start', { exitReason: 'text', output: 'one', steps: 1, state: INITIAL }),
        completedRun(R2, S1, 'start', { exitReason: 'text', output: 'two', steps: 1, state: INITIAL }),
      ],
      sessions: [storedSession(S1, R2, INITIAL, [row.user('first'), row.assistant('one'), row.user('second'), row.assistant('two')])],
    },
  },
  {
    name: 'start/with-message-resume',
    description:
      'a with_message resume of a suspended session is a new turn: onAgentStart(true); the calls the suspended run waited on are cancelled by rows that are part of the turn input (rules 16, 91)',
    async run(t) {
      const sessionId = t.sessionId();
      const a = agent(t, { tools: [askTool], steps: [calls(['ask', { question: 'which?' }]), text('new turn')] });
      await t.result(await t.execute(a, 'go', { sessionId }));
      await t.result(await t.resume(sessionId, { mode: 'with_message', message: 'never mind' }));
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...callsAndSuspends(R1, 0, { messages: 2, tools: 1 }, 1, toolCall(C1, 'ask', { question: 'which?' })),
        at(R2, 0).start('never mind'),
        at(R2, 0).message(2, row.toolError(C1, 'ask', 'tool_cancelled')),
        at(R2, 0).message(3, row.user('never mind')),
        ...completesWithText(R2, 0, { messages: 5, tools: 1 }, 4, 'new turn'),
      ],
      entries: [entered('execute', S1, R1), entered('resume', S1, R2)],
      runs: [suspendedRun(R1, S1, 'start', 1, INITIAL), completedRun(R2, S1, 'start', { exitReason: 'text', output: 'new turn', steps: 1, state: INITIAL })],
      sessions: [storedSession(S1, R2, INITIAL, [row.user('go'), ...callErrorRows(toolCall(C1, 'ask', { question: 'which?' }), 'tool_cancelled'), row.user('never mind'), row.assistant('new turn')])],
    },
  },
  {
    name: 'start/continue-resume',
    description:
      'a continue resume (a client tool result) fires onAgentResumed with previousRunId, no start work; the answer fires onMessage then afterTool (rules 17, 23, 101, 106, 107)',
    async run(t) {
      const sessionId = t.sessionId();
      const a = agent(t, { tools: [askTool], steps: [calls(['ask', { question: 'which file?' }]), text('thanks')] });
      const first = await t.result(await t.execute(a, 'clean up', { sessionId }));
      await t.result(await t.submitToolResult(sessionId, pendingCallIds(first)[0], 'notes.txt'));
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'clean up'),
        ...callsAndSuspends(R1, 0, { messages: 2, tools: 1 }, 1, toolCall(C1, 'ask', { question: 'which file?' })),
        ...resumesWithResult(R2, R1, toolCall(C1, 'ask', { question: 'which file?' }), [], 2, 'notes.txt'),
        ...completesWithText(R2, 0, { messages: 4, tools: 1 }, 3, 'thanks'),
      ],
      entries: [entered('execute', S1, R1), entered('submitToolResult', S1, R2)],
      runs: [suspendedRun(R1, S1, 'start', 1, INITIAL), completedRun(R2, S1, 'resumed', { exitReason: 'text', output: 'thanks', steps: 1, state: INITIAL })],
      sessions: [storedSession(S1, R2, INITIAL, [row.user('clean up'), ...callRows(toolCall(C1, 'ask', { question: 'which file?' }), 'notes.txt'), row.assistant('thanks')])],
    },
  },
  {
    name: 'start/with-confirmation-resume',
    description:
      'a with_confirmation resume (an approval) fires onAgentResumed; the approved call then runs: onStateChange, onMessage, afterTool, without a second beforeTool (rules 17, 101, D3)',
    async run(t) {
      const sessionId = t.sessionId();
      const a = agent(t, { tools: [deleteTool], steps: [calls(['remove', { path: '/tmp/a' }]), text('done')] });
      const first = await t.result(await t.execute(a, 'delete it', { sessionId }));
      await t.result(await t.approve(sessionId, pendingCallIds(first)[0]));
    },
    expected: approvedOnceTrace,
  },
  {
    name: 'start/rewind-to-step',
    description:
      'a from_checkpoint rewind to a step of a turn whose start committed fires onAgentResumed (checkpoint given) and no start work; state and rows are restored (rules 17, 23, 106)',
    async run(t) {
      const sessionId = t.sessionId();
      const a = agent(t, { tools: [incrementTool], steps: [calls(['increment', { by: 1 }]), calls(['increment', { by: 10 }]), text('first'), text('rewound')] });
      await t.result(await t.execute(a, 'go', { sessionId }));
      const checkpoint = (await t.runtime.listCheckpoints(sessionId)).find((c) => c.kind === 'step');
      if (!checkpoint) throw new Error('no step checkpoint');
      await t.result(await t.resume(sessionId, { mode: 'from_checkpoint', checkpointId: checkpoint.checkpointId }));
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...callsTools(R1, 0, { messages: 2, tools: 1 }, 1, toolCall(C1, 'increment', { by: 1 })),
        ...incrementCall(R1, 0, C1, { by: 1 }, { count: 1, log: ['+1'] }, 2),
        ...callsTools(R1, 1, { messages: 4, tools: 1 }, 3, toolCall(C2, 'increment', { by: 10 })),
        ...incrementCall(R1, 1, C2, { by: 10 }, { count: 11, log: ['+1', '+10'] }, 4),
        ...completesWithText(R1, 2, { messages: 6, tools: 1 }, 5, 'first', { increment: 2 }),
        at(R2, 0).resumed(R1, true),
        ...completesWithText(R2, 0, { messages: 4, tools: 1 }, 3, 'rewound'),
      ],
      entries: [entered('execute', S1, R1), entered('resume', S1, R2)],
      runs: [
        completedRun(R1, S1, 'start', { exitReason: 'text', output: 'first', steps: 3, state: { count: 11, log: ['+1', '+10'] } }),
        completedRun(R2, S1, 'resumed', { exitReason: 'text', output: 'rewound', steps: 1, state: { count: 1, log: ['+1'] } }),
      ],
      sessions: [storedSession(S1, R2, { count: 1, log: ['+1'] }, [row.user('go'), ...callRows(toolCall(C1, 'increment', { by: 1 }), { by: 1 }), row.assistant('rewound')])],
    },
  },
  {
    name: 'start/rewind-to-genesis',
    description:
      'a rewind before the turn\'s start commit owes the start work: onAgentResumed, then onAgentStart(startSignal false), and onMessage re-fires for the turn input (rules 21, 22, 27)',
    async run(t) {
      const sessionId = t.sessionId();
      const a = agent(t, { steps: [text('a'), text('b')] });
      await t.result(await t.execute(a, 'the input', { sessionId }));
      await t.result(await t.resume(sessionId, { mode: 'from_checkpoint', checkpointId: 'genesis' }));
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'the input'),
        ...completesWithText(R1, 0, { messages: 2, tools: 1 }, 1, 'a'),
        at(R2, 0).resumed(R1, true),
        ...owedStartWork(R2, 0, 'the input'),
        ...completesWithText(R2, 0, { messages: 2, tools: 1 }, 1, 'b'),
      ],
      entries: [entered('execute', S1, R1), entered('resume', S1, R2)],
      runs: [
        completedRun(R1, S1, 'start', { exitReason: 'text', output: 'a', steps: 1, state: INITIAL }),
        completedRun(R2, S1, 'resumed', { exitReason: 'text', output: 'b', steps: 1, state: INITIAL }),
      ],
      sessions: [storedSession(S1, R2, INITIAL, [row.user('the input'), row.assistant('b')])],
    },
  },
  {
    name: 'start/retry-owes-start-work',
    description:
      'a retry of a run that failed in onAgentStart restores genesis: onAgentRetry, then onAgentStart(startSignal false) and onMessage for the turn input, then the retry message (rules 18, 21, 22, 26, 113, 114)',
    async run(t) {
      const sessionId = t.sessionId();
      let starts = 0;
      const a = agent(t, {
        steps: [text('after retry')],
        layers: [
          {
            hooks: {
              onAgentStart: () => {
                if (starts++ === 0) throw new Error('the first start fails');
              },
            },
          },
        ],
      });
      await t.result(await t.execute(a, 'go', { sessionId }));
      await t.result(await t.retry(sessionId, { message: 'please try again' }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        fail(R1, 0, 'hook_failed', false),
        at(R2, 0).retry(R1, false, true),
        ...owedStartWork(R2, 0, 'go'),
        at(R2, 0).message(1, row.user('please try again')),
        ...completesWithText(R2, 0, { messages: 3, tools: 1 }, 2, 'after retry'),
      ],
      entries: [entered('execute', S1, R1), entered('retry', S1, R2)],
      runs: [failedRun(R1, S1, 'start', 'hook_failed', 0, INITIAL), completedRun(R2, S1, 'retry', { exitReason: 'text', output: 'after retry', steps: 1, state: INITIAL })],
      sessions: [storedSession(S1, R2, INITIAL, [row.user('go'), row.user('please try again'), row.assistant('after retry')])],
    },
  },
  {
    name: 'start/retry-owes-start-work-without-message',
    description:
      'a retry that owes the start work and brings no message still re-fires onMessage for the turn input (rules 22, 113); hasMessage is false',
    async run(t) {
      const sessionId = t.sessionId();
      let messages = 0;
      const a = agent(t, {
        steps: [text('ok')],
        layers: [
          {
            hooks: {
              onMessage: () => {
                if (messages++ === 0) throw new Error('the first input message is refused');
              },
            },
          },
        ],
      });
      await t.result(await t.execute(a, 'go', { sessionId }));
      await t.result(await t.retry(sessionId));
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        fail(R1, 0, 'hook_failed', false),
        at(R2, 0).retry(R1, false, false),
        ...owedStartWork(R2, 0, 'go'),
        ...completesWithText(R2, 0, { messages: 2, tools: 1 }, 1, 'ok'),
      ],
      entries: [entered('execute', S1, R1), entered('retry', S1, R2)],
      runs: [failedRun(R1, S1, 'start', 'hook_failed', 0, INITIAL), completedRun(R2, S1, 'retry', { exitReason: 'text', output: 'ok', steps: 1, state: INITIAL })],
      sessions: [storedSession(S1, R2, INITIAL, [row.user('go'), row.assistant('ok')])],
    },
  },
]);
