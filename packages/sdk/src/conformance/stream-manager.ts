import { describe, expect, it } from 'vitest';
import type { StreamChunk, StreamChunkInput, StreamManager, StreamReadOptions } from '../stream.js';
import { pairs, T0, tick } from './fixtures.js';

/** How the stream conformance suite gets fresh stream managers. Only `name` and `create` are required. */
export interface StreamManagerConformanceOptions {
  /** A display name for the describe block. */
  readonly name: string;
  /** A new, empty stream manager (an empty database) for each test. */
  readonly create: () => StreamManager | Promise<StreamManager>;
  /** Called after each test with the manager `create` returned. */
  readonly destroy?: (manager: StreamManager) => void | Promise<void>;
  /** A second instance on the SAME database as `first`; without it the cross-instance tests use `first` twice. */
  readonly createSecond?: (first: StreamManager) => StreamManager | Promise<StreamManager>;
  /** Called after each test with the instance `createSecond` returned, before `destroy(first)`. */
  readonly destroySecond?: (second: StreamManager) => void | Promise<void>;
}


function delta(streamId: string, runId: string, text: string): StreamChunkInput {
  return { type: 'text_delta', streamId, agentId: streamId, agentType: 'agent', runId, timestamp: T0, stepIndex: 0, delta: text };
}

function end(streamId: string, runId: string): StreamChunkInput {
  return { type: 'end', streamId, agentId: streamId, agentType: 'agent', runId, timestamp: T0, output: { done: runId }, state: { n: 1 } };
}

/** Reads until the iterator ends (a non-following read, or a run that ended). */
async function collect(manager: StreamManager, streamId: string, options: StreamReadOptions = {}): Promise<StreamChunk[]> {
  const out: StreamChunk[] = [];
  for await (const chunk of manager.read(streamId, options)) out.push(chunk);
  return out;
}

/** Follows a stream in the background, until `count` chunks arrived or it ends. */
function follow(manager: StreamManager, streamId: string, options: StreamReadOptions, count = Number.POSITIVE_INFINITY): { chunks: StreamChunk[]; done: Promise<StreamChunk[]> } {
  const chunks: StreamChunk[] = [];
  const done = (async () => {
    for await (const chunk of manager.read(streamId, options)) {
      chunks.push(chunk);
      if (chunks.length >= count) break;
    }
    return chunks;
  })();
  return { chunks, done };
}

/** Resolves `promise` or fails after `ms`: a reader that should end must not hang the suite. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Waits (polling) until `done()` holds or `ms` passed; the assertion after it says what was expected. */
async function until(done: () => boolean, ms: number): Promise<void> {
  const start = Date.now();
  while (!done() && Date.now() - start < ms) await tick(5);
}

function texts(chunks: readonly StreamChunk[]): string[] {
  return chunks.map((c) => (c.type === 'text_delta' ? c.delta : c.type));
}

/**
 * The conformance suite every {@link StreamManager} must pass (call it from the implementation's tests;
 * it uses vitest): claims and ownership, gap-free offsets, live and after-the-fact reads, reconnecting
 * from an offset, `untilRunEnds`, and (with `createSecond`) chunks crossing instances on one database.
 */
