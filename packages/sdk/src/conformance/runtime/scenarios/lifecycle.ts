// The lifecycle table of the spec: how a run ends decides which terminal hooks fire.
import type { ScenarioContext } from '../context.js';
import type { HookLayer } from '../recorder.js';
import { at, C1, C2, fail, R1, R2, row, S1, storedRun, storedSession, superseded, toolCall } from '../expect.js';
import { agent, calls, type Counter, executeOnce, finish, gatedTool, INITIAL, inTopic, logs, newerExecuteWhileGated } from '../fixtures.js';
import { callRows, callSucceeds, completedRun, completesWithFinish, entered, failsInModelCall, finishRows, incrementStep, newTurn, refused, soleRunCompleted, soleRunFailed, startsCalls, supersededByFinishingRun } from '../fragments.js';
import type { RuntimeScenario } from '../scenario.js';
import type { ExpectedTrace } from '../trace.js';

/**
 * Runs an agent on a new session (input 'go', finishing with 'first' through call `finish-1`) whose
 * onAgentComplete executes a second agent on that session (input 'again', finishing with 'second'
 * through `finish-2`), which supersedes the first run after its complete hook. `layer` adds handlers
 * (and an error policy) to the first agent's layer, next to that onAgentComplete.
 */
export async function supersedeAfterComplete(t: ScenarioContext, layer: Partial<HookLayer<Counter, unknown>> = {}): Promise<void> {
  const sessionId = t.sessionId();
  const second = agent(t, { output: true, steps: [finish('second', 'finish-2')] });
  const onAgentComplete = async (): Promise<void> => void (await t.result(await t.execute(second, 'again', { sessionId })));
  const first = agent(t, { output: true, steps: [finish('first', 'finish-1')], layers: [{ ...layer, hooks: { onAgentComplete, ...layer.hooks } }] });
  await t.result(await t.execute(first, 'go', { sessionId }));
}

/**
 * The trace of {@link supersedeAfterComplete}: the first run completes (onAgentComplete), the second
 * turn runs to its own completion, then the first run fires onAgentSuperseded and ends superseded.
 */
export const supersededAfterCompleteTrace: ExpectedTrace = {
  hooks: [
    ...newTurn(R1, 0, 'go'),
    ...completesWithFinish(R1, 0, { messages: 2, tools: 2 }, 1, C1, 'first'),
    ...newTurn(R2, 3, 'again'),
    ...completesWithFinish(R2, 0, { messages: 5, tools: 2 }, 4, C2, 'second'),
    superseded(R1),
  ],
  ...supersededByFinishingRun('second', [row.user('go'), ...finishRows(C1, 'first'), row.user('again'), ...finishRows(C2, 'second')]),
};

