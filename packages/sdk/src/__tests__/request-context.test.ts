import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, HOOK_POINTS, type AgentHooks, type HookContext, type HookPoint, type RunTokenUsage } from '../index.js';
import { collect, counterAgent, deadCounterRun, finish, incrementTool, setup } from './harness.js';

// Rule 202: the request-scoped hookContext reaches every inline hook and tool by reference and is never
// stored or streamed; a resumed or recovered run gets the one its own call passed. Rule 203: every
// hook context offers the run metadata (step count, token usage so far, tool call counts).

/** A resource like a socket or a database client: a function, a cycle, a secret nobody may store. */
function resource() {
  const socket: { send: (m: string) => void; self?: unknown; secret: string; sent: string[] } = { send: (m) => void socket.sent.push(m), secret: 'sekret-7f3a9c', sent: [] };
  socket.self = socket;
  return socket;
}

/** Hooks at every point (but the streaming ones) that keep the hookContext they saw. */
function seeing() {
  const seen: { point: HookPoint; value: unknown }[] = [];
  const hooks: Record<string, unknown> = {};
  for (const point of HOOK_POINTS) {
    if (point === 'onTextDelta' || point === 'onThinking') continue;
    if (point === 'onAgentSuspended' || point === 'onAgentResumed' || point === 'onAgentRetry') hooks[point] = (ctx: HookContext) => void seen.push({ point, value: ctx.hookContext });
    else hooks[point] = (_payload: unknown, ctx: HookContext) => void seen.push({ point, value: ctx.hookContext });
  }
  return { seen, hooks: hooks as AgentHooks };
}

function probeTool(seen: unknown[]) {
  return defineTool({
    name: 'probe',
    description: 'uses the request resources',
    inputSchema: z.object({}),
    sideEffects: true,
    execute: (_input, ctx) => {
      seen.push(ctx.hookContext);
      (ctx.hookContext as ReturnType<typeof resource>).send('hello');
      return { ok: true };
    },
  });
}

describe('request-scoped hookContext', () => {
  it('rule 202: every inline hook and tool sees the very object passed to execute (same identity, not a copy)', async () => {
    const socket = resource();
    const { seen, hooks } = seeing();
    const toolSaw: unknown[] = [];
    const { executor } = setup();
    const agent = counterAgent([{ toolCalls: [{ name: 'probe', args: {}, id: 'p1' }, { name: 'increment', args: { by: 1 }, id: 'i1' }] }, finish('done')], { tools: [probeTool(toolSaw), incrementTool] });
    const handle = await executor.execute(agent, 'go', { hooks, hookContext: socket });
    expect((await handle.result()).status).toBe('completed');
    const points = new Set(seen.map((s) => s.point));
    for (const p of ['onAgentStart', 'beforeLLMCall', 'afterLLMCall', 'beforeTool', 'afterTool', 'onStateChange', 'onMessage', 'onExit', 'onAgentComplete'] as const) expect(points.has(p), p).toBe(true);
    expect(seen.every((s) => s.value === socket)).toBe(true);
    expect(toolSaw).toHaveLength(1);
    expect(toolSaw[0]).toBe(socket);
    expect(socket.sent).toEqual(['hello']);
  });

  it('rule 202: the hookContext never appears in a store row, a checkpoint, the run record or a stream chunk', async () => {
    const socket = resource();
    const { executor, stateStore, usageStore } = setup();
    const agent = counterAgent([{ toolCalls: [{ name: 'probe', args: {}, id: 'p1' }] }, finish('done')], {
      tools: [probeTool([])],
      hooks: { afterTool: (_p, ctx) => void ctx.updateState((d) => void d.log.push(typeof ctx.hookContext)) },
    });
    const handle = await executor.execute(agent, 'go', { hookContext: socket, usageStore });
    const result = await handle.result();
    expect(result.status).toBe('completed');
    const stored = JSON.stringify({
      session: await stateStore.loadSession(result.sessionId),
      run: await stateStore.getRun(result.runId),
      checkpoints: await stateStore.listCheckpoints(result.sessionId),
      chunks: await collect(executor.readStream(result.sessionId, { follow: false })),
      usage: await handle.getUsageRollup(),
      result,
    });
    expect(stored).toContain('"object"');
    expect(stored).not.toContain(socket.secret);
    expect(stored).not.toContain('hookContext');
  });

  it('rule 202: a resumed run gets the hookContext of the call that resumed it (approve), none when that call passes none', async () => {
    const first = { name: 'first' };
    const second = { name: 'second' };
    const seen: { run: string; value: unknown }[] = [];
    const keep = (_p: unknown, ctx: HookContext) => void seen.push({ run: ctx.runId, value: ctx.hookContext });
    const wire = defineTool({ name: 'wire', description: 'wires money', inputSchema: z.object({}), needsApproval: true, execute: (_i, ctx) => ({ by: (ctx.hookContext as { name: string } | undefined)?.name ?? 'none' }) });
    const { executor, stateStore } = setup();
    const agent = counterAgent([{ toolCalls: [{ name: 'wire', args: {}, id: 'w1' }] }, finish('one'), { toolCalls: [{ name: 'wire', args: {}, id: 'w2' }] }], {
      tools: [wire],
      hooks: { beforeLLMCall: keep, afterLLMCall: keep, onMessage: keep, onAgentResumed: (ctx) => void seen.push({ run: ctx.runId, value: ctx.hookContext }) },
    });
    const a = await executor.execute(agent, 'go', { hookContext: first });
    const runA = (await a.result()).runId;
    const b = await executor.approve(a.sessionId, 'w1', { hookContext: second });
    const runB = (await b.result()).runId;
    const c = await executor.send(a.sessionId, 'again');
    const runC = (await c.result()).runId;
    const valuesOf = (run: string) => [...new Set(seen.filter((s) => s.run === run).map((s) => s.value))];
    expect(valuesOf(runA)).toEqual([first]);
    expect(valuesOf(runB)).toEqual([second]);
    expect(valuesOf(runC)).toEqual([undefined]);
    const w1 = (await stateStore.loadSession(a.sessionId))!.messages.find((m) => m.role === 'tool' && m.toolCallId === 'w1');
    expect(w1?.role === 'tool' && w1.content).toEqual({ by: 'second' });
  });

  it('rule 202: a recovered run gets the hookContext passed to recover()', async () => {
    const { InMemoryStateStore } = await import('../index.js');
    const store = new InMemoryStateStore();
    await deadCounterRun(store);
    const fresh = resource();
    const toolSaw: unknown[] = [];
    const { seen, hooks } = seeing();
    const { executor } = setup({ stateStore: store });
    const [handle] = await executor.recover({ agents: [counterAgent([{ toolCalls: [{ name: 'probe', args: {}, id: 'p1' }] }, finish('done')], { tools: [probeTool(toolSaw)] })], hooks, hookContext: fresh });
    expect((await handle!.result()).status).toBe('completed');
    expect(toolSaw).toEqual([fresh]);
    expect(seen.length).toBeGreaterThan(3);
    expect(seen.every((s) => s.value === fresh)).toBe(true);
  });
});

