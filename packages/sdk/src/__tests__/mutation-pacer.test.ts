// The pacer a run host drives a loop with (runtime/pacer.ts), which no SDK test reached before the fifth
// mutation run: the loop waits for the first advance, holds at every step commit, and every advance after
// the end resolves true; and a host on the real executor that advances a run one committed step at a time
// (a suspension commit does not hold it).
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Pacer, PacedRecorder, type HostedBegin, type RunHost, type StepRecorder } from '../host/index.js';
import { defineTool, InMemoryStateStore } from '../index.js';
import { counterAgent, finish, setup } from './harness.js';

/** Settles the microtask queue (and one macrotask) so that whatever can run has run. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 5));

describe('Pacer', () => {
  it('started() resolves at the first advance, not before', async () => {
    const pacer = new Pacer();
    let started = false;
    void pacer.started().then(() => (started = true));
    await settle();
    expect(started).toBe(false);
    const first = pacer.advance();
    await settle();
    expect(started).toBe(true);
    pacer.end();
    await expect(first).resolves.toBe(true);
  });

  it('an advance resolves false at a hold, and the held loop goes on only at the next advance', async () => {
    const pacer = new Pacer();
    const first = pacer.advance();
    let released = false;
    void pacer.hold().then(() => (released = true));
    await expect(first).resolves.toBe(false);
    await settle();
    expect(released).toBe(false);
    expect(pacer.ended).toBe(false);
    const second = pacer.advance();
    await settle();
    expect(released).toBe(true);
    pacer.end();
    await expect(second).resolves.toBe(true);
  });

  it('a second advance while one is in flight is refused with an error that says so', async () => {
    const pacer = new Pacer();
    const first = pacer.advance();
    await expect(pacer.advance()).rejects.toThrow('Pacer.advance() called while an advance is in flight');
    pacer.end();
    await expect(first).resolves.toBe(true);
  });

  it('after the end, ended is true and every advance resolves true at once, without starting the loop', async () => {
    const pacer = new Pacer();
    let started = false;
    void pacer.started().then(() => (started = true));
    pacer.end();
    expect(pacer.ended).toBe(true);
    await expect(pacer.advance()).resolves.toBe(true);
    await expect(pacer.advance()).resolves.toBe(true);
    await settle();
    expect(started).toBe(false);
  });

  it('end() with no advance in flight answers nothing; a hold with no advance in flight answers nothing either', async () => {
    const pacer = new Pacer();
    void pacer.hold();
    pacer.end();
    expect(pacer.ended).toBe(true);
    await expect(pacer.advance()).resolves.toBe(true);
  });
});

describe('PacedRecorder', () => {
  it('passes replay, replayOrRun, has and recordedOrder to the inner recorder, and holds the pacer after the inner step commit', async () => {
    const calls: string[] = [];
    const key = { kind: 'model_reply', step: 0 } as const;
    const inner: StepRecorder = {
      replay: async () => (calls.push('replay'), { status: 'interrupted' }) as never,
      replayOrRun: async (_k, _s, run) => (calls.push('replayOrRun'), { status: 'ran', value: await run() }) as never,
      has: (k) => (calls.push(`has:${k.kind}`), true),
      recordedOrder: (keys) => (calls.push('recordedOrder'), [...keys].reverse()),
      stepCommitted: async (step) => void calls.push(`committed:${step}`),
    };
    const pacer = new Pacer();
    const recorder = new PacedRecorder(inner, pacer);
    expect(await recorder.replay(key, {} as never)).toEqual({ status: 'interrupted' });
    expect(await recorder.replayOrRun(key, {} as never, async () => 42)).toEqual({ status: 'ran', value: 42 });
    expect(recorder.has(key)).toBe(true);
    const other = { kind: 'start_signal', step: 0 } as const;
    expect(recorder.recordedOrder([key, other])).toEqual([other, key]);
    const advanced = pacer.advance();
    let held = false;
    const commit = recorder.stepCommitted(3).then(() => (held = true));
    await expect(advanced).resolves.toBe(false);
    expect(calls).toEqual(['replay', 'replayOrRun', 'has:model_reply', 'recordedOrder', 'committed:3']);
    await settle();
    expect(held).toBe(false);
    const last = pacer.advance();
    await commit;
    pacer.end();
    await expect(last).resolves.toBe(true);
  });
});

describe('a run host on the executor', () => {
  it('a host advances a run one committed step at a time: false at each step commit (the finishing one included), true at the end', async () => {
    const begun: HostedBegin[] = [];
    const pacers: Pacer[] = [];
    const host: RunHost = {
      bind: () => {},
      begin: async (request) => {
        begun.push(request);
        const pacer = new Pacer();
        pacers.push(pacer);
        return request.enter(pacer);
      },
    };
    const stateStore = new InMemoryStateStore();
    const { executor } = setup({ stateStore, executor: { host } });
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 } }] }, { toolCalls: [{ name: 'increment', args: { by: 2 } }] }, finish('done')]);
    const handle = await executor.execute(agent, 'go');
    expect(begun.map((b) => b.runId)).toEqual([handle.runId]);
    const pacer = pacers[0]!;
    await settle();
    // Not started: nothing past the run-start commit.
    expect((await stateStore.loadSession(handle.sessionId))?.state).toEqual({ count: 0, log: [] });
    expect(await pacer.advance()).toBe(false);
    // Held at the step commit: the loop does not go on by itself.
    await settle();
    expect((await stateStore.loadSession(handle.sessionId))?.state).toMatchObject({ count: 1 });
    expect(await pacer.advance()).toBe(false);
    expect((await stateStore.loadSession(handle.sessionId))?.state).toMatchObject({ count: 3 });
    // The finishing step commits too; the terminal work runs at the next advance.
    expect(await pacer.advance()).toBe(false);
    expect(pacer.ended).toBe(false);
    expect((await stateStore.getRun(handle.runId))?.status).toBe('running');
    expect(await pacer.advance()).toBe(true);
    expect(pacer.ended).toBe(true);
    expect(await handle.result()).toMatchObject({ status: 'completed', output: { answer: 'done' } });
  });

  it('a suspension commit does not hold the loop: the advance that reaches it resolves true', async () => {
    const pacers: Pacer[] = [];
    const host: RunHost = {
      bind: () => {},
      begin: async (request) => {
        const pacer = new Pacer();
        pacers.push(pacer);
        return request.enter(pacer);
      },
    };
    const ask = defineTool({ name: 'ask_user', description: 'answered by the client', inputSchema: z.object({ q: z.string() }) });
    const { executor } = setup({ executor: { host } });
    const handle = await executor.execute(counterAgent([{ toolCalls: [{ name: 'ask_user', args: { q: 'why' } }] }], { tools: [ask] }), 'go');
    expect(await pacers[0]!.advance()).toBe(true);
    expect((await handle.result()).status).toBe('suspended');
  });
});
