import { AgentError, isTerminalChunk } from '@helix-agents/sdk';
import type { StreamChunk, StreamManager, StreamReadOptions } from '@helix-agents/sdk';
import { resolveRetention } from '@helix-agents/sdk/store';
import type { Prunable, PruneReport, RetentionPolicy, StreamChunkInput, StreamWriter } from '@helix-agents/sdk/store';
import type { SqliteDatabase } from './database.js';
import { deferred, handleOf, immediate, joinWrites } from './database.js';
import { batchColumns, packChunk, SharedFields, unpackChunks, type PackedChunk } from './packing.js';
import { connectionCaches } from './read-cache.js';

/** Options of {@link SqliteStreamManager}. */
export interface SqliteStreamManagerOptions {
  /**
   * How often a following reader looks for chunks written by another connection or process (default
   * 20 ms). Chunks written through this manager wake its readers at once.
   */
  readonly pollIntervalMs?: number;
  /**
   * How long a queued chunk (the run loop queues every chunk of a step) may wait for the next state
   * commit on this connection before it is written in a transaction of its own (default 10 ms). The
   * step commit's transaction writes the chunks queued before it, so a step is one transaction; this
   * bounds how late a reader sees the chunks of a long step (a slow model call or tool).
   */
  readonly flushIntervalMs?: number;
  /**
   * What to keep of finished work: the manager reads `chunkTtlMs` (default: keep every chunk). `prune()`
   * drops the chunks of finished runs that are that old; `openSqliteStores` runs it every
   * `pruneIntervalMs` when that is set.
   */
  readonly retention?: RetentionPolicy;
}

/** How many chunks one prune transaction deletes at most (the write lock is let go in between). */
const PRUNE_BATCH = 2_000;

/** A row of `stream_batches`: the chunks `first_seq`, `first_seq + 1`, ... of one run, as a JSON array (see `batchColumns`). */
interface BatchRow {
  first_seq: number;
  run_id: string;
  bodies: string;
  shared: string | null;
}

/** Who learns how a write went: the writer of a queued chunk, or the promise of a written one. */
interface WriteOutcome {
  done(written: boolean): void;
  fail(error: unknown): void;
}

interface PendingWrite {
  readonly streamId: string;
  readonly runId: string;
  readonly chunk: PackedChunk;
  readonly outcome: WriteOutcome;
}

/**
 * What a writer learnt from the writes it queued: that it lost the stream, or that a write failed. One per
 * writer, the outcome of every chunk it queues (a queued chunk costs no closure of its own).
 */
class WriterState implements WriteOutcome {
  lost = false;
  failure: unknown = undefined;
  /** The run fields of the chunks it packs (the same for all of them, as a rule). */
  readonly fields = new SharedFields();

  done(written: boolean): void {
    if (!written) this.lost = true;
  }

  fail(error: unknown): void {
    this.failure = error;
  }
}

/** The seqs of one stream in `stream_batches`' keys: a stream's rows are keys [sk * SPAN, (sk + 1) * SPAN). */
const SPAN = 4_294_967_296;

/**
 * An integer parameter in key arithmetic. better-sqlite3 binds every JS number as a REAL, and REAL arithmetic
 * rounds past 2^53: `? * SPAN + ?` would merge neighbouring keys of a stream whose key is that large, so the
 * parameter is made an INTEGER first (exact, as the numbers bound are below 2^53).
 */
const INT = 'CAST(? AS INTEGER)';

/** What a write reads of a stream: its key, its owner and the seq its next chunk gets (read-cache.ts caches it per connection). */
interface StreamHead {
  readonly sk: number;
  readonly runId: string;
  readonly next: number;
}

/** How many streams' heads a connection keeps (the oldest goes first). */
export const STREAM_CACHE_SIZE = 1_024;

/** How many rows (each the chunks one transaction wrote to the stream) a reader fetches per query. */
const PAGE = 100;

