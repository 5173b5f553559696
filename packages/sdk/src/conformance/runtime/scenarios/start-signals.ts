// The start-signal table of the spec: every run fires exactly one start signal, chosen by how it began,
// and a turn's start work (onAgentStart and the initial onMessage) runs once per turn.
import { at, call, complete, fail, row, run, session, storedRun, storedSession, toolCall } from '../expect.js';
import { agent, askTool, calls, deleteTool, incrementTool, INITIAL, text } from '../fixtures.js';
import type { RuntimeScenario } from '../scenario.js';

const R1 = run(1);
const R2 = run(2);
const S1 = session(1);
const C1 = call(1);
const C2 = call(2);

/** The raw id of the first call a suspended result waits on. */
function pendingId(result: { readonly suspension?: { readonly pending: readonly { readonly toolCallId: string }[] } }): string {
  const id = result.suspension?.pending[0]?.toolCallId;
  if (id === undefined) throw new Error('the run did not suspend on a pending call');
  return id;
}

/** The rows of the start-signal table, and the start work a run owes. */
export const startSignalScenarios: readonly RuntimeScenario[] = [
  {
    name: 'start/execute',
    topic: 'start signals',
    description: 'execute() begins a new turn: onAgentStart(startSignal true) before the initial onMessage and the first model call (rules 16, 25, 27, D1)',
    async run(t) {
      const a = agent(t, { steps: [text('hello back')] });
      await t.result(await t.execute(a, 'hi', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('hi'),
        at(R1, 0).message(0, row.user('hi')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('text'),
        at(R1, 0).message(1, row.assistant('hello back')),
        at(R1, 0).exit('text', 1),
        complete(R1, 1, 'text', 'hello back'),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      runs: [storedRun(R1, S1, 'start', 'completed', { output: 'hello back', result: { status: 'completed', exitReason: 'text', output: 'hello back', steps: 1, state: INITIAL } })],
      sessions: [storedSession(S1, R1, INITIAL, [row.user('hi'), row.assistant('hello back')])],
    },
  },
  {
    name: 'start/send',
    topic: 'start signals',
    description: 'a chat send is a new turn: onAgentStart(true) again, its input appended after the committed conversation (rule 16)',
    async run(t) {
      const sessionId = t.sessionId();
      const a = agent(t, { steps: [text('one'), text('two')] });
      await t.result(await t.execute(a, 'first', { sessionId }));
      await t.result(await t.send(sessionId, 'second'));
    },
    expected: {
      hooks: [
        at(R1, 0).start('first'),
        at(R1, 0).message(0, row.user('first')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('text'),
        at(R1, 0).message(1, row.assistant('one')),
        at(R1, 0).exit('text', 1),
        complete(R1, 1, 'text', 'one'),
        at(R2, 0).start('second'),
        at(R2, 0).message(2, row.user('second')),
        at(R2, 0).beforeLLM(4, 1),
        at(R2, 0).afterLLM('text'),
        at(R2, 0).message(3, row.assistant('two')),
        at(R2, 0).exit('text', 1),
        complete(R2, 1, 'text', 'two'),
      ],
      entries: [
        { entry: 'execute', session: S1, run: R1 },
        { entry: 'send', session: S1, run: R2 },
      ],
      runs: [
        storedRun(R1, S1, 'start', 'completed', { output: 'one', result: { status: 'completed', exitReason: 'text', output: 'one', steps: 1, state: INITIAL } }),
        storedRun(R2, S1, 'start', 'completed', { output: 'two', result: { status: 'completed', exitReason: 'text', output: 'two', steps: 1, state: INITIAL } }),
      ],
      sessions: [storedSession(S1, R2, INITIAL, [row.user('first'), row.assistant('one'), row.user('second'), row.assistant('two')])],
    },
  },
  {
    name: 'start/with-message-resume',
    topic: 'start signals',
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
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'ask', { question: 'which?' }))),
        at(R1, 0).beforeTool(C1, 'ask', { question: 'which?' }),
        at(R1, 1).suspended('client_tool', [C1]),
        at(R2, 0).start('never mind'),
        at(R2, 0).message(2, row.toolError(C1, 'ask', 'tool_cancelled')),
        at(R2, 0).message(3, row.user('never mind')),
        at(R2, 0).beforeLLM(5, 1),
        at(R2, 0).afterLLM('text'),
        at(R2, 0).message(4, row.assistant('new turn')),
        at(R2, 0).exit('text', 1),
        complete(R2, 1, 'text', 'new turn'),
      ],
      entries: [
        { entry: 'execute', session: S1, run: R1 },
        { entry: 'resume', session: S1, run: R2 },
      ],
      runs: [
        storedRun(R1, S1, 'start', 'suspended', { result: { status: 'suspended', steps: 1, state: INITIAL } }),
        storedRun(R2, S1, 'start', 'completed', { output: 'new turn', result: { status: 'completed', exitReason: 'text', output: 'new turn', steps: 1, state: INITIAL } }),
      ],
      sessions: [
        storedSession(S1, R2, INITIAL, [
          row.user('go'),
          row.assistant('', toolCall(C1, 'ask', { question: 'which?' })),
          row.toolError(C1, 'ask', 'tool_cancelled'),
          row.user('never mind'),
          row.assistant('new turn'),
        ]),
      ],
    },
  },
  {
    name: 'start/continue-resume',
    topic: 'start signals',
    description:
      'a continue resume (a client tool result) fires onAgentResumed with previousRunId, no start work; the answer fires onMessage then afterTool (rules 17, 23, 101, 106, 107)',
    async run(t) {
      const sessionId = t.sessionId();
      const a = agent(t, { tools: [askTool], steps: [calls(['ask', { question: 'which file?' }]), text('thanks')] });
      const first = await t.result(await t.execute(a, 'clean up', { sessionId }));
      await t.result(await t.submitToolResult(sessionId, pendingId(first), 'notes.txt'));
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
        at(R2, 0).resumed(R1),
        at(R2, 0).message(2, row.tool(C1, 'ask', 'notes.txt')),
        at(R2, 0).afterTool(C1, 'ask', { question: 'which file?' }, 'notes.txt'),
        at(R2, 0).beforeLLM(4, 1),
        at(R2, 0).afterLLM('text'),
        at(R2, 0).message(3, row.assistant('thanks')),
        at(R2, 0).exit('text', 1),
        complete(R2, 1, 'text', 'thanks'),
      ],
      entries: [
        { entry: 'execute', session: S1, run: R1 },
        { entry: 'submitToolResult', session: S1, run: R2 },
      ],
      runs: [
        storedRun(R1, S1, 'start', 'suspended', { result: { status: 'suspended', steps: 1, state: INITIAL } }),
        storedRun(R2, S1, 'resumed', 'completed', { output: 'thanks', result: { status: 'completed', exitReason: 'text', output: 'thanks', steps: 1, state: INITIAL } }),
      ],
      sessions: [
        storedSession(S1, R2, INITIAL, [
          row.user('clean up'),
          row.assistant('', toolCall(C1, 'ask', { question: 'which file?' })),
          row.tool(C1, 'ask', 'notes.txt'),
          row.assistant('thanks'),
        ]),
      ],
    },
  },
  {
    name: 'start/with-confirmation-resume',
    topic: 'start signals',
    description:
      'a with_confirmation resume (an approval) fires onAgentResumed; the approved call then runs: onStateChange, onMessage, afterTool, without a second beforeTool (rules 17, 101, D3)',
    async run(t) {
      const sessionId = t.sessionId();
      const a = agent(t, { tools: [deleteTool], steps: [calls(['remove', { path: '/tmp/a' }]), text('done')] });
      const first = await t.result(await t.execute(a, 'delete it', { sessionId }));
      await t.result(await t.approve(sessionId, pendingId(first)));
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
      entries: [
        { entry: 'execute', session: S1, run: R1 },
        { entry: 'approve', session: S1, run: R2 },
      ],
      runs: [
        storedRun(R1, S1, 'start', 'suspended', { result: { status: 'suspended', steps: 1, state: INITIAL } }),
        storedRun(R2, S1, 'resumed', 'completed', {
          output: 'done',
          result: { status: 'completed', exitReason: 'text', output: 'done', steps: 1, state: { count: 0, log: ['deleted /tmp/a'] } },
        }),
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
    name: 'start/rewind-to-step',
    topic: 'start signals',
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
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'increment', { by: 1 }))),
        at(R1, 0).beforeTool(C1, 'increment', { by: 1 }),
        at(R1, 0).state('tool', { count: 1, log: ['+1'] }, 'increment'),
        at(R1, 0).message(2, row.tool(C1, 'increment', { by: 1 })),
        at(R1, 0).afterTool(C1, 'increment', { by: 1 }, { by: 1 }),
        at(R1, 1).beforeLLM(4, 1),
        at(R1, 1).afterLLM('tool_calls'),
        at(R1, 1).message(3, row.assistant('', toolCall(C2, 'increment', { by: 10 }))),
        at(R1, 1).beforeTool(C2, 'increment', { by: 10 }),
        at(R1, 1).state('tool', { count: 11, log: ['+1', '+10'] }, 'increment'),
        at(R1, 1).message(4, row.tool(C2, 'increment', { by: 10 })),
        at(R1, 1).afterTool(C2, 'increment', { by: 10 }, { by: 10 }),
        at(R1, 2).beforeLLM(6, 1),
        at(R1, 2).afterLLM('text'),
        at(R1, 2).message(5, row.assistant('first')),
        at(R1, 2).exit('text', 3, { increment: 2 }),
        complete(R1, 3, 'text', 'first'),
        at(R2, 0).resumed(R1, true),
        at(R2, 0).beforeLLM(4, 1),
        at(R2, 0).afterLLM('text'),
        at(R2, 0).message(3, row.assistant('rewound')),
        at(R2, 0).exit('text', 1),
        complete(R2, 1, 'text', 'rewound'),
      ],
      entries: [
        { entry: 'execute', session: S1, run: R1 },
        { entry: 'resume', session: S1, run: R2 },
      ],
      runs: [
        storedRun(R1, S1, 'start', 'completed', {
          output: 'first',
          result: { status: 'completed', exitReason: 'text', output: 'first', steps: 3, state: { count: 11, log: ['+1', '+10'] } },
        }),
        storedRun(R2, S1, 'resumed', 'completed', {
          output: 'rewound',
          result: { status: 'completed', exitReason: 'text', output: 'rewound', steps: 1, state: { count: 1, log: ['+1'] } },
        }),
      ],
      sessions: [
        storedSession(S1, R2, { count: 1, log: ['+1'] }, [
          row.user('go'),
          row.assistant('', toolCall(C1, 'increment', { by: 1 })),
          row.tool(C1, 'increment', { by: 1 }),
          row.assistant('rewound'),
        ]),
      ],
    },
  },
  {
    name: 'start/rewind-to-genesis',
    topic: 'start signals',
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
        at(R1, 0).start('the input'),
        at(R1, 0).message(0, row.user('the input')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('text'),
        at(R1, 0).message(1, row.assistant('a')),
        at(R1, 0).exit('text', 1),
        complete(R1, 1, 'text', 'a'),
        at(R2, 0).resumed(R1, true),
        at(R2, 0).start('the input', false),
        at(R2, 0).message(0, row.user('the input')),
        at(R2, 0).beforeLLM(2, 1),
        at(R2, 0).afterLLM('text'),
        at(R2, 0).message(1, row.assistant('b')),
        at(R2, 0).exit('text', 1),
        complete(R2, 1, 'text', 'b'),
      ],
      entries: [
        { entry: 'execute', session: S1, run: R1 },
        { entry: 'resume', session: S1, run: R2 },
      ],
      runs: [
        storedRun(R1, S1, 'start', 'completed', { output: 'a', result: { status: 'completed', exitReason: 'text', output: 'a', steps: 1, state: INITIAL } }),
        storedRun(R2, S1, 'resumed', 'completed', { output: 'b', result: { status: 'completed', exitReason: 'text', output: 'b', steps: 1, state: INITIAL } }),
      ],
      sessions: [storedSession(S1, R2, INITIAL, [row.user('the input'), row.assistant('b')])],
    },
  },
  {
    name: 'start/retry-owes-start-work',
    topic: 'start signals',
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
        at(R2, 0).start('go', false),
        at(R2, 0).message(0, row.user('go')),
        at(R2, 0).message(1, row.user('please try again')),
        at(R2, 0).beforeLLM(3, 1),
        at(R2, 0).afterLLM('text'),
        at(R2, 0).message(2, row.assistant('after retry')),
        at(R2, 0).exit('text', 1),
        complete(R2, 1, 'text', 'after retry'),
      ],
      entries: [
        { entry: 'execute', session: S1, run: R1 },
        { entry: 'retry', session: S1, run: R2 },
      ],
      runs: [
        storedRun(R1, S1, 'start', 'failed', { error: 'hook_failed', result: { status: 'failed', error: 'hook_failed', steps: 0, state: INITIAL } }),
        storedRun(R2, S1, 'retry', 'completed', {
          output: 'after retry',
          result: { status: 'completed', exitReason: 'text', output: 'after retry', steps: 1, state: INITIAL },
        }),
      ],
      sessions: [storedSession(S1, R2, INITIAL, [row.user('go'), row.user('please try again'), row.assistant('after retry')])],
    },
  },
  {
    name: 'start/retry-owes-start-work-without-message',
    topic: 'start signals',
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
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        fail(R1, 0, 'hook_failed', false),
        at(R2, 0).retry(R1, false, false),
        at(R2, 0).start('go', false),
        at(R2, 0).message(0, row.user('go')),
        at(R2, 0).beforeLLM(2, 1),
        at(R2, 0).afterLLM('text'),
        at(R2, 0).message(1, row.assistant('ok')),
        at(R2, 0).exit('text', 1),
        complete(R2, 1, 'text', 'ok'),
      ],
      entries: [
        { entry: 'execute', session: S1, run: R1 },
        { entry: 'retry', session: S1, run: R2 },
      ],
      runs: [
        storedRun(R1, S1, 'start', 'failed', { error: 'hook_failed', result: { status: 'failed', error: 'hook_failed', steps: 0, state: INITIAL } }),
        storedRun(R2, S1, 'retry', 'completed', { output: 'ok', result: { status: 'completed', exitReason: 'text', output: 'ok', steps: 1, state: INITIAL } }),
      ],
      sessions: [storedSession(S1, R2, INITIAL, [row.user('go'), row.assistant('ok')])],
    },
  },
];
