// createRedactingStores wraps the stream writer: a chunk the loop queues (the path most chunks take since a
// step's chunks ride in its commit) is redacted exactly as a written one, and the wrapper keeps queue()
// when the store has it, so redaction does not cost the store its one transaction per step.
import { describe, expect, it } from 'vitest';
import { InMemoryStateStore, InMemoryStreamManager, type StreamChunk } from '../index.js';
import type { JournalEntry } from '../store.js';
import { createRedactingStores, createRedactingTracerProvider } from './index.js';

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

describe('createRedactingStores and the journal (issue 14, item 3)', () => {
  it("appendJournal stores the redacted entry but hands the caller's own entry back, so the run goes on with the clear value and does not take the copy for another writer's record; an earlier record of the key is returned as stored", async () => {
    const store = new InMemoryStateStore();
    const redacted = createRedactingStores({ stateStore: store, streamManager: new InMemoryStreamManager() });
    const begun = await redacted.stateStore.beginRun({ sessionId: 's1', runId: 'r1', agentType: 'a', signal: 'start', initialState: {}, newTurn: { turnId: 't1', input: [] }, options: {}, startedAt: Date.now(), leaseOwner: 'me', leaseMs: 60_000 });
    const entry: JournalEntry = { runId: 'r1', epoch: begun.lease.epoch, stepIndex: 0, kind: 'model_reply', key: 'model_reply:0', data: { toolCalls: [{ arguments: { key: SECRET } }] }, at: 1 };
    expect(await redacted.stateStore.appendJournal(entry)).toBe(entry);
    const stored = await store.loadJournal('r1');
    expect(JSON.stringify(stored)).not.toContain(SECRET);
    expect(JSON.stringify(stored)).toContain('[REDACTED]');
    // A second writer of the key gets the first record (the redacted one), not its own entry.
    const again = await redacted.stateStore.appendJournal({ ...entry, data: { toolCalls: [] } });
    expect(again).toEqual(stored[0]);
  });
});

describe('createRedactingTracerProvider beyond attributes (issue 14, item 3)', () => {
  it('a span status message, a recorded exception, an event name and a span name are redacted too', () => {
    const calls: { readonly method: string; readonly args: unknown[] }[] = [];
    const span = {
      setAttribute: (...args: unknown[]) => void calls.push({ method: 'setAttribute', args }),
      setAttributes: (...args: unknown[]) => void calls.push({ method: 'setAttributes', args }),
      addEvent: (...args: unknown[]) => void calls.push({ method: 'addEvent', args }),
      setStatus: (...args: unknown[]) => void calls.push({ method: 'setStatus', args }),
      recordException: (...args: unknown[]) => void calls.push({ method: 'recordException', args }),
      updateName: (...args: unknown[]) => void calls.push({ method: 'updateName', args }),
    };
    const provider = createRedactingTracerProvider({ getTracer: (_name: string) => ({ startSpan: () => span }) });
    const tracer = provider.getTracer('t') as { startSpan(name: string): typeof span };
    const traced = tracer.startSpan('s');
    traced.setStatus({ code: 2, message: `failed with ${SECRET}` });
    traced.recordException({ name: 'Error', message: `bad ${SECRET}`, stack: `Error: bad ${SECRET}\n    at x` });
    traced.recordException(`plain ${SECRET}`);
    traced.addEvent(`event ${SECRET}`, { note: SECRET });
    traced.updateName(`name ${SECRET}`);
    expect(calls.map((c) => c.method)).toEqual(['setStatus', 'recordException', 'recordException', 'addEvent', 'updateName']);
    expect(JSON.stringify(calls)).not.toContain(SECRET);
    expect(calls[0]!.args[0]).toEqual({ code: 2, message: 'failed with [REDACTED]' });
    expect(calls[1]!.args[0]).toMatchObject({ name: 'Error', message: 'bad [REDACTED]' });
  });
});
