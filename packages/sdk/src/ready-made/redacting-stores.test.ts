// createRedactingStores wraps the stream writer: a chunk the loop queues (the path most chunks take since a
// step's chunks ride in its commit) is redacted exactly as a written one, and the wrapper keeps queue()
// when the store has it, so redaction does not cost the store its one transaction per step.
import { describe, expect, it } from 'vitest';
import { InMemoryStateStore, InMemoryStreamManager, type StreamChunk } from '../index.js';
import { createRedactingStores } from './index.js';

const SECRET = 'sk-proj-abcdefghijklmnopqrstuvwxyz0123456789';

async function chunksOf(streams: InMemoryStreamManager, streamId: string): Promise<StreamChunk[]> {
  const out: StreamChunk[] = [];
  for await (const chunk of streams.read(streamId, { follow: false })) out.push(chunk);
  return out;
}

describe('createRedactingStores and queued chunks', () => {
  it('a queued chunk is redacted before it is stored, like a written one, and the wrapped writer keeps queue()', async () => {
    const streams = new InMemoryStreamManager();
    const redacted = createRedactingStores({ stateStore: new InMemoryStateStore(), streamManager: streams });
    const writer = await redacted.streamManager.claim('s1', 'r1');
    expect(typeof writer.queue).toBe('function');
    writer.queue?.({ type: 'text_delta', runId: 'r1', delta: `the key is ${SECRET}`, timestamp: 1 } as never);
    await writer.write({ type: 'text_delta', runId: 'r1', delta: `again ${SECRET}`, timestamp: 2 } as never);
    const stored = JSON.stringify(await chunksOf(streams, 's1'));
    expect(stored).not.toContain(SECRET);
    expect(stored).toContain('the key is');
    expect(stored).toContain('again');
  });
});
