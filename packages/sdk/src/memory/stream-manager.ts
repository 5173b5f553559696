import type { Prunable, PruneReport, RetentionPolicy } from '../store.js';
import { resolveRetention, schedulePrune } from '../store.js';
import type { StreamChunk, StreamChunkInput, StreamManager, StreamReadOptions, StreamWriter } from '../stream.js';
import { isTerminalChunk } from '../stream.js';

interface StreamRow {
  /**
   * The kept chunks, stored without their seq: `chunks[i]` has seq `base + i` (pruning drops a prefix), and
   * a reader gets a copy with it. A kept chunk is not given a property of its own, which would cost it a
   * second object for as long as it is kept.
   */
  chunks: StreamChunkInput[];
  /** The seq of `chunks[0]`: how many chunks of finished runs were pruned from the front. */
  base: number;
  owner: string | undefined;
  waiters: (() => void)[];
  /** The stream was deleted: following readers end. */
  deleted?: boolean;
}

/** What {@link InMemoryStreamManager.held} counts. */
export interface InMemoryStreamCounts {
  readonly streams: number;
  /** Following readers waiting for a stream's next chunk. */
  readonly waitingReaders: number;
}

/** Options of {@link InMemoryStreamManager}. */
export interface InMemoryStreamManagerOptions {
  /** What to keep of finished work: the manager reads `chunkTtlMs` and `pruneIntervalMs` (default: keep every chunk). */
  readonly retention?: RetentionPolicy;
}

/**
 * The in-memory {@link StreamManager}: one ordered chunk list per stream, readable live or after the
 * fact. A claim by a newer run silences the previous writer. With `retention.chunkTtlMs`, `prune()`
 * drops the chunks of finished runs once they are that old (docs/retention.md); a chunk keeps its seq,
 * so a reader asking for a pruned offset starts at the first kept chunk.
 */
export class InMemoryStreamManager implements StreamManager, Prunable {
  readonly #streams = new Map<string, StreamRow>();
  readonly #chunkTtlMs: number;
  readonly #stopTimer: () => void;

  constructor(options: InMemoryStreamManagerOptions = {}) {
    const retention = resolveRetention(options.retention);
    this.#chunkTtlMs = retention.chunkTtlMs;
    this.#stopTimer = schedulePrune(() => this.prune(), retention.pruneIntervalMs);
  }

