// retry() and from_checkpoint rewinds: which checkpoint is restored, whether the start work is owed,
// where a retry message lands; entries that are refused change nothing.
import type { ScriptedStep } from '../../../testing/scripted-model.js';
import { at, call, complete, fail, row, run, session, storedRun, storedSession, toolCall } from '../expect.js';
import { agent, calls, INITIAL, text } from '../fixtures.js';
import type { RuntimeScenario } from '../scenario.js';
import type { TraceEvent } from '../trace.js';

const R1 = run(1);
const R2 = run(2);
const R3 = run(3);
const S1 = session(1);
const C1 = call(1);

/** R1: an increment step, then a provider_auth failure at step 1. */
const failsAtSecondStep: readonly TraceEvent[] = [
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
  at(R1, 1).afterLLM('fail', 'provider_auth'),
  fail(R1, 1, 'provider_auth', false),
];
const failedR1 = storedRun(R1, S1, 'start', 'failed', { error: 'provider_auth', result: { status: 'failed', error: 'provider_auth', steps: 1, state: { count: 1, log: ['+1'] } } });
const firstStepRows = [row.user('go'), row.assistant('', toolCall(C1, 'increment', { by: 1 })), row.tool(C1, 'increment', { by: 1 })];

/** retry() and rewinds, and refused entries. */
export const retryScenarios: readonly RuntimeScenario[] = [
  {
    name: 'retry/later-step',
    topic: 'retry and rewind',
    description: 'retry() of a run that failed after a committed step restores that step: onAgentRetry (retriedRunId, checkpoint, no message) is the only start signal; no start work (rules 18, 23, 110–114)',
    async run(t) {
      const sessionId = t.sessionId();
      const a = agent(t, { steps: [calls(['increment', { by: 1 }]), { error: { status: 401 } }, text('retried')] });
      await t.result(await t.execute(a, 'go', { sessionId }));
      await t.result(await t.retry(sessionId));
    },
    expected: {
      hooks: [
        ...failsAtSecondStep,
        at(R2, 0).retry(R1, true, false),
        at(R2, 0).beforeLLM(4, 1),
        at(R2, 0).afterLLM('text'),
        at(R2, 0).message(3, row.assistant('retried')),
        at(R2, 0).exit('text', 1),
        complete(R2, 1, 'text', 'retried'),
      ],
      entries: [
        { entry: 'execute', session: S1, run: R1 },
        { entry: 'retry', session: S1, run: R2 },
      ],
      runs: [failedR1, storedRun(R2, S1, 'retry', 'completed', { output: 'retried', result: { status: 'completed', exitReason: 'text', output: 'retried', steps: 1, state: { count: 1, log: ['+1'] } } })],
      sessions: [storedSession(S1, R2, { count: 1, log: ['+1'] }, [...firstStepRows, row.assistant('retried')])],
    },
  },
  {
    name: 'retry/with-message',
    topic: 'retry and rewind',
    description: 'a retry message is appended after the restored point (onMessage) before the first model call; hasMessage is true (rules 111, 114)',
    async run(t) {
      const sessionId = t.sessionId();
      const a = agent(t, { steps: [calls(['increment', { by: 1 }]), { error: { status: 401 } }, text('retried')] });
      await t.result(await t.execute(a, 'go', { sessionId }));
      await t.result(await t.retry(sessionId, { message: 'try harder' }));
    },
    expected: {
      hooks: [
        ...failsAtSecondStep,
        at(R2, 0).retry(R1, true, true),
        at(R2, 0).message(3, row.user('try harder')),
        at(R2, 0).beforeLLM(5, 1),
        at(R2, 0).afterLLM('text'),
        at(R2, 0).message(4, row.assistant('retried')),
        at(R2, 0).exit('text', 1),
        complete(R2, 1, 'text', 'retried'),
      ],
      entries: [
        { entry: 'execute', session: S1, run: R1 },
        { entry: 'retry', session: S1, run: R2 },
      ],
      runs: [failedR1, storedRun(R2, S1, 'retry', 'completed', { output: 'retried', result: { status: 'completed', exitReason: 'text', output: 'retried', steps: 1, state: { count: 1, log: ['+1'] } } })],
      sessions: [storedSession(S1, R2, { count: 1, log: ['+1'] }, [...firstStepRows, row.user('try harder'), row.assistant('retried')])],
    },
  },
  {
    name: 'retry/to-genesis',
    topic: 'retry and rewind',
    description: 'a retry to the genesis checkpoint (before the turn\'s start commit) owes the start work: onAgentRetry (no checkpoint), onAgentStart(false), onMessage for the input (rules 21, 22, 113, 114)',
    async run(t) {
      const sessionId = t.sessionId();
      const a = agent(t, { steps: [calls(['increment', { by: 1 }]), { error: { status: 401 } }, text('from scratch')] });
      await t.result(await t.execute(a, 'go', { sessionId }));
      await t.result(await t.retry(sessionId, { checkpointId: 'genesis' }));
    },
    expected: {
      hooks: [
        ...failsAtSecondStep,
        at(R2, 0).retry(R1, false, false),
        at(R2, 0).start('go', false),
        at(R2, 0).message(0, row.user('go')),
        at(R2, 0).beforeLLM(2, 1),
        at(R2, 0).afterLLM('text'),
        at(R2, 0).message(1, row.assistant('from scratch')),
        at(R2, 0).exit('text', 1),
        complete(R2, 1, 'text', 'from scratch'),
      ],
      entries: [
        { entry: 'execute', session: S1, run: R1 },
        { entry: 'retry', session: S1, run: R2 },
      ],
      runs: [failedR1, storedRun(R2, S1, 'retry', 'completed', { output: 'from scratch', result: { status: 'completed', exitReason: 'text', output: 'from scratch', steps: 1, state: INITIAL } })],
      sessions: [storedSession(S1, R2, INITIAL, [row.user('go'), row.assistant('from scratch')])],
    },
  },
  {
    name: 'retry/after-interrupt',
    topic: 'retry and rewind',
    description: 'an interrupted run can be retried; its turn\'s start committed, so the retry runs no start work and the original start writes are kept (rules 23, 130)',
    async run(t) {
      const sessionId = t.sessionId();
      const stops: ScriptedStep = () => {
        void t.runtime.stop(sessionId);
        return { text: 'never', delayMs: 10_000 };
      };
      const a = agent(t, { steps: [stops, text('resumed work')], layers: [{ hooks: { onAgentStart: (_p, ctx) => ctx.updateState((d) => void d.log.push('started')) } }] });
      await t.result(await t.execute(a, 'go', { sessionId }));
      await t.result(await t.retry(sessionId));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).state('hook', { count: 0, log: ['started'] }),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('fail', 'run_interrupted'),
        fail(R1, 0, 'run_interrupted', true),
        at(R2, 0).retry(R1, true, false),
        at(R2, 0).beforeLLM(2, 1),
        at(R2, 0).afterLLM('text'),
        at(R2, 0).message(1, row.assistant('resumed work')),
        at(R2, 0).exit('text', 1),
        complete(R2, 1, 'text', 'resumed work'),
      ],
      entries: [
        { entry: 'execute', session: S1, run: R1 },
        { entry: 'retry', session: S1, run: R2 },
      ],
      runs: [
        storedRun(R1, S1, 'start', 'interrupted', { error: 'run_interrupted', result: { status: 'interrupted', error: 'run_interrupted', steps: 0, state: { count: 0, log: ['started'] } } }),
        storedRun(R2, S1, 'retry', 'completed', { output: 'resumed work', result: { status: 'completed', exitReason: 'text', output: 'resumed work', steps: 1, state: { count: 0, log: ['started'] } } }),
      ],
      sessions: [storedSession(S1, R2, { count: 0, log: ['started'] }, [row.user('go'), row.assistant('resumed work')])],
    },
  },
  {
    name: 'rewind/into-previous-turn',
    topic: 'retry and rewind',
    description:
      'a rewind to a checkpoint of an earlier turn discards the current turn\'s start commit: onAgentResumed, then the current turn\'s owed start work (onAgentStart false, onMessage for its input) (rules 17, 21, 22)',
    async run(t) {
      const sessionId = t.sessionId();
      const a = agent(t, { steps: [calls(['increment', { by: 1 }]), text('one'), text('two'), text('rewound')] });
      await t.result(await t.execute(a, 'first', { sessionId }));
      await t.result(await t.send(sessionId, 'second'));
      const firstStep = (await t.runtime.listCheckpoints(sessionId)).find((c) => c.kind === 'step');
      if (!firstStep) throw new Error('no step checkpoint');
      await t.result(await t.resume(sessionId, { mode: 'from_checkpoint', checkpointId: firstStep.checkpointId }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('first'),
        at(R1, 0).message(0, row.user('first')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'increment', { by: 1 }))),
        at(R1, 0).beforeTool(C1, 'increment', { by: 1 }),
        at(R1, 0).state('tool', { count: 1, log: ['+1'] }, 'increment'),
        at(R1, 0).message(2, row.tool(C1, 'increment', { by: 1 })),
        at(R1, 0).afterTool(C1, 'increment', { by: 1 }, { by: 1 }),
        at(R1, 1).beforeLLM(4, 1),
        at(R1, 1).afterLLM('text'),
        at(R1, 1).message(3, row.assistant('one')),
        at(R1, 1).exit('text', 2, { increment: 1 }),
        complete(R1, 2, 'text', 'one'),
        at(R2, 0).start('second'),
        at(R2, 0).message(4, row.user('second')),
        at(R2, 0).beforeLLM(6, 1),
        at(R2, 0).afterLLM('text'),
        at(R2, 0).message(5, row.assistant('two')),
        at(R2, 0).exit('text', 1),
        complete(R2, 1, 'text', 'two'),
        at(R3, 0).resumed(R2, true),
        at(R3, 0).start('second', false),
        at(R3, 0).message(3, row.user('second')),
        at(R3, 0).beforeLLM(5, 1),
        at(R3, 0).afterLLM('text'),
        at(R3, 0).message(4, row.assistant('rewound')),
        at(R3, 0).exit('text', 1),
        complete(R3, 1, 'text', 'rewound'),
      ],
      entries: [
        { entry: 'execute', session: S1, run: R1 },
        { entry: 'send', session: S1, run: R2 },
        { entry: 'resume', session: S1, run: R3 },
      ],
      runs: [
        storedRun(R1, S1, 'start', 'completed', { output: 'one', result: { status: 'completed', exitReason: 'text', output: 'one', steps: 2, state: { count: 1, log: ['+1'] } } }),
        storedRun(R2, S1, 'start', 'completed', { output: 'two', result: { status: 'completed', exitReason: 'text', output: 'two', steps: 1, state: { count: 1, log: ['+1'] } } }),
        storedRun(R3, S1, 'resumed', 'completed', { output: 'rewound', result: { status: 'completed', exitReason: 'text', output: 'rewound', steps: 1, state: { count: 1, log: ['+1'] } } }),
      ],
      sessions: [
        storedSession(S1, R3, { count: 1, log: ['+1'] }, [
          row.user('first'),
          row.assistant('', toolCall(C1, 'increment', { by: 1 })),
          row.tool(C1, 'increment', { by: 1 }),
          row.user('second'),
          row.assistant('rewound'),
        ]),
      ],
    },
  },
  {
    name: 'retry/refused-entries',
    topic: 'retry and rewind',
    description: 'retry() of a session whose run did not fail, and a continue resume of a session that is not suspended, are refused with typed errors, fire no hook and change nothing',
    async run(t) {
      const sessionId = t.sessionId();
      const a = agent(t, { steps: [text('ok')] });
      await t.result(await t.execute(a, 'go', { sessionId }));
      await t.retry(sessionId).catch(() => undefined);
      await t.resume(sessionId, { mode: 'continue' }).catch(() => undefined);
      await t.resume(sessionId, { mode: 'from_checkpoint', checkpointId: 'no-such-checkpoint' }).catch(() => undefined);
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('text'),
        at(R1, 0).message(1, row.assistant('ok')),
        at(R1, 0).exit('text', 1),
        complete(R1, 1, 'text', 'ok'),
      ],
      entries: [
        { entry: 'execute', session: S1, run: R1 },
        { entry: 'retry', rejected: 'session_not_retryable' },
        { entry: 'resume', rejected: 'session_not_suspended' },
        { entry: 'resume', rejected: 'state_not_found' },
      ],
      runs: [storedRun(R1, S1, 'start', 'completed', { output: 'ok', result: { status: 'completed', exitReason: 'text', output: 'ok', steps: 1, state: INITIAL } })],
      sessions: [storedSession(S1, R1, INITIAL, [row.user('go'), row.assistant('ok')])],
    },
  },
];
