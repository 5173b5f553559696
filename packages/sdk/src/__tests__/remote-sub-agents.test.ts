import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  childSessionId,
  createInProcessAgentClient,
  defineAgent,
  defineRemoteSubAgentTool,
  InMemoryStateStore,
  InMemoryStreamManager,
  InMemoryUsageStore,
  JSAgentExecutor,
  remoteSessionId,
  silentLogger,
  type AgentHooks,
  type Draft,
  type RemoteAgentClient,
  type RemoteStreamOptions,
  type StreamChunk,
} from '../index.js';
import { createGate, createScriptedModel } from '../testing/index.js';
import { collect, dyingAfterSpawn, setup } from './harness.js';

// Remote sub-agents: defineRemoteSubAgentTool runs a child on another service through a RemoteAgentClient.
// The "service" here is a second JSAgentExecutor with its own stores, reached through the in-process client.

const Notes = z.object({ notes: z.array(z.string()).default([]) });

/** A service that serves `agents`, with its own stores; `client` reaches it. */
function service(agents: Parameters<typeof createInProcessAgentClient>[1], options: Parameters<typeof createInProcessAgentClient>[2] = {}) {
  const wired = setup();
  return { ...wired, client: createInProcessAgentClient(wired.executor, agents, options) };
}

/** A parent that calls the remote tool once (call id `r1`), then answers `done`. */
function parentWith(tool: ReturnType<typeof defineRemoteSubAgentTool>, hooks: AgentHooks = {}, args: unknown = { input: 'look into it' }) {
  return defineAgent({
    name: 'lead',
    stateSchema: Notes,
    llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: tool.name, args, id: 'r1' }] }, { text: 'done' }]) },
    tools: [tool],
    hooks,
  });
}

const remoteTool = (client: RemoteAgentClient, extra: Partial<Parameters<typeof defineRemoteSubAgentTool>[0]> = {}) =>
  defineRemoteSubAgentTool({ name: 'research', description: 'Research a topic on the research service.', inputSchema: z.object({ input: z.string() }), agentType: 'researcher', client, ...extra });

/** A client that counts calls and can be told to misbehave, around another client. */
function wrap(inner: RemoteAgentClient, overrides: Partial<RemoteAgentClient> = {}) {
  const calls = { start: 0, stream: [] as (string | undefined)[], result: 0, stop: [] as (string | undefined)[] };
  const client: RemoteAgentClient = {
    start: (request, options) => (calls.start++, (overrides.start ?? inner.start)(request, options)),
    stream: (ref, options?: RemoteStreamOptions) => (calls.stream.push(options?.after), (overrides.stream ?? inner.stream)(ref, options)),
    result: (ref, options) => (calls.result++, (overrides.result ?? inner.result)(ref, options)),
    stop: (ref, reason) => (calls.stop.push(reason), (overrides.stop ?? inner.stop)(ref, reason)),
  };
  return { client, calls };
}