/** The rows of the lifecycle table: completes, fails after start, terminal commit fails, superseded, superseded after complete, fails at entry. */
export const lifecycleScenarios: readonly RuntimeScenario[] = inTopic('lifecycle', [
  {
    name: 'lifecycle/completes',
    description:
      'a run that completes fires onAgentComplete and no other terminal hook (rules 8, 30, 33); the start work, each step and the __finish__ completion in order',
    run: (t) => executeOnce(t, { output: true, steps: [calls(['increment', { by: 2 }]), finish('two')] }, 'count to two'),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'count to two'),
        ...incrementStep(R1, 0, { messages: 2, tools: 2 }, 1, C1, { by: 2 }, { count: 2, log: ['+2'] }),
        ...completesWithFinish(R1, 1, { messages: 4, tools: 2 }, 3, C2, 'two', { increment: 1 }),
      ],
      ...soleRunCompleted({ exitReason: 'finish_tool', output: { answer: 'two' }, steps: 2, state: { count: 2, log: ['+2'] } }, [row.user('count to two'), ...callRows(toolCall(C1, 'increment', { by: 2 }), { by: 2 }), ...finishRows(C2, 'two')]),
    },
  },
  {
    name: 'lifecycle/fails-after-start',
    description: 'a run that fails after its start hook fires onAgentFail once, with the error code and recoverable (rules 9, 35); the committed step is kept',
    run: (t) => executeOnce(t, { output: true, steps: [calls(['increment', { by: 1 }]), { error: { status: 401, message: 'bad key' } }] }),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...incrementStep(R1, 0, { messages: 2, tools: 2 }, 1, C1, { by: 1 }, { count: 1, log: ['+1'] }),
        ...failsInModelCall(R1, 1, { messages: 4, tools: 2 }, 'provider_auth', false),
      ],
      ...soleRunFailed('provider_auth', 1, { count: 1, log: ['+1'] }, [row.user('go'), ...callRows(toolCall(C1, 'increment', { by: 1 }), { by: 1 })]),
    },
  },
  {
    name: 'lifecycle/terminal-commit-fails',
    description:
      'a completing run whose terminal commit fails fires onAgentComplete, then onAgentFail, and ends failed; the complete hook\'s writes are never persisted (rules 43, 44, 45)',
    needs: ['storeFaults'],
    async run(t) {
      const a = agent(t, { output: true, steps: [finish('done')], layers: [{ hooks: { onAgentComplete: logs('complete-write') } }] });
      t.faults().inject('terminal_commit');
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...completesWithFinish(R1, 0, { messages: 2, tools: 2 }, 1, C1, 'done'),
        at(R1, 1).state('hook', { count: 0, log: ['complete-write'] }),
        fail(R1, 1, 'state_commit_failed', true),
      ],
      ...soleRunFailed('state_commit_failed', 1, INITIAL, [row.user('go'), ...finishRows(C1, 'done')]),
    },
  },
  {
    name: 'lifecycle/superseded',
    description:
      'a run superseded by a newer execute() on its session fires onAgentSuperseded only (no complete, no fail) and persists nothing more; the newer run drives the session (rules 46, 47, 48, 49)',
    async run(t) {
      const slow = gatedTool(t, { write: (d) => void (d.count = 99) });
      await newerExecuteWhileGated(t, { output: true, tools: [slow.tool], steps: [calls(['slow', {}]), finish('a', 'finish-a')] }, slow);
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'first'),
        ...startsCalls(R1, 0, { messages: 2, tools: 2 }, 1, toolCall(C1, 'slow', {})),
        ...newTurn(R2, 1, 'second'),
        ...completesWithFinish(R2, 0, { messages: 3, tools: 2 }, 2, C2, 'b'),
        ...callSucceeds(R1, 0, toolCall(C1, 'slow', {}), [{ count: 99, log: [] }], 2, 'late'),
        superseded(R1),
      ],
      ...supersededByFinishingRun('b', [row.user('first'), row.user('second'), ...finishRows(C2, 'b')]),
    },
  },
  {
    name: 'lifecycle/superseded-after-complete',
    description:
      'a supersede that lands after onAgentComplete and before the terminal commit fires onAgentComplete, then onAgentSuperseded; the run ends superseded (rules 45, 49)',
    run: (t) => supersedeAfterComplete(t),
    expected: supersededAfterCompleteTrace,
  },
  {
    name: 'lifecycle/fails-at-entry',
    description: 'a run that fails at its run-start commit fires no hook at all and the entry rejects with a typed error; the refused entry changes nothing (rules 10, 11, 12, 34)',
    needs: ['storeFaults'],
    async run(t) {
      const sessionId = t.sessionId();
      const a = agent(t, { output: true, steps: [finish('ok')] });
      t.faults().inject('run_start');
      await t.execute(a, 'refused', { sessionId }).catch(() => undefined);
      t.note('session after the refused entry', (await t.runtime.getSession(sessionId)) !== undefined);
      await t.result(await t.execute(a, 'accepted', { sessionId }));
    },
    expected: {
      hooks: [...newTurn(R1, 0, 'accepted'), ...completesWithFinish(R1, 0, { messages: 2, tools: 2 }, 1, C1, 'ok')],
      entries: [refused('execute', 'state_commit_failed'), entered('execute', S1, R1)],
      notes: [{ label: 'session after the refused entry', value: false }],
      runs: [completedRun(R1, S1, 'start', { exitReason: 'finish_tool', output: { answer: 'ok' }, steps: 1, state: INITIAL })],
      sessions: [storedSession(S1, R1, INITIAL, [row.user('accepted'), ...finishRows(C1, 'ok')])],
    },
  },
  {
    name: 'lifecycle/fails-at-stream-claim',
    description: 'a failed stream claim is an entry failure too: no hook fires, the entry rejects, and the run is recorded failed (rule 11)',
    needs: ['storeFaults'],
    async run(t) {
      const a = agent(t, { output: true, steps: [finish('never')] });
      t.faults().inject('stream_claim');
      await t.execute(a, 'go', { sessionId: t.sessionId() }).catch(() => undefined);
    },
    expected: {
      hooks: [],
      entries: [refused('execute', 'stream_closed')],
      runs: [storedRun(R1, S1, 'start', 'failed', { error: 'stream_closed' })],
      sessions: [storedSession(S1, R1, INITIAL, [])],
    },
  },
]);
