import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgentError, RunSupersededError } from '@helix-agents/sdk';
import type { StreamChunk } from '@helix-agents/sdk';
import type { BeginRunRequest, Commit, StreamChunkInput, StreamWriter } from '@helix-agents/sdk/store';
import BetterSqlite3 from 'better-sqlite3';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { handleOf, immediate } from './database.js';
import { openSqliteStores } from './open.js';
import type { SqliteStores, SqliteStoresOptions } from './open.js';
import { connectionCaches, type ReadCache } from './read-cache.js';
import { STREAM_CACHE_SIZE } from './stream-manager.js';

function begin(sessionId: string, runId: string, startedAt = 1): BeginRunRequest {
  return { sessionId, runId, agentType: 'agent', signal: 'start', initialState: { n: 0 }, newTurn: { turnId: `t-${runId}`, input: [] }, startedAt, leaseOwner: 'p', leaseMs: 60_000, options: {} };
}

function step(sessionId: string, runId: string, stepIndex: number, epoch = 1): Commit {
  return { sessionId, runId, epoch, kind: 'step', stepIndex, appendMessages: [{ role: 'assistant', content: `${runId}:${stepIndex}` }], state: { n: stepIndex }, committedAt: 2 + stepIndex };
}

function delta(runId: string, text: string, timestamp = 1): StreamChunkInput {
  return { type: 'text_delta', streamId: 'st', agentId: 'st', agentType: 'a', runId, timestamp, stepIndex: 0, delta: text };
}

/** The fence cache of a connection (its state store made it). */
function fenceCache(stores: SqliteStores): ReadCache<unknown> {
  const cache = connectionCaches(handleOf(stores.database)).peek('fence');
  if (!cache) throw new Error('no fence cache');
  return cache;
}

function streamCache(stores: SqliteStores): ReadCache<unknown> {
  const cache = connectionCaches(handleOf(stores.database)).peek('stream');
  if (!cache) throw new Error('no stream cache');
  return cache;
}

async function chunksOf(stores: SqliteStores, streamId: string): Promise<{ seq: number; runId: string; text: string }[]> {
  const out: { seq: number; runId: string; text: string }[] = [];
  for await (const chunk of stores.streamManager.read(streamId, { follow: false })) {
    out.push({ seq: chunk.seq, runId: chunk.runId, text: (chunk as StreamChunk & { delta?: string }).delta ?? chunk.type });
  }
  return out;
}

/** Counts the journal DELETEs every connection of this process runs while `fn` runs. */
async function journalDeletes(fn: () => Promise<void>): Promise<number> {
  const probe = new BetterSqlite3(':memory:');
  const proto = Object.getPrototypeOf(probe.prepare('SELECT 1')) as { run: (this: { source: string }, ...args: unknown[]) => unknown };
  probe.close();
  const original = proto.run;
  let count = 0;
  proto.run = function (this: { source: string }, ...args: unknown[]) {
    if (this.source.startsWith('DELETE FROM journal WHERE run_id = ?')) count++;
    return original.apply(this, args);
  };
  try {
    await fn();
  } finally {
    proto.run = original;
  }
  return count;
}

/** A journal entry of run `runId` at `stepIndex`, keyed `key`. */
const entry = (runId: string, stepIndex: number, key: string) => ({ runId, epoch: 1, stepIndex, kind: 'call_result' as const, key, data: { key }, at: 1 });
/** The keys of the run's journal entries in the file. */
const keys = async (stores: SqliteStores, runId: string) => (await stores.stateStore.loadJournal(runId)).map((e) => e.key);

