import type { StreamChunk, StreamChunkInput, StreamManager, StreamReadOptions, StreamWriter } from '../stream.js';
import { isTerminalChunk } from '../stream.js';

interface StreamRow {
  chunks: StreamChunk[];
  owner: string | undefined;
  waiters: (() => void)[];
  /** The stream was deleted: following readers end. */
  deleted?: boolean;
}

/**
 * The in-memory {@link StreamManager}: one ordered chunk list per stream, readable live or after the
 * fact. A claim by a newer run silences the previous writer.
 */
export class InMemoryStreamManager implements StreamManager {
  readonly #streams = new Map<string, StreamRow>();

  #row(streamId: string): StreamRow {
    let row = this.#streams.get(streamId);
    if (!row) {
      row = { chunks: [], owner: undefined, waiters: [] };
      this.#streams.set(streamId, row);
    }
    return row;
  }

  async claim(streamId: string, runId: string): Promise<StreamWriter> {
    const row = this.#row(streamId);
    row.owner = runId;
    const startSeq = row.chunks.length;
    wake(row);
    return {
      startSeq,
      get owned() {
        return row.owner === runId;
      },
      write: async (chunk: StreamChunkInput) => {
        if (row.owner !== runId) return false;
        row.chunks.push({ ...chunk, seq: row.chunks.length } as StreamChunk);
        wake(row);
        return true;
      },
      // The loop's path: the chunk is stored as it is (its object is the writer's from now on), no copy, no promise.
      queue: (chunk: StreamChunkInput) => {
        if (row.owner !== runId) return;
        (chunk as { seq?: number }).seq = row.chunks.length;
        row.chunks.push(chunk as StreamChunk);
        wake(row);
      },
    };
  }

  async *read(streamId: string, options: StreamReadOptions = {}): AsyncIterable<StreamChunk> {
    const row = this.#row(streamId);
    const follow = options.follow ?? true;
    const runId = options.untilRunEnds;
    let seq = Math.max(0, options.fromSeq ?? 0);
    for (;;) {
      while (seq < row.chunks.length) {
        const chunk = row.chunks[seq++] as StreamChunk;
        if (runId !== undefined && chunk.runId !== runId) continue;
        yield chunk;
        if (runId !== undefined && isTerminalChunk(chunk)) return;
      }
      if (!follow || options.signal?.aborted || row.deleted) return;
      // The run lost the stream to a newer run and we have read all it wrote: nothing more will come.
      if (runId !== undefined && row.owner !== runId) return;
      await new Promise<void>((resolve) => {
        const onAbort = (): void => resolve();
        options.signal?.addEventListener('abort', onAbort, { once: true });
        row.waiters.push(() => {
          options.signal?.removeEventListener('abort', onAbort);
          resolve();
        });
      });
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

  /** Every chunk of a stream so far (a copy), for tests and inspection. */
  chunks(streamId: string): readonly StreamChunk[] {
    return this.#streams.get(streamId)?.chunks.slice() ?? [];
  }
}

function wake(row: StreamRow): void {
  if (row.waiters.length === 0) return;
  const waiters = row.waiters;
  row.waiters = [];
  for (const w of waiters) w();
}
