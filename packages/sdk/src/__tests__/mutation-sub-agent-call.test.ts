import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  childSessionId,
  defineAgent,
  defineRemoteSubAgentTool,
  defineSubAgentTool,
  defineTool,
  InMemoryUsageStore,
  type AgentErrorInfo,
  type AgentHooks,
  type RemoteAgentClient,
  type StreamChunk,
  type SubAgentCall,
} from '../index.js';
import { createGate, createScriptedModel, type ScriptedStep } from '../testing/index.js';
import { collect, setup } from './harness.js';

// A sub-agent call (runtime/sub-agent-call.ts) through a real executor: its refusals, what afterSubAgent
// gets, what the child inherits, how a stop reaches it, which chunks a `stream: false` child forwards.

const leaf = (steps: readonly ScriptedStep[] = [{ text: 'leaf says hi' }], hooks: AgentHooks = {}, extra: Record<string, unknown> = {}) =>
  defineAgent({ name: 'leaf', llmConfig: { model: createScriptedModel(steps, { loop: true }) }, hooks, ...extra });
type Leaf = ReturnType<typeof leaf>;

/** A parent that calls `tool` with the given call ids in one step, then answers `done`. */
function parent(tool: ReturnType<typeof defineSubAgentTool>, ids: readonly string[] = ['c1'], hooks: AgentHooks = {}, name = 'top') {
  return defineAgent({
    name,
    llmConfig: { model: createScriptedModel([(o) => (o.prompt.some((m) => m.role === 'tool') ? { text: 'done' } : { toolCalls: ids.map((id) => ({ name: tool.name, args: { input: `task ${id}` }, id })) })], { loop: true }) },
    tools: [tool],
    hooks,
  });
}

async function toolRows(store: { loadSession(id: string): Promise<{ messages: readonly { role: string }[] } | undefined> }, sessionId: string) {
  return (await store.loadSession(sessionId))!.messages.filter((m) => m.role === 'tool') as unknown as { toolCallId: string; isError?: boolean; errorInfo?: AgentErrorInfo; content: unknown }[];
}

describe('a sub-agent call: limits', () => {
  it('a child beyond maxSubAgentDepth is refused with subagent_depth_exceeded, its depth and the limit', async () => {
    const middle = defineAgent({ name: 'middle', llmConfig: { model: createScriptedModel([(o) => (o.prompt.some((m) => m.role === 'tool') ? { text: 'm' } : { toolCalls: [{ name: 'leaf', args: { input: 'x' }, id: 'm1' }] })], { loop: true }) }, tools: [defineSubAgentTool({ agent: leaf() })] });
    const { executor, stateStore } = setup({ executor: { maxSubAgentDepth: 1 } });
    await (await executor.execute(parent(defineSubAgentTool({ agent: middle })), 'go', { sessionId: 'deep' })).result();
    const [row] = await toolRows(stateStore, childSessionId('deep', 'c1'));
    expect(row?.errorInfo).toMatchObject({ code: 'subagent_depth_exceeded', message: 'The sub-agent "leaf" would run at depth 2, deeper than 1.', details: { depth: 2, maxDepth: 1 } });
  });

  it('a call past maxSubAgentsPerStep is refused with subagent_fanout_exceeded, naming the step and the limit; the others run', async () => {
    const { executor, stateStore } = setup({ executor: { maxSubAgentsPerStep: 2 } });
    const handle = await executor.execute(parent(defineSubAgentTool({ agent: leaf() }), ['a', 'b', 'c']), 'go');
    await handle.result();
    const rows = await toolRows(stateStore, handle.sessionId);
    const refused = rows.filter((r) => r.errorInfo?.code === 'subagent_fanout_exceeded');
    expect(refused).toHaveLength(1);
    expect(refused[0]!.errorInfo).toMatchObject({ message: 'Step 0 called more than 2 sub-agents.', details: { maxPerStep: 2 } });
    expect(rows.filter((r) => r.isError !== true)).toHaveLength(2);
  });
});