describe('SQLite read caches (read-cache.ts)', () => {
  let dir: string;
  const opened: SqliteStores[] = [];
  const open = (options: SqliteStoresOptions = {}, name = 'helix.db'): SqliteStores => {
    const stores = openSqliteStores({ path: join(dir, name), flushIntervalMs: 60_000, checkpoint: 'inline', ...options });
    opened.push(stores);
    return stores;
  };
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'helix-sqlite-cache-'));
  });
  afterEach(() => {
    for (const stores of opened.splice(0)) stores.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a run\'s steps after its first read their fence from the cache, and with readCaches: false never do', async () => {
    const on = open();
    const off = open({ readCaches: false }, 'off.db');
    for (const stores of [on, off]) {
      await stores.stateStore.beginRun(begin('s', 'r'));
      for (let i = 0; i < 10; i++) await stores.stateStore.commit(step('s', 'r', i));
    }
    // The first step reads the file (K1 dropped the entry); the nine after it hit.
    expect(fenceCache(on).hits).toBe(9);
    expect(fenceCache(off).hits).toBe(0);
    expect(fenceCache(off).size).toBe(0);
    expect(await on.stateStore.loadSession('s')).toEqual(await off.stateStore.loadSession('s'));
  });

  it('another connection\'s takeover and commits invalidate: the stale epoch is refused, and the next commit follows the other connection\'s head', async () => {
    const a = open();
    const b = open();
    await a.stateStore.beginRun(begin('s', 'r'));
    await a.stateStore.commit(step('s', 'r', 0));
    await a.stateStore.commit(step('s', 'r', 1));
    expect(fenceCache(a).has('s')).toBe(true);
    const claimed = await b.stateStore.claimRun('r', 'q', 60_000, 10, { takeover: true });
    expect(claimed.lease.epoch).toBe(2);
    const bReceipt = await b.stateStore.commit(step('s', 'r', 2, 2));
    // A's cached fence says epoch 1 and the head before B's commit: both are stale now.
    const refused = await a.stateStore.commit(step('s', 'r', 3, 1)).catch((error: unknown) => error);
    expect(RunSupersededError.isInstance(refused)).toBe(true);
    // With the new epoch A goes on after B's head (a stale head would reuse B's version and fail on the key).
    const aReceipt = await a.stateStore.commit(step('s', 'r', 3, 2));
    expect(aReceipt.version).toBe(bReceipt.version + 1);
    const session = await a.stateStore.loadSession('s');
    expect(session?.messages.map((m) => m.content)).toEqual(['r:0', 'r:1', 'r:2', 'r:3']);
    expect(session?.stepCount).toBe(4);
  });

  it('another connection\'s stream claim invalidates the stream cache: the old owner\'s next write is refused', async () => {
    const a = open();
    const b = open();
    const writer = await a.streamManager.claim('st', 'r1');
    expect(await writer.write(delta('r1', 'x'))).toBe(true);
    expect(await writer.write(delta('r1', 'y'))).toBe(true);
    expect(streamCache(a).has('st')).toBe(true);
    const other = await b.streamManager.claim('st', 'r2');
    expect(other.startSeq).toBe(2);
    expect(await writer.write(delta('r1', 'late'))).toBe(false);
    expect(await other.write(delta('r2', 'z'))).toBe(true);
    expect(await chunksOf(a, 'st')).toEqual([
      { seq: 0, runId: 'r1', text: 'x' },
      { seq: 1, runId: 'r1', text: 'y' },
      { seq: 2, runId: 'r2', text: 'z' },
    ]);
  });

  it('a raw write on the same connection (data_version does not move for it) invalidates too', async () => {
    const a = open();
    await a.stateStore.beginRun(begin('s', 'r'));
    await a.stateStore.commit(step('s', 'r', 0));
    await a.stateStore.commit(step('s', 'r', 1));
    expect(fenceCache(a).has('s')).toBe(true);
    handleOf(a.database).prepare("UPDATE runs SET epoch = 5 WHERE run_id = 'r'").run();
    const refused = await a.stateStore.commit(step('s', 'r', 2, 1)).catch((error: unknown) => error);
    expect(RunSupersededError.isInstance(refused)).toBe(true);
    await expect(a.stateStore.commit(step('s', 'r', 2, 5))).resolves.toMatchObject({ version: 4 });
  });

  it('a rolled-back transaction clears every cache: what it set is never read', () => {
    const a = open();
    const db = handleOf(a.database);
    const caches = connectionCaches(db);
    const cache = caches.cache<string>('test', 8);
    const keep = immediate(db, (value: string) => cache.set('k', value), 'keeps');
    const read = immediate(db, () => cache.get('k'), 'keeps');
    keep('committed');
    expect(read()).toBe('committed');
    const failing = immediate(
      db,
      () => {
        cache.set('k', 'rolled back');
        throw new Error('boom');
      },
      'keeps',
    );
    expect(() => failing()).toThrow('boom');
    expect(cache.size).toBe(0);
    expect(read()).toBeUndefined();
    // A path that does not keep the caches clears them, and nothing is read outside a checked transaction.
    keep('again');
    expect(cache.get('k')).toBeUndefined();
    immediate(db, () => undefined)();
    expect(cache.size).toBe(0);
  });

  it('a commit refused after its transaction wrote queued chunks rolls them back with the stream cache: they are written again at the same seqs', async () => {
    const a = open();
    await a.stateStore.beginRun(begin('s', 'r'));
    const writer = await a.streamManager.claim('st', 'r');
    expect(await writer.write(delta('r', 'a'))).toBe(true);
    writer.queue!(delta('r', 'b'));
    writer.queue!(delta('r', 'c'));
    // The chunks are written first in the commit's transaction (the stream cache set past them), then the
    // commit is refused (an epoch that is not the run's) and everything rolls back.
    const refused = await a.stateStore.commit(step('s', 'r', 0, 9)).catch((error: unknown) => error);
    expect(RunSupersededError.isInstance(refused)).toBe(true);
    expect(streamCache(a).size).toBe(0);
    await a.stateStore.commit(step('s', 'r', 0));
    expect(await writer.write(delta('r', 'd'))).toBe(true);
    expect(await chunksOf(a, 'st')).toEqual([
      { seq: 0, runId: 'r', text: 'a' },
      { seq: 1, runId: 'r', text: 'b' },
      { seq: 2, runId: 'r', text: 'c' },
      { seq: 3, runId: 'r', text: 'd' },
    ]);
  });

  it('a commit refused in a group (its savepoint rolled back) drops its session\'s entry; the group\'s other commits keep theirs', async () => {
    const a = open();
    await a.stateStore.beginRun(begin('s', 'r'));
    await a.stateStore.beginRun(begin('t', 'q'));
    await a.stateStore.commit(step('s', 'r', 0));
    await a.stateStore.commit(step('t', 'q', 0));
    const results = await Promise.allSettled([a.stateStore.commit(step('s', 'r', 1)), a.stateStore.commit(step('t', 'q', 0)), a.stateStore.commit(step('s', 'r', 2))]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(fenceCache(a).has('t')).toBe(false);
    expect(fenceCache(a).has('s')).toBe(true);
    await expect(a.stateStore.commit(step('t', 'q', 1))).resolves.toMatchObject({ version: 3 });
    await expect(a.stateStore.commit(step('s', 'r', 3))).resolves.toMatchObject({ version: 5 });
  });

  it(`the stream cache holds at most ${STREAM_CACHE_SIZE} streams, the oldest going first; an evicted stream reads its head from the file`, async () => {
    const a = open();
    const count = STREAM_CACHE_SIZE + 50;
    const writers: StreamWriter[] = [];
    for (let i = 0; i < count; i++) writers.push(await a.streamManager.claim(`st${i}`, 'r'));
    for (let i = 0; i < count; i++) expect(await writers[i]!.write(delta('r', `x${i}`))).toBe(true);
    const cache = streamCache(a);
    expect(cache.size).toBe(STREAM_CACHE_SIZE);
    expect(cache.has('st0')).toBe(false);
    expect(cache.has('st49')).toBe(false);
    expect(cache.has('st50')).toBe(true);
    expect(cache.has(`st${count - 1}`)).toBe(true);
    expect(await writers[0]!.write(delta('r', 'again'))).toBe(true);
    expect(await chunksOf(a, 'st0')).toEqual([
      { seq: 0, runId: 'r', text: 'x0' },
      { seq: 1, runId: 'r', text: 'again' },
    ]);
  });

  it('a step commit runs no journal DELETE while its run has no entries, and still drops what an append, a later step\'s append and another connection wrote', async () => {
    const a = open();
    const b = open();
    await a.stateStore.beginRun(begin('s', 'r'));
    // No entries: neither the first step (fence read from the file) nor the cached ones delete anything.
    expect(await journalDeletes(async () => {
      for (let i = 0; i < 5; i++) await a.stateStore.commit(step('s', 'r', i));
    })).toBe(0);
    expect(fenceCache(a).hits).toBeGreaterThanOrEqual(4);
    // An entry of step 5 and one of step 6: step 5's commit drops the first and keeps the second, step 6's drops it.
    const hits = fenceCache(a).hits;
    await a.stateStore.appendJournal(entry('r', 5, 'k5'));
    await a.stateStore.appendJournal(entry('r', 6, 'k6'));
    // An append updates the bound without counting as a commit's hit.
    expect(fenceCache(a).hits).toBe(hits);
    expect(await journalDeletes(() => a.stateStore.commit(step('s', 'r', 5)).then(() => undefined))).toBe(1);
    expect(await keys(a, 'r')).toEqual(['k6']);
    expect(await journalDeletes(() => a.stateStore.commit(step('s', 'r', 6)).then(() => undefined))).toBe(1);
    expect(await keys(a, 'r')).toEqual([]);
    expect(await journalDeletes(() => a.stateStore.commit(step('s', 'r', 7)).then(() => undefined))).toBe(0);
    // Another connection's entry: its commit moved data_version, so a's next commit reads the file and drops it.
    await b.stateStore.appendJournal(entry('r', 8, 'k8'));
    expect(await journalDeletes(() => a.stateStore.commit(step('s', 'r', 8)).then(() => undefined))).toBe(1);
    expect(await keys(b, 'r')).toEqual([]);
    // The run's end drops a whole journal, again only when there is one to drop.
    await a.stateStore.appendJournal(entry('r', 12, 'k12'));
    expect(await journalDeletes(() => a.stateStore.commit({ sessionId: 's', runId: 'r', epoch: 1, kind: 'terminal', runStatus: 'completed', output: null, committedAt: 99 }).then(() => undefined))).toBe(1);
    expect(await keys(a, 'r')).toEqual([]);
  });
});

