import { isTerminalChunk } from '@helix-agents/sdk';
import type { StreamChunk, StreamManager, StreamReadOptions } from '@helix-agents/sdk';
import type pg from 'pg';
import { encodeWrite, StreamNotifier } from './notifier.js';
import { run, shortHash, statements, storeError, toNumber, type Statement } from './sql.js';
import { resolveRetention } from '@helix-agents/sdk/store';
import type { Prunable, PruneReport, RetentionPolicy, StreamChunkInput, StreamWriter } from '@helix-agents/sdk/store';

/** Options of {@link PostgresStreamManager}. */
export interface PostgresStreamManagerOptions {
  /** The Postgres schema holding the tables ('helix' by default); migrate it first with `migratePostgres`. */
  readonly schema?: string;
  /**
   * How often a following reader looks for new chunks when no notification came, in ms (1000 by
   * default). Notifications (LISTEN/NOTIFY) normally wake readers at once; polling only covers a lost
   * LISTEN connection.
   */
  readonly pollIntervalMs?: number;
  /**
   * How long a queued chunk (`writer.queue`: the run loop's path for a step's chunks) waits for the next
   * state commit before it is written on its own, in ms (10 by default). The state store of
   * `openPostgresStores` sends the queued chunks alongside each commit, so a step's chunks cost no round
   * trip of their own.
   */
  readonly flushIntervalMs?: number;
  /**
   * What to keep of finished work: the manager reads `chunkTtlMs` (default: keep every chunk). `prune()`
   * drops the chunks of finished runs that are that old; `openPostgresStores` runs it every
   * `pruneIntervalMs` when that is set.
   */
  readonly retention?: RetentionPolicy;
}

/** How many chunks one prune statement deletes at most. */
const PRUNE_BATCH = 5_000;

// Chunks read per query, and written per statement when writes queue up behind one in flight.
const PAGE = 500;
const MAX_BATCH = 500;

function buildStatements(s: string) {
  return {
    // The claim moves ownership; the NOTIFY (sent at commit) tells readers and the old writer's process.
    claim: `WITH up AS (
        INSERT INTO ${s}.streams AS st (stream_id, owner, next_seq, generation) VALUES ($1, $2, 0, 1)
        ON CONFLICT (stream_id) DO UPDATE SET owner = EXCLUDED.owner, generation = st.generation + 1
        RETURNING next_seq, generation
      )
      SELECT next_seq, generation, pg_notify($3, CASE WHEN $4::boolean THEN json_build_array('c', $1::text, $2::text, generation)::text ELSE '*' END) FROM up`,
    // One statement: the ownership check takes the stream row's lock, so offsets are handed out in
    // commit order without gaps, and a write after a newer claim matches no row and writes nothing.
    append: `WITH st AS (
        UPDATE ${s}.streams SET next_seq = next_seq + $4::bigint WHERE stream_id = $1 AND owner = $2
        RETURNING next_seq - $4::bigint AS first
      ), ins AS (
        INSERT INTO ${s}.chunks (stream_id, seq, run_id, chunk)
        SELECT $1, st.first + c.ord - 1, c.run_id, c.chunk
        FROM st, ROWS FROM (json_array_elements($3::json), unnest($5::text[])) WITH ORDINALITY AS c(chunk, run_id, ord)
      )
      SELECT first, pg_notify($6, $7) FROM st`,
    page: `SELECT seq, chunk::text AS chunk FROM ${s}.chunks WHERE stream_id = $1 AND seq >= $2 ORDER BY seq LIMIT $3`,
    pageOfRun: `SELECT seq, chunk::text AS chunk FROM ${s}.chunks WHERE stream_id = $1 AND seq >= $2 AND run_id = $4 ORDER BY seq LIMIT $3`,
    owner: `SELECT owner FROM ${s}.streams WHERE stream_id = $1`,
    // A chunk goes when it is old enough ($1) and its run is finished: another run owns the stream now, or
    // the owner's last chunk is its end or error. A suspended owner, and a running one, keep theirs.
    prune: `WITH gone AS (
        DELETE FROM ${s}.chunks c USING (
          SELECT k.stream_id, k.seq FROM ${s}.chunks k JOIN ${s}.streams o ON o.stream_id = k.stream_id
          WHERE (k.chunk->>'timestamp')::bigint <= $1::bigint
            AND (k.run_id IS DISTINCT FROM o.owner OR EXISTS (
              SELECT 1 FROM ${s}.chunks t WHERE t.stream_id = o.stream_id AND t.seq = o.next_seq - 1 AND t.run_id = o.owner
                AND t.chunk->>'type' IN ('end', 'error')))
          LIMIT ${PRUNE_BATCH}
        ) d WHERE c.stream_id = d.stream_id AND c.seq = d.seq
        RETURNING 1
      )
      SELECT count(*)::integer AS n FROM gone`,
    deleteStream: `WITH c AS (DELETE FROM ${s}.chunks WHERE stream_id = $1) DELETE FROM ${s}.streams WHERE stream_id = $1`,
  };
}