describe('a sub-agent call: afterSubAgent and the result', () => {
  it('on success afterSubAgent gets the call, the child agent, its output, its session and a duration, and no error key', async () => {
    const payloads: Record<string, unknown>[] = [];
    const child = leaf();
    const tool = defineSubAgentTool({ agent: child });
    const { executor } = setup();
    const handle = await executor.execute(parent(tool, ['c1'], { afterSubAgent: (p) => void payloads.push({ ...p }) }), 'go', { sessionId: 'ok-1' });
    await handle.result();
    expect(payloads).toHaveLength(1);
    const p = payloads[0]!;
    expect(p['call']).toEqual({ id: 'c1', toolName: 'leaf', input: { input: 'task c1' }, agentType: 'leaf' } satisfies SubAgentCall);
    expect(p['agentConfig']).toBe(child);
    expect(p).toMatchObject({ result: 'leaf says hi', success: true, subSessionId: childSessionId('ok-1', 'c1') });
    expect(typeof p['durationMs']).toBe('number');
    expect(p['durationMs'] as number).toBeGreaterThanOrEqual(0);
    expect(p['durationMs'] as number).toBeLessThan(10_000);
    expect('error' in p).toBe(false);
  });

  it("a failed child gives subagent_failed naming the agent, its status and its error's message, with the child session, status and cause", async () => {
    const broken = leaf([{ text: 'no finish' }], {}, { outputSchema: z.object({ x: z.number() }), maxSteps: 1 });
    const { executor, stateStore } = setup();
    const handle = await executor.execute(parent(defineSubAgentTool({ agent: broken as unknown as Leaf })), 'go', { sessionId: 'bad-1' });
    await handle.result();
    const [row] = await toolRows(stateStore, 'bad-1');
    expect(row?.isError).toBe(true);
    expect(row?.errorInfo?.code).toBe('subagent_failed');
    expect(row?.errorInfo?.message).toMatch(/^The sub-agent "leaf" ended failed: \S/);
    expect(row?.errorInfo?.details).toEqual({ subSessionId: childSessionId('bad-1', 'c1'), status: 'failed', cause: 'run_max_steps' });
  });

  it("afterSubAgent of a failed child has success false, result undefined and the child's own error", async () => {
    const payloads: { result: unknown; success: boolean; error?: AgentErrorInfo }[] = [];
    const broken = leaf([{ text: 'no finish' }], {}, { outputSchema: z.object({ x: z.number() }), maxSteps: 1 });
    const { executor } = setup();
    await (await executor.execute(parent(defineSubAgentTool({ agent: broken as unknown as Leaf }), ['c1'], { afterSubAgent: (p) => void payloads.push({ result: p.result, success: p.success, ...(p.error ? { error: p.error } : {}) }) }), 'go')).result();
    expect(payloads).toEqual([{ result: undefined, success: false, error: expect.objectContaining({ code: 'run_max_steps' }) }]);
  });

  it("the child's usage is in the parent's rollup, as one sub-agent entry for its session", async () => {
    const usage = { inputTokens: 3, outputTokens: 2 };
    const { executor } = setup();
    const child = leaf([{ text: 'counted', usage }]);
    const top = defineAgent({ name: 'top', llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'leaf', args: { input: 'x' }, id: 'c1' }], usage }, { text: 'done', usage }]) }, tools: [defineSubAgentTool({ agent: child })] });
    const handle = await executor.execute(top, 'go', { sessionId: 'use-1', usageStore: new InMemoryUsageStore() });
    await handle.result();
    const rollup = await handle.getUsageRollup();
    expect(rollup?.modelCalls).toBe(3);
    expect(rollup?.subAgents?.map((s) => s.sessionId)).toEqual([childSessionId('use-1', 'c1')]);
  });
});

describe('a sub-agent call: what the child inherits', () => {
  it("the child gets the parent's user, tags and metadata, its request-scoped hook context (the same object) and its dry run", async () => {
    const seen: unknown[] = [];
    const sent: string[] = [];
    const send = defineTool({ name: 'send', description: 'Sends.', inputSchema: z.object({}), sideEffects: true, execute: async () => (sent.push('really sent'), 'sent') });
    const resources = { db: { name: 'the db' } };
    const child = defineAgent({
      name: 'leaf',
      llmConfig: { model: createScriptedModel([(o) => (o.prompt.some((m) => m.role === 'tool') ? { text: 'leaf done' } : { toolCalls: [{ name: 'send', args: {} }] })], { loop: true }) },
      tools: [send],
      hooks: { onAgentStart: (_p, ctx) => void seen.push({ userId: ctx.userId, tags: ctx.tags, metadata: ctx.metadata, sameContext: ctx.hookContext === resources }) },
    });
    const { executor } = setup();
    const handle = await executor.execute(parent(defineSubAgentTool({ agent: child })), 'go', { userId: 'u-9', tags: ['beta'], metadata: { org: 'acme' }, hookContext: resources, dryRun: true });
    expect((await handle.result()).status).toBe('completed');
    expect(seen).toEqual([{ userId: 'u-9', tags: ['beta'], metadata: { org: 'acme' }, sameContext: true }]);
    expect(sent).toEqual([]);
  });

  it('a child of a run without attribution, hook context or dry run has none of them, and its side-effecting tools run', async () => {
    const seen: unknown[] = [];
    const sent: string[] = [];
    const send = defineTool({ name: 'send', description: 'Sends.', inputSchema: z.object({}), sideEffects: true, execute: async () => (sent.push('really sent'), 'sent') });
    const child = defineAgent({
      name: 'leaf',
      llmConfig: { model: createScriptedModel([(o) => (o.prompt.some((m) => m.role === 'tool') ? { text: 'leaf done' } : { toolCalls: [{ name: 'send', args: {} }] })], { loop: true }) },
      tools: [send],
      hooks: { onAgentStart: (_p, ctx) => void seen.push([ctx.userId, ctx.tags, ctx.metadata, ctx.hookContext]) },
    });
    const { executor } = setup();
    await (await executor.execute(parent(defineSubAgentTool({ agent: child })), 'go')).result();
    expect(seen).toEqual([[undefined, undefined, undefined, undefined]]);
    expect(sent).toEqual(['really sent']);
  });
});