describe('defineRemoteSubAgentTool', () => {
  it('hooks fire as for a local sub-agent, in order, with agentConfig undefined; the remote child runs on the service and the parent gets its output', async () => {
    const seen: string[] = [];
    const payloads: { before?: unknown; after?: { agentConfig: unknown; subSessionId: string; success: boolean; result: unknown } } = {};
    const researcher = defineAgent({ name: 'researcher', llmConfig: { model: createScriptedModel([{ text: 'found it' }]) }, hooks: { onAgentStart: (_p, ctx) => void seen.push(`remote onAgentStart parent=${String(ctx.parentSessionId)}`) } });
    const remote = service([researcher]);
    const parent = parentWith(remoteTool(remote.client), {
      beforeTool: () => void seen.push('beforeTool'),
      beforeSubAgent: (p) => {
        seen.push('beforeSubAgent');
        payloads.before = { agentConfig: p.agentConfig, agentType: p.call.agentType, input: p.call.input, parentSessionId: p.parentSessionId };
      },
      afterSubAgent: (p, ctx) => {
        seen.push('afterSubAgent');
        payloads.after = { agentConfig: p.agentConfig, subSessionId: p.subSessionId, success: p.success, result: p.result };
        ctx.updateState((d) => void (d as Draft<z.infer<typeof Notes>>).notes.push(String(p.result)));
      },
      onStateChange: () => void seen.push('onStateChange'),
      onMessage: (p) => void (p.message.role === 'tool' && seen.push('onMessage(tool)')),
      afterTool: () => void seen.push('afterTool'),
    });
    const { executor, stateStore } = setup();
    const result = await (await executor.execute(parent, 'go', { sessionId: 'lead-1' })).result();
    expect(result).toMatchObject({ status: 'completed', output: 'done', state: { notes: ['found it'] } });
    expect(seen).toEqual(['beforeTool', 'beforeSubAgent', 'remote onAgentStart parent=lead-1', 'afterSubAgent', 'onStateChange', 'onMessage(tool)', 'afterTool']);
    expect(payloads.before).toEqual({ agentConfig: undefined, agentType: 'researcher', input: { input: 'look into it' }, parentSessionId: 'lead-1' });
    const remoteSession = remoteSessionId(childSessionId('lead-1', 'r1'));
    expect(payloads.after).toEqual({ agentConfig: undefined, subSessionId: remoteSession, success: true, result: 'found it' });
    expect((await remote.stateStore.loadSession(remoteSession))?.messages.at(-1)).toMatchObject({ role: 'assistant', content: 'found it' });
    // The child ran on the service only.
    expect(await stateStore.loadSession(remoteSession)).toBeUndefined();
    expect((await stateStore.loadSession('lead-1'))!.messages.find((m) => m.role === 'tool')).toMatchObject({ toolCallId: 'r1', content: 'found it' });
  });

  it("the remote child's chunks are forwarded live as subagent_chunk (child session, call id, depth 1); its end is not the parent's end", async () => {
    const remote = service([defineAgent({ name: 'researcher', llmConfig: { model: createScriptedModel([{ textChunks: ['a', 'b', 'c'] }]) } })]);
    const { executor } = setup();
    const handle = await executor.execute(parentWith(remoteTool(remote.client)), 'go', { sessionId: 'p-stream' });
    const chunks = await collect(handle.stream());
    const forwarded = chunks.filter((c): c is Extract<StreamChunk, { type: 'subagent_chunk' }> => c.type === 'subagent_chunk');
    const remoteSession = remoteSessionId(childSessionId('p-stream', 'r1'));
    for (const c of forwarded) expect({ child: c.childSessionId, call: c.parentToolCallId, depth: c.depth }).toEqual({ child: remoteSession, call: 'r1', depth: 1 });
    const remoteChunks = await collect(remote.executor.readStream(remoteSession, { follow: false }));
    expect(forwarded.map((c) => c.chunk)).toEqual(remoteChunks);
    expect(forwarded.map((c) => c.chunk.type)).toContain('end');
    expect(chunks.filter((c) => c.type === 'end')).toHaveLength(1);
    expect(chunks.at(-1)?.type).toBe('end');
  });

  it("the parent's usage rollup includes the remote child's usage when the client reports it, as one sub-agent entry", async () => {
    const usage = { inputTokens: 10, outputTokens: 5 };
    const serviceUsage = new InMemoryUsageStore();
    const remote = service([defineAgent({ name: 'researcher', llmConfig: { model: createScriptedModel([{ text: 'c', usage }]) } })], { usageStore: serviceUsage });
    const parent = defineAgent({
      name: 'lead',
      llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'research', args: { input: 'x' }, id: 'r1' }], usage }, { text: 'p', usage }]) },
      tools: [remoteTool(remote.client)],
    });
    const { executor } = setup();
    const handle = await executor.execute(parent, 'go', { sessionId: 'p-usage', usageStore: new InMemoryUsageStore() });
    await handle.result();
    const rollup = await handle.getUsageRollup();
    expect(rollup?.modelCalls).toBe(3);
    expect(rollup?.tokens.total).toBe(45);
    expect(rollup?.subAgents?.map((s) => [s.sessionId, s.rollup.modelCalls])).toEqual([[remoteSessionId(childSessionId('p-usage', 'r1')), 1]]);

    // A client that reports no usage: the parent counts only its own.
    const quiet = service([defineAgent({ name: 'researcher', llmConfig: { model: createScriptedModel([{ text: 'c', usage }]) } })]);
    const parent2 = defineAgent({ ...parent, tools: [remoteTool(quiet.client)], llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'research', args: { input: 'x' }, id: 'r1' }], usage }, { text: 'p', usage }]) } });
    const handle2 = await executor.execute(parent2, 'go', { usageStore: new InMemoryUsageStore() });
    await handle2.result();
    expect((await handle2.getUsageRollup())?.modelCalls).toBe(2);
  });

  it('a remote child that fails gives afterSubAgent success false with its typed error, and subagent_failed to the parent, which goes on', async () => {
    const failures: unknown[] = [];
    const broken = defineAgent({ name: 'researcher', outputSchema: z.object({ x: z.number() }), maxSteps: 1, llmConfig: { model: createScriptedModel([{ text: 'no finish' }]) } });
    const remote = service([broken]);
    const parent = parentWith(remoteTool(remote.client), { afterSubAgent: (p) => void failures.push({ success: p.success, code: p.error?.code, agentConfig: p.agentConfig }) });
    const { executor } = setup();
    const handle = await executor.execute(parent, 'go');
    expect(await handle.result()).toMatchObject({ status: 'completed', output: 'done' });
    expect(failures).toEqual([{ success: false, code: 'run_max_steps', agentConfig: undefined }]);
    const row = (await executor.getSession(handle.sessionId))!.messages.find((m) => m.role === 'tool');
    expect(row).toMatchObject({ isError: true, errorInfo: { code: 'subagent_failed', details: { cause: 'run_max_steps' } } });
  });

  it('a start the service refuses, and a client whose result() throws, both give subagent_failed with the cause; afterSubAgent still fires once', async () => {
    const remote = service([]);
    const codes: (string | undefined)[] = [];
    const { executor } = setup();
    const refusedRun = await (await executor.execute(parentWith(remoteTool(remote.client), { afterSubAgent: (p) => void codes.push(p.error?.code) }), 'go')).result();
    expect(refusedRun.status).toBe('completed');
    const flaky = wrap(service([defineAgent({ name: 'researcher', llmConfig: { model: createScriptedModel([{ text: 'x' }]) } })]).client, { result: () => Promise.reject(new Error('connection reset')) });
    const brokenRun = await executor.execute(parentWith(remoteTool(flaky.client), { afterSubAgent: (p) => void codes.push(p.error?.code) }), 'go');
    await brokenRun.result();
    expect(codes).toEqual(['agent_not_registered', 'subagent_remote_error']);
    const row = (await executor.getSession(brokenRun.sessionId))!.messages.find((m) => m.role === 'tool');
    expect(row).toMatchObject({ isError: true, errorInfo: { code: 'subagent_failed', details: { cause: 'subagent_remote_error' } } });
  });

  it('stopping the parent calls the client stop: the remote child is interrupted on the service and the parent ends interrupted', async () => {
    const remoteFails: string[] = [];
    const slow = defineAgent({ name: 'researcher', llmConfig: { model: createScriptedModel([{ text: 'late', delayMs: 5_000 }]) }, hooks: { onAgentFail: (p) => void remoteFails.push(p.error.code) } });
    const remote = service([slow]);
    const spy = wrap(remote.client);
    const started = createGate();
    const { executor } = setup();
    const handle = await executor.execute(parentWith(remoteTool(spy.client), { beforeSubAgent: () => started.open() }), 'go', { sessionId: 'p-stop' });
    await started.opened;
    await new Promise((r) => setTimeout(r, 30));
    expect((await handle.stop()).status).toBe('interrupted');
    expect(spy.calls.stop).toEqual(['The parent run was stopped.']);
    const remoteRun = await remote.executor.getRun((await remote.executor.getSession(remoteSessionId(childSessionId('p-stop', 'r1'))))!.currentRunId!);
    expect(remoteRun?.status).toBe('interrupted');
    expect(remoteFails).toEqual(['run_interrupted']);
  });

  it('a client whose stop() is ignored and whose result never comes: the stopped parent goes on after stopTimeoutMs', async () => {
    const never: RemoteAgentClient = {
      start: async () => ({ sessionId: 'svc-1', runId: 'run-1' }),
      stream: async function* () {},
      result: () => new Promise(() => {}),
      stop: async () => {},
    };
    const started = createGate();
    const { executor } = setup();
    const handle = await executor.execute(parentWith(remoteTool(never, { stopTimeoutMs: 50 }), { beforeSubAgent: () => started.open() }), 'go');
    await started.opened;
    const before = Date.now();
    expect((await handle.stop()).status).toBe('interrupted');
    expect(Date.now() - before).toBeLessThan(2_000);
  });

  it('timeoutMs: a remote child that takes too long is stopped and the call fails with subagent_timeout; the parent goes on', async () => {
    const slow = defineAgent({ name: 'researcher', llmConfig: { model: createScriptedModel([{ text: 'late', delayMs: 5_000 }]) } });
    const spy = wrap(service([slow]).client);
    const codes: (string | undefined)[] = [];
    const { executor } = setup();
    const result = await (await executor.execute(parentWith(remoteTool(spy.client, { timeoutMs: 80 }), { afterSubAgent: (p) => void codes.push(p.error?.code) }), 'go')).result();
    expect(result).toMatchObject({ status: 'completed', output: 'done' });
    expect(codes).toEqual(['subagent_timeout']);
    expect(spy.calls.stop).toHaveLength(1);
  });

  it.each(['throws', 'ends early'] as const)('a stream that breaks off (%s) is opened again after the last cursor: every chunk is forwarded once, in order', async (how) => {
    // The child's reply streams slowly, so the break comes while it still runs.
    const remote = service([defineAgent({ name: 'researcher', llmConfig: { model: createScriptedModel([{ textChunks: ['a', 'b', 'c', 'd'], chunkDelayMs: 20 }]) } })]);
    let broke = false;
    const spy = wrap(remote.client, {
      stream: (ref, options) =>
        (async function* () {
          let n = 0;
          for await (const item of remote.client.stream(ref, options)) {
            if (!broke && ++n === 3) {
              broke = true;
              if (how === 'throws') throw new Error('socket hang up');
              return;
            }
            yield item;
          }
        })(),
    });
    const { executor } = setup();
    const handle = await executor.execute(parentWith(remoteTool(spy.client)), 'go', { sessionId: 'p-resume' });
    const chunks = await collect(handle.stream());
    const seqs = chunks.flatMap((c) => (c.type === 'subagent_chunk' ? [c.chunk.seq] : []));
    const remoteChunks = await collect(remote.executor.readStream(remoteSessionId(childSessionId('p-resume', 'r1')), { follow: false }));
    expect(seqs).toEqual(remoteChunks.map((c) => c.seq));
    expect(spy.calls.stream).toEqual([undefined, String(remoteChunks[1]!.seq)]);
  });

  it('a hostile client: invalid ids, junk stream items, an invalid result and usage with prototype keys are refused or dropped, nothing leaks', async () => {
    const junk: RemoteAgentClient = {
      start: async () => ({ sessionId: 'svc', runId: 'run' }),
      stream: async function* () {
        yield 'not an item' as never;
        yield { cursor: '1', chunk: { type: 'text_delta', delta: 1n } } as never;
        yield { cursor: '2', chunk: { type: 'text_delta', delta: 'x'.repeat(1_100_000) } } as never;
        yield { cursor: '3', chunk: { type: 'custom', eventName: 'ok', data: 1, seq: 0 } } as never;
      },
      result: async () => ({
        status: 'completed',
        output: 'fine',
        usage: JSON.parse('{"tokens":{"prompt":1,"completion":1,"total":2,"cached":0,"cacheWrite":0,"reasoning":0},"modelCalls":1,"failedModelCalls":0,"toolStats":{"totalCalls":2,"failures":0,"byTool":{"__proto__":{"calls":1,"failures":0,"totalDurationMs":1},"constructor":{"calls":1,"failures":0,"totalDurationMs":1}}}}') as never,
      }),
      stop: async () => {},
    };
    const { executor } = setup();
    const handle = await executor.execute(parentWith(remoteTool(junk)), 'go', { usageStore: new InMemoryUsageStore() });
    const chunks = await collect(handle.stream());
    expect(chunks.flatMap((c) => (c.type === 'subagent_chunk' ? [c.chunk.type] : []))).toEqual(['custom']);
    expect(await handle.result()).toMatchObject({ status: 'completed' });
    const rollup = await handle.getUsageRollup();
    expect(rollup?.toolStats.byTool['constructor']).toEqual({ calls: 1, failures: 0, totalDurationMs: 1 });
    expect((Object as unknown as Record<string, unknown>)['calls']).toBeUndefined();
    expect(({} as Record<string, unknown>)['calls']).toBeUndefined();

    const codes: (string | undefined)[] = [];
    const badRef: RemoteAgentClient = { ...junk, start: async () => ({ sessionId: 42 }) as never };
    const badResult: RemoteAgentClient = { ...junk, result: async () => ({ status: 'exploded', error: { code: 'x'.repeat(10_000) } }) as never };
    const badError: RemoteAgentClient = { ...junk, result: async () => ({ status: 'failed', error: { code: 'remote_broke', layer: 'tool', severity: 'error', retryable: false, message: 'y'.repeat(50_000) } }) };
    const messages: string[] = [];
    for (const client of [badRef, badResult, badError]) {
      await (await executor.execute(parentWith(remoteTool(client), { afterSubAgent: (p) => void (codes.push(p.error?.code), messages.push(p.error?.message ?? '')) }), 'go')).result();
    }
    expect(codes).toEqual(['subagent_remote_invalid', 'subagent_remote_invalid', 'remote_broke']);
    expect(Math.max(...messages.map((m) => m.length))).toBeLessThanOrEqual(400);
  });

  it('definition errors are typed: a client without the four methods, an empty agentType, a bad timeout', () => {
    const client = createInProcessAgentClient(setup().executor, []);
    expect(() => remoteTool({ start: client.start } as never)).toThrow(/no stream, result, stop/);
    expect(() => remoteTool(client, { agentType: '' })).toThrow(/agentType/);
    expect(() => remoteTool(client, { timeoutMs: -1 })).toThrow(/timeoutMs/);
  });
});