type Statements = Record<keyof ReturnType<typeof buildStatements>, Statement>;

interface QueuedWrite {
  readonly chunk: StreamChunkInput;
  readonly resolve: (ok: boolean) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Package-internal (the state store's side of `openPostgresStores`): a run's queued chunks, taken from
 * its writer to be appended by the run's next commit statement, so that a step and its chunks are one
 * statement and one transaction. While a rider is out, the writer sends nothing else (its order holds).
 */
export interface ChunkRider {
  /** The append's parameters, in the order {@link riderSql} numbers them. */
  readonly values: readonly unknown[];
  /** The commit ran: the chunks were stored (`true`), or refused because the run no longer owns the stream. */
  settle(written: boolean): void;
  /** The commit wrote nothing: the chunks go back to the writer, ahead of anything queued since. */
  restore(): void;
}

/**
 * The SQL (in a statement's WITH list, after a CTE named `gate`) that appends a rider's chunks when
 * `gate` has a row, and the select-list column that sends the readers' NOTIFY. `$n` placeholders start
 * at `first`: stream id, owner run id, chunks JSON, count, run ids, NOTIFY channel, NOTIFY payload.
 */
export function riderSql(s: string, first: number, gate: string): { ctes: string; columns: string } {
  const p = (i: number) => `$${first + i}`;
  return {
    ctes: `rider_st AS (
        UPDATE ${s}.streams SET next_seq = next_seq + ${p(3)}::bigint
        WHERE stream_id = ${p(0)} AND owner = ${p(1)} AND EXISTS (SELECT 1 FROM ${gate})
        RETURNING next_seq - ${p(3)}::bigint AS first
      ), rider_ins AS (
        INSERT INTO ${s}.chunks (stream_id, seq, run_id, chunk)
        SELECT ${p(0)}, rider_st.first + c.ord - 1, c.run_id, c.chunk
        FROM rider_st, ROWS FROM (json_array_elements(${p(2)}::json), unnest(${p(4)}::text[])) WITH ORDINALITY AS c(chunk, run_id, ord)
      )`,
    columns: `(SELECT first FROM rider_st) AS rider_first, (SELECT pg_notify(${p(5)}, ${p(6)}) FROM rider_st)::text AS rider_notified`,
  };
}

/**
 * The Postgres {@link StreamManager}: chunks are rows keyed by (stream, seq), and a `streams` row holds
 * the owner and the next offset. Following readers sleep on LISTEN/NOTIFY (with polling as a fallback),
 * so a reader in one process sees what a writer in another wrote as soon as it commits. A writer applies
 * its writes in call order; writes issued while one is in flight go out together in one statement.
 */
export class PostgresStreamManager implements StreamManager, Prunable {
  /** The pool the manager queries through. */
  readonly pool: pg.Pool;
  /** The Postgres schema of its tables. */
  readonly schema: string;
  readonly #sql: Statements;
  readonly #pollIntervalMs: number;
  readonly #notifier: StreamNotifier;
  // The live writers of each stream in this process, so a claim can silence the older ones at once.
  readonly #writers = new Map<string, Set<PostgresStreamWriter>>();
  /** Writers holding queued chunks, and the timer that writes them when no commit comes first. */
  readonly #queued = new Set<PostgresStreamWriter>();
  readonly #flushIntervalMs: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  readonly #chunkTtlMs: number;

  constructor(pool: pg.Pool, options: PostgresStreamManagerOptions = {}) {
    this.pool = pool;
    this.#chunkTtlMs = resolveRetention(options.retention).chunkTtlMs;
    this.schema = options.schema ?? 'helix';
    this.#sql = statements(this.schema, buildStatements);
    this.#pollIntervalMs = Math.max(10, options.pollIntervalMs ?? 1_000);
    this.#flushIntervalMs = Math.max(0, options.flushIntervalMs ?? 10);
    this.#notifier = new StreamNotifier(pool, streamChannel(this.schema), this.#pollIntervalMs, (streamId, runId, generation) => this.#claimed(streamId, runId, generation));
  }

  /** The NOTIFY channel of this manager's schema. */
  get channel(): string {
    return this.#notifier.channel;
  }

  async claim(streamId: string, runId: string): Promise<StreamWriter> {
    let rows: { next_seq: string | number; generation: string | number }[];
    try {
      rows = await run(this.pool, this.#sql.claim, [streamId, runId, this.channel, fitsPayload(streamId, runId)]);
    } catch (error) {
      throw storeError('stream claim', error);
    }
    const startSeq = toNumber(rows[0]?.next_seq ?? 0);
    const generation = toNumber(rows[0]?.generation ?? 0);
    this.#claimed(streamId, runId, generation);
    const writer = new PostgresStreamWriter(this, streamId, runId, startSeq, generation);
    let live = this.#writers.get(streamId);
    if (!live) {
      live = new Set();
      this.#writers.set(streamId, live);
    }
    live.add(writer);
    this.#notifier.wake(streamId);
    return writer;
  }

  /**
   * A run claimed a stream (here, or in another process when notified): writers here of another run
   * from an older claim stop owning it. The claim generation orders claims whatever order their news
   * arrives in; a writer of the same run keeps owning the stream, as ownership is by run id.
   */
  #claimed(streamId: string, runId: string, generation: number): void {
    const live = this.#writers.get(streamId);
    if (!live) return;
    for (const writer of live) {
      if (writer.runId !== runId && writer.generation < generation) this.#retire(writer);
    }
  }

  #retire(writer: PostgresStreamWriter): void {
    writer.markNotOwned();
    const live = this.#writers.get(writer.streamId);
    if (!live) return;
    live.delete(writer);
    if (live.size === 0) this.#writers.delete(writer.streamId);
  }

  /** A writer queued a chunk: it is written with the next commit, or when the timer fires. */
  noteQueued(writer: PostgresStreamWriter): void {
    this.#queued.add(writer);
    this.#timer ??= setTimeout(() => {
      this.#timer = undefined;
      void this.flushQueued();
    }, this.#flushIntervalMs);
  }

