import { describe, expect, it } from 'vitest';
import { InMemoryStateStore, InMemoryStreamManager, InMemoryUsageStore, type StateStore, type StreamChunk } from '../index.js';
import type { StreamChunkInput } from '../stream.js';
import { attachedHandle } from '../runtime/attached-handle.js';
import { collect, memoryLogger } from './harness.js';

// A handle on a run another process runs (runtime/attached-handle.ts), over the real in-memory store and
// streams: its result read from the store, its deadline, its stop across processes, its stream and usage.

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A running run `r1` of session `s1` (state `{ n: 1 }`), as another process left it. */
async function runningRun(store: StateStore = new InMemoryStateStore()) {
  const { lease } = await store.beginRun({
    sessionId: 's1',
    runId: 'r1',
    agentType: 'agent',
    signal: 'start',
    initialState: { n: 1 },
    newTurn: { turnId: 't1', input: [{ role: 'user', content: 'hello' }] },
    startedAt: Date.now(),
    leaseOwner: 'elsewhere',
    leaseMs: 60_000,
    options: {},
  });
  const end = (fields: { runStatus: 'completed' | 'failed' | 'suspended'; output?: unknown; error?: never; suspension?: never } | Record<string, unknown>) =>
    store.commit({ sessionId: 's1', runId: 'r1', epoch: lease.epoch, kind: fields['runStatus'] === 'suspended' ? 'suspension' : 'terminal', committedAt: Date.now(), ...fields } as Parameters<StateStore['commit']>[0]);
  return { store, end };
}

const chunk = (fields: Record<string, unknown>): StreamChunkInput => ({ streamId: 's1', agentId: 's1', agentType: 'agent', runId: 'r1', timestamp: Date.now(), ...fields }) as unknown as StreamChunkInput;
const wait = (timeoutMs: number, stopWaitMs = 5_000) => ({ timeoutMs, stopWaitMs, logger: memoryLogger() });

describe('attachedHandle: the result of a run another process runs', () => {
  it('a run that ended gives its stored record: status, output, the session state, step count and the duration from its start to its end', async () => {
    const { store, end } = await runningRun();
    await end({ runStatus: 'completed', output: { answer: 42 }, state: { n: 2 } });
    await tick(40);
    const run = (await store.getRun('r1'))!;
    const result = await attachedHandle(store, new InMemoryStreamManager(), 's1', 'r1', wait(5_000)).result();
    expect(result).toStrictEqual({ status: 'completed', sessionId: 's1', runId: 'r1', state: { n: 2 }, stepCount: run.stepCount, durationMs: run.endedAt! - run.startedAt, output: { answer: 42 } });
  });

  it('a failed run gives its error; a suspended run its suspension; neither has keys for what the run does not carry', async () => {
    const failed = await runningRun();
    const error = { code: 'tool_failed', layer: 'tool', severity: 'error', retryable: false, message: 'it broke' } as const;
    await failed.end({ runStatus: 'failed', error });
    const f = await attachedHandle(failed.store, new InMemoryStreamManager(), 's1', 'r1', wait(5_000)).result();
    expect(f).toMatchObject({ status: 'failed', error });
    expect('output' in f || 'suspension' in f).toBe(false);

    const suspended = await runningRun();
    const suspension = { reason: 'client_tool', pending: [{ toolCallId: 'c1', toolName: 'ask', input: {}, kind: 'client' }], stepIndex: 0, suspendedAt: Date.now() } as const;
    await suspended.end({ runStatus: 'suspended', suspension });
    const s = await attachedHandle(suspended.store, new InMemoryStreamManager(), 's1', 'r1', wait(5_000)).result();
    expect(s).toMatchObject({ status: 'suspended', suspension });
    expect('output' in s || 'error' in s).toBe(false);
  });

  it('an ended run whose session cannot be read gives its record with state undefined', async () => {
    const { store, end } = await runningRun();
    await end({ runStatus: 'completed', output: 'ok' });
    const blind = new Proxy(store, { get: (t, p) => (p === 'loadSession' ? () => Promise.reject(new Error('db down')) : (Reflect.get(t, p) as unknown as (...a: unknown[]) => unknown).bind(t)) });
    const result = await attachedHandle(blind, new InMemoryStreamManager(), 's1', 'r1', wait(5_000)).result();
    expect(result).toMatchObject({ status: 'completed', output: 'ok', state: undefined });
  });

  it('a run that ends shortly after the attach is noticed within a few polls (50 ms backing off, not a full second)', async () => {
    const { store, end } = await runningRun();
    const handle = attachedHandle(store, new InMemoryStreamManager(), 's1', 'r1', wait(10_000));
    await tick(120);
    const endedAt = Date.now();
    await end({ runStatus: 'completed', output: 'late' });
    expect((await handle.result()).status).toBe('completed');
    expect(Date.now() - endedAt).toBeLessThan(600);
  });

  it("past timeoutMs: the run is asked to stop (the deadline named) and the handle fails with subagent_timeout, its message and details, soon after the deadline", async () => {
    const { store } = await runningRun();
    const handle = attachedHandle(store, new InMemoryStreamManager(), 's1', 'r1', wait(400));
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'failed', sessionId: 's1', runId: 'r1', state: undefined, stepCount: 0 });
    expect(result.error).toMatchObject({
      code: 'subagent_timeout',
      message: 'The sub-agent run r1, continued by another process, did not end within 400 ms; it was asked to stop.',
      details: { timeoutMs: 400, childStatus: 'running' },
    });
    expect(result.durationMs).toBeGreaterThanOrEqual(390);
    expect(result.durationMs).toBeLessThan(650);
    expect((await store.getRun('r1'))?.stopRequest?.reason).toBe('The parent stopped waiting for this run: its deadline passed.');
  });

  it("a run the store cannot read is reported with childStatus 'unknown', at the deadline and after a stop", async () => {
    const { store } = await runningRun();
    const blind = new Proxy(store, { get: (t, p) => (p === 'getRun' ? () => Promise.reject(new Error('db down')) : (Reflect.get(t, p) as unknown as (...a: unknown[]) => unknown).bind(t)) });
    const timedOut = await attachedHandle(blind, new InMemoryStreamManager(), 's1', 'r1', wait(100)).result();
    expect(timedOut.error).toMatchObject({ code: 'subagent_timeout', details: { childStatus: 'unknown' } });
    const stopped = await attachedHandle(blind, new InMemoryStreamManager(), 's1', 'r1', wait(10_000, 60)).stop('enough');
    expect(stopped.error).toMatchObject({ code: 'run_interrupted', details: { stopRequested: true, childStatus: 'unknown' } });
  });
});

