import { getEventListeners } from 'node:events';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { AgentError, createInProcessAgentClient, defineAgent, defineTool, InMemoryStateStore, InMemoryStreamManager, InMemoryUsageStore, JSAgentExecutor, silentLogger, type AgentHandle, type AgentRuntime, type UsageStore } from '../index.js';
import { createGate, createScriptedModel } from '../testing/index.js';

function adder(steps: number) {
  const add = defineTool({ name: 'add', description: 'adds', inputSchema: z.object({ a: z.number() }), execute: ({ a }) => a + 1 });
  const call = { toolCalls: [{ name: 'add', args: { a: 1 } }], usage: { inputTokens: 10, outputTokens: 2 } };
  return defineAgent({ name: 'adder', llmConfig: { model: createScriptedModel([...Array.from({ length: steps - 1 }, () => call), { text: 'done', usage: { inputTokens: 10, outputTokens: 1 } }]) }, tools: [add], maxSteps: steps + 1 });
}

/** V8's full collection, exposed at run time (vitest's workers do not start with --expose-gc). */
function collector(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

/** An agent whose one tool call waits for `gate`; `started` opens once the tool runs. */
function slowAgent() {
  const gate = createGate();
  const started = createGate();
  const slow = defineTool({ name: 'slow', description: 'waits', inputSchema: z.object({}), execute: async () => (started.open(), await gate.opened, 'ok') });
  const agent = defineAgent({ name: 'slow', llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'slow', args: {} }] }, { text: 'done' }]) }, tools: [slow], maxSteps: 3 });
  return { gate, started, agent };
}

