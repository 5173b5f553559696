// recover(): a run whose process died continues from its last commit, pairs its hooks with the start
// that fired in the dead process, and re-runs only the start work its turn still owes.
import type { ScenarioContext } from '../context.js';
import type { CrashPoint } from '../factory.js';
import { at, C1, C2, C3, R1, row, S1, storedSession, toolCall } from '../expect.js';
import { agent, calls, finish, INITIAL, inTopic, logs, type ScenarioAgentOptions } from '../fixtures.js';
import { callRows, completedRun, completesWithFinish, type Completion, entered, finishRows, incrementStep, newTurn, owedStartWork, type ScenarioEnd } from '../fragments.js';
import type { RuntimeScenario } from '../scenario.js';
import type { TraceMessage } from '../trace.js';

/**
 * Executes the agent built from `options` with input 'go' on a new session in a doomed process that
 * dies at `dieAt`, then recovers the session with the same agent and waits for the recovered run.
 */
async function recoverAfterCrash(t: ScenarioContext, dieAt: CrashPoint, options: ScenarioAgentOptions): Promise<void> {
  const sessionId = t.sessionId();
  const a = agent(t, options);
  const doomed = await t.crashes().startDoomed(dieAt);
  await t.executeOn(doomed.runtime, a, 'go', { sessionId });
  await doomed.died;
  const [handle] = await t.recover({ agents: [a] });
  if (handle) await t.result(handle);
}

/** The end of a recovery scenario: R1, executed on S1 and recovered, completed with `c`; the session holds `c.state` and `transcript`. */
function recoveredAndCompleted(c: Completion, transcript: readonly TraceMessage[]): ScenarioEnd {
  return { entries: [entered('execute', S1, R1), entered('recover', S1, R1)], runs: [completedRun(R1, S1, 'start', c)], sessions: [storedSession(S1, R1, c.state, transcript)] };
}

/** Runs continued by recover() after their process died (capability crashRecovery). */
export const recoveryScenarios: readonly RuntimeScenario[] = inTopic('recovery', [
  {
    name: 'recover/died-in-start-work',
    description:
      'a process that died before its turn\'s start commit: the recovered run does not fire its start signal again but owes the start work, so onAgentStart(startSignal false) and onMessage for the input fire again (rules 13, 21, 22)',
    needs: ['crashRecovery'],
    run: (t) => recoverAfterCrash(t, 'turn_start', { output: true, steps: [finish('done')] }),
    expected: {
      hooks: [...newTurn(R1, 0, 'go'), ...owedStartWork(R1, 0, 'go'), ...completesWithFinish(R1, 0, { messages: 2, tools: 2 }, 1, C1, 'done')],
      ...recoveredAndCompleted({ exitReason: 'finish_tool', output: { answer: 'done' }, steps: 1, state: INITIAL }, [row.user('go'), ...finishRows(C1, 'done')]),
    },
  },
  {
    name: 'recover/died-mid-step',
    description:
      'a process that died before its first step commit: the recovered run keeps the committed start work (no start hook again) and redoes the uncommitted step; the dead step\'s writes are lost (rules 23, 125)',
    needs: ['crashRecovery'],
    run: (t) => recoverAfterCrash(t, 'step', { output: true, steps: [calls(['increment', { by: 1 }]), calls(['increment', { by: 1 }]), finish('done')] }),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...incrementStep(R1, 0, { messages: 2, tools: 2 }, 1, C1, { by: 1 }, { count: 1, log: ['+1'] }),
        ...incrementStep(R1, 0, { messages: 2, tools: 2 }, 1, C2, { by: 1 }, { count: 1, log: ['+1'] }),
        ...completesWithFinish(R1, 1, { messages: 4, tools: 2 }, 3, C3, 'done', { increment: 1 }),
      ],
      ...recoveredAndCompleted({ exitReason: 'finish_tool', output: { answer: 'done' }, steps: 2, state: { count: 1, log: ['+1'] } }, [row.user('go'), ...callRows(toolCall(C2, 'increment', { by: 1 }), { by: 1 }), ...finishRows(C3, 'done')]),
    },
  },
  {
    name: 'recover/died-before-terminal-commit',
    description:
      'a process that died after onAgentComplete and before its terminal commit: the recovered run replays the hook\'s recorded outcome (its writes included) instead of firing it again, then commits (rules 13, 36, 39)',
    needs: ['crashRecovery'],
    run: (t) => recoverAfterCrash(t, 'terminal', { output: true, steps: [finish('done')], layers: [{ hooks: { onAgentComplete: logs('complete') } }] }),
    expected: {
      hooks: [...newTurn(R1, 0, 'go'), ...completesWithFinish(R1, 0, { messages: 2, tools: 2 }, 1, C1, 'done'), at(R1, 1).state('hook', { count: 0, log: ['complete'] })],
      ...recoveredAndCompleted({ exitReason: 'finish_tool', output: { answer: 'done' }, steps: 1, state: { count: 0, log: ['complete'] } }, [row.user('go'), ...finishRows(C1, 'done')]),
    },
  },
]);