describe('attachedHandle: stop() across processes', () => {
  it("stop() without a reason records the default reason on the run and, once stopWaitMs passed without an end, resolves interrupted with it", async () => {
    const { store } = await runningRun();
    const handle = attachedHandle(store, new InMemoryStreamManager(), 's1', 'r1', wait(10_000, 150));
    const before = Date.now();
    const result = await handle.stop();
    expect(Date.now() - before).toBeGreaterThanOrEqual(140);
    expect(Date.now() - before).toBeLessThan(2_000);
    expect(result).toMatchObject({ status: 'interrupted', sessionId: 's1', runId: 'r1', state: undefined, stepCount: 0 });
    expect(result.durationMs).toBeGreaterThanOrEqual(140);
    expect(result.durationMs).toBeLessThan(2_000);
    expect(result.error).toMatchObject({ code: 'run_interrupted', message: 'The parent run was stopped.', details: { stopRequested: true, childStatus: 'running' } });
    await tick(20);
    expect((await store.getRun('r1'))?.stopRequest?.reason).toBe('The parent run was stopped.');
    expect(await handle.result()).toBe(result);
  });

  it('the first stop wins: a second stop keeps the first reason and deadline and asks nothing more; interrupt() is the same', async () => {
    const { store } = await runningRun();
    const asked: string[] = [];
    const counting = new Proxy(store, {
      get: (t, p) => (p === 'requestStop' ? (runId: string, r: { reason: string; requestedAt: number }) => (asked.push(r.reason), t.requestStop(runId, r)) : (Reflect.get(t, p) as unknown as (...a: unknown[]) => unknown).bind(t)),
    });
    // Polls at 0, 50, 150, 350 ms: the first stop's deadline (140 ms) is seen at 150, a deadline moved by the second stop only at 350.
    const handle = attachedHandle(counting, new InMemoryStreamManager(), 's1', 'r1', wait(10_000, 140));
    const first = handle.stop('the user gave up');
    await tick(100);
    const second = handle.interrupt('another reason');
    const result = await first;
    expect(await second).toBe(result);
    expect(result.error?.message).toBe('the user gave up');
    expect(result.durationMs).toBeLessThan(300);
    expect(asked).toEqual(['the user gave up']);
  });

  it('a run that ends within stopWaitMs after the stop gives its own stored end, not interrupted', async () => {
    const { store, end } = await runningRun();
    const handle = attachedHandle(store, new InMemoryStreamManager(), 's1', 'r1', wait(10_000, 3_000));
    const stopped = handle.stop('wrap up');
    await tick(100);
    await end({ runStatus: 'completed', output: 'finished anyway' });
    expect(await stopped).toMatchObject({ status: 'completed', output: 'finished anyway' });
  });

  it('a stop request the store refuses is logged as a warning and the handle still resolves', async () => {
    const { store } = await runningRun();
    const refusing = new Proxy(store, { get: (t, p) => (p === 'requestStop' ? () => Promise.reject(new Error('read-only replica')) : (Reflect.get(t, p) as unknown as (...a: unknown[]) => unknown).bind(t)) });
    const logger = memoryLogger();
    const result = await attachedHandle(refusing, new InMemoryStreamManager(), 's1', 'r1', { timeoutMs: 10_000, stopWaitMs: 50, logger }).stop('halt');
    expect(result.status).toBe('interrupted');
    expect(logger.lines.some((l) => l.includes('asking run r1 to stop failed: read-only replica'))).toBe(true);
  });
});