describe('a sub-agent call: stops', () => {
  it('a parent stopped before its child started stops the child at once: the child ends interrupted without its model answering', async () => {
    const fails: string[] = [];
    let childModelCalls = 0;
    const gate = createGate();
    const child = leaf([() => (childModelCalls++, { text: 'should not be needed' })], { onAgentFail: (p) => void fails.push(p.error.code) });
    const { executor, stateStore } = setup();
    const handle = await executor.execute(parent(defineSubAgentTool({ agent: child }), ['c1'], { beforeSubAgent: async () => gate.opened }), 'go', { sessionId: 'stop-2' });
    await new Promise((r) => setTimeout(r, 50));
    const stopping = handle.stop('enough');
    await new Promise((r) => setTimeout(r, 20));
    gate.open();
    expect((await stopping).status).toBe('interrupted');
    const childSession = await stateStore.loadSession(childSessionId('stop-2', 'c1'));
    expect((await stateStore.getRun(childSession!.currentRunId!))?.status).toBe('interrupted');
    expect(fails).toEqual(['run_interrupted']);
    expect(childModelCalls).toBe(0);
  });

  it("a newer run on the parent's session asks a remote child to stop with 'The parent run was superseded.'", async () => {
    const stops: (string | undefined)[] = [];
    const started = createGate();
    const client: RemoteAgentClient = {
      start: async () => (started.open(), { sessionId: 'svc-s', runId: 'svc-r' }),
      stream: async function* () {},
      result: () => new Promise(() => {}),
      stop: async (_ref, reason) => void stops.push(reason),
    };
    const remote = defineRemoteSubAgentTool({ name: 'research', description: 'Research remotely.', inputSchema: z.object({ input: z.string() }), agentType: 'researcher', client, stopTimeoutMs: 50 });
    const { executor } = setup();
    const first = await executor.execute(parent(remote as unknown as ReturnType<typeof defineSubAgentTool>), 'go', { sessionId: 'sup-1' });
    await started.opened;
    await new Promise((r) => setTimeout(r, 20));
    const newer = await executor.execute(defineAgent({ name: 'top', llmConfig: { model: createScriptedModel([{ text: 'newer' }]) } }), 'again', { sessionId: 'sup-1' });
    expect((await first.result()).status).toBe('superseded');
    await newer.result();
    expect(stops).toEqual(['The parent run was superseded.']);
  });
});

describe('a sub-agent call: forwarding', () => {
  it("with stream: false, a grandchild's approval request still reaches the root's stream (nested in the child's forwarded chunk), and nothing else of the child does", async () => {
    const send = defineTool({ name: 'send_email', description: 'Sends mail.', inputSchema: z.object({ to: z.string() }), needsApproval: true, execute: async ({ to }) => `sent to ${to}` });
    const grandchild = defineAgent({ name: 'mailer', llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'send_email', args: { to: 'ana' }, id: 'g1' }] }]) }, tools: [send] });
    const middle = defineAgent({ name: 'middle', llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'mailer', args: { input: 'mail ana' }, id: 'm1' }] }]) }, tools: [defineSubAgentTool({ agent: grandchild })] });
    const root = defineAgent({ name: 'root', llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'middle', args: { input: 'x' }, id: 'r1' }] }]) }, tools: [defineSubAgentTool({ agent: middle, stream: false })] });
    const { executor } = setup();
    const handle = await executor.execute(root, 'go', { sessionId: 'quiet-root' });
    const chunks = await collect(handle.stream());
    expect((await handle.result()).status).toBe('suspended');
    const forwarded = chunks.filter((c): c is Extract<StreamChunk, { type: 'subagent_chunk' }> => c.type === 'subagent_chunk');
    const kinds = forwarded.map((c) => (c.chunk.type === 'subagent_chunk' ? `nested ${c.chunk.chunk.type}` : c.chunk.type));
    expect(kinds).toContain('nested tool_approval_request');
    expect(kinds.every((k) => k === 'nested tool_approval_request' || k === 'nested suspended' || k === 'suspended')).toBe(true);
  });
});