  #row(streamId: string): StreamRow {
    let row = this.#streams.get(streamId);
    if (!row) {
      row = { chunks: [], base: 0, owner: undefined, waiters: [] };
      this.#streams.set(streamId, row);
    }
    return row;
  }

  async claim(streamId: string, runId: string): Promise<StreamWriter> {
    const row = this.#row(streamId);
    row.owner = runId;
    const startSeq = row.base + row.chunks.length;
    wake(row);
    return {
      startSeq,
      get owned() {
        return row.owner === runId;
      },
      write: async (chunk: StreamChunkInput) => {
        if (row.owner !== runId) return false;
        row.chunks.push({ ...chunk });
        wake(row);
        return true;
      },
      // The loop's path: the chunk is stored as it is (its object is the writer's from now on), no copy, no promise.
      queue: (chunk: StreamChunkInput) => {
        if (row.owner !== runId) return;
        row.chunks.push(chunk);
        wake(row);
      },
    };
  }

  async *read(streamId: string, options: StreamReadOptions = {}): AsyncIterable<StreamChunk> {
    const follow = options.follow ?? true;
    const stored = this.#streams.get(streamId);
    // Nothing stored and nothing to wait for: reading a stream that does not exist creates no row.
    if (!stored && !follow) return;
    const row = stored ?? this.#row(streamId);
    try {
      yield* this.#follow(row, options, follow);
    } finally {
      // A row only a reader made (never claimed, nothing written, nobody else waiting) goes with its reader.
      if (this.#streams.get(streamId) === row && row.owner === undefined && row.base + row.chunks.length === 0 && row.waiters.length === 0) this.#streams.delete(streamId);
    }
  }

  async *#follow(row: StreamRow, options: StreamReadOptions, follow: boolean): AsyncIterable<StreamChunk> {
    const runId = options.untilRunEnds;
    let seq = Math.max(0, options.fromSeq ?? 0);
    for (;;) {
      // Pruned offsets are skipped: the reader goes on at the first kept chunk.
      if (seq < row.base) seq = row.base;
      while (seq < row.base + row.chunks.length) {
        const at = seq++;
        const chunk = row.chunks[at - row.base] as StreamChunkInput;
        if (runId !== undefined && chunk.runId !== runId) continue;
        yield withSeq(chunk, at);
        if (runId !== undefined && isTerminalChunk(chunk)) return;
      }
      if (!follow || options.signal?.aborted || row.deleted) return;
      // The run lost the stream to a newer run and we have read all it wrote: nothing more will come.
      if (runId !== undefined && row.owner !== runId) return;
      await next(row, options.signal);
    }
  }

  async deleteStream(streamId: string): Promise<void> {
    const row = this.#streams.get(streamId);
    if (!row) return;
    this.#streams.delete(streamId);
    // The old row's writers and readers see an ended stream: no owner, nothing more to come.
    row.owner = undefined;
    row.deleted = true;
    wake(row);
  }

  /**
   * Drops, from the front of each stream, the chunks of finished runs whose timestamp is at least
   * `chunkTtlMs` before `now`. A run is finished when its part ended with an `end` or `error` chunk or
   * another run claimed the stream after it; a suspended run that still owns its stream is not. Stops
   * at the first chunk it must keep, so a running run's chunks (and everything after them) stay.
   */
  async prune(now: number = Date.now()): Promise<PruneReport> {
    if (!Number.isFinite(this.#chunkTtlMs)) return { chunks: 0, journalEntries: 0, records: 0 };
    const cutoff = now - this.#chunkTtlMs;
    let chunks = 0;
    for (const row of this.#streams.values()) {
      const ownerEnded = ownerHasEnded(row);
      let n = 0;
      for (const chunk of row.chunks) {
        if (chunk.timestamp > cutoff || (chunk.runId === row.owner && !ownerEnded)) break;
        n++;
      }
      if (n === 0) continue;
      row.chunks.splice(0, n);
      row.base += n;
      chunks += n;
    }
    return { chunks, journalEntries: 0, records: 0 };
  }

  /** Stops the prune timer of `retention.pruneIntervalMs` (the timer never keeps the process alive anyway). */
  close(): void {
    this.#stopTimer();
  }

  /**
   * How many streams the manager holds and how many readers wait on them, for tests and inspection: a
   * stream exists from its first claim until deleteStream, and a reader of a stream that does not exist
   * leaves nothing behind once it stops.
   */
  held(): InMemoryStreamCounts {
    let waitingReaders = 0;
    for (const row of this.#streams.values()) waitingReaders += row.waiters.length;
    return { streams: this.#streams.size, waitingReaders };
  }

  /** Every kept chunk of a stream (a copy), for tests and inspection. */
  chunks(streamId: string): readonly StreamChunk[] {
    const row = this.#streams.get(streamId);
    return row ? row.chunks.map((chunk, i) => withSeq(chunk, row.base + i)) : [];
  }
}

/** A kept chunk as readers get it: a copy, with its seq. */
function withSeq(chunk: StreamChunkInput, seq: number): StreamChunk {
  return { ...chunk, seq } as StreamChunk;
}

/** True when the stream's owner wrote its `end` or `error` chunk (its last one, as a run writes nothing after it). */
function ownerHasEnded(row: StreamRow): boolean {
  const last = row.chunks.at(-1);
  return last !== undefined && last.runId === row.owner && (last.type === 'end' || last.type === 'error');
}

/** Resolves at the row's next wake, or when `signal` aborts; a reader that leaves on abort takes its waiter with it. */
function next(row: StreamRow, signal: AbortSignal | undefined): Promise<void> {
  return new Promise<void>((resolve) => {
    const waiter = (): void => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    };
    const onAbort = (): void => {
      const at = row.waiters.indexOf(waiter);
      if (at >= 0) row.waiters.splice(at, 1);
      resolve();
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    row.waiters.push(waiter);
  });
}

function wake(row: StreamRow): void {
  if (row.waiters.length === 0) return;
  const waiters = row.waiters;
  row.waiters = [];
  for (const w of waiters) w();
}
