import { describe, expect, it } from 'vitest';
import { AgentError, RunSupersededError } from '../errors.js';
import type { Message } from '../messages.js';
import type { Commit, JournalEntry, JournalKind, StateStore, SuspensionRecord } from '../store.js';
import { GENESIS_CHECKPOINT } from '../store.js';
import type { UsageEntry, UsageStore } from '../usage.js';
import { rollupUsage } from '../usage.js';
import { beginRequest as begin, expectCode, llmUsageEntry, pairs, rows, T0 } from './fixtures.js';

/** How the conformance suite gets fresh stores. Only `name` and `create` are required. */
export interface StateStoreConformanceOptions {
  /** A display name for the describe block. */
  readonly name: string;
  /** A new, empty store (an empty database) for each test. */
  readonly create: () => StateStore | Promise<StateStore>;
  /** Called after each test with the store `create` returned (close it, drop its database). */
  readonly destroy?: (store: StateStore) => void | Promise<void>;
  /**
   * A second instance on the SAME database as `first` (another connection or pool), used by the fence
   * and concurrency tests. Without it those tests run both sides on `first`.
   */
  readonly createSecond?: (first: StateStore) => StateStore | Promise<StateStore>;
  /** Called after each test with the instance `createSecond` returned, before `destroy(first)`. */
  readonly destroySecond?: (second: StateStore) => void | Promise<void>;
  /**
   * For durable stores: marks the database behind `first` as written by a newer schema version, then
   * opens it again and resolves with the new instance. The suite expects the promise to reject with
   * an AgentError `state_schema_too_new`.
   */
  readonly openNewerSchema?: (first: StateStore) => Promise<unknown>;
  /** False when the store is not also a UsageStore (default true): the atomic-usage tests are then not registered. */
  readonly usage?: boolean;
  /** Timeout of the heavy tests (large payloads, concurrency), in ms; 120 s by default. */
  readonly heavyTimeoutMs?: number;
}


function journal(runId: string, epoch: number, stepIndex: number, key: string, data: unknown, kind: JournalKind = 'call_result'): JournalEntry {
  return { runId, epoch, stepIndex, kind, key, data, at: T0 + stepIndex };
}

function step(sessionId: string, runId: string, stepIndex: number, extra: Partial<Commit> = {}): Commit {
  return { sessionId, runId, epoch: 1, kind: 'step', stepIndex, committedAt: T0 + stepIndex, ...extra };
}

function isSuperseded(e: unknown): boolean {
  return RunSupersededError.isInstance(e) && e.code === 'state_run_superseded';
}

function asUsageStore(store: StateStore): StateStore & UsageStore {
  const candidate = store as Partial<UsageStore>;
  expect(typeof candidate.record, 'the store must also implement UsageStore (or pass usage: false)').toBe('function');
  expect(typeof candidate.getRollup).toBe('function');
  return store as StateStore & UsageStore;
}

/** A varied, deterministic conversation row (every role, tool calls, JSON tool results, unicode). */
function varied(k: number): Message {
  switch (k % 4) {
    case 0:
      return { role: 'user', content: `u${k} héllo ✓ 🚀` };
    case 1:
      return { role: 'assistant', content: `a${k}`, toolCalls: [{ id: `c${k}`, name: 'lookup', arguments: { q: k, deep: { list: [1, 'two', null] } } }] };
    case 2:
      return { role: 'tool', toolCallId: `c${k - 1}`, toolName: 'lookup', content: { k, ok: true, text: 'x'.repeat(k % 50) } };
    default:
      return { role: 'tool', toolCallId: `c${k}`, toolName: 'lookup', content: `failed ${k}`, isError: true };
  }
}

function llmUsage(sessionId: string, runId: string, stepIndex: number, prompt: number, success = true): UsageEntry {
  return llmUsageEntry(sessionId, runId, stepIndex, { prompt, completion: 2, cached: 1 }, success);
}

function toolUsage(sessionId: string, runId: string, stepIndex: number, toolName: string, success = true): UsageEntry {
  return { kind: 'tool', sessionId, runId, stepIndex, toolName, toolCallId: `call-${stepIndex}`, success, durationMs: 3, at: T0 };
}

/**
 * The conformance suite every {@link StateStore} must pass (call it from the store's tests; it uses
 * vitest). It checks the K1–K5 commit contract: atomic commits fenced by run id and epoch, checkpoints
 * and rewinds, suspension records, leases and recovery claims, the journal, usage recorded with its
 * commit, large payloads (1 MB state, 10,000 messages), and reads that see only whole commits — also
 * across two instances on the same database when `createSecond` is given. The true two-process tests
 * live in each durable store's package.
 */