describe('attachedHandle: stream and usage', () => {
  it("the stream follows the run's chunks from the attach on (none written before), until the run's terminal chunk", async () => {
    const { store, end } = await runningRun();
    const streams = new InMemoryStreamManager();
    const writer = await streams.claim('s1', 'r1');
    await writer.write(chunk({ type: 'custom', eventName: 'before-1', data: 1 }));
    await writer.write(chunk({ type: 'custom', eventName: 'before-2', data: 2 }));
    const handle = attachedHandle(store, streams, 's1', 'r1', wait(10_000));
    const reading = collect(handle.stream());
    await tick(30);
    await writer.write(chunk({ type: 'custom', eventName: 'after', data: 3 }));
    await writer.write(chunk({ type: 'end', output: 'x' }));
    await end({ runStatus: 'completed', output: 'x' });
    const chunks = (await reading) as (StreamChunk & { eventName?: string })[];
    expect(chunks.map((c) => [c.type, c.seq, c.eventName])).toEqual([
      ['custom', 2, 'after'],
      ['end', 3, undefined],
    ]);
  });

  it('on a stream with no chunks yet, the first chunk written is the first read; an abort signal given to stream() ends it', async () => {
    const { store } = await runningRun();
    const streams = new InMemoryStreamManager();
    const writer = await streams.claim('s1', 'r1');
    const handle = attachedHandle(store, streams, 's1', 'r1', wait(10_000));
    const stop = new AbortController();
    const seen: number[] = [];
    const reading = (async () => {
      for await (const c of handle.stream({ signal: stop.signal })) seen.push(c.seq);
    })();
    await tick(30);
    await writer.write(chunk({ type: 'custom', eventName: 'first', data: 0 }));
    await writer.write(chunk({ type: 'custom', eventName: 'second', data: 1 }));
    await tick(30);
    stop.abort();
    await reading;
    expect(seen).toEqual([0, 1]);
  });

  it('the stream of a run that already ended, or that the store does not know, is empty', async () => {
    const { store, end } = await runningRun();
    const streams = new InMemoryStreamManager();
    const writer = await streams.claim('s1', 'r1');
    await writer.write(chunk({ type: 'custom', eventName: 'old', data: 0 }));
    await end({ runStatus: 'completed', output: 'x' });
    expect(await collect(attachedHandle(store, streams, 's1', 'r1', wait(5_000)).stream())).toEqual([]);
    expect(await collect(attachedHandle(store, streams, 's1', 'nope', wait(100)).stream())).toEqual([]);
  });

  it("getUsageRollup() reads the run's rollup from the usage store it was given, and is undefined without one", async () => {
    const { store } = await runningRun();
    const usage = new InMemoryUsageStore();
    const entry = { kind: 'tool', runId: 'r1', sessionId: 's1', stepIndex: 0, toolName: 'search', toolCallId: 'c1', success: true, durationMs: 5, at: Date.now() } as const;
    // Another run's usage in the same store is not counted.
    await usage.record([entry, { ...entry, runId: 'other', sessionId: 's2', toolCallId: 'c2' }]);
    const withUsage = attachedHandle(store, new InMemoryStreamManager(), 's1', 'r1', { ...wait(100), usageStore: usage });
    expect(await withUsage.getUsageRollup()).toEqual(await usage.getRollup({ runId: 'r1' }));
    expect((await withUsage.getUsageRollup())?.toolStats.totalCalls).toBe(1);
    expect(await attachedHandle(store, new InMemoryStreamManager(), 's1', 'r1', wait(100)).getUsageRollup()).toBeUndefined();
  });
});
