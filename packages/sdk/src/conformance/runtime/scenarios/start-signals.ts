// The start-signal table of the spec: every run fires exactly one start signal, chosen by how it began,
// and a turn's start work (onAgentStart and the initial onMessage) runs once per turn.
import { at, C1, C2, fail, R1, R2, row, S1, storedSession, toolCall } from '../expect.js';
import { askTool, calls, deleteTool, executeOnce, executeThen, incrementTool, INITIAL, inTopic, pendingCallIds, resumeFromFirstStep, text, throwsFirstTime } from '../fixtures.js';
import { approvedRemoveTrace, callErrorRows, callRows, callsAndSuspends, completedRun, completesWithText, entered, failedRun, incrementStep, newTurn, owedStartWork, resumesWithResult, retryCompletedWithText, soleRunCompleted, suspendedRun } from '../fragments.js';
import type { RuntimeScenario } from '../scenario.js';

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
    run: (t) => executeThen(t, { steps: [text('one'), text('two')] }, 'first', (sessionId) => t.send(sessionId, 'second')),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'first'),
        ...completesWithText(R1, 0, { messages: 2, tools: 1 }, 1, 'one'),
        ...newTurn(R2, 2, 'second'),
        ...completesWithText(R2, 0, { messages: 4, tools: 1 }, 3, 'two'),
      ],
      entries: [entered('execute', S1, R1), entered('send', S1, R2)],
      runs: [completedRun(R1, S1, 'start', { exitReason: 'text', output: 'one', steps: 1, state: INITIAL }), completedRun(R2, S1, 'start', { exitReason: 'text', output: 'two', steps: 1, state: INITIAL })],
      sessions: [storedSession(S1, R2, INITIAL, [row.user('first'), row.assistant('one'), row.user('second'), row.assistant('two')])],
    },
  },
  {
    name: 'start/with-message-resume',
    description:
      'a with_message resume of a suspended session is a new turn: onAgentStart(true); the calls the suspended run waited on are cancelled by rows that are part of the turn input (rules 16, 91)',
    run: (t) => executeThen(t, { tools: [askTool], steps: [calls(['ask', { question: 'which?' }]), text('new turn')] }, 'go', (sessionId) => t.resume(sessionId, { mode: 'with_message', message: 'never mind' })),
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
    run: (t) => executeThen(t, { tools: [askTool], steps: [calls(['ask', { question: 'which file?' }]), text('thanks')] }, 'clean up', (sessionId, first) => t.submitToolResult(sessionId, pendingCallIds(first)[0], 'notes.txt')),
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
    run: (t) => executeThen(t, { tools: [deleteTool], steps: [calls(['remove', { path: '/tmp/a' }]), text('done')] }, 'delete it', (sessionId, first) => t.approve(sessionId, pendingCallIds(first)[0])),
    expected: approvedRemoveTrace({ input: 'delete it', path: '/tmp/a', reply: 'done' }),
  },
  {
    name: 'start/rewind-to-step',
    description:
      'a from_checkpoint rewind to a step of a turn whose start committed fires onAgentResumed (checkpoint given) and no start work; state and rows are restored (rules 17, 23, 106)',
    run: (t) => executeThen(t, { tools: [incrementTool], steps: [calls(['increment', { by: 1 }]), calls(['increment', { by: 10 }]), text('first'), text('rewound')] }, 'go', (sessionId) => resumeFromFirstStep(t, sessionId)),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...incrementStep(R1, 0, { messages: 2, tools: 1 }, 1, C1, { by: 1 }, { count: 1, log: ['+1'] }),
        ...incrementStep(R1, 1, { messages: 4, tools: 1 }, 3, C2, { by: 10 }, { count: 11, log: ['+1', '+10'] }),
        ...completesWithText(R1, 2, { messages: 6, tools: 1 }, 5, 'first', { increment: 2 }),
        at(R2, 0).resumed(R1, true),
        ...completesWithText(R2, 0, { messages: 4, tools: 1 }, 3, 'rewound'),
      ],
      entries: [entered('execute', S1, R1), entered('resume', S1, R2)],
      runs: [completedRun(R1, S1, 'start', { exitReason: 'text', output: 'first', steps: 3, state: { count: 11, log: ['+1', '+10'] } }), completedRun(R2, S1, 'resumed', { exitReason: 'text', output: 'rewound', steps: 1, state: { count: 1, log: ['+1'] } })],
      sessions: [storedSession(S1, R2, { count: 1, log: ['+1'] }, [row.user('go'), ...callRows(toolCall(C1, 'increment', { by: 1 }), { by: 1 }), row.assistant('rewound')])],
    },
  },
  {
    name: 'start/rewind-to-genesis',
    description:
      'a rewind before the turn\'s start commit owes the start work: onAgentResumed, then onAgentStart(startSignal false), and onMessage re-fires for the turn input (rules 21, 22, 27)',
    run: (t) => executeThen(t, { steps: [text('a'), text('b')] }, 'the input', (sessionId) => t.resume(sessionId, { mode: 'from_checkpoint', checkpointId: 'genesis' })),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'the input'),
        ...completesWithText(R1, 0, { messages: 2, tools: 1 }, 1, 'a'),
        at(R2, 0).resumed(R1, true),
        ...owedStartWork(R2, 0, 'the input'),
        ...completesWithText(R2, 0, { messages: 2, tools: 1 }, 1, 'b'),
      ],
      entries: [entered('execute', S1, R1), entered('resume', S1, R2)],
      runs: [completedRun(R1, S1, 'start', { exitReason: 'text', output: 'a', steps: 1, state: INITIAL }), completedRun(R2, S1, 'resumed', { exitReason: 'text', output: 'b', steps: 1, state: INITIAL })],
      sessions: [storedSession(S1, R2, INITIAL, [row.user('the input'), row.assistant('b')])],
    },
  },
  {
    name: 'start/retry-owes-start-work',
    description:
      'a retry of a run that failed in onAgentStart restores genesis: onAgentRetry, then onAgentStart(startSignal false) and onMessage for the turn input, then the retry message (rules 18, 21, 22, 26, 113, 114)',
    run: (t) => executeThen(t, { steps: [text('after retry')], layers: [{ hooks: { onAgentStart: throwsFirstTime('the first start fails') } }] }, 'go', (sessionId) => t.retry(sessionId, { message: 'please try again' })),
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        fail(R1, 0, 'hook_failed', false),
        at(R2, 0).retry(R1, false, true),
        ...owedStartWork(R2, 0, 'go'),
        at(R2, 0).message(1, row.user('please try again')),
        ...completesWithText(R2, 0, { messages: 3, tools: 1 }, 2, 'after retry'),
      ],
      ...retryCompletedWithText(failedRun(R1, S1, 'start', 'hook_failed', 0, INITIAL), 'after retry', INITIAL, [row.user('go'), row.user('please try again'), row.assistant('after retry')]),
    },
  },
  {
    name: 'start/retry-owes-start-work-without-message',
    description:
      'a retry that owes the start work and brings no message still re-fires onMessage for the turn input (rules 22, 113); hasMessage is false',
    run: (t) => executeThen(t, { steps: [text('ok')], layers: [{ hooks: { onMessage: throwsFirstTime('the first input message is refused') } }] }, 'go', (sessionId) => t.retry(sessionId)),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        fail(R1, 0, 'hook_failed', false),
        at(R2, 0).retry(R1, false, false),
        ...owedStartWork(R2, 0, 'go'),
        ...completesWithText(R2, 0, { messages: 2, tools: 1 }, 1, 'ok'),
      ],
      ...retryCompletedWithText(failedRun(R1, S1, 'start', 'hook_failed', 0, INITIAL), 'ok', INITIAL, [row.user('go'), row.assistant('ok')]),
    },
  },
]);
