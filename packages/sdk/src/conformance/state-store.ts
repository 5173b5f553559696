import { describe, expect, it } from 'vitest';
import { RunSupersededError } from '../errors.js';
import type { Message } from '../messages.js';
import type { BeginRunRequest, StateStore } from '../store.js';

/** How the conformance suite gets a fresh store. */
export interface StateStoreConformanceOptions {
  /** A display name for the describe block. */
  readonly name: string;
  /** A new, empty store for each test. */
  readonly create: () => StateStore | Promise<StateStore>;
  /** Called after each test with the store it created. */
  readonly destroy?: (store: StateStore) => void | Promise<void>;
}

function begin(sessionId: string, runId: string, input = 'hello'): BeginRunRequest {
  const message: Message = { role: 'user', content: input };
  return { sessionId, runId, agentType: 'agent', signal: 'start', initialState: { n: 0 }, newTurn: { turnId: `turn-${runId}`, input: [message] }, startedAt: Date.now() };
}

/**
 * The conformance suite every {@link StateStore} must pass (call it from the store's tests; it uses
 * vitest). It checks the K1–K5 commit contract: atomic, run-fenced commits, checkpoints, and reads
 * that see only whole commits.
 */
export function runStateStoreConformance(options: StateStoreConformanceOptions): void {
  describe(`StateStore conformance: ${options.name}`, () => {
    async function withStore(fn: (store: StateStore) => Promise<void>): Promise<void> {
      const store = await options.create();
      try {
        await fn(store);
      } finally {
        await options.destroy?.(store);
      }
    }

    it('K1 creates the session with its initial state, records the run as running and the turn as not started', () =>
      withStore(async (store) => {
        const { session } = await store.beginRun(begin('s1', 'r1'));
        expect(session).toMatchObject({ sessionId: 's1', currentRunId: 'r1', state: { n: 0 }, messages: [], stepCount: 0 });
        expect(session.turn).toMatchObject({ turnId: 'turn-r1', firstRunId: 'r1', startCommitted: false, input: [{ role: 'user', content: 'hello' }] });
        expect(await store.getRun('r1')).toMatchObject({ status: 'running', sessionId: 's1', signal: 'start' });
      }));

    it('K2 and K3 append rows and state atomically and write checkpoints that can be listed and loaded', () =>
      withStore(async (store) => {
        await store.beginRun(begin('s1', 'r1'));
        await store.commit({ sessionId: 's1', runId: 'r1', kind: 'turn_start', appendMessages: [{ role: 'user', content: 'hello' }], checkpoint: 'turn_start', committedAt: 1 });
        const receipt = await store.commit({
          sessionId: 's1',
          runId: 'r1',
          kind: 'step',
          stepIndex: 0,
          appendMessages: [{ role: 'assistant', content: 'hi' }],
          state: { n: 1 },
          checkpoint: 'step',
          committedAt: 2,
        });
        expect(receipt.messageCount).toBe(2);
        const session = await store.loadSession('s1');
        expect(session).toMatchObject({ state: { n: 1 }, stepCount: 1 });
        expect(session?.turn?.startCommitted).toBe(true);
        expect(session?.turn?.inputMessageIndex).toBe(0);
        const checkpoints = await store.listCheckpoints('s1');
        expect(checkpoints.map((c) => [c.kind, c.messageCount, c.stepCount])).toEqual([
          ['turn_start', 1, 0],
          ['step', 2, 1],
        ]);
        const first = await store.loadCheckpoint('s1', checkpoints[0]!.checkpointId);
        expect(first).toMatchObject({ state: { n: 0 }, messages: [{ role: 'user', content: 'hello' }] });
      }));

    it('a step (runId, stepIndex) is committed at most once', () =>
      withStore(async (store) => {
        await store.beginRun(begin('s1', 'r1'));
        await store.commit({ sessionId: 's1', runId: 'r1', kind: 'step', stepIndex: 0, appendMessages: [{ role: 'assistant', content: 'a' }], committedAt: 1 });
        await expect(
          store.commit({ sessionId: 's1', runId: 'r1', kind: 'step', stepIndex: 0, appendMessages: [{ role: 'assistant', content: 'b' }], committedAt: 2 }),
        ).rejects.toThrow();
        expect((await store.loadSession('s1'))?.messages).toEqual([{ role: 'assistant', content: 'a' }]);
      }));

    it('the supersede fence: a commit from a run that is no longer current is refused with state_run_superseded and applies nothing', () =>
      withStore(async (store) => {
        await store.beginRun(begin('s1', 'r1'));
        const second = await store.beginRun(begin('s1', 'r2', 'again'));
        expect(second.supersededRunId).toBe('r1');
        expect(await store.getRun('r1')).toMatchObject({ status: 'superseded' });
        const refused = store.commit({ sessionId: 's1', runId: 'r1', kind: 'step', stepIndex: 0, state: { n: 99 }, appendMessages: [{ role: 'assistant', content: 'x' }], committedAt: 1 });
        await expect(refused).rejects.toSatisfy((e: unknown) => RunSupersededError.isInstance(e) && e.code === 'state_run_superseded');
        const session = await store.loadSession('s1');
        expect(session).toMatchObject({ state: { n: 0 }, messages: [], currentRunId: 'r2' });
      }));

    it('K5 records the terminal status, output and error of a run', () =>
      withStore(async (store) => {
        await store.beginRun(begin('s1', 'r1'));
        await store.commit({ sessionId: 's1', runId: 'r1', kind: 'terminal', runStatus: 'completed', output: { ok: true }, checkpoint: 'state', committedAt: 5 });
        expect(await store.getRun('r1')).toMatchObject({ status: 'completed', output: { ok: true }, endedAt: 5 });
        expect((await store.listCheckpoints('s1')).at(-1)?.kind).toBe('state');
      }));

    it('a snapshot read before a commit does not change when the commit lands', () =>
      withStore(async (store) => {
        await store.beginRun(begin('s1', 'r1'));
        const before = await store.loadSession('s1');
        await store.commit({ sessionId: 's1', runId: 'r1', kind: 'turn_start', appendMessages: [{ role: 'user', content: 'hello' }], state: { n: 3 }, committedAt: 1 });
        expect(before?.messages).toEqual([]);
        expect(before?.state).toEqual({ n: 0 });
      }));

    it('unknown sessions and runs read as undefined', () =>
      withStore(async (store) => {
        expect(await store.loadSession('nope')).toBeUndefined();
        expect(await store.getRun('nope')).toBeUndefined();
        expect(await store.listCheckpoints('nope')).toEqual([]);
        expect(await store.loadCheckpoint('nope', 'cp')).toBeUndefined();
      }));
  });
}