describe('retention: deleting sessions and keeping fewer checkpoints', () => {
  it('JSAgentExecutor.deleteSession removes a finished session from the state store and its stream; the id can be used again', async () => {
    const stateStore = new InMemoryStateStore();
    const streams = new InMemoryStreamManager();
    const executor = new JSAgentExecutor(stateStore, streams, new VercelAIAdapter(), { logger: silentLogger });
    const handle = await executor.execute(adder(3), 'go', { sessionId: 'kept-not', usageStore: stateStore });
    const result = await handle.result();
    expect(result.status).toBe('completed');
    expect(streams.chunks('kept-not').length).toBeGreaterThan(5);
    expect((await stateStore.getRollup({ sessionId: 'kept-not' })).tokens.total).toBeGreaterThan(0);
    expect(await executor.deleteSession('kept-not')).toBe(true);
    expect(await executor.getSession('kept-not')).toBeUndefined();
    expect(await executor.getRun(result.runId)).toBeUndefined();
    expect(streams.chunks('kept-not')).toEqual([]);
    expect((await stateStore.getRollup({ sessionId: 'kept-not' })).tokens.total).toBe(0);
    expect(await executor.deleteSession('kept-not')).toBe(false);
    const again = await (await executor.execute(adder(2), 'again', { sessionId: 'kept-not' })).result();
    expect(again.status).toBe('completed');
    expect(streams.chunks('kept-not')[0]).toMatchObject({ seq: 0, type: 'run_started' });
  });

  it('deleteSession drops the session\'s entries from a separate InMemoryUsageStore its runs were given, and leaves other sessions\' entries', async () => {
    const usage = new InMemoryUsageStore();
    const executor = new JSAgentExecutor(new InMemoryStateStore(), new InMemoryStreamManager(), new VercelAIAdapter(), { logger: silentLogger });
    await (await executor.execute(adder(3), 'go', { sessionId: 'gone', usageStore: usage })).result();
    await (await executor.execute(adder(2), 'go', { sessionId: 'stays', usageStore: usage })).result();
    const before = { gone: usage.entries({ sessionId: 'gone' }).length, stays: usage.entries({ sessionId: 'stays' }).length };
    expect(before.gone).toBeGreaterThanOrEqual(5); // three model calls and two tool calls
    expect(before.stays).toBeGreaterThanOrEqual(3);
    expect(await executor.deleteSession('gone')).toBe(true);
    expect(usage.entries({ sessionId: 'gone' })).toEqual([]);
    expect((await usage.getRollup({ sessionId: 'gone' })).modelCalls).toBe(0);
    expect(usage.entries({ sessionId: 'stays' })).toHaveLength(before.stays);
  });

  it('deleteSession refused while the run is running (session_running) keeps the session\'s entries in a separate usage store', async () => {
    const gate = createGate();
    const started = createGate();
    const add = defineTool({ name: 'add', description: 'adds', inputSchema: z.object({ a: z.number() }), execute: ({ a }) => a + 1 });
    const slow = defineTool({ name: 'slow', description: 'waits', inputSchema: z.object({}), execute: async () => (started.open(), await gate.opened, 'ok') });
    const agent = defineAgent({ name: 'add-then-wait', llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'add', args: { a: 1 } }] }, { toolCalls: [{ name: 'slow', args: {} }] }, { text: 'done' }]) }, tools: [add, slow], maxSteps: 4 });
    const usage = new InMemoryUsageStore();
    const executor = new JSAgentExecutor(new InMemoryStateStore(), new InMemoryStreamManager(), new VercelAIAdapter(), { logger: silentLogger });
    const handle = await executor.execute(agent, 'go', { sessionId: 'busy-usage', usageStore: usage });
    await started.opened;
    const recorded = usage.entries({ sessionId: 'busy-usage' }).length;
    expect(recorded).toBeGreaterThanOrEqual(2); // the first step's model call and its add call
    const refused = await executor.deleteSession('busy-usage').then(() => undefined, (e: unknown) => e);
    expect(AgentError.isInstance(refused) && refused.info.code).toBe('session_running');
    expect(usage.entries({ sessionId: 'busy-usage' })).toHaveLength(recorded);
    gate.open();
    expect((await handle.result()).status).toBe('completed');
  });

  it('deleteSession({ usageStore }) cleans a usage store this executor never ran with (another process deletes the session)', async () => {
    const stateStore = new InMemoryStateStore();
    const streams = new InMemoryStreamManager();
    const usage = new InMemoryUsageStore();
    const runner = new JSAgentExecutor(stateStore, streams, new VercelAIAdapter(), { logger: silentLogger });
    await (await runner.execute(adder(2), 'go', { sessionId: 'elsewhere', usageStore: usage })).result();
    expect(usage.entries({ sessionId: 'elsewhere' }).length).toBeGreaterThan(0);
    const deleter = new JSAgentExecutor(stateStore, streams, new VercelAIAdapter(), { logger: silentLogger });
    expect(await deleter.deleteSession('elsewhere', { usageStore: usage })).toBe(true);
    expect(usage.entries({ sessionId: 'elsewhere' })).toEqual([]);
  });

  it('deleteSession leaves a usage store without deleteSession alone, and does not ask the state store (its own usage went with the session) a second time', async () => {
    const stateStore = new InMemoryStateStore();
    const asked: string[] = [];
    const inner = new InMemoryUsageStore();
    // A third-party store that implements only the required methods.
    const plain: UsageStore = { record: (entries) => inner.record(entries), getRollup: (filter) => inner.getRollup(filter) };
    const deleting = new InMemoryUsageStore();
    const deleteEntries = deleting.deleteSession.bind(deleting);
    deleting.deleteSession = async (id: string) => (asked.push(id), deleteEntries(id));
    const originalDelete = stateStore.deleteSession.bind(stateStore);
    let stateDeletes = 0;
    stateStore.deleteSession = async (id: string) => (stateDeletes++, originalDelete(id));
    const executor = new JSAgentExecutor(stateStore, new InMemoryStreamManager(), new VercelAIAdapter(), { logger: silentLogger });
    await (await executor.execute(adder(2), 'go', { sessionId: 'mixed', usageStore: plain })).result();
    await (await executor.execute(adder(2), 'again', { sessionId: 'mixed', usageStore: deleting })).result();
    await (await executor.execute(adder(2), 'third', { sessionId: 'mixed', usageStore: stateStore })).result();
    expect(deleting.entries({ sessionId: 'mixed' }).length).toBeGreaterThan(0);
    expect(await executor.deleteSession('mixed')).toBe(true);
    expect(stateDeletes).toBe(1);
    expect(asked).toEqual(['mixed']);
    expect(deleting.entries({ sessionId: 'mixed' })).toEqual([]);
    expect(inner.entries({ sessionId: 'mixed' }).length).toBeGreaterThan(0);
  });

  it('deleteSession refuses (session_running) while the run is running and deletes nothing', async () => {
    const { gate, started, agent } = slowAgent();
    const streams = new InMemoryStreamManager();
    const executor = new JSAgentExecutor(new InMemoryStateStore(), streams, new VercelAIAdapter(), { logger: silentLogger });
    const handle = await executor.execute(agent, 'go', { sessionId: 'busy' });
    await started.opened;
    const refused = await executor.deleteSession('busy').then(() => undefined, (e: unknown) => e);
    expect(AgentError.isInstance(refused) && refused.info).toMatchObject({ code: 'session_running', retryable: true });
    expect(await executor.getSession('busy')).toBeDefined();
    gate.open();
    expect((await handle.result()).status).toBe('completed');
    expect(await executor.deleteSession('busy')).toBe(true);
  });

  it('retention.keepCheckpoints keeps only the newest checkpoints of a session', async () => {
    const stateStore = new InMemoryStateStore({ retention: { keepCheckpoints: 2 } });
    const executor = new JSAgentExecutor(stateStore, new InMemoryStreamManager(), new VercelAIAdapter(), { logger: silentLogger });
    const result = await (await executor.execute(adder(6), 'go', { sessionId: 'cp' })).result();
    const checkpoints = await executor.listCheckpoints('cp');
    expect(checkpoints).toHaveLength(2);
    // The newest ones: the last is the run's final checkpoint.
    expect(checkpoints.at(-1)!.stepCount).toBe(result.stepCount);
    expect(checkpoints[0]!.stepCount).toBeLessThanOrEqual(checkpoints[1]!.stepCount);
  });

  it('after 200 runs whose sessions are deleted, the stores answer for none of them', async () => {
    const stateStore = new InMemoryStateStore();
    const streams = new InMemoryStreamManager();
    const executor = new JSAgentExecutor(stateStore, streams, new VercelAIAdapter(), { logger: silentLogger });
    const runIds: string[] = [];
    for (let i = 0; i < 200; i++) {
      const r = await (await executor.execute(adder(2), 'go', { sessionId: `s${i}`, usageStore: stateStore })).result();
      runIds.push(r.runId);
      await executor.deleteSession(`s${i}`);
    }
    for (let i = 0; i < 200; i += 37) {
      expect(await stateStore.loadSession(`s${i}`)).toBeUndefined();
      expect(await stateStore.getRun(runIds[i]!)).toBeUndefined();
      expect(streams.chunks(`s${i}`)).toEqual([]);
    }
    expect((await stateStore.getRollup({})).tokens.total).toBe(0);
  });

  it('after 50 runs whose sessions are deleted, the memory stores hold no record of them: sessions, runs, step sets, journals, usage, streams', async () => {
    const stateStore = new InMemoryStateStore();
    const streams = new InMemoryStreamManager();
    const executor = new JSAgentExecutor(stateStore, streams, new VercelAIAdapter(), { logger: silentLogger });
    for (let i = 0; i < 50; i++) {
      const handle = await executor.execute(adder(3), 'go', { sessionId: `gone-${i}`, usageStore: stateStore });
      // A reader follows the run to its end, as a client of the stream would.
      for await (const _chunk of handle.stream()) void _chunk;
      await handle.result();
      expect(stateStore.held().runs).toBe(1);
      await executor.deleteSession(`gone-${i}`);
    }
    expect(stateStore.held()).toEqual({ sessions: 0, runs: 0, committedStepSets: 0, journals: 0, sessionRunLists: 0, usageEntries: 0 });
    expect(streams.held()).toEqual({ streams: 0, waitingReaders: 0 });
  });

  it('reading the stream of a deleted (or never created) session keeps nothing: no stream row, no waiting reader', async () => {
    const streams = new InMemoryStreamManager();
    const executor = new JSAgentExecutor(new InMemoryStateStore(), streams, new VercelAIAdapter(), { logger: silentLogger });
    await (await executor.execute(adder(2), 'go', { sessionId: 'read-after' })).result();
    await executor.deleteSession('read-after');
    for (let i = 0; i < 20; i++) {
      // A client reconnecting to a deleted session, and one asking for an id nobody used.
      for await (const _chunk of executor.readStream('read-after', { follow: false })) void _chunk;
      for await (const _chunk of executor.readStream(`never-${i}`, { follow: false })) void _chunk;
      // A follower that gives up before anything arrives.
      const leave = new AbortController();
      const following = (async () => {
        for await (const _chunk of executor.readStream(`never-${i}`, { signal: leave.signal })) void _chunk;
      })();
      await new Promise((resolve) => setImmediate(resolve));
      expect(streams.held().waitingReaders).toBe(1);
      leave.abort();
      await following;
    }
    expect(streams.held()).toEqual({ streams: 0, waitingReaders: 0 });
    // A follower that was waiting on a stream not yet claimed still sees the run that claims it.
    const early = (async () => {
      const seen: string[] = [];
      for await (const chunk of executor.readStream('later')) {
        seen.push(chunk.type);
        if (chunk.type === 'end') return seen;
      }
      return seen;
    })();
    await new Promise((resolve) => setImmediate(resolve));
    await (await executor.execute(adder(2), 'go', { sessionId: 'later' })).result();
    expect((await early).at(-1)).toBe('end');
  });

  it('a follower that leaves a live stream (its signal aborted) is no longer among its waiting readers', async () => {
    const { gate, started, agent } = slowAgent();
    const streams = new InMemoryStreamManager();
    const executor = new JSAgentExecutor(new InMemoryStateStore(), streams, new VercelAIAdapter(), { logger: silentLogger });
    const handle = await executor.execute(agent, 'go', { sessionId: 'idle' });
    await started.opened;
    for (let i = 0; i < 10; i++) {
      const leave = new AbortController();
      const following = (async () => {
        for await (const _chunk of executor.readStream('idle', { signal: leave.signal })) void _chunk;
      })();
      await new Promise((resolve) => setImmediate(resolve));
      leave.abort();
      await following;
    }
    expect(streams.held().waitingReaders).toBe(0);
    gate.open();
    expect((await handle.result()).status).toBe('completed');
  });

  it('an abortSignal shared by many runs holds no listener of a run that ended (it would keep the run alive)', async () => {
    const executor = new JSAgentExecutor(new InMemoryStateStore(), new InMemoryStreamManager(), new VercelAIAdapter(), { logger: silentLogger });
    const shared = new AbortController();
    for (let i = 0; i < 20; i++) {
      const handle = await executor.execute(adder(2), 'go', { sessionId: `shared-${i}`, abortSignal: shared.signal });
      expect(getEventListeners(shared.signal, 'abort').length).toBeGreaterThanOrEqual(1);
      expect((await handle.result()).status).toBe('completed');
      await executor.deleteSession(`shared-${i}`);
    }
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0);
    // The signal still stops a run that is running.
    const { gate, started, agent } = slowAgent();
    const handle = await executor.execute(agent, 'go', { sessionId: 'stopped', abortSignal: shared.signal });
    await started.opened;
    shared.abort();
    gate.open();
    expect((await handle.result()).status).toBe('interrupted');
  });

  it('the in-process agent client lets go of a run once its result was read: 20 finished runs are all collectable', async () => {
    const gc = collector();
    const executor = new JSAgentExecutor(new InMemoryStateStore(), new InMemoryStreamManager(), new VercelAIAdapter(), { logger: silentLogger });
    // The runtime the client serves, with a weak reference to every handle it hands out.
    const handles: WeakRef<AgentHandle>[] = [];
    const runtime = Object.create(executor) as AgentRuntime;
    runtime.execute = (async (...args: Parameters<AgentRuntime['execute']>) => {
      const handle = await executor.execute(...args);
      handles.push(new WeakRef(handle));
      return handle;
    }) as AgentRuntime['execute'];
    const agent = defineAgent({ name: 'echo', llmConfig: { model: createScriptedModel([{ text: 'hi' }], { loop: true }) } });
    const client = createInProcessAgentClient(runtime, [agent]);
    for (let i = 0; i < 20; i++) {
      const ref = await client.start({ agentType: agent.name, input: 'go', idempotencyKey: `key-${i}`, parentSessionId: 'parent', parentToolCallId: `call-${i}`, depth: 1 });
      expect((await client.result(ref)).status).toBe('completed');
      // A second wait (after a reconnect) still answers, from the store.
      expect((await client.result(ref)).status).toBe('completed');
      await executor.deleteSession(ref.sessionId);
    }
    expect(handles).toHaveLength(20);
    // WeakRefs read in this job stay alive until it ends: collect in a later one.
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    expect(handles.filter((h) => h.deref() !== undefined)).toHaveLength(0);
  });
});