describe('a recovered parent re-attaches to its remote child', () => {
  it('the spawn is recorded: the recovered parent does not start the child again or fire beforeSubAgent again, waits for the same remote run, and afterSubAgent fires once', async () => {
    const release = createGate();
    const remoteStarts: string[] = [];
    const researcher = defineAgent({
      name: 'researcher',
      llmConfig: { model: createScriptedModel([{ text: 'the finding' }]) },
      hooks: { onAgentStart: async (_p, ctx) => (remoteStarts.push(ctx.sessionId), release.opened) },
    });
    const remote = service([researcher]);
    const events: string[] = [];
    const hooks: AgentHooks = {
      beforeSubAgent: () => void events.push('beforeSubAgent'),
      afterSubAgent: (p, ctx) => {
        events.push(`afterSubAgent ${p.subSessionId} ${String(p.result)}`);
        ctx.updateState((d) => void (d as Draft<z.infer<typeof Notes>>).notes.push(String(p.result)));
      },
    };
    const store = new InMemoryStateStore();
    const before = wrap(remote.client, { result: () => new Promise(() => {}) });
    const a = new JSAgentExecutor(dyingAfterSpawn(store), new InMemoryStreamManager(), new VercelAIAdapter(), { logger: silentLogger, leaseMs: 60 });
    await a.execute(parentWith(remoteTool(before.client), hooks), 'go', { sessionId: 'crashy' });
    while (remoteStarts.length === 0) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, 150));

    // Another process, with its own client instance for the same service.
    const after = wrap(createInProcessAgentClient(remote.executor, [researcher]));
    const b = new JSAgentExecutor(store, new InMemoryStreamManager(), new VercelAIAdapter(), { logger: silentLogger });
    const recoveredParent = defineAgent({ ...parentWith(remoteTool(after.client), hooks), llmConfig: { model: createScriptedModel([{ text: 'done after recovery' }]) } });
    const [handle] = await b.recover({ agents: [recoveredParent] });
    release.open();
    const result = await handle!.result();
    expect(result).toMatchObject({ status: 'completed', output: 'done after recovery', state: { notes: ['the finding'] } });
    const remoteSession = remoteSessionId(childSessionId('crashy', 'r1'));
    expect(remoteStarts).toEqual([remoteSession]);
    expect(before.calls.start).toBe(1);
    expect(after.calls.start).toBe(0);
    expect(after.calls.result).toBe(1);
    expect(events).toEqual(['beforeSubAgent', `afterSubAgent ${remoteSession} the finding`]);
  });
});