/**
 * The SQLite {@link StreamManager}: chunks in `stream_batches` (the chunks one transaction wrote to a
 * stream, in one row keyed by the stream's small integer key and their last seq), the claim in
 * `stream_owners`. A write checks the
 * claim in the same transaction that appends the chunks, so a superseded writer in any process writes
 * nothing. Writes issued in the same tick are committed
 * together in one transaction, in call order. Queued chunks (`writer.queue`, the run loop's path for a
 * step's chunks) wait for the next state commit on the same connection and are written in its
 * transaction (or, after `flushIntervalMs` without one, in their own); readers only ever see chunks
 * that are stored. Followers poll for other processes' chunks and are woken at once by this manager's
 * own writes.
 */
export class SqliteStreamManager implements StreamManager, Prunable {
  /** The database this manager writes. */
  readonly database: SqliteDatabase;
  readonly #chunkTtlMs: number;
  readonly #pruneBatch: (cutoff: number) => number;
  readonly #pollIntervalMs: number;
  readonly #flushIntervalMs: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** When the oldest write now pending was queued (performance.now()): the timer flushes it once it is flushIntervalMs old. */
  #pendingSince = 0;
  /**
   * The flush timer's callback, made once. A step commit takes the pending writes and leaves the timer armed
   * (arming and clearing a timer on every step costs more than one late wake-up); the timer then finds
   * nothing to write, or writes that are not due yet and waits for the rest of their interval.
   */
  readonly #onTimer = (): void => {
    this.#timer = undefined;
    if (this.#pending.length === 0) return;
    const wait = this.#pendingSince + this.#flushIntervalMs - performance.now();
    if (wait >= 1) this.#timer = setTimeout(this.#onTimer, wait);
    else this.#flush();
  };
  readonly #claim: (streamId: string, runId: string) => number;
  readonly #writeBatch: (batch: readonly PendingWrite[]) => boolean[];
  readonly #readPage: (streamId: string, fromSeq: number) => { owner: string | undefined; rows: BatchRow[] };
  readonly #delete: (streamId: string) => void;
  /** The run that last claimed each stream through this manager (a claim elsewhere is seen on the next write). */
  readonly #claims = new Map<string, string>();
  readonly #waiters = new Map<string, Set<() => void>>();
  #pending: PendingWrite[] = [];
  #flushScheduled = false;

