// retry() and from_checkpoint rewinds: which checkpoint is restored, whether the start work is owed,
// where a retry message lands; entries that are refused change nothing.
import type { RetryOptions } from '../../../runtime/agent-runtime.js';
import type { ScriptedStep } from '../../../testing/scripted-model.js';
import type { ScenarioContext } from '../context.js';
import { at, C1, R1, R2, R3, row, S1, storedSession, toolCall } from '../expect.js';
import { agent, calls, executeThen, INITIAL, inTopic, logs, resumeFromFirstStep, text } from '../fixtures.js';
import { callRows, completedRun, completesWithText, entered, failedRun, failsInModelCall, incrementStep, interruptedRun, newTurn, owedStartWork, refused, retryCompletedWithText } from '../fragments.js';
import type { RuntimeScenario } from '../scenario.js';
import type { TraceEvent } from '../trace.js';

/**
 * Executes, on 'go' in a new session, an agent whose model calls increment(by 1), then fails with
 * provider_auth (401), then replies `reply`; then retries the session with `options`.
 */
function failThenRetry(t: ScenarioContext, reply: string, options?: RetryOptions): Promise<void> {
  return executeThen(t, { steps: [calls(['increment', { by: 1 }]), { error: { status: 401 } }, text(reply)] }, 'go', (sessionId) => t.retry(sessionId, options));
}

/** R1 of {@link failThenRetry}: an increment step, then a provider_auth failure at step 1. */
const failsAtSecondStep: readonly TraceEvent[] = [
  ...newTurn(R1, 0, 'go'),
  ...incrementStep(R1, 0, { messages: 2, tools: 1 }, 1, C1, { by: 1 }, { count: 1, log: ['+1'] }),
  ...failsInModelCall(R1, 1, { messages: 4, tools: 1 }, 'provider_auth', false),
];
/** R1 of {@link failThenRetry} as stored: failed with provider_auth after its first step. */
const failedR1 = failedRun(R1, S1, 'start', 'provider_auth', 1, { count: 1, log: ['+1'] });
/** The rows of the first step of {@link failThenRetry}. */
const firstStepRows = [row.user('go'), ...callRows(toolCall(C1, 'increment', { by: 1 }), { by: 1 })];