export function runStateStoreConformance(options: StateStoreConformanceOptions): void {
  const heavy = options.heavyTimeoutMs ?? 120_000;

  const { one: withStore, two: withStores } = pairs<StateStore>(options);

  describe(`StateStore conformance: ${options.name}`, () => {
    describe('deleting a session', () => {
      it('deleteSession refuses while the session\'s run is running, then deletes the session, its runs, journal, checkpoints and usage, and leaves other sessions alone', withStore(async (store) => {
        await store.beginRun(begin('s1', 'r1'));
        await store.beginRun(begin('s2', 'r2'));
        await store.appendJournal(journal('r1', 1, 0, 'k0', { v: 1 }));
        await store.commit(step('s1', 'r1', 0, { appendMessages: [{ role: 'assistant', content: 'a' }], state: { n: 1 }, checkpoint: 'step' }));
        const refused = await store.deleteSession('s1').then(() => undefined, (e: unknown) => e);
        expect(AgentError.isInstance(refused) && refused.code).toBe('session_running');
        expect((await store.loadSession('s1'))?.messages).toHaveLength(1);
        await store.commit({ sessionId: 's1', runId: 'r1', epoch: 1, kind: 'terminal', runStatus: 'completed', committedAt: T0 + 9 });
        expect(await store.deleteSession('s1')).toBe(true);
        expect(await store.loadSession('s1')).toBeUndefined();
        expect(await store.getRun('r1')).toBeUndefined();
        expect(await store.listCheckpoints('s1')).toEqual([]);
        expect(await store.loadJournal('r1')).toEqual([]);
        expect(await store.deleteSession('s1')).toBe(false);
        expect((await store.loadSession('s2'))?.currentRunId).toBe('r2');
        // The id is free again: a new session starts from scratch.
        const { session } = await store.beginRun(begin('s1', 'r3'));
        expect(session).toMatchObject({ sessionId: 's1', messages: [], stepCount: 0 });
      }));
    });

    describe('commits (K1–K5)', () => {
      it('K1 creates the session with its initial state, records the run as running and the turn as not started', withStore(async (store) => {
        const { session, lease, supersededRunId } = await store.beginRun(begin('s1', 'r1', { startedAt: T0, leaseMs: 1_000, leaseOwner: 'p1' }));
        expect(session).toMatchObject({ sessionId: 's1', currentRunId: 'r1', state: { n: 0 }, messages: [], stepCount: 0, resumeCount: 0 });
        expect(session.turn).toMatchObject({ turnId: 'turn-r1', firstRunId: 'r1', startCommitted: false, input: [{ role: 'user', content: 'hello' }] });
        expect(supersededRunId).toBeUndefined();
        expect(lease).toEqual({ runId: 'r1', epoch: 1, owner: 'p1', expiresAt: T0 + 1_000 });
        expect(await store.getRun('r1')).toMatchObject({
          runId: 'r1',
          sessionId: 's1',
          turnId: 'turn-r1',
          agentType: 'agent',
          status: 'running',
          signal: 'start',
          startedAt: T0,
          stepCount: 0,
          epoch: 1,
          leaseOwner: 'p1',
          leaseExpiresAt: T0 + 1_000,
          options: { input: 'hello' },
        });
      }));

      it('K1 keeps every field of the run options and the parent session', withStore(async (store) => {
        const runOptions = { input: 'hi', userId: 'u1', tags: ['a', 'b'], metadata: { team: 'x' }, parentSessionId: 'parent' };
        const { session } = await store.beginRun({ ...begin('child', 'r1'), parentSessionId: 'parent', options: runOptions });
        expect(session.parentSessionId).toBe('parent');
        expect((await store.getRun('r1'))?.options).toEqual(runOptions);
        expect((await store.loadSession('child'))?.parentSessionId).toBe('parent');
      }));

      it('K2 and K3 append rows and state atomically and write checkpoints that can be listed and loaded', withStore(async (store) => {
        await store.beginRun(begin('s1', 'r1'));
        await store.commit({ sessionId: 's1', runId: 'r1', epoch: 1, kind: 'turn_start', appendMessages: [{ role: 'user', content: 'hello' }], checkpoint: 'turn_start', committedAt: 1 });
        const receipt = await store.commit({
          sessionId: 's1',
          runId: 'r1',
          epoch: 1,
          kind: 'step',
          stepIndex: 0,
          appendMessages: [{ role: 'assistant', content: 'hi' }],
          state: { n: 1 },
          checkpoint: 'step',
          committedAt: 2,
        });
        expect(receipt.messageCount).toBe(2);
        expect(receipt.checkpointId).toEqual(expect.any(String));
        const session = await store.loadSession('s1');
        expect(session).toMatchObject({ state: { n: 1 }, stepCount: 1 });
        expect(session?.turn?.startCommitted).toBe(true);
        expect(session?.turn?.inputMessageIndex).toBe(0);
        expect((await store.getRun('r1'))?.stepCount).toBe(1);
        const checkpoints = await store.listCheckpoints('s1');
        expect(checkpoints.map((c) => [c.kind, c.messageCount, c.stepCount, c.runId, c.sessionId])).toEqual([
          ['turn_start', 1, 0, 'r1', 's1'],
          ['step', 2, 1, 'r1', 's1'],
        ]);
        expect(checkpoints[1]?.checkpointId).toBe(receipt.checkpointId);
        expect(checkpoints[1]?.createdAt).toBe(2);
        const first = await store.loadCheckpoint('s1', checkpoints[0]!.checkpointId);
        expect(first).toMatchObject({ kind: 'turn_start', state: { n: 0 }, messages: [{ role: 'user', content: 'hello' }] });
        const second = await store.loadCheckpoint('s1', checkpoints[1]!.checkpointId);
        expect(second).toMatchObject({ kind: 'step', state: { n: 1 }, messages: [{ role: 'user', content: 'hello' }, { role: 'assistant', content: 'hi' }] });
      }));

      it('the version grows by one per begin and per commit, and a receipt reports it', withStore(async (store) => {
        const { session } = await store.beginRun(begin('s1', 'r1'));
        const r1 = await store.commit(step('s1', 'r1', 0, { appendMessages: rows('a', 2) }));
        expect(r1).toMatchObject({ version: session.version + 1, messageCount: 2 });
        expect(r1.checkpointId).toBeUndefined();
        const r2 = await store.commit(step('s1', 'r1', 1));
        expect(r2).toMatchObject({ version: session.version + 2, messageCount: 2 });
        expect((await store.loadSession('s1'))?.version).toBe(session.version + 2);
        const again = await store.beginRun(begin('s1', 'r2'));
        expect(again.session.version).toBe(session.version + 3);
      }));

      it('a step (runId, stepIndex) is committed at most once, and a step commit needs an index', withStore(async (store) => {
        await store.beginRun(begin('s1', 'r1'));
        await store.commit({ sessionId: 's1', runId: 'r1', epoch: 1, kind: 'step', stepIndex: 0, appendMessages: [{ role: 'assistant', content: 'a' }], committedAt: 1 });
        await expect(
          store.commit({ sessionId: 's1', runId: 'r1', epoch: 1, kind: 'step', stepIndex: 0, appendMessages: [{ role: 'assistant', content: 'b' }], state: { n: 9 }, committedAt: 2 }),
        ).rejects.toThrow();
        await expect(store.commit({ sessionId: 's1', runId: 'r1', epoch: 1, kind: 'step', appendMessages: [{ role: 'assistant', content: 'c' }], committedAt: 3 })).rejects.toThrow();
        const session = await store.loadSession('s1');
        expect(session?.messages).toEqual([{ role: 'assistant', content: 'a' }]);
        expect(session).toMatchObject({ state: { n: 0 }, stepCount: 1 });
      }));

      it('the supersede fence: a commit from a run that is no longer current is refused with state_run_superseded and applies nothing', withStore(async (store) => {
        await store.beginRun(begin('s1', 'r1'));
        const second = await store.beginRun(begin('s1', 'r2', { input: 'again' }));
        expect(second.supersededRunId).toBe('r1');
        expect(await store.getRun('r1')).toMatchObject({ status: 'superseded' });
        const refused = store.commit({ sessionId: 's1', runId: 'r1', epoch: 1, kind: 'step', stepIndex: 0, state: { n: 99 }, appendMessages: [{ role: 'assistant', content: 'x' }], checkpoint: 'step', committedAt: 1 });
        await expect(refused).rejects.toSatisfy(isSuperseded);
        const session = await store.loadSession('s1');
        expect(session).toMatchObject({ state: { n: 0 }, messages: [], currentRunId: 'r2', stepCount: 0 });
        expect(await store.listCheckpoints('s1')).toEqual([]);
        expect(await store.getRun('r1')).toMatchObject({ status: 'superseded', stepCount: 0 });
      }));

      it('a commit to an unknown session is refused with an AgentError', withStore(async (store) => {
        await expect(store.commit(step('nope', 'r1', 0))).rejects.toSatisfy((e: unknown) => AgentError.isInstance(e));
        expect(await store.loadSession('nope')).toBeUndefined();
      }));

      it('K1 without a new turn continues the current turn; a resumed start counts a resume; a new session needs a turn', withStore(async (store) => {
        await expect(store.beginRun(begin('s0', 'r0', { newTurn: false }))).rejects.toSatisfy((e: unknown) => AgentError.isInstance(e));
        await store.beginRun(begin('s1', 'r1'));
        await store.commit({ sessionId: 's1', runId: 'r1', epoch: 1, kind: 'turn_start', appendMessages: [{ role: 'user', content: 'hello' }], committedAt: 1 });
        await store.commit({ sessionId: 's1', runId: 'r1', epoch: 1, kind: 'suspension', runStatus: 'suspended', state: { n: 4 }, committedAt: 2 });
        expect(await store.getRun('r1')).toMatchObject({ status: 'suspended' });
        const resumed = await store.beginRun(begin('s1', 'r2', { newTurn: false, signal: 'resumed' }));
        expect(resumed.supersededRunId).toBeUndefined();
        expect(resumed.session).toMatchObject({ currentRunId: 'r2', resumeCount: 1, state: { n: 4 }, messages: [{ role: 'user', content: 'hello' }] });
        expect(resumed.session.turn).toMatchObject({ turnId: 'turn-r1', firstRunId: 'r1', startCommitted: true, inputMessageIndex: 0 });
        expect(await store.getRun('r2')).toMatchObject({ turnId: 'turn-r1', signal: 'resumed', status: 'running' });
        expect(await store.getRun('r1')).toMatchObject({ status: 'suspended' });
      }));

      it('K5 records the terminal status, output and error of a run, and the run writes nothing more', withStore(async (store) => {
        await store.beginRun(begin('s1', 'r1'));
        await store.commit({ sessionId: 's1', runId: 'r1', epoch: 1, kind: 'terminal', runStatus: 'completed', output: { ok: true, list: [1, 'a'] }, checkpoint: 'state', committedAt: 5 });
        expect(await store.getRun('r1')).toMatchObject({ status: 'completed', output: { ok: true, list: [1, 'a'] }, endedAt: 5 });
        expect((await store.listCheckpoints('s1')).at(-1)?.kind).toBe('state');
        await expect(store.commit(step('s1', 'r1', 0, { appendMessages: rows('late', 1) }))).rejects.toSatisfy(isSuperseded);
        expect((await store.loadSession('s1'))?.messages).toEqual([]);

        await store.beginRun(begin('s1', 'r2'));
        const error = { code: 'provider_auth', layer: 'provider', severity: 'fatal', message: 'bad key', retryable: false, hint: 'check', details: { status: 401 } } as const;
        await store.commit({ sessionId: 's1', runId: 'r2', epoch: 1, kind: 'terminal', runStatus: 'failed', error, committedAt: 6 });
        expect(await store.getRun('r2')).toMatchObject({ status: 'failed', error, endedAt: 6 });
      }));

      it('a suspension commit stores its boundary on the run; a resume commit appends rows without counting a step', withStore(async (store) => {
        await store.beginRun(begin('s1', 'r1'));
        const suspension: SuspensionRecord = {
          reason: 'client_tool',
          pending: [{ toolCallId: 'c1', toolName: 'ask', input: { q: 'ok?' }, kind: 'client' }],
          stepIndex: 0,
          suspendedAt: T0,
        };
        await store.commit(step('s1', 'r1', 0, { appendMessages: rows('s0', 1) }));
        await store.commit({ sessionId: 's1', runId: 'r1', epoch: 1, kind: 'suspension', runStatus: 'suspended', suspension, checkpoint: 'state', committedAt: T0 + 1 });
        expect(await store.getRun('r1')).toMatchObject({ status: 'suspended', suspension, stepCount: 1 });
        await store.beginRun(begin('s1', 'r2', { newTurn: false, signal: 'resumed' }));
        expect((await store.getRun('r2'))?.suspension).toBeUndefined();
        const receipt = await store.commit({ sessionId: 's1', runId: 'r2', epoch: 1, kind: 'resume', appendMessages: [{ role: 'tool', toolCallId: 'c1', toolName: 'ask', content: 'yes' }], committedAt: T0 + 2 });
        expect(receipt.messageCount).toBe(2);
        expect(await store.loadSession('s1')).toMatchObject({ stepCount: 1, messages: [...rows('s0', 1), { role: 'tool', toolCallId: 'c1', toolName: 'ask', content: 'yes' }] });
        expect((await store.getRun('r2'))?.stepCount).toBe(0);
      }));

      it('a snapshot read before a commit does not change when the commit lands', withStore(async (store) => {
        await store.beginRun(begin('s1', 'r1'));
        const before = await store.loadSession('s1');
        await store.commit({ sessionId: 's1', runId: 'r1', epoch: 1, kind: 'turn_start', appendMessages: [{ role: 'user', content: 'hello' }], state: { n: 3 }, committedAt: 1 });
        expect(before?.messages).toEqual([]);
        expect(before?.state).toEqual({ n: 0 });
      }));

      it('sessions are independent, and a checkpoint belongs to its session', withStore(async (store) => {
        await store.beginRun(begin('s1', 'r1'));
        await store.beginRun(begin('s2', 'r2'));
        const a = await store.commit(step('s1', 'r1', 0, { appendMessages: rows('one', 1), state: { n: 1 }, checkpoint: 'step' }));
        const b = await store.commit(step('s2', 'r2', 0, { appendMessages: rows('two', 2), state: { n: 2 }, checkpoint: 'step' }));
        expect(a.checkpointId).not.toBe(b.checkpointId);
        expect(await store.loadSession('s1')).toMatchObject({ messages: rows('one', 1), state: { n: 1 }, currentRunId: 'r1' });
        expect(await store.loadSession('s2')).toMatchObject({ messages: rows('two', 2), state: { n: 2 }, currentRunId: 'r2' });
        expect(await store.loadCheckpoint('s2', a.checkpointId!)).toBeUndefined();
        expect((await store.loadCheckpoint('s2', b.checkpointId!))?.messages).toEqual(rows('two', 2));
      }));

      it('unknown sessions and runs read as undefined', withStore(async (store) => {
        expect(await store.loadSession('nope')).toBeUndefined();
        expect(await store.getRun('nope')).toBeUndefined();
        expect(await store.listCheckpoints('nope')).toEqual([]);
        expect(await store.loadCheckpoint('nope', 'cp')).toBeUndefined();
        expect(await store.loadJournal('nope')).toEqual([]);
      }));
    });

    describe('rewind (K1 with restoreCheckpointId)', () => {
      /** A session with a turn start, two checkpointed steps and a completed run. */
      async function twoSteps(store: StateStore): Promise<{ turnStart: string; step0: string; step1: string }> {
        await store.beginRun(begin('s1', 'r1'));
        const k2 = await store.commit({ sessionId: 's1', runId: 'r1', epoch: 1, kind: 'turn_start', appendMessages: [{ role: 'user', content: 'hello' }], checkpoint: 'turn_start', committedAt: 1 });
        const k3a = await store.commit(step('s1', 'r1', 0, { appendMessages: rows('a', 2), state: { n: 1 }, checkpoint: 'step' }));
        const k3b = await store.commit(step('s1', 'r1', 1, { appendMessages: rows('b', 2), state: { n: 2 }, checkpoint: 'step' }));
        await store.commit({ sessionId: 's1', runId: 'r1', epoch: 1, kind: 'terminal', runStatus: 'completed', committedAt: 9 });
        return { turnStart: k2.checkpointId!, step0: k3a.checkpointId!, step1: k3b.checkpointId! };
      }

      it('restores a checkpoint\'s rows and state in the run\'s K1, drops the later checkpoints, and the session goes on from there', withStore(async (store) => {
        const cps = await twoSteps(store);
        const before = await store.loadSession('s1');
        const { session } = await store.beginRun({ ...begin('s1', 'r2', { newTurn: false, signal: 'retry' }), restoreCheckpointId: cps.step0 });
        expect(session).toMatchObject({ currentRunId: 'r2', state: { n: 1 }, messages: [{ role: 'user', content: 'hello' }, ...rows('a', 2)] });
        expect(session.version).toBeGreaterThan(before!.version);
        expect(session.stepCount).toBe(before!.stepCount);
        expect(session.turn).toMatchObject({ startCommitted: true, inputMessageIndex: 0 });
        expect((await store.listCheckpoints('s1')).map((c) => c.checkpointId)).toEqual([cps.turnStart, cps.step0]);
        expect(await store.loadCheckpoint('s1', cps.step1)).toBeUndefined();
        const receipt = await store.commit(step('s1', 'r2', 0, { appendMessages: rows('c', 1), checkpoint: 'step' }));
        expect(receipt.messageCount).toBe(4);
        const after = await store.loadSession('s1');
        expect(after).toMatchObject({ state: { n: 1 }, messages: [{ role: 'user', content: 'hello' }, ...rows('a', 2), ...rows('c', 1)] });
        expect((await store.loadCheckpoint('s1', receipt.checkpointId!))?.messages).toEqual(after?.messages);
        expect((await store.listCheckpoints('s1')).map((c) => c.messageCount)).toEqual([1, 3, 4]);
      }));

      it('a rewind to before the turn\'s input rows discards its start commit; genesis restores the initial state and an empty conversation', withStore(async (store) => {
        const cps = await twoSteps(store);
        const toTurnStart = await store.beginRun({ ...begin('s1', 'r2', { newTurn: false, signal: 'retry' }), restoreCheckpointId: cps.turnStart });
        expect(toTurnStart.session).toMatchObject({ messages: [{ role: 'user', content: 'hello' }], state: { n: 0 } });
        expect(toTurnStart.session.turn).toMatchObject({ startCommitted: true, inputMessageIndex: 0 });
        expect(toTurnStart.supersededRunId).toBeUndefined();
        const toGenesis = await store.beginRun({ ...begin('s1', 'r3', { newTurn: false, signal: 'retry' }), restoreCheckpointId: GENESIS_CHECKPOINT });
        expect(toGenesis.supersededRunId).toBe('r2');
        expect(toGenesis.session).toMatchObject({ messages: [], state: { n: 0 } });
        expect(toGenesis.session.turn?.startCommitted).toBe(false);
        expect(toGenesis.session.turn?.inputMessageIndex).toBeUndefined();
        expect(await store.listCheckpoints('s1')).toEqual([]);
        await store.commit({ sessionId: 's1', runId: 'r3', epoch: 1, kind: 'turn_start', appendMessages: [{ role: 'user', content: 'hello' }], committedAt: 20 });
        expect(await store.loadSession('s1')).toMatchObject({ messages: [{ role: 'user', content: 'hello' }], turn: { startCommitted: true, inputMessageIndex: 0 } });
      }));

      it('an unknown checkpoint is refused with state_not_found and changes nothing', withStore(async (store) => {
        await twoSteps(store);
        const before = await store.loadSession('s1');
        await expectCode(store.beginRun({ ...begin('s1', 'r2', { newTurn: false }), restoreCheckpointId: 'cp_does_not_exist' }), 'state_not_found');
        expect(await store.loadSession('s1')).toEqual(before);
        expect(await store.getRun('r2')).toBeUndefined();
      }));
    });

    describe('K1 preconditions', () => {
      it('a K1 whose expect does not hold is refused with state_conflict and writes nothing; one that holds begins the run', withStore(async (store) => {
        await store.beginRun(begin('s1', 'r1'));
        const before = await store.loadSession('s1');
        await expectCode(store.beginRun({ ...begin('s1', 'r2', { newTurn: false }), expect: { currentRunId: 'r1', status: 'suspended' } }), 'state_conflict');
        await expectCode(store.beginRun({ ...begin('s1', 'r2', { newTurn: false }), expect: { currentRunId: 'other', status: 'running' } }), 'state_conflict');
        expect(await store.loadSession('s1')).toEqual(before);
        expect(await store.getRun('r2')).toBeUndefined();
        const { session } = await store.beginRun({ ...begin('s1', 'r3', { newTurn: false }), expect: { currentRunId: 'r1', status: 'running' } });
        expect(session.currentRunId).toBe('r3');
      }));
    });

    describe('leases and recovery', () => {
      it('renewLease extends the lease of the current epoch', withStore(async (store) => {
        await store.beginRun(begin('s1', 'r1', { startedAt: T0, leaseMs: 1_000, leaseOwner: 'p1' }));
        const lease = await store.renewLease('r1', 1, 5_000, T0 + 500);
        expect(lease).toEqual({ runId: 'r1', epoch: 1, owner: 'p1', expiresAt: T0 + 5_500 });
        expect(await store.getRun('r1')).toMatchObject({ leaseExpiresAt: T0 + 5_500, epoch: 1, status: 'running' });
        expect(await store.listRecoverable(T0 + 2_000)).toEqual([]);
        expect((await store.listRecoverable(T0 + 6_000)).map((r) => r.runId)).toEqual(['r1']);
      }));

      it('renewLease, commit and appendJournal from a superseded run are refused with state_run_superseded and apply nothing', withStores(async ({ first, second }) => {
        await first.beginRun(begin('s1', 'r1', { startedAt: T0, leaseMs: 1_000 }));
        await first.appendJournal(journal('r1', 1, 0, 'k0', { v: 0 }));
        await second.beginRun(begin('s1', 'r2', { startedAt: T0 + 10, leaseMs: 1_000 }));
        await expect(first.renewLease('r1', 1, 5_000, T0 + 20)).rejects.toSatisfy(isSuperseded);
        await expect(first.commit(step('s1', 'r1', 0, { appendMessages: rows('x', 1), state: { n: 9 }, checkpoint: 'step' }))).rejects.toSatisfy(isSuperseded);
        await expect(first.appendJournal(journal('r1', 1, 0, 'k1', { v: 1 }))).rejects.toSatisfy(isSuperseded);
        expect(await first.getRun('r1')).toMatchObject({ status: 'superseded', leaseExpiresAt: T0 + 1_000, stepCount: 0 });
        expect(await second.loadSession('s1')).toMatchObject({ currentRunId: 'r2', state: { n: 0 }, messages: [], stepCount: 0 });
        expect(await second.listCheckpoints('s1')).toEqual([]);
        expect(await second.loadJournal('r1')).toEqual([]);
      }));

      it('listRecoverable lists only current, running runs whose lease expired, oldest lease first, up to the limit', withStore(async (store) => {
        await store.beginRun(begin('s1', 'r1', { startedAt: T0, leaseMs: 100 }));
        await store.beginRun(begin('s2', 'r2', { startedAt: T0, leaseMs: 50 }));
        await store.beginRun(begin('s3', 'r3', { startedAt: T0, leaseMs: 10_000 }));
        await store.beginRun(begin('s4', 'r4a', { startedAt: T0, leaseMs: 10 }));
        await store.beginRun(begin('s4', 'r4b', { startedAt: T0, leaseMs: 10_000 }));
        await store.beginRun(begin('s5', 'r5', { startedAt: T0, leaseMs: 10 }));
        await store.commit({ sessionId: 's5', runId: 'r5', epoch: 1, kind: 'terminal', runStatus: 'completed', committedAt: T0 + 5 });
        await store.beginRun(begin('s6', 'r6', { startedAt: T0, leaseMs: 20 }));
        await store.commit({ sessionId: 's6', runId: 'r6', epoch: 1, kind: 'suspension', runStatus: 'suspended', committedAt: T0 + 5 });
        await store.beginRun(begin('s7', 'r7', { startedAt: T0, leaseMs: 1_000, leaseOwner: 'p7' }));

        expect(await store.listRecoverable(T0 + 5)).toEqual([]);
        const listed = await store.listRecoverable(T0 + 1_000);
        expect(listed).toEqual([
          { sessionId: 's2', runId: 'r2', agentType: 'agent', epoch: 1, leaseOwner: 'conformance', leaseExpiresAt: T0 + 50 },
          { sessionId: 's1', runId: 'r1', agentType: 'agent', epoch: 1, leaseOwner: 'conformance', leaseExpiresAt: T0 + 100 },
          { sessionId: 's7', runId: 'r7', agentType: 'agent', epoch: 1, leaseOwner: 'p7', leaseExpiresAt: T0 + 1_000 },
        ]);
        expect((await store.listRecoverable(T0 + 1_000, 1)).map((r) => r.runId)).toEqual(['r2']);
        expect((await store.listRecoverable(T0 + 999)).map((r) => r.runId)).toEqual(['r2', 'r1']);
      }));

      it('claimRun takes over an expired run: the epoch goes up, the old epoch is fenced out, the journal comes back in order', withStores(async ({ first, second }) => {
        await first.beginRun(begin('s1', 'r1', { startedAt: T0, leaseMs: 1_000, leaseOwner: 'dead' }));
        await first.commit({ sessionId: 's1', runId: 'r1', epoch: 1, kind: 'turn_start', appendMessages: [{ role: 'user', content: 'hello' }], committedAt: T0 + 1 });
        await first.commit(step('s1', 'r1', 0, { appendMessages: rows('s0', 2), state: { n: 1 } }));
        await first.appendJournal(journal('r1', 1, 1, 'model_reply:1', { text: 'hi' }, 'model_reply'));
        await first.appendJournal(journal('r1', 1, 1, 'call_started:1:c1', { name: 'tool' }, 'call_started'));
        await first.appendJournal(journal('r1', 1, 1, 'call_result:1:c1', { result: 42 }));

        const claimed = await second.claimRun('r1', 'rescuer', 2_000, T0 + 1_500);
        expect(claimed.lease).toEqual({ runId: 'r1', epoch: 2, owner: 'rescuer', expiresAt: T0 + 3_500 });
        expect(claimed.run).toMatchObject({ runId: 'r1', epoch: 2, status: 'running', leaseOwner: 'rescuer', leaseExpiresAt: T0 + 3_500, stepCount: 1 });
        expect(claimed.session).toMatchObject({ sessionId: 's1', currentRunId: 'r1', state: { n: 1 }, stepCount: 1, messages: [{ role: 'user', content: 'hello' }, ...rows('s0', 2)] });
        expect(claimed.session.turn).toMatchObject({ startCommitted: true });
        expect(claimed.journal.map((e) => [e.key, e.kind, e.epoch, e.stepIndex, e.data])).toEqual([
          ['model_reply:1', 'model_reply', 1, 1, { text: 'hi' }],
          ['call_started:1:c1', 'call_started', 1, 1, { name: 'tool' }],
          ['call_result:1:c1', 'call_result', 1, 1, { result: 42 }],
        ]);
        expect(await first.getRun('r1')).toMatchObject({ epoch: 2, leaseOwner: 'rescuer' });
        expect(await first.listRecoverable(T0 + 2_000)).toEqual([]);

        // The dead process wakes up: every write of its epoch is refused and changes nothing.
        await expect(first.commit(step('s1', 'r1', 1, { appendMessages: rows('stale', 1), state: { n: 99 } }))).rejects.toSatisfy(isSuperseded);
        await expect(first.renewLease('r1', 1, 60_000, T0 + 1_600)).rejects.toSatisfy(isSuperseded);
        await expect(first.appendJournal(journal('r1', 1, 1, 'stale', {}))).rejects.toSatisfy(isSuperseded);
        expect((await second.loadJournal('r1')).map((e) => e.key)).toEqual(['model_reply:1', 'call_started:1:c1', 'call_result:1:c1']);
        expect(await second.getRun('r1')).toMatchObject({ epoch: 2, leaseExpiresAt: T0 + 3_500, stepCount: 1 });

        // The new epoch writes.
        await second.commit({ ...step('s1', 'r1', 1, { appendMessages: rows('s1', 1), state: { n: 2 } }), epoch: 2 });
        expect(await first.loadSession('s1')).toMatchObject({ state: { n: 2 }, stepCount: 2, messages: [{ role: 'user', content: 'hello' }, ...rows('s0', 2), ...rows('s1', 1)] });
        expect(await first.renewLease('r1', 2, 1_000, T0 + 3_000)).toMatchObject({ epoch: 2, expiresAt: T0 + 4_000, owner: 'rescuer' });
      }));

      it('requestStop, from another instance, records the first request on a running run: the lease holder gets it at its next renewal, a step commit keeps it, a claim hands it over', withStores(async ({ first, second }) => {
        await first.beginRun(begin('s1', 'r1', { startedAt: T0, leaseMs: 1_000, leaseOwner: 'p1' }));
        expect((await second.requestStop('r1', { reason: 'enough', requestedAt: T0 + 10 }))?.stopRequest).toEqual({ reason: 'enough', requestedAt: T0 + 10 });
        expect((await second.requestStop('r1', { reason: 'again', requestedAt: T0 + 20 }))?.stopRequest).toEqual({ reason: 'enough', requestedAt: T0 + 10 });
        expect(await first.renewLease('r1', 1, 1_000, T0 + 30)).toEqual({ runId: 'r1', epoch: 1, owner: 'p1', expiresAt: T0 + 1_030, stopRequest: { reason: 'enough', requestedAt: T0 + 10 } });
        await first.commit(step('s1', 'r1', 0, { appendMessages: rows('a', 1), state: { n: 1 } }));
        expect(await first.getRun('r1')).toMatchObject({ status: 'running', stepCount: 1, stopRequest: { reason: 'enough', requestedAt: T0 + 10 } });
        const claimed = await second.claimRun('r1', 'rescuer', 1_000, T0 + 5_000);
        expect(claimed.run.stopRequest).toEqual({ reason: 'enough', requestedAt: T0 + 10 });
        expect((await second.renewLease('r1', 2, 1_000, T0 + 5_010)).stopRequest).toEqual({ reason: 'enough', requestedAt: T0 + 10 });
      }));

      it('requestStop leaves a run that is not running as it is and gives undefined for an unknown run; a lease without a request has no stopRequest', withStore(async (store) => {
        await store.beginRun(begin('s1', 'r1', { startedAt: T0, leaseMs: 1_000 }));
        await store.commit({ sessionId: 's1', runId: 'r1', epoch: 1, kind: 'terminal', runStatus: 'completed', committedAt: T0 + 1 });
        const done = await store.requestStop('r1', { reason: 'late', requestedAt: T0 + 2 });
        expect(done).toMatchObject({ runId: 'r1', status: 'completed' });
        expect(done?.stopRequest).toBeUndefined();
        expect((await store.getRun('r1'))?.stopRequest).toBeUndefined();
        await store.beginRun(begin('s2', 'r2a', { startedAt: T0, leaseMs: 1_000 }));
        await store.beginRun(begin('s2', 'r2b', { startedAt: T0, leaseMs: 1_000 }));
        expect((await store.requestStop('r2a', { reason: 'superseded already', requestedAt: T0 + 3 }))?.stopRequest).toBeUndefined();
        expect(await store.requestStop('nope', { reason: 'who', requestedAt: T0 + 4 })).toBeUndefined();
        expect('stopRequest' in (await store.renewLease('r2b', 1, 1_000, T0 + 5))).toBe(false);
      }));

      it('claimRun refuses with state_run_not_recoverable a run whose lease has not expired, that is not current, not running, or unknown', withStore(async (store) => {
        await store.beginRun(begin('s1', 'r1', { startedAt: T0, leaseMs: 1_000 }));
        await expectCode(store.claimRun('r1', 'p2', 1_000, T0 + 999), 'state_run_not_recoverable');
        await store.beginRun(begin('s2', 'r2a', { startedAt: T0, leaseMs: 10 }));
        await store.beginRun(begin('s2', 'r2b', { startedAt: T0, leaseMs: 10 }));
        await expectCode(store.claimRun('r2a', 'p2', 1_000, T0 + 5_000), 'state_run_not_recoverable');
        await store.beginRun(begin('s3', 'r3', { startedAt: T0, leaseMs: 10 }));
        await store.commit({ sessionId: 's3', runId: 'r3', epoch: 1, kind: 'terminal', runStatus: 'failed', committedAt: T0 + 1 });
        await expectCode(store.claimRun('r3', 'p2', 1_000, T0 + 5_000), 'state_run_not_recoverable');
        await expectCode(store.claimRun('ghost', 'p2', 1_000, T0 + 5_000), 'state_run_not_recoverable');
        expect(await store.getRun('r1')).toMatchObject({ epoch: 1, leaseOwner: 'conformance' });
        expect(await store.getRun('r2a')).toMatchObject({ epoch: 1, status: 'superseded' });
        expect(await store.getRun('r3')).toMatchObject({ epoch: 1, status: 'failed' });
      }));

      it('two claimers racing for the same expired run: exactly one wins', { timeout: heavy }, withStores(async ({ first, second }) => {
        for (let i = 0; i < 10; i++) {
          await first.beginRun(begin(`s${i}`, `r${i}`, { startedAt: T0, leaseMs: 10 }));
          const outcomes = await Promise.allSettled([first.claimRun(`r${i}`, 'a', 10_000, T0 + 100), second.claimRun(`r${i}`, 'b', 10_000, T0 + 100)]);
          const won = outcomes.filter((o) => o.status === 'fulfilled');
          expect(won).toHaveLength(1);
          const lost = outcomes.find((o) => o.status === 'rejected');
          expect(AgentError.isInstance(lost?.reason) ? lost.reason.code : lost?.reason).toBe('state_run_not_recoverable');
          const winner = won[0]!.value.lease.owner;
          expect(await second.getRun(`r${i}`)).toMatchObject({ epoch: 2, leaseOwner: winner });
        }
      }));
    });

    describe('journal', () => {
      it('append is idempotent by key (the first entry wins) and loadJournal returns entries in append order', withStore(async (store) => {
        await store.beginRun(begin('s1', 'r1'));
        const a = await store.appendJournal(journal('r1', 1, 0, 'start', { marker: true }, 'start_signal'));
        const b = await store.appendJournal(journal('r1', 1, 0, 'model_reply:0', { text: 'héllo ✓', calls: [{ id: 'c', args: { deep: [1, null] } }] }, 'model_reply'));
        const again = await store.appendJournal({ ...journal('r1', 1, 0, 'start', { marker: false }, 'start_signal'), at: T0 + 999 });
        expect(again).toEqual(a);
        const c = await store.appendJournal(journal('r1', 1, 0, 'call_result:0:c', 'plain string'));
        expect(await store.loadJournal('r1')).toEqual([a, b, c]);
        expect(await store.loadJournal('other')).toEqual([]);
      }));

      it('journal entries are fenced like commits', withStore(async (store) => {
        await store.beginRun(begin('s1', 'r1'));
        await store.commit({ sessionId: 's1', runId: 'r1', epoch: 1, kind: 'terminal', runStatus: 'completed', committedAt: 1 });
        await expect(store.appendJournal(journal('r1', 1, 0, 'late', {}))).rejects.toSatisfy(isSuperseded);
        expect(await store.loadJournal('r1')).toEqual([]);
        await store.beginRun(begin('s2', 'r2'));
        await expect(store.appendJournal(journal('r2', 2, 0, 'future-epoch', {}))).rejects.toSatisfy(isSuperseded);
        expect(await store.loadJournal('r2')).toEqual([]);
      }));

      it('a step commit drops that step\'s entries (and older ones), a turn-start or suspension commit keeps them, a terminal commit drops them all', withStore(async (store) => {
        await store.beginRun(begin('s1', 'r1'));
        await store.appendJournal(journal('r1', 1, 0, 'start', {}, 'start_signal'));
        await store.commit({ sessionId: 's1', runId: 'r1', epoch: 1, kind: 'turn_start', appendMessages: [{ role: 'user', content: 'hello' }], committedAt: 1 });
        await store.appendJournal(journal('r1', 1, 0, 'model_reply:0', {}, 'model_reply'));
        await store.appendJournal(journal('r1', 1, 1, 'model_reply:1', {}, 'model_reply'));
        await store.appendJournal(journal('r1', 1, 2, 'model_reply:2', {}, 'model_reply'));
        expect((await store.loadJournal('r1')).map((e) => e.key)).toEqual(['start', 'model_reply:0', 'model_reply:1', 'model_reply:2']);
        await store.commit(step('s1', 'r1', 0));
        expect((await store.loadJournal('r1')).map((e) => e.key)).toEqual(['model_reply:1', 'model_reply:2']);
        await store.commit({ sessionId: 's1', runId: 'r1', epoch: 1, kind: 'suspension', committedAt: 2 });
        expect((await store.loadJournal('r1')).map((e) => e.key)).toEqual(['model_reply:1', 'model_reply:2']);
        await store.appendJournal(journal('r1', 1, 2, 'terminal_hook', { ok: true }, 'terminal_hook'));
        await store.commit({ sessionId: 's1', runId: 'r1', epoch: 1, kind: 'terminal', runStatus: 'completed', committedAt: 3 });
        expect(await store.loadJournal('r1')).toEqual([]);
      }));

      it('a suspended run keeps its journal while it is current; the K1 that replaces it (a resume or a new turn) drops it', withStore(async (store) => {
        for (const [sessionId, runId, next, newTurn] of [['s1', 'r1', 'r2', false], ['s2', 'x1', 'x2', true]] as const) {
          await store.beginRun(begin(sessionId, runId));
          await store.appendJournal(journal(runId, 1, 0, 'start', {}, 'start_signal'));
          await store.appendJournal(journal(runId, 1, 0, 'model_reply:0', { calls: 1 }, 'model_reply'));
          await store.commit({ sessionId, runId, epoch: 1, kind: 'suspension', stepIndex: 0, runStatus: 'suspended', checkpoint: 'step', committedAt: T0 + 1 });
          expect((await store.loadJournal(runId)).map((e) => e.key)).toEqual(['start', 'model_reply:0']);
          await store.beginRun(newTurn ? begin(sessionId, next) : { ...begin(sessionId, next, { newTurn: false, signal: 'resumed' }), expect: { currentRunId: runId, status: 'suspended' } });
          expect(await store.loadJournal(runId)).toEqual([]);
          // The replaced run keeps its record and status: only the journal, which nothing reads any more, goes.
          expect((await store.getRun(runId))?.status).toBe('suspended');
        }
      }));

      it('superseding a running run drops its journal; another run\'s journal is untouched', withStore(async (store) => {
        await store.beginRun(begin('s1', 'r1'));
        await store.beginRun(begin('s2', 'x1'));
        await store.appendJournal(journal('r1', 1, 0, 'k', {}));
        await store.appendJournal(journal('x1', 1, 0, 'k', { other: true }));
        await store.beginRun(begin('s1', 'r2'));
        expect(await store.loadJournal('r1')).toEqual([]);
        expect((await store.loadJournal('x1')).map((e) => e.data)).toEqual([{ other: true }]);
      }));
    });

    if (options.usage !== false) {
      describe('usage recorded with its commit', () => {
        it('usage passed with a commit is recorded atomically with it and rolls up by run and by session', withStore(async (plain) => {
          const store = asUsageStore(plain);
          await store.beginRun(begin('s1', 'r1'));
          await store.beginRun(begin('s2', 'r2'));
          const r1 = [llmUsage('s1', 'r1', 0, 10), toolUsage('s1', 'r1', 0, 'search'), toolUsage('s1', 'r1', 0, 'search', false)];
          const r2 = [llmUsage('s2', 'r2', 0, 7, false)];
          await store.commit(step('s1', 'r1', 0, { appendMessages: rows('a', 1), usage: r1 }));
          await store.commit(step('s2', 'r2', 0, { usage: r2 }));
          expect(await store.getRollup({ runId: 'r1' })).toEqual(rollupUsage(r1));
          expect(await store.getRollup({ sessionId: 's1' })).toEqual(rollupUsage(r1));
          expect(await store.getRollup({ sessionId: 's2', runId: 'r2' })).toEqual(rollupUsage(r2));
          expect(await store.getRollup({})).toEqual(rollupUsage([...r1, ...r2]));
          const rollup = await store.getRollup({ runId: 'r1' });
          expect(rollup).toMatchObject({ modelCalls: 1, tokens: { prompt: 10, completion: 2, total: 12, cached: 1 }, toolStats: { totalCalls: 2, failures: 1 } });

          // A later run of the same session adds to the session's rollup, not to r1's.
          await store.beginRun(begin('s1', 'r3'));
          const r3 = [llmUsage('s1', 'r3', 0, 5)];
          await store.commit({ sessionId: 's1', runId: 'r3', epoch: 1, kind: 'terminal', runStatus: 'completed', usage: r3, committedAt: 1 });
          expect(await store.getRollup({ runId: 'r1' })).toEqual(rollupUsage(r1));
          expect(await store.getRollup({ sessionId: 's1' })).toEqual(rollupUsage([...r1, ...r3]));
        }));

        it('a refused commit records none of its usage', withStore(async (plain) => {
          const store = asUsageStore(plain);
          await store.beginRun(begin('s1', 'r1'));
          await store.commit(step('s1', 'r1', 0, { usage: [llmUsage('s1', 'r1', 0, 10)] }));
          await expect(store.commit(step('s1', 'r1', 0, { usage: [llmUsage('s1', 'r1', 0, 1_000)] }))).rejects.toThrow();
          await store.beginRun(begin('s1', 'r2'));
          await expect(store.commit(step('s1', 'r1', 1, { usage: [llmUsage('s1', 'r1', 1, 1_000)] }))).rejects.toSatisfy(isSuperseded);
          expect(await store.getRollup({ sessionId: 's1' })).toEqual(rollupUsage([llmUsage('s1', 'r1', 0, 10)]));
        }));

        it('record() outside a commit adds to the same rollups', withStore(async (plain) => {
          const store = asUsageStore(plain);
          const entries = [llmUsage('s1', 'r1', 0, 3), { ...llmUsage('s1', 'r1', 1, 0), usage: undefined }, toolUsage('s1', 'r1', 1, 'fetch')];
          await store.record(entries);
          await store.record([]);
          expect(await store.getRollup({ sessionId: 's1' })).toEqual(rollupUsage(entries));
          expect(await store.getRollup({ runId: 'nope' })).toEqual(rollupUsage([]));
        }));
      });
    }

    describe('large payloads', () => {
      it('a 1 MB state round-trips through commits, sessions and checkpoints', { timeout: heavy }, withStore(async (store) => {
        const big = {
          blob: 'x'.repeat(1 << 20),
          unicode: 'héllo ✓ 🚀 \u0000 "quoted" \\ back',
          items: Array.from({ length: 2_000 }, (_, i) => ({ i, even: i % 2 === 0, tag: `t${i}`, nothing: null })),
          float: 0.1 + 0.2,
        };
        await store.beginRun(begin('s1', 'r1'));
        const receipt = await store.commit(step('s1', 'r1', 0, { state: big, appendMessages: [{ role: 'assistant', content: 'y'.repeat(1 << 20) }], checkpoint: 'step' }));
        const session = await store.loadSession('s1');
        expect(session?.state).toEqual(big);
        expect(session?.messages[0]).toEqual({ role: 'assistant', content: 'y'.repeat(1 << 20) });
        expect((await store.loadCheckpoint('s1', receipt.checkpointId!))?.state).toEqual(big);
        // A later small commit leaves the big checkpoint as it was.
        await store.commit(step('s1', 'r1', 1, { state: { n: 1 } }));
        expect((await store.loadCheckpoint('s1', receipt.checkpointId!))?.state).toEqual(big);
        expect((await store.loadSession('s1'))?.state).toEqual({ n: 1 });
      }));

      it('10,000 messages appended over 500 commits come back complete and in order from loadSession and loadCheckpoint', { timeout: heavy }, withStore(async (store) => {
        await store.beginRun(begin('s1', 'r1'));
        const all: Message[] = [];
        const checkpoints: { id: string; count: number; n: number }[] = [];
        for (let c = 0; c < 500; c++) {
          const batch: Message[] = [];
          for (let j = 0; j < 20; j++) batch.push(varied(all.length + j));
          all.push(...batch);
          const receipt = await store.commit(step('s1', 'r1', c, { appendMessages: batch, state: { n: c + 1 }, ...(c % 50 === 49 ? { checkpoint: 'step' as const } : {}) }));
          expect(receipt.messageCount).toBe(all.length);
          if (receipt.checkpointId !== undefined) checkpoints.push({ id: receipt.checkpointId, count: all.length, n: c + 1 });
        }
        const session = await store.loadSession('s1');
        expect(session?.messages.length).toBe(10_000);
        expect(session?.messages).toEqual(all);
        expect(session).toMatchObject({ stepCount: 500, state: { n: 500 } });
        expect(checkpoints).toHaveLength(10);
        const listed = await store.listCheckpoints('s1');
        expect(listed.map((c) => c.checkpointId)).toEqual(checkpoints.map((c) => c.id));
        expect(listed.map((c) => c.messageCount)).toEqual(checkpoints.map((c) => c.count));
        for (const cp of [checkpoints[0]!, checkpoints[4]!, checkpoints[9]!]) {
          const loaded = await store.loadCheckpoint('s1', cp.id);
          expect(loaded?.messages).toEqual(all.slice(0, cp.count));
          expect(loaded).toMatchObject({ messageCount: cp.count, stepCount: cp.n, state: { n: cp.n } });
        }
      }));
    });

    describe('atomicity under concurrency', () => {
      it('a reader never sees part of a commit: concurrent loadSession during many multi-row commits', { timeout: heavy }, withStores(async ({ first, second }) => {
        const perCommit = 5;
        const commits = 200;
        await first.beginRun(begin('s1', 'r1'));
        let done = false;
        const seen = new Set<number>();
        let reads = 0;
        const reader = (async () => {
          while (!done) {
            const session = await second.loadSession('s1');
            reads++;
            const messages = session?.messages ?? [];
            const n = (session?.state as { n: number } | undefined)?.n;
            expect(messages.length % perCommit, 'a commit was seen in part').toBe(0);
            expect(n).toBe(messages.length / perCommit);
            expect(session?.stepCount).toBe(n);
            const last = messages.at(-1);
            if (last) expect(last.content).toBe(`c${n! - 1}:${perCommit - 1}`);
            seen.add(messages.length);
          }
        })();
        try {
          for (let c = 0; c < commits; c++) {
            await first.commit(step('s1', 'r1', c, { appendMessages: rows(`c${c}`, perCommit), state: { n: c + 1, pad: 'p'.repeat(2_000) } }));
          }
        } finally {
          done = true;
          await reader;
        }
        expect(reads).toBeGreaterThan(1);
        // The reader really ran between commits, so the check above could have caught a torn read.
        expect(seen.size).toBeGreaterThan(1);
        expect((await second.loadSession('s1'))?.messages.length).toBe(perCommit * commits);
      }));

      it('a commit racing a supersede from another instance either lands whole or is refused whole', { timeout: heavy }, withStores(async ({ first, second }) => {
        let landed = 0;
        let refused = 0;
        for (let i = 0; i < 30; i++) {
          const sessionId = `race-${i}`;
          await first.beginRun(begin(sessionId, `a${i}`));
          const [commit, takeover] = await Promise.allSettled([
            first.commit(step(sessionId, `a${i}`, 0, { appendMessages: rows('a', 3), state: { n: 1 }, checkpoint: 'step' })),
            second.beginRun(begin(sessionId, `b${i}`)),
          ]);
          expect(takeover.status).toBe('fulfilled');
          if (takeover.status === 'fulfilled') expect(takeover.value.supersededRunId).toBe(`a${i}`);
          const session = await second.loadSession(sessionId);
          expect(session?.currentRunId).toBe(`b${i}`);
          expect(await first.getRun(`a${i}`)).toMatchObject({ status: 'superseded' });
          if (commit.status === 'fulfilled') {
            landed++;
            expect(session).toMatchObject({ messages: rows('a', 3), state: { n: 1 }, stepCount: 1 });
            expect(await second.listCheckpoints(sessionId)).toHaveLength(1);
          } else {
            refused++;
            expect(isSuperseded(commit.reason)).toBe(true);
            expect(session).toMatchObject({ messages: [], state: { n: 0 }, stepCount: 0 });
            expect(await second.listCheckpoints(sessionId)).toEqual([]);
          }
        }
        expect(landed + refused).toBe(30);
      }));

      it('commits issued together without awaiting each other: each lands or is refused on its own', { timeout: heavy }, withStore(async (store) => {
        await store.beginRun(begin('ok1', 'r-ok1'));
        await store.beginRun(begin('ok2', 'r-ok2'));
        await store.beginRun(begin('gone', 'r-old'));
        await store.beginRun(begin('gone', 'r-new'));
        await store.beginRun(begin('dup', 'r-dup'));
        await store.commit(step('dup', 'r-dup', 0, { appendMessages: rows('first', 1) }));
        const outcomes = await Promise.allSettled([
          store.commit(step('ok1', 'r-ok1', 0, { appendMessages: rows('ok1', 2), state: { n: 1 }, checkpoint: 'step' })),
          store.commit(step('gone', 'r-old', 0, { appendMessages: rows('gone', 2), state: { n: 9 }, checkpoint: 'step' })),
          store.commit(step('dup', 'r-dup', 0, { appendMessages: rows('again', 2), state: { n: 9 } })),
          store.commit(step('ok2', 'r-ok2', 0, { appendMessages: rows('ok2', 1) })),
        ]);
        expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
        expect(isSuperseded(outcomes[1]?.status === 'rejected' ? outcomes[1].reason : undefined)).toBe(true);
        expect(await store.loadSession('ok1')).toMatchObject({ messages: rows('ok1', 2), state: { n: 1 }, stepCount: 1 });
        expect(await store.loadSession('ok2')).toMatchObject({ messages: rows('ok2', 1), stepCount: 1 });
        expect(await store.loadSession('gone')).toMatchObject({ messages: [], state: { n: 0 }, stepCount: 0 });
        expect(await store.listCheckpoints('gone')).toEqual([]);
        expect(await store.loadSession('dup')).toMatchObject({ messages: rows('first', 1), state: { n: 0 }, stepCount: 1 });
        expect(await store.listCheckpoints('ok1')).toHaveLength(1);
      }));

      it('commits racing a K1 that supersedes their run: a commit resolves if and only if the K1 snapshot contains it', withStore(async (store) => {
        await store.beginRun(begin('s1', 'r1'));
        const first = store.commit(step('s1', 'r1', 0, { appendMessages: rows('r1a', 1), state: { n: 1 } }));
        const begun = store.beginRun(begin('s1', 'r2'));
        const second = store.commit(step('s1', 'r1', 1, { appendMessages: rows('r1b', 1), state: { n: 2 } }));
        const [a, b] = await Promise.allSettled([first, second]);
        const { session } = await begun;
        const contents = session.messages.map((m) => m.content);
        for (const [outcome, tag] of [[a, 'r1a:0'], [b, 'r1b:0']] as const) {
          if (outcome?.status === 'fulfilled') expect(contents).toContain(tag);
          else {
            expect(isSuperseded(outcome?.reason)).toBe(true);
            expect(contents).not.toContain(tag);
          }
        }
        // After the K1, the superseded run wrote nothing more.
        expect((await store.loadSession('s1'))?.messages).toEqual(session.messages);
        expect(await store.loadSession('s1')).toMatchObject({ currentRunId: 'r2', state: session.state });
      }));

      it('two instances committing to their own sessions at once lose nothing', { timeout: heavy }, withStores(async ({ first, second }) => {
        const steps = 25;
        const drive = async (store: StateStore, sessionId: string): Promise<void> => {
          await store.beginRun(begin(sessionId, `run-${sessionId}`));
          for (let s = 0; s < steps; s++) {
            await store.commit(step(sessionId, `run-${sessionId}`, s, { appendMessages: rows(`${sessionId}/${s}`, 2), state: { n: s + 1 } }));
          }
        };
        const sessions = Array.from({ length: 8 }, (_, i) => `p${i}`);
        await Promise.all(sessions.map((id, i) => drive(i % 2 === 0 ? first : second, id)));
        for (const id of sessions) {
          const expected: Message[] = [];
          for (let s = 0; s < steps; s++) expected.push(...rows(`${id}/${s}`, 2));
          expect(await first.loadSession(id)).toMatchObject({ messages: expected, state: { n: steps }, stepCount: steps });
        }
      }));
    });

    if (options.openNewerSchema) {
      const openNewerSchema = options.openNewerSchema;
      describe('schema versions', () => {
        it('a database written by a newer schema version is refused with state_schema_too_new', withStore(async (store) => {
          await store.beginRun(begin('s1', 'r1'));
          await expectCode(openNewerSchema(store), 'state_schema_too_new');
        }));
      });
    }
  });
}