  constructor(database: SqliteDatabase, options: SqliteStreamManagerOptions = {}) {
    this.database = database;
    this.#pollIntervalMs = Math.max(1, options.pollIntervalMs ?? 20);
    this.#flushIntervalMs = Math.max(0, options.flushIntervalMs ?? 10);
    this.#chunkTtlMs = resolveRetention(options.retention).chunkTtlMs;
    const db = handleOf(database);
    // A stream's batches are the rowid range [sk * SPAN, (sk + 1) * SPAN) of stream_batches, the row's key
    // sk * SPAN + its last seq: the table's own tree finds them, no index is written per step.
    // A batch goes when its newest chunk is old enough and its run is finished: another run owns the stream
    // now, or the owner's last chunk is its end or error. A suspended owner, and a running one, keep theirs.
    // Before anything goes, each stream's claim records the seq after its last chunk, so that the seqs of
    // pruned chunks are never given out again.
    // The last chunk of a batch is its last element, or in a packed row possibly a one-element array holding it.
    const lastOf = (batch: string, field: string): string => `coalesce(json_extract(${batch}.bodies, '$[#-1].${field}'), json_extract(${batch}.bodies, '$[#-1][0].${field}'))`;
    const lastKey = `(SELECT max(b.key) FROM stream_batches b WHERE b.key >= stream_owners.sk * ${SPAN} AND b.key < (stream_owners.sk + 1) * ${SPAN})`;
    const keepSeqs = db.prepare(`UPDATE stream_owners SET next_seq = ${lastKey} - sk * ${SPAN} + 1 WHERE next_seq <= ${lastKey} - sk * ${SPAN}`);
    const pruneBatches = db.prepare<[number]>(
      `DELETE FROM stream_batches WHERE key IN (
         SELECT c.key FROM stream_batches c JOIN stream_owners o ON o.sk = c.key / ${SPAN}
         WHERE ${lastOf('c', 'timestamp')} <= ?
           AND (c.run_id <> o.run_id OR EXISTS (
             SELECT 1 FROM stream_batches t WHERE t.key = o.sk * ${SPAN} + o.next_seq - 1 AND t.run_id = o.run_id
               AND ${lastOf('t', 'type')} IN ('end', 'error')))
         LIMIT ${PRUNE_BATCH})`,
    );
    // A prune rewrites claims' next seqs: it clears the caches (the default).
    this.#pruneBatch = immediate(db, (cutoff: number) => {
      keepSeqs.run();
      return pruneBatches.run(cutoff).changes;
    });
    // The owner and next seq of the streams this connection wrote last, kept by every write path below.
    const heads = connectionCaches(db).cache<StreamHead>('stream', STREAM_CACHE_SIZE);
    const upsertOwner = db.prepare<[string, string], { sk: number; next_seq: number }>(
      'INSERT INTO stream_owners (stream_id, run_id, next_seq) VALUES (?, ?, 0) ON CONFLICT (stream_id) DO UPDATE SET run_id = excluded.run_id RETURNING sk, next_seq',
    );
    const lastSeqOf = `(SELECT b.key - o.sk * ${SPAN} FROM stream_batches b WHERE b.key >= o.sk * ${SPAN} AND b.key < (o.sk + 1) * ${SPAN} ORDER BY b.key DESC LIMIT 1)`;
    // The claim and the seq of the stream's last stored chunk, in one statement.
    const owner = db.prepare<[string], { sk: number; run_id: string; next_seq: number; last_seq: number | null }>(
      `SELECT o.sk, o.run_id, o.next_seq, ${lastSeqOf} AS last_seq FROM stream_owners o WHERE o.stream_id = ?`,
    );
    const lastSeq = db.prepare<[string], number | null>(`SELECT ${lastSeqOf} FROM stream_owners o WHERE o.stream_id = ?`).pluck();
    const ownerId = db.prepare<[string], string>('SELECT run_id FROM stream_owners WHERE stream_id = ?').pluck();
    const insertBatch = db.prepare<[number, number, number, string, string, string | null]>(
      `INSERT INTO stream_batches (key, first_seq, run_id, bodies, shared) VALUES (${INT} * ${SPAN} + ${INT}, ?, ?, ?, ?)`,
    );
    const page = db.prepare<[number, string, number], BatchRow>(
      `SELECT b.first_seq, b.run_id, b.bodies, b.shared FROM stream_owners o JOIN stream_batches b ON b.key >= o.sk * ${SPAN} + ${INT} AND b.key < (o.sk + 1) * ${SPAN}
       WHERE o.stream_id = ? ORDER BY b.key LIMIT ?`,
    );
    /** The seq the stream's next chunk gets: after its last stored chunk, and never below its claim's record. */
    const nextSeq = (recorded: number, last: number | null | undefined): number => (last === undefined || last === null || last < recorded ? recorded : last + 1);
    this.#claim = immediate(
      db,
      (streamId: string, runId: string) => {
        heads.drop(streamId);
        const claimed = upsertOwner.get(streamId, runId)!;
        return nextSeq(claimed.next_seq, lastSeq.get(streamId));
      },
      'keeps',
    );
    // The chunks a transaction accepts for one stream go in one row (one B-tree append, not one per chunk).
    const writeRows = (batch: readonly PendingWrite[]): boolean[] => {
      const streams = new Map<string, { sk: number; runId: string; first: number; bodies: PackedChunk[] } | null>();
      const results: boolean[] = [];
      for (const write of batch) {
        let stream = streams.get(write.streamId);
        if (stream === undefined) {
          const cached = heads.get(write.streamId);
          if (cached) stream = { sk: cached.sk, runId: cached.runId, first: cached.next, bodies: [] };
          else {
            const row = owner.get(write.streamId);
            stream = row ? { sk: row.sk, runId: row.run_id, first: nextSeq(row.next_seq, row.last_seq), bodies: [] } : null;
          }
          streams.set(write.streamId, stream);
        }
        if (stream === null || stream.runId !== write.runId) {
          results.push(false);
          continue;
        }
        stream.bodies.push(write.chunk);
        results.push(true);
      }
      for (const [streamId, stream] of streams) {
        if (!stream || stream.bodies.length === 0) continue;
        const last = stream.first + stream.bodies.length - 1;
        if (last >= SPAN) throw new AgentError('stream_closed', `A stream holds at most ${SPAN} chunks.`);
        const { bodies, shared } = batchColumns(stream.bodies, streamId, stream.runId);
        insertBatch.run(stream.sk, last, stream.first, stream.runId, bodies, shared);
        // What the next write of the stream would read: the same owner, the seq after this batch.
        heads.set(streamId, { sk: stream.sk, runId: stream.runId, next: last + 1 });
      }
      return results;
    };
    this.#writeBatch = immediate(db, writeRows, 'keeps');
    // The chunks queued so far ride in the next state commit's transaction on this connection.
    joinWrites(database, {
      write: () => {
        if (this.#pending.length === 0) return undefined;
        const batch = this.#pending;
        this.#pending = [];
        const results = writeRows(batch);
        return (committed) => {
          if (committed) this.#settle(batch, results);
          else this.#requeue(batch);
        };
      },
    });
    // One snapshot: the owner and the chunks are read together, so "the run lost the stream and every chunk of it was read" is exact.
    this.#readPage = deferred(db, (streamId: string, fromSeq: number) => ({ owner: ownerId.get(streamId), rows: page.all(fromSeq, streamId, PAGE) }));
    const deleteChunks = db.prepare<[string]>(
      `DELETE FROM stream_batches WHERE key IN (SELECT b.key FROM stream_owners o JOIN stream_batches b ON b.key >= o.sk * ${SPAN} AND b.key < (o.sk + 1) * ${SPAN} WHERE o.stream_id = ?)`,
    );
    const deleteOwner = db.prepare<[string]>('DELETE FROM stream_owners WHERE stream_id = ?');
    this.#delete = immediate(
      db,
      (streamId: string) => {
        heads.drop(streamId);
        deleteChunks.run(streamId);
        deleteOwner.run(streamId);
      },
      'keeps',
    );
    database.onClose(() => {
      this.#clearTimer();
      this.#flush();
      for (const set of this.#waiters.values()) for (const wake of [...set]) wake();
    });
  }

  async claim(streamId: string, runId: string): Promise<StreamWriter> {
    // Writes issued before the claim keep their place in call order.
    this.#flush();
    const startSeq = this.#claim(streamId, runId);
    this.#claims.set(streamId, runId);
    this.#wake(streamId);
    const state = new WriterState();
    const claims = this.#claims;
    const owns = (): boolean => !state.lost && claims.get(streamId) === runId;
    return {
      startSeq,
      get owned() {
        return owns();
      },
      write: async (chunk: StreamChunkInput) => {
        if (state.failure !== undefined) throw state.failure;
        if (!owns()) return false;
        const written = await this.#enqueue(streamId, runId, packChunk(chunk, state.fields));
        if (!written) state.lost = true;
        return written;
      },
      queue: (chunk: StreamChunkInput) => {
        if (state.failure !== undefined) throw state.failure;
        if (!owns()) return;
        const packed = packChunk(chunk, state.fields);
        if (this.#pending.length === 0) this.#pendingSince = performance.now();
        this.#pending.push({ streamId, runId, chunk: packed, outcome: state });
        this.#timer ??= setTimeout(this.#onTimer, this.#flushIntervalMs);
      },
    };
  }

  async deleteStream(streamId: string): Promise<void> {
    // What was queued for it goes first (in call order), then the stream: its chunks and its claim.
    this.#flush();
    this.#delete(streamId);
    this.#claims.delete(streamId);
    this.#wake(streamId);
  }

  /**
   * Drops the chunks of finished runs whose timestamp is at least `chunkTtlMs` before `now` (nothing
   * without a `chunkTtlMs`), in transactions of at most 2,000 chunks. A run is finished when another
   * run claimed the stream after it, or when its last chunk is its `end` or `error`; the chunks of a
   * running run, and of a suspended run that still owns the stream, stay. Chunks keep their seq: a
   * reader asking for a pruned offset goes on at the next kept chunk.
   */
  async prune(now: number = Date.now()): Promise<PruneReport> {
    this.#flush();
    if (!Number.isFinite(this.#chunkTtlMs) || this.database.closed) return { chunks: 0, journalEntries: 0, records: 0 };
    const cutoff = now - this.#chunkTtlMs;
    let chunks = 0;
    for (;;) {
      const n = this.#pruneBatch(cutoff);
      chunks += n;
      if (n < PRUNE_BATCH) break;
      // Let other writers in between batches.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    return { chunks, journalEntries: 0, records: 0 };
  }

  async *read(streamId: string, options: StreamReadOptions = {}): AsyncIterable<StreamChunk> {
    const follow = options.follow ?? true;
    const runId = options.untilRunEnds;
    let seq = Math.max(0, options.fromSeq ?? 0);
    for (;;) {
      if (this.database.closed) return;
      this.#flush();
      const { owner, rows } = this.#readPage(streamId, seq);
      for (const row of rows) {
        const chunks = unpackChunks(row.bodies, row.shared, streamId, row.run_id);
        for (let i = 0; i < chunks.length; i++) {
          const at = row.first_seq + i;
          if (at < seq) continue;
          seq = at + 1;
          if (runId !== undefined && row.run_id !== runId) continue;
          const chunk = Object.assign(chunks[i]!, { seq: at }) as StreamChunk;
          yield chunk;
          if (runId !== undefined && isTerminalChunk(chunk)) return;
        }
      }
      if (rows.length === PAGE) continue;
      if (!follow || options.signal?.aborted) return;
      // The run lost the stream and we have read all it wrote: nothing more will come.
      if (runId !== undefined && owner !== runId) return;
      await this.#wait(streamId, options.signal);
    }
  }

  #enqueue(streamId: string, runId: string, chunk: PackedChunk): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      this.#pending.push({ streamId, runId, chunk, outcome: { done: resolve, fail: reject } });
      if (!this.#flushScheduled) {
        this.#flushScheduled = true;
        queueMicrotask(() => this.#flush());
      }
    });
  }

  /** Commits the queued writes in one transaction, in call order. */
  #flush(): void {
    this.#flushScheduled = false;
    if (this.#pending.length === 0) return;
    const batch = this.#pending;
    this.#pending = [];
    this.#clearTimer();
    let results: boolean[];
    try {
      results = this.#writeBatch(batch);
    } catch (error) {
      const failure = AgentError.isInstance(error)
        ? error
        : new AgentError('stream_closed', `SQLite could not write to the stream: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
      for (const write of batch) write.outcome.fail(failure);
      return;
    }
    this.#settle(batch, results);
  }

  /** A joined transaction rolled back: its chunks go back to the front of the queue, to be written on their own. */
  #requeue(batch: PendingWrite[]): void {
    // The batch goes back in front, as old as it was: the timer's next look writes it.
    this.#pendingSince = performance.now() - this.#flushIntervalMs;
    this.#pending = batch.concat(this.#pending);
    this.#timer ??= setTimeout(this.#onTimer, this.#flushIntervalMs);
  }

  #clearTimer(): void {
    if (this.#timer === undefined) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** The writes of a batch are stored: their writers learn whether they still owned the stream, readers wake. */
  #settle(batch: readonly PendingWrite[], results: readonly boolean[]): void {
    // Most batches are one stream's (a step's chunks): a set only when there are more.
    const first = batch[0]?.streamId;
    let others: Set<string> | undefined;
    for (let i = 0; i < batch.length; i++) {
      const write = batch[i]!;
      write.outcome.done(results[i] === true);
      if (write.streamId !== first) (others ??= new Set()).add(write.streamId);
    }
    if (first !== undefined) this.#wake(first);
    if (others) for (const streamId of others) this.#wake(streamId);
  }

  #wake(streamId: string): void {
    const set = this.#waiters.get(streamId);
    if (set) for (const wake of [...set]) wake();
  }

  /** Waits for a local write, the next poll, or the abort of the reader (never a busy loop). */
  #wait(streamId: string, signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve) => {
      let set = this.#waiters.get(streamId);
      if (!set) {
        set = new Set();
        this.#waiters.set(streamId, set);
      }
      const waiters = set;
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        waiters.delete(done);
        if (waiters.size === 0 && this.#waiters.get(streamId) === waiters) this.#waiters.delete(streamId);
        resolve();
      };
      const timer = setTimeout(done, this.#pollIntervalMs);
      signal?.addEventListener('abort', done, { once: true });
      waiters.add(done);
    });
  }
}