/** retry() and rewinds, and refused entries. */
export const retryScenarios: readonly RuntimeScenario[] = inTopic('retry and rewind', [
  {
    name: 'retry/later-step',
    description: 'retry() of a run that failed after a committed step restores that step: onAgentRetry (retriedRunId, checkpoint, no message) is the only start signal; no start work (rules 18, 23, 110–114)',
    run: (t) => failThenRetry(t, 'retried'),
    expected: {
      hooks: [...failsAtSecondStep, at(R2, 0).retry(R1, true, false), ...completesWithText(R2, 0, { messages: 4, tools: 1 }, 3, 'retried')],
      ...retryCompletedWithText(failedR1, 'retried', { count: 1, log: ['+1'] }, [...firstStepRows, row.assistant('retried')]),
    },
  },
  {
    name: 'retry/with-message',
    description: 'a retry message is appended after the restored point (onMessage) before the first model call; hasMessage is true (rules 111, 114)',
    run: (t) => failThenRetry(t, 'retried', { message: 'try harder' }),
    expected: {
      hooks: [...failsAtSecondStep, at(R2, 0).retry(R1, true, true), at(R2, 0).message(3, row.user('try harder')), ...completesWithText(R2, 0, { messages: 5, tools: 1 }, 4, 'retried')],
      ...retryCompletedWithText(failedR1, 'retried', { count: 1, log: ['+1'] }, [...firstStepRows, row.user('try harder'), row.assistant('retried')]),
    },
  },
  {
    name: 'retry/to-genesis',
    description: 'a retry to the genesis checkpoint (before the turn\'s start commit) owes the start work: onAgentRetry (no checkpoint), onAgentStart(false), onMessage for the input (rules 21, 22, 113, 114)',
    run: (t) => failThenRetry(t, 'from scratch', { checkpointId: 'genesis' }),
    expected: {
      hooks: [...failsAtSecondStep, at(R2, 0).retry(R1, false, false), ...owedStartWork(R2, 0, 'go'), ...completesWithText(R2, 0, { messages: 2, tools: 1 }, 1, 'from scratch')],
      ...retryCompletedWithText(failedR1, 'from scratch', INITIAL, [row.user('go'), row.assistant('from scratch')]),
    },
  },
  {
    name: 'retry/after-interrupt',
    description: 'an interrupted run can be retried; its turn\'s start committed, so the retry runs no start work and the original start writes are kept (rules 23, 130)',
    async run(t) {
      const sessionId = t.sessionId();
      const stops: ScriptedStep = () => {
        void t.runtime.stop(sessionId);
        return { text: 'never', delayMs: 10_000 };
      };
      const a = agent(t, { steps: [stops, text('resumed work')], layers: [{ hooks: { onAgentStart: logs('started') } }] });
      await t.result(await t.execute(a, 'go', { sessionId }));
      await t.result(await t.retry(sessionId));
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go', [{ count: 0, log: ['started'] }]),
        ...failsInModelCall(R1, 0, { messages: 2, tools: 1 }, 'run_interrupted', true),
        at(R2, 0).retry(R1, true, false),
        ...completesWithText(R2, 0, { messages: 2, tools: 1 }, 1, 'resumed work'),
      ],
      ...retryCompletedWithText(interruptedRun(R1, S1, 'start', 0, { count: 0, log: ['started'] }), 'resumed work', { count: 0, log: ['started'] }, [row.user('go'), row.assistant('resumed work')]),
    },
  },
  {
    name: 'rewind/into-previous-turn',
    description:
      'a rewind to a checkpoint of an earlier turn discards the current turn\'s start commit: onAgentResumed, then the current turn\'s owed start work (onAgentStart false, onMessage for its input) (rules 17, 21, 22)',
    async run(t) {
      const sessionId = t.sessionId();
      const a = agent(t, { steps: [calls(['increment', { by: 1 }]), text('one'), text('two'), text('rewound')] });
      await t.result(await t.execute(a, 'first', { sessionId }));
      await t.result(await t.send(sessionId, 'second'));
      await t.result(await resumeFromFirstStep(t, sessionId));
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'first'),
        ...incrementStep(R1, 0, { messages: 2, tools: 1 }, 1, C1, { by: 1 }, { count: 1, log: ['+1'] }),
        ...completesWithText(R1, 1, { messages: 4, tools: 1 }, 3, 'one', { increment: 1 }),
        ...newTurn(R2, 4, 'second'),
        ...completesWithText(R2, 0, { messages: 6, tools: 1 }, 5, 'two'),
        at(R3, 0).resumed(R2, true),
        ...owedStartWork(R3, 3, 'second'),
        ...completesWithText(R3, 0, { messages: 5, tools: 1 }, 4, 'rewound'),
      ],
      entries: [entered('execute', S1, R1), entered('send', S1, R2), entered('resume', S1, R3)],
      runs: [
        completedRun(R1, S1, 'start', { exitReason: 'text', output: 'one', steps: 2, state: { count: 1, log: ['+1'] } }),
        completedRun(R2, S1, 'start', { exitReason: 'text', output: 'two', steps: 1, state: { count: 1, log: ['+1'] } }),
        completedRun(R3, S1, 'resumed', { exitReason: 'text', output: 'rewound', steps: 1, state: { count: 1, log: ['+1'] } }),
      ],
      sessions: [storedSession(S1, R3, { count: 1, log: ['+1'] }, [row.user('first'), ...callRows(toolCall(C1, 'increment', { by: 1 }), { by: 1 }), row.user('second'), row.assistant('rewound')])],
    },
  },
  {
    name: 'retry/refused-entries',
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
      hooks: [...newTurn(R1, 0, 'go'), ...completesWithText(R1, 0, { messages: 2, tools: 1 }, 1, 'ok')],
      entries: [entered('execute', S1, R1), refused('retry', 'session_not_retryable'), refused('resume', 'session_not_suspended'), refused('resume', 'state_not_found')],
      runs: [completedRun(R1, S1, 'start', { exitReason: 'text', output: 'ok', steps: 1, state: INITIAL })],
      sessions: [storedSession(S1, R1, INITIAL, [row.user('go'), row.assistant('ok')])],
    },
  },
]);