// ---- equivalence: the same operations, caches on and off, give the same results ----

type Op =
  | { readonly t: 'begin'; readonly c: number; readonly s: number }
  | { readonly t: 'commit'; readonly c: number; readonly r: number; readonly epoch: number; readonly again: boolean; readonly kind: 'step' | 'terminal' | 'turn_start'; readonly wrongSession: boolean; readonly checkpoint: boolean }
  | { readonly t: 'group'; readonly c: number; readonly r: readonly number[]; readonly epoch: number }
  | { readonly t: 'steps'; readonly c: number; readonly r: number; readonly count: number }
  | { readonly t: 'claim'; readonly c: number; readonly r: number; readonly takeover: boolean }
  | { readonly t: 'renew'; readonly c: number; readonly r: number; readonly epoch: number }
  | { readonly t: 'stop'; readonly c: number; readonly r: number }
  | { readonly t: 'append'; readonly c: number; readonly r: number; readonly epoch: number; readonly ahead: number }
  | { readonly t: 'delete'; readonly c: number; readonly s: number }
  | { readonly t: 'prune'; readonly c: number }
  | { readonly t: 'raw'; readonly c: number; readonly r: number; readonly journal: boolean }
  | { readonly t: 'sclaim'; readonly c: number; readonly st: number; readonly r: number }
  | { readonly t: 'swrite'; readonly c: number; readonly st: number; readonly r: number; readonly queue: boolean }
  | { readonly t: 'sdelete'; readonly c: number; readonly st: number };