describe('run metadata on every hook context', () => {
  it('rule 203: ctx.stepCount, ctx.tokenUsage (the run so far) and ctx.toolCallCounts are live in every inline hook', async () => {
    const seen: { point: string; step: number; usage: RunTokenUsage; counts: Readonly<Record<string, number>> }[] = [];
    const keep = (point: string) => (_p: unknown, ctx: HookContext) => void seen.push({ point, step: ctx.stepCount, usage: ctx.tokenUsage, counts: ctx.toolCallCounts });
    const { executor } = setup();
    const agent = counterAgent(
      [
        { toolCalls: [{ name: 'increment', args: { by: 1 }, id: 'a' }, { name: 'increment', args: { by: 2 }, id: 'b' }], usage: { inputTokens: 10, outputTokens: 3 } },
        { toolCalls: [{ name: '__finish__', args: { answer: 'x' }, id: 'f' }], usage: { inputTokens: 20, outputTokens: 4 } },
      ],
      { hooks: { beforeLLMCall: keep('beforeLLMCall'), afterLLMCall: keep('afterLLMCall'), afterTool: keep('afterTool'), onAgentComplete: keep('onAgentComplete') } },
    );
    const handle = await executor.execute(agent, 'go');
    expect((await handle.result()).status).toBe('completed');
    const at = (point: string, step: number) => seen.filter((s) => s.point === point && s.step === step);
    expect(at('beforeLLMCall', 0)[0]).toMatchObject({ usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 }, counts: {} });
    expect(at('afterLLMCall', 0)[0]?.usage).toMatchObject({ inputTokens: 10, outputTokens: 3, totalTokens: 13 });
    // Parallel calls: the last afterTool of step 0 sees both executed calls counted.
    expect(Math.max(...at('afterTool', 0).map((s) => s.counts['increment'] ?? 0))).toBe(2);
    expect(at('beforeLLMCall', 1)[0]).toMatchObject({ usage: { inputTokens: 10, outputTokens: 3, totalTokens: 13 }, counts: { increment: 2 } });
    expect(seen.find((s) => s.point === 'onAgentComplete')).toMatchObject({ usage: { inputTokens: 30, outputTokens: 7, totalTokens: 37 }, counts: { increment: 2 } });
  });
});