  /**
   * Writes every queued chunk now (one statement per writer, all at once); resolves once they are
   * stored. A write that fails is reported to its writer (its next write throws it).
   */
  async flushQueued(): Promise<void> {
    if (this.#queued.size === 0) return;
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    const writers = [...this.#queued];
    this.#queued.clear();
    await Promise.all(writers.map((writer) => writer.flushNow()));
  }

  /**
   * Package-internal: the chunks `runId`'s writer queued, for its commit to append (see
   * {@link ChunkRider}); undefined when it queued none, or is sending some already (they must land first).
   */
  takeRider(runId: string): ChunkRider | undefined {
    for (const writer of this.#queued) {
      if (writer.runId !== runId) continue;
      const batch = writer.takeQueued();
      if (batch === undefined) return undefined;
      this.#queued.delete(writer);
      if (this.#queued.size === 0 && this.#timer !== undefined) {
        clearTimeout(this.#timer);
        this.#timer = undefined;
      }
      const chunks = batch.writes.map((w) => w.chunk);
      return {
        values: [writer.streamId, writer.runId, JSON.stringify(chunks), chunks.length, chunks.map((c) => c.runId), this.channel, encodeWrite(writer.streamId)],
        settle: (written) => {
          if (written) this.#notifier.wake(writer.streamId);
          else this.#retire(writer);
          batch.settle(written);
        },
        // The writer sends them at once (the commit may retry on its locked path without them).
        restore: () => batch.restore(),
      };
    }
    return undefined;
  }

  /** Appends a batch of one writer's chunks; false when the writer no longer owns the stream. */
  async append(writer: PostgresStreamWriter, chunks: readonly StreamChunkInput[]): Promise<boolean> {
    let rows: unknown[];
    try {
      rows = await run(this.pool, this.#sql.append, [
        writer.streamId,
        writer.runId,
        JSON.stringify(chunks),
        chunks.length,
        chunks.map((c) => c.runId),
        this.channel,
        encodeWrite(writer.streamId),
      ]);
    } catch (error) {
      throw storeError('stream write', error);
    }
    const ok = rows.length > 0;
    if (!ok) this.#retire(writer);
    else {
      // Local readers need not wait for the notification's round trip.
      this.#notifier.wake(writer.streamId);
      // A run's part of the stream is over after its terminal chunk: stop tracking the writer.
      if (chunks.some((c) => c.type === 'end' || c.type === 'error')) this.#writers.get(writer.streamId)?.delete(writer);
    }
    return ok;
  }

  async *read(streamId: string, options: StreamReadOptions = {}): AsyncIterable<StreamChunk> {
    const follow = options.follow ?? true;
    const runId = options.untilRunEnds;
    const signal = options.signal;
    let seq = Math.max(0, options.fromSeq ?? 0);
    const interest = follow ? this.#notifier.subscribe(streamId) : undefined;
    try {
      // Listen before the first query, so a chunk committed right after it still wakes us.
      if (interest) await Promise.race([this.#notifier.ready(), sleep(this.#pollIntervalMs)]);
      let last = false;
      for (;;) {
        if (this.#closed) return;
        const seen = interest?.version ?? 0;
        const rows = await this.#page(streamId, seq, runId);
        for (const row of rows) {
          const chunk = JSON.parse(row.chunk) as StreamChunk & { seq: number };
          chunk.seq = toNumber(row.seq);
          seq = chunk.seq + 1;
          yield chunk;
          if (runId !== undefined && isTerminalChunk(chunk)) return;
        }
        if (rows.length === PAGE) continue;
        if (last || !follow || signal?.aborted) return;
        if (runId !== undefined && (await this.#owner(streamId)) !== runId) {
          // The run lost the stream, so it can write nothing more; what it committed before is visible
          // now: read to the end once more, then stop.
          last = true;
          continue;
        }
        if (interest) await this.#notifier.wait(interest, seen, this.#pollIntervalMs, signal);
        if (signal?.aborted) return;
      }
    } finally {
      if (interest) this.#notifier.unsubscribe(streamId);
    }
  }

  async #page(streamId: string, fromSeq: number, runId: string | undefined): Promise<{ seq: string; chunk: string }[]> {
    try {
      return runId === undefined
        ? await run<{ seq: string; chunk: string }>(this.pool, this.#sql.page, [streamId, fromSeq, PAGE])
        : await run<{ seq: string; chunk: string }>(this.pool, this.#sql.pageOfRun, [streamId, fromSeq, PAGE, runId]);
    } catch (error) {
      throw storeError('stream read', error);
    }
  }

  async #owner(streamId: string): Promise<string | undefined> {
    try {
      const [row] = await run<{ owner: string | null }>(this.pool, this.#sql.owner, [streamId]);
      return row?.owner ?? undefined;
    } catch (error) {
      throw storeError('stream read', error);
    }
  }

  async deleteStream(streamId: string): Promise<void> {
    // This process's writers of the stream stop at once (a writer elsewhere finds no claim and writes nothing).
    for (const writer of [...(this.#writers.get(streamId) ?? [])]) {
      await writer.flushNow().catch(() => undefined);
      this.#retire(writer);
    }
    try {
      await run(this.pool, this.#sql.deleteStream, [streamId]);
    } catch (error) {
      throw storeError('stream delete', error);
    }
    this.#notifier.wake(streamId);
  }

  /**
   * Drops the chunks of finished runs whose timestamp is at least `chunkTtlMs` before `now` (nothing
   * without a `chunkTtlMs`), in statements of at most 5,000 chunks. A run is finished when another run
   * claimed the stream after it, or when its last chunk is its `end` or `error`; the chunks of a running
   * run, and of a suspended run that still owns the stream, stay. Chunks keep their seq: a reader asking
   * for a pruned offset goes on at the next kept chunk.
   */
  async prune(now: number = Date.now()): Promise<PruneReport> {
    if (!Number.isFinite(this.#chunkTtlMs) || this.#closed) return { chunks: 0, journalEntries: 0, records: 0 };
    await this.flushQueued().catch(() => undefined);
    let chunks = 0;
    try {
      for (;;) {
        const [row] = await run<{ n: number }>(this.pool, this.#sql.prune, [now - this.#chunkTtlMs]);
        const n = row?.n ?? 0;
        chunks += n;
        if (n < PRUNE_BATCH) break;
      }
    } catch (error) {
      throw storeError('stream prune', error);
    }
    return { chunks, journalEntries: 0, records: 0 };
  }

  /** Stops listening; following readers end. Does not end the pool. */
  async close(): Promise<void> {
    await this.flushQueued().catch(() => undefined);
    this.#closed = true;
    await this.#notifier.close();
  }
}

/** A run's claim on a stream. Writes queue in call order; one statement at a time goes to the database. */
class PostgresStreamWriter implements StreamWriter {
  readonly startSeq: number;
  readonly streamId: string;
  readonly runId: string;
  /** The claim's generation: claims of a stream are numbered 1, 2, ... */
  readonly generation: number;
  readonly #manager: PostgresStreamManager;
  #owned = true;
  #queue: QueuedWrite[] = [];
  #flushing: Promise<void> | undefined;
  #failure: unknown;

  constructor(manager: PostgresStreamManager, streamId: string, runId: string, startSeq: number, generation: number) {
    this.#manager = manager;
    this.generation = generation;
    this.streamId = streamId;
    this.runId = runId;
    this.startSeq = startSeq;
  }

  /**
   * What this process knows: false once a write was refused or a newer claim was seen (made through this
   * manager, or notified while one of its readers listens). `write()` is the authority: it checks
   * ownership in the database every time.
   */
  get owned(): boolean {
    return this.#owned;
  }

  markNotOwned(): void {
    this.#owned = false;
  }

  write(chunk: StreamChunkInput): Promise<boolean> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    return new Promise<boolean>((resolve, reject) => {
      this.#queue.push({ chunk, resolve, reject });
      void this.flushNow();
    });
  }

  /** Queues a chunk for the next commit (or the manager's flush interval); see {@link StreamWriter.queue}. */
  queue(chunk: StreamChunkInput): void {
    if (this.#failure !== undefined) throw this.#failure;
    if (!this.#owned) return;
    this.#queue.push({
      chunk,
      resolve: (ok) => {
        if (!ok) this.#owned = false;
      },
      reject: (error) => {
        this.#failure = error;
      },
    });
    this.#manager.noteQueued(this);
  }

  /**
   * Hands the queued writes to a commit (see {@link ChunkRider}), if nothing of this writer is in flight.
   * Until the batch is settled or restored, later writes wait behind it, as behind a statement in flight.
   */
  takeQueued(): { writes: readonly QueuedWrite[]; settle(written: boolean): void; restore(): void } | undefined {
    if (this.#failure !== undefined || this.#flushing !== undefined || this.#queue.length === 0 || this.#queue.length > MAX_BATCH) return undefined;
    const writes = this.#queue;
    this.#queue = [];
    let release: () => void = () => {};
    // Settled or restored, the writer sends what is queued by then (the restored writes first).
    this.#flushing = new Promise<void>((resolve) => (release = resolve)).then(() => {
      this.#flushing = undefined;
      return this.#queue.length > 0 ? this.flushNow() : undefined;
    });
    let done = false;
    return {
      writes,
      settle: (written) => {
        if (done) return;
        done = true;
        for (const w of writes) w.resolve(written);
        release();
      },
      restore: () => {
        if (done) return;
        done = true;
        this.#queue.unshift(...writes);
        release();
      },
    };
  }

  /** Sends what is queued (after the statement in flight, if any); resolves once the queue is empty. */
  flushNow(): Promise<void> {
    this.#flushing ??= this.#flush().finally(() => {
      this.#flushing = undefined;
      // Writes that arrived after the loop's last look go out now.
      if (this.#queue.length > 0) void this.flushNow();
    });
    return this.#flushing;
  }

  async #flush(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue.splice(0, MAX_BATCH);
        try {
          const ok = await this.#manager.append(
            this,
            batch.map((w) => w.chunk),
          );
          for (const w of batch) w.resolve(ok);
        } catch (error) {
          for (const w of batch) w.reject(error);
        }
      }
    } finally {
      // Nothing to release: flushNow() clears the promise.
    }
  }
}

/** Whether a claim's ids fit a NOTIFY payload (Postgres refuses 8000 bytes or more); if not, readers get a wake-everyone event. */
function fitsPayload(streamId: string, runId: string): boolean {
  return Buffer.byteLength(streamId) + Buffer.byteLength(runId) < 7_000;
}

/** The NOTIFY channel of a schema (an identifier of at most 63 bytes). */
function streamChannel(schema: string): string {
  const channel = `helix_streams_${schema}`;
  return Buffer.byteLength(channel) <= 63 ? channel : `helix_streams_${shortHash(schema)}`;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