// Connection 0 does most of the work (so that its caches have runs of commits to keep), 1 interferes.
const conn = fc.constantFrom(0, 0, 0, 1);
const runRef = fc.integer({ min: 0, max: 7 });
// 0: the epoch of the run's last accepted claim on either connection (a commit that should pass the fence).
const epoch = fc.constantFrom(0, 0, 0, 0, 1, 2, 3);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ t: fc.constant('begin' as const), c: conn, s: fc.integer({ min: 0, max: 2 }) }), weight: 3 },
  {
    arbitrary: fc.record({
      t: fc.constant('commit' as const),
      c: conn,
      r: runRef,
      epoch,
      again: fc.constantFrom(false, false, false, true),
      kind: fc.constantFrom('step' as const, 'step' as const, 'step' as const, 'step' as const, 'terminal' as const, 'turn_start' as const),
      wrongSession: fc.constantFrom(false, false, false, false, true),
      checkpoint: fc.boolean(),
    }),
    weight: 10,
  },
  { arbitrary: fc.record({ t: fc.constant('group' as const), c: conn, r: fc.array(runRef, { minLength: 2, maxLength: 3 }), epoch }), weight: 3 },
  { arbitrary: fc.record({ t: fc.constant('steps' as const), c: conn, r: runRef, count: fc.integer({ min: 2, max: 6 }) }), weight: 6 },
  { arbitrary: fc.record({ t: fc.constant('claim' as const), c: conn, r: runRef, takeover: fc.boolean() }), weight: 2 },
  { arbitrary: fc.record({ t: fc.constant('renew' as const), c: conn, r: runRef, epoch }), weight: 1 },
  { arbitrary: fc.record({ t: fc.constant('stop' as const), c: conn, r: runRef }), weight: 1 },
  // An entry of the next step, or of one after it (which that step's commit leaves in place).
  { arbitrary: fc.record({ t: fc.constant('append' as const), c: conn, r: runRef, epoch, ahead: fc.integer({ min: 0, max: 2 }) }), weight: 2 },
  { arbitrary: fc.record({ t: fc.constant('delete' as const), c: conn, s: fc.integer({ min: 0, max: 2 }) }), weight: 1 },
  { arbitrary: fc.record({ t: fc.constant('prune' as const), c: conn }), weight: 1 },
  { arbitrary: fc.record({ t: fc.constant('raw' as const), c: conn, r: runRef, journal: fc.boolean() }), weight: 1 },
  { arbitrary: fc.record({ t: fc.constant('sclaim' as const), c: conn, st: fc.integer({ min: 0, max: 1 }), r: runRef }), weight: 2 },
  { arbitrary: fc.record({ t: fc.constant('swrite' as const), c: conn, st: fc.integer({ min: 0, max: 1 }), r: runRef, queue: fc.boolean() }), weight: 5 },
  { arbitrary: fc.record({ t: fc.constant('sdelete' as const), c: conn, st: fc.integer({ min: 0, max: 1 }) }), weight: 1 },
);

