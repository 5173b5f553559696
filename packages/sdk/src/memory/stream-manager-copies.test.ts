import { describe, expect, it } from 'vitest';
import { InMemoryStreamManager, type StreamChunk } from '../index.js';
import type { StreamChunkInput } from '../stream.js';

const base = { streamId: 's', agentId: 's', agentType: 'a', runId: 'r1' } as const;

function delta(text: string, timestamp: number): StreamChunkInput {
  return { type: 'text_delta', stepIndex: 0, delta: text, ...base, timestamp };
}

async function readAll(manager: InMemoryStreamManager): Promise<StreamChunk[]> {
  const out: StreamChunk[] = [];
  for await (const chunk of manager.read('s', { follow: false })) out.push(chunk);
  return out;
}

describe('InMemoryStreamManager keeps chunks without their seq and gives readers copies', () => {
  it('a queued chunk is stored without a seq property of its own, and every reader gets it with its seq', async () => {
    const manager = new InMemoryStreamManager();
    const writer = await manager.claim('s', 'r1');
    const queued = delta('a', 1);
    writer.queue?.(queued);
    await writer.write(delta('b', 2));
    expect('seq' in queued).toBe(false);
    const chunks = await readAll(manager);
    expect(chunks.map((c) => [c.seq, c.type === 'text_delta' ? c.delta : ''])).toEqual([
      [0, 'a'],
      [1, 'b'],
    ]);
    expect(manager.chunks('s').map((c) => c.seq)).toEqual([0, 1]);
  });

  it('a reader that changes the chunk it was given changes nothing another reader sees', async () => {
    const manager = new InMemoryStreamManager();
    const writer = await manager.claim('s', 'r1');
    writer.queue?.(delta('kept', 1));
    const [first] = await readAll(manager);
    (first as { delta: string; runId: string }).delta = 'tampered';
    (first as { runId: string }).runId = 'someone-else';
    const [again] = await readAll(manager);
    expect(again).toMatchObject({ delta: 'kept', runId: 'r1', seq: 0 });
  });

  it('after a prune the kept chunks keep their seqs, and a reader from a pruned offset starts at the first kept one', async () => {
    const manager = new InMemoryStreamManager({ retention: { chunkTtlMs: 10 } });
    const writer = await manager.claim('s', 'r1');
    writer.queue?.(delta('old', 1));
    writer.queue?.(delta('old2', 2));
    await writer.write({ type: 'end', ...base, timestamp: 3 } as StreamChunkInput);
    const w2 = await manager.claim('s', 'r2');
    w2.queue?.({ ...delta('new', 1_000), runId: 'r2' });
    const report = await manager.prune(100);
    expect(report.chunks).toBe(3);
    const seen: number[] = [];
    for await (const chunk of manager.read('s', { follow: false, fromSeq: 1 })) seen.push(chunk.seq);
    expect(seen).toEqual([3]);
  });
});