export function runStreamManagerConformance(options: StreamManagerConformanceOptions): void {
  const { one: withManager, two: withManagers } = pairs<StreamManager>(options);

  describe(`StreamManager conformance: ${options.name}`, () => {
    it('a claim writes chunks with gap-free offsets from 0, and a read after the fact returns them all', withManager(async (manager) => {
      const writer = await manager.claim('st', 'r1');
      expect(writer.startSeq).toBe(0);
      expect(writer.owned).toBe(true);
      for (let i = 0; i < 5; i++) expect(await writer.write(delta('st', 'r1', `t${i}`))).toBe(true);
      expect(await writer.write(end('st', 'r1'))).toBe(true);
      const chunks = await collect(manager, 'st', { follow: false });
      expect(chunks.map((c) => c.seq)).toEqual([0, 1, 2, 3, 4, 5]);
      expect(texts(chunks)).toEqual(['t0', 't1', 't2', 't3', 't4', 'end']);
      expect(chunks[0]).toEqual({ ...delta('st', 'r1', 't0'), seq: 0 });
      expect(chunks[5]).toEqual({ ...end('st', 'r1'), seq: 5 });
    }));

    it('every chunk type round-trips with its fields', withManager(async (manager) => {
      const base = { streamId: 'st', agentId: 'st', agentType: 'agent', runId: 'r1', timestamp: T0 };
      const error = { code: 'provider_rate_limited', layer: 'provider', severity: 'error', message: '429 ✓', retryable: true, details: { status: 429 } } as const;
      const inputs: StreamChunkInput[] = [
        { ...base, type: 'run_started', signal: 'start', input: 'héllo 🚀' },
        { ...base, type: 'step_start', stepIndex: 0, attempt: 1 },
        { ...base, type: 'text_delta', stepIndex: 0, delta: 'a "quoted" \\ \n line' },
        { ...base, type: 'tool_start', toolCallId: 'c1', toolName: 'search', arguments: { q: 'x', deep: [1, null, true] } },
        { ...base, type: 'tool_end', toolCallId: 'c1', toolName: 'search', success: false, error, durationMs: 12 },
        { ...base, type: 'state_patch', patches: [{ op: 'replace', path: ['a', 0], value: { b: 1 } }, { op: 'remove', path: ['c'] }], source: 'tool', toolName: 'search' },
        { ...base, type: 'custom', eventName: 'progress', data: { pct: 50 } },
        { ...base, type: 'warning', errorInfo: error },
        { ...base, type: 'error', status: 'interrupted', errorInfo: { ...error, code: 'run_interrupted', layer: 'run', severity: 'info' } },
      ];
      const writer = await manager.claim('st', 'r1');
      for (const chunk of inputs) await writer.write(chunk);
      const read = await collect(manager, 'st', { follow: false });
      expect(read).toEqual(inputs.map((chunk, seq) => ({ ...chunk, seq })));
    }));

    it('a newer claim silences the old writer: its write returns false and writes nothing; offsets stay gap-free', withManager(async (manager) => {
      const old = await manager.claim('st', 'r1');
      await old.write(delta('st', 'r1', 'a'));
      await old.write(delta('st', 'r1', 'b'));
      const next = await manager.claim('st', 'r2');
      expect(next.startSeq).toBe(2);
      expect(next.owned).toBe(true);
      expect(old.owned).toBe(false);
      expect(await old.write(delta('st', 'r1', 'stale'))).toBe(false);
      expect(await next.write(delta('st', 'r2', 'c'))).toBe(true);
      expect(await old.write(end('st', 'r1'))).toBe(false);
      const chunks = await collect(manager, 'st', { follow: false });
      expect(chunks.map((c) => [c.seq, c.runId])).toEqual([
        [0, 'r1'],
        [1, 'r1'],
        [2, 'r2'],
      ]);
    }));

    it('writes not awaited one by one are applied in call order', withManager(async (manager) => {
      const writer = await manager.claim('st', 'r1');
      const results = await Promise.all(Array.from({ length: 50 }, (_, i) => writer.write(delta('st', 'r1', `t${i}`))));
      expect(results.every(Boolean)).toBe(true);
      const chunks = await collect(manager, 'st', { follow: false });
      expect(chunks.map((c) => c.seq)).toEqual(Array.from({ length: 50 }, (_, i) => i));
      expect(texts(chunks)).toEqual(Array.from({ length: 50 }, (_, i) => `t${i}`));
    }));

    it('queued chunks (a writer with queue) keep call order with written ones, and a read sees them after the next write', withManager(async (manager) => {
      const writer = await manager.claim('st', 'r1');
      if (!writer.queue) return expect(writer.queue).toBeUndefined();
      writer.queue(delta('st', 'r1', 'q0'));
      expect(await writer.write(delta('st', 'r1', 'w1'))).toBe(true);
      writer.queue(delta('st', 'r1', 'q2'));
      writer.queue(delta('st', 'r1', 'q3'));
      expect(await writer.write(end('st', 'r1'))).toBe(true);
      const chunks = await collect(manager, 'st', { follow: false });
      expect(chunks.map((c) => c.seq)).toEqual([0, 1, 2, 3, 4]);
      expect(texts(chunks)).toEqual(['q0', 'w1', 'q2', 'q3', 'end']);
      // A read can start in the middle of what one write stored together (q2, q3 and end).
      expect((await collect(manager, 'st', { follow: false, fromSeq: 3 })).map((c) => [c.seq, texts([c])[0]])).toEqual([
        [3, 'q3'],
        [4, 'end'],
      ]);
      // A newer claim silences queue() too.
      await manager.claim('st', 'r2');
      writer.queue(delta('st', 'r1', 'stale'));
      expect(await collect(manager, 'st', { follow: false, fromSeq: 5 })).toEqual([]);
    }));

    it('deleteStream drops the chunks and the claim: the old writer writes nothing, a new claim starts at 0, other streams stay', withManager(async (manager) => {
      const writer = await manager.claim('st', 'r1');
      const other = await manager.claim('other', 'r9');
      await writer.write(delta('st', 'r1', 'a'));
      await other.write(delta('other', 'r9', 'kept'));
      await manager.deleteStream('st');
      expect(await collect(manager, 'st', { follow: false })).toEqual([]);
      expect(await writer.write(delta('st', 'r1', 'late'))).toBe(false);
      const next = await manager.claim('st', 'r2');
      expect(next.startSeq).toBe(0);
      expect(texts(await collect(manager, 'other', { follow: false }))).toEqual(['kept']);
    }));

    it('streams are independent: offsets count per stream', withManager(async (manager) => {
      const a = await manager.claim('a', 'r1');
      const b = await manager.claim('b', 'r2');
      await a.write(delta('a', 'r1', 'a0'));
      await b.write(delta('b', 'r2', 'b0'));
      await a.write(delta('a', 'r1', 'a1'));
      expect((await collect(manager, 'a', { follow: false })).map((c) => [c.seq, texts([c])[0]])).toEqual([
        [0, 'a0'],
        [1, 'a1'],
      ]);
      expect((await collect(manager, 'b', { follow: false })).map((c) => [c.seq, texts([c])[0]])).toEqual([[0, 'b0']]);
      expect(await collect(manager, 'unknown', { follow: false })).toEqual([]);
    }));

    it('fromSeq starts a read at that offset', withManager(async (manager) => {
      const writer = await manager.claim('st', 'r1');
      for (let i = 0; i < 6; i++) await writer.write(delta('st', 'r1', `t${i}`));
      expect((await collect(manager, 'st', { follow: false, fromSeq: 4 })).map((c) => c.seq)).toEqual([4, 5]);
      expect(await collect(manager, 'st', { follow: false, fromSeq: 6 })).toEqual([]);
      expect(await collect(manager, 'st', { follow: false, fromSeq: 60 })).toEqual([]);
    }));

    it('a following reader gets chunks live as they are written, and stops when its signal aborts', withManager(async (manager) => {
      const writer = await manager.claim('st', 'r1');
      await writer.write(delta('st', 'r1', 'before'));
      const controller = new AbortController();
      const reader = follow(manager, 'st', { signal: controller.signal });
      await until(() => reader.chunks.length >= 1, 5_000);
      expect(texts(reader.chunks)).toEqual(['before']);
      for (let i = 0; i < 3; i++) {
        await writer.write(delta('st', 'r1', `live${i}`));
        await tick(5);
      }
      await until(() => reader.chunks.length >= 4, 5_000);
      expect(texts(reader.chunks)).toEqual(['before', 'live0', 'live1', 'live2']);
      controller.abort();
      await within(reader.done, 2_000, 'an aborted reader');
      expect(reader.chunks.map((c) => c.seq)).toEqual([0, 1, 2, 3]);
    }));

    it('a client that reconnects from the last offset it saw + 1 gets every chunk exactly once', withManager(async (manager) => {
      const writer = await manager.claim('st', 'r1');
      const total = 40;
      const producing = (async () => {
        for (let i = 0; i < total - 1; i++) {
          await writer.write(delta('st', 'r1', `t${i}`));
          if (i % 5 === 0) await tick(2);
        }
        await writer.write(end('st', 'r1'));
      })();
      const received: StreamChunk[] = [];
      let fromSeq = 0;
      // Drop the connection after every 7 chunks and come back from the next offset.
      while (received.at(-1)?.type !== 'end') {
        const part = await within(follow(manager, 'st', { fromSeq, untilRunEnds: 'r1' }, 7).done, 10_000, 'a reconnecting reader');
        received.push(...part);
        fromSeq = (received.at(-1)?.seq ?? -1) + 1;
      }
      await producing;
      expect(received.map((c) => c.seq)).toEqual(Array.from({ length: total }, (_, i) => i));
      expect(texts(received)).toEqual([...Array.from({ length: total - 1 }, (_, i) => `t${i}`), 'end']);
    }));

    it('untilRunEnds returns only that run\'s chunks and ends after its terminal chunk', withManager(async (manager) => {
      const r1 = await manager.claim('st', 'r1');
      await r1.write(delta('st', 'r1', 'a'));
      await r1.write(end('st', 'r1'));
      const r2 = await manager.claim('st', 'r2');
      await r2.write(delta('st', 'r2', 'b'));
      const live = follow(manager, 'st', { untilRunEnds: 'r2' });
      await tick(20);
      await r2.write(delta('st', 'r2', 'c'));
      await r2.write(end('st', 'r2'));
      // Chunks after the terminal chunk are not this reader's business.
      const r3 = await manager.claim('st', 'r3');
      await r3.write(delta('st', 'r3', 'd'));
      expect(texts(await within(live.done, 5_000, 'an untilRunEnds reader'))).toEqual(['b', 'c', 'end']);
      expect(texts(await within(collect(manager, 'st', { untilRunEnds: 'r1' }), 5_000, 'an untilRunEnds reader'))).toEqual(['a', 'end']);
      expect((await collect(manager, 'st', { untilRunEnds: 'r2', follow: false })).map((c) => c.seq)).toEqual([2, 3, 4]);
    }));

    it('a suspended run\'s part of the stream ends at its suspended chunk', withManager(async (manager) => {
      const writer = await manager.claim('st', 'r1');
      await writer.write(delta('st', 'r1', 'a'));
      const live = follow(manager, 'st', { untilRunEnds: 'r1' });
      await tick(20);
      await writer.write({ type: 'suspended', streamId: 'st', agentId: 'st', agentType: 'agent', runId: 'r1', timestamp: T0, reason: 'client_tool', pendingToolCallIds: ['c1'] });
      await writer.write(delta('st', 'r1', 'after'));
      expect(texts(await within(live.done, 5_000, 'a reader of a suspended run'))).toEqual(['a', 'suspended']);
    }));

    it('untilRunEnds ends once a newer run claimed the stream and every chunk of the run was read', withManager(async (manager) => {
      const r1 = await manager.claim('st', 'r1');
      await r1.write(delta('st', 'r1', 'a'));
      const live = follow(manager, 'st', { untilRunEnds: 'r1' });
      await tick(20);
      await r1.write(delta('st', 'r1', 'b'));
      const r2 = await manager.claim('st', 'r2');
      await r2.write(delta('st', 'r2', 'x'));
      expect(texts(await within(live.done, 5_000, 'a reader of a superseded run'))).toEqual(['a', 'b']);
      // After the fact too: the run never wrote a terminal chunk, and it no longer owns the stream.
      expect(texts(await within(collect(manager, 'st', { untilRunEnds: 'r1' }), 5_000, 'a reader of a superseded run'))).toEqual(['a', 'b']);
    }));

    it('a reader on a second instance sees what the first wrote, live and after the fact', withManagers(async ({ first, second }) => {
      const writer = await first.claim('st', 'r1');
      await writer.write(delta('st', 'r1', 'a'));
      const controller = new AbortController();
      const live = follow(second, 'st', { untilRunEnds: 'r1', signal: controller.signal });
      await tick(20);
      await writer.write(delta('st', 'r1', 'b'));
      await writer.write(end('st', 'r1'));
      try {
        expect(texts(await within(live.done, 5_000, 'a reader on the second instance'))).toEqual(['a', 'b', 'end']);
      } finally {
        controller.abort();
      }
      expect((await collect(second, 'st', { follow: false })).map((c) => c.seq)).toEqual([0, 1, 2]);
    }));

    it('a claim on a second instance silences the first instance\'s writer', withManagers(async ({ first, second }) => {
      const old = await first.claim('st', 'r1');
      await old.write(delta('st', 'r1', 'a'));
      const next = await second.claim('st', 'r2');
      expect(next.startSeq).toBe(1);
      expect(await old.write(delta('st', 'r1', 'stale'))).toBe(false);
      expect(await next.write(delta('st', 'r2', 'b'))).toBe(true);
      expect((await collect(first, 'st', { follow: false })).map((c) => [c.seq, texts([c])[0]])).toEqual([
        [0, 'a'],
        [1, 'b'],
      ]);
    }));
  });
}