/** An outcome both worlds must agree on: a value, or an error's code and message. */
function outcome(settled: PromiseSettledResult<unknown>): unknown {
  if (settled.status === 'fulfilled') return { ok: settled.value ?? null };
  const error = settled.reason as unknown;
  return { error: AgentError.isInstance(error) ? error.code : error instanceof Error ? error.name : String(error), message: error instanceof Error ? error.message : String(error) };
}

/** Two connections on one file, and what the driver remembers of the runs it began (the same in both worlds). */
class World {
  readonly connections: SqliteStores[];
  readonly writers = new Map<string, StreamWriter>();

  constructor(path: string, readCaches: boolean) {
    const options: SqliteStoresOptions = { path, readCaches, flushIntervalMs: 60_000, checkpoint: 'inline', retention: { keepCheckpoints: 2, chunkTtlMs: 0 } };
    this.connections = [openSqliteStores(options), openSqliteStores(options)];
  }

  close(): void {
    for (const stores of this.connections) stores.close();
  }
}

/** The driver's view of the runs begun so far (by op only, so both worlds get the same inputs). */
interface Script {
  readonly runs: { readonly runId: string; readonly sessionId: string; nextStep: number; epoch: number }[];
}

async function apply(world: World, script: Script, op: Op, at: number): Promise<unknown> {
  const stores = world.connections[op.c]!;
  const state = stores.stateStore;
  const now = 1_000 + at * 1_000;
  const runOf = (r: number) => script.runs[r % Math.max(1, script.runs.length)];
  const epochOf = (run: Script['runs'][number], chosen: number): number => (chosen === 0 ? run.epoch : chosen);
  const settle = async (work: () => Promise<unknown>): Promise<unknown> => outcome((await Promise.allSettled([work()]))[0]!);
  switch (op.t) {
    case 'begin': {
      const runId = `r${at}`;
      return settle(() => state.beginRun({ ...begin(`s${op.s}`, runId, now), leaseMs: 2_500 }));
    }
    case 'commit': {
      const run = runOf(op.r);
      if (!run) return 'no run';
      const stepIndex = op.again && run.nextStep > 0 ? run.nextStep - 1 : run.nextStep++;
      const e = epochOf(run, op.epoch);
      const base = step(op.wrongSession ? 'elsewhere' : run.sessionId, run.runId, stepIndex, e);
      const commit: Commit =
        op.kind === 'step'
          ? { ...base, committedAt: now, ...(op.checkpoint ? { checkpoint: 'step' as const } : {}) }
          : op.kind === 'terminal'
            ? { sessionId: base.sessionId, runId: run.runId, epoch: e, kind: 'terminal', runStatus: 'completed', output: { at }, committedAt: now }
            : { sessionId: base.sessionId, runId: run.runId, epoch: e, kind: 'turn_start', appendMessages: [{ role: 'user', content: `in${at}` }], committedAt: now };
      return settle(() => state.commit(commit));
    }
    case 'group': {
      const commits = op.r.map((r) => {
        const run = runOf(r);
        return run ? { ...step(run.sessionId, run.runId, run.nextStep++, epochOf(run, op.epoch)), committedAt: now } : undefined;
      });
      const settled = await Promise.allSettled(commits.map((commit) => (commit ? state.commit(commit) : Promise.resolve('no run'))));
      return settled.map(outcome);
    }
    case 'steps': {
      // A run of steps of one run on one connection, one transaction each (the path the caches are for).
      const run = runOf(op.r);
      if (!run) return 'no run';
      const out: unknown[] = [];
      for (let i = 0; i < op.count; i++) out.push(await settle(() => state.commit({ ...step(run.sessionId, run.runId, run.nextStep++, run.epoch), committedAt: now + i })));
      return out;
    }
    case 'claim': {
      const run = runOf(op.r);
      if (!run) return 'no run';
      return settle(async () => {
        const claimed = await state.claimRun(run.runId, `owner${op.c}`, 2_500, now, { takeover: op.takeover });
        run.epoch = claimed.lease.epoch;
        return { lease: claimed.lease, version: claimed.session.version, steps: claimed.run.stepCount };
      });
    }
    case 'renew': {
      const run = runOf(op.r);
      return run ? settle(() => state.renewLease(run.runId, op.epoch, 2_500, now)) : 'no run';
    }
    case 'stop': {
      const run = runOf(op.r);
      return run ? settle(() => state.requestStop(run.runId, { reason: `stop${at}`, requestedAt: now })) : 'no run';
    }
    case 'append': {
      const run = runOf(op.r);
      return run ? settle(() => state.appendJournal({ runId: run.runId, epoch: op.epoch, stepIndex: run.nextStep + op.ahead, kind: 'call_result', key: `k${at}`, data: { at }, at: now })) : 'no run';
    }
    case 'delete':
      return settle(() => state.deleteSession(`s${op.s}`));
    case 'prune':
      return settle(() => stores.prune(now));
    case 'raw': {
      // A write through the raw handle on this connection: no cache sees it, data_version does not move.
      const run = runOf(op.r);
      if (!run) return 'no run';
      const db = handleOf(stores.database);
      // A journal row no append made: the next step commit must still drop it.
      if (op.journal) return db.prepare("INSERT INTO journal (run_id, key, epoch, step_index, kind, data, at) VALUES (?, ?, 1, ?, 'call_result', NULL, 0)").run(run.runId, `raw${at}`, run.nextStep).changes;
      return db.prepare('UPDATE runs SET epoch = epoch + 1 WHERE run_id = ?').run(run.runId).changes;
    }
    case 'sclaim': {
      const run = runOf(op.r);
      if (!run) return 'no run';
      return settle(async () => {
        const writer = await stores.streamManager.claim(`st${op.st}`, run.runId);
        world.writers.set(`${op.c}/st${op.st}/${run.runId}`, writer);
        return writer.startSeq;
      });
    }
    case 'swrite': {
      const run = runOf(op.r);
      const writer = run && world.writers.get(`${op.c}/st${op.st}/${run.runId}`);
      if (!run || !writer) return 'no writer';
      const chunk = { ...delta(run.runId, `d${at}`, now), streamId: `st${op.st}` };
      if (op.queue) {
        writer.queue!(chunk);
        return 'queued';
      }
      return settle(() => writer.write(chunk));
    }
    case 'sdelete':
      return settle(() => stores.streamManager.deleteStream(`st${op.st}`));
  }
}

/** Everything both connections can read at the end. */
async function contents(world: World, script: Script): Promise<unknown> {
  const out: unknown[] = [];
  for (const stores of world.connections) {
    for (let s = 0; s < 3; s++) {
      out.push(await stores.stateStore.loadSession(`s${s}`));
      out.push(await stores.stateStore.listCheckpoints(`s${s}`));
    }
    for (const run of script.runs) {
      out.push(await stores.stateStore.getRun(run.runId));
      out.push(await stores.stateStore.loadJournal(run.runId));
    }
    for (let st = 0; st < 2; st++) out.push(await chunksOf(stores, `st${st}`));
  }
  return out;
}

async function play(path: string, readCaches: boolean, ops: readonly Op[]): Promise<{ results: unknown[]; contents: unknown; hits: number }> {
  const world = new World(path, readCaches);
  const script: Script = { runs: [] };
  try {
    const results: unknown[] = [];
    for (let at = 0; at < ops.length; at++) {
      const op = ops[at]!;
      results.push(await apply(world, script, op, at));
      if (op.t === 'begin') script.runs.push({ runId: `r${at}`, sessionId: `s${op.s}`, nextStep: 0, epoch: 1 });
    }
    const hits = world.connections.reduce((sum, stores) => {
      const caches = connectionCaches(handleOf(stores.database));
      return sum + (caches.peek('fence')?.hits ?? 0) + (caches.peek('stream')?.hits ?? 0);
    }, 0);
    return { results, contents: await contents(world, script), hits };
  } finally {
    world.close();
  }
}

describe('SQLite read caches: equivalence with the caches off', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'helix-sqlite-cache-eq-'));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('random interleavings of commits, group commits, claims, stops, renewals, appends, deletes, prunes, raw writes and stream writes on two connections of one file: the same results, errors and contents', async () => {
    let n = 0;
    let hits = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 5, maxLength: 60 }), async (ops) => {
        n++;
        const on = await play(join(dir, `on-${n}.db`), true, ops);
        const off = await play(join(dir, `off-${n}.db`), false, ops);
        expect(on.results).toEqual(off.results);
        expect(on.contents).toEqual(off.contents);
        expect(off.hits).toBe(0);
        hits += on.hits;
      }),
      { numRuns: 150 },
    );
    // The caches answered often enough for the property to mean something.
    expect(hits).toBeGreaterThan(100);
  }, 120_000);
});
