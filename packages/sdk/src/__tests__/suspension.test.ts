import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  AgentError,
  defineAgent,
  defineTool,
  InMemoryStateStore,
  InMemoryStreamManager,
  JSAgentExecutor,
  type AgentSuspendedHookContext,
  type StateStore,
  type StreamManager,
  type Message,
  type StreamChunk,
  type ToolResultMessage,
} from '../index.js';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { openSqliteStores } from '@helix-agents/store-sqlite';
import { createHookRecorder, createScriptedModel, type ScriptedStep } from '../testing/index.js';
import { collect, CounterState, incrementTool, memoryLogger, throwing, type Counter } from './harness.js';

const askUser = defineTool({ name: 'ask_user', description: 'asks the user (answered by the client)', inputSchema: z.object({ question: z.string() }) });
const deleteFile = defineTool({
  name: 'delete_file',
  description: 'deletes a file (needs a human yes)',
  inputSchema: z.object({ path: z.string() }),
  needsApproval: true,
  execute: (input, ctx) => {
    ctx.updateState<Counter>((d) => void d.log.push(`deleted ${input.path}`));
    return { deleted: input.path };
  },
});

/** A text agent over a script, with the client and approval tools. */
function hitlAgent(steps: ScriptedStep[], hooks = {}) {
  return defineAgent({
    name: 'hitl',
    stateSchema: CounterState,
    llmConfig: { model: createScriptedModel(steps), retry: { initialDelayMs: 1 } },
    tools: [askUser, deleteFile, incrementTool],
    hooks,
  });
}

type StoreKind = 'memory' | 'sqlite';
const opened: { close(): void }[] = [];
const folders: string[] = [];
afterAll(() => {
  for (const stores of opened) stores.close();
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

/**
 * Stores and an executor factory. On SQLite every make() opens a new connection to the same file, so an
 * executor made after a suspension starts from the database alone, as a restarted process would.
 */
function world(kind: StoreKind, options: { approvalSecret?: string } = {}) {
  const logger = memoryLogger();
  const folder = mkdtempSync(join(tmpdir(), 'helix-hitl-'));
  folders.push(folder);
  const path = join(folder, 'hitl.db');
  const open = (): { stateStore: StateStore; streamManager: StreamManager } => {
    if (kind === 'memory') return { stateStore: new InMemoryStateStore(), streamManager: new InMemoryStreamManager() };
    const stores = openSqliteStores({ path });
    opened.push(stores);
    return stores;
  };
  const first = open();
  const make = (agents: ReturnType<typeof hitlAgent>[] = []) => {
    const stores = kind === 'memory' ? first : open();
    return new JSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { logger, agents: agents as never, ...options });
  };
  return { stateStore: first.stateStore, streamManager: first.streamManager, logger, make };
}

const signals = (rec: ReturnType<typeof createHookRecorder>) =>
  rec.calls
    .filter((c) => ['onAgentStart', 'onAgentResumed', 'onAgentRetry'].includes(c.point))
    .map((c) => (c.point === 'onAgentStart' ? `onAgentStart:${String((c.payload as { startSignal: boolean }).startSignal)}` : c.point));

describe.each<StoreKind>(['memory', 'sqlite'])('suspension boundaries on %s (D10, rules 93–99, C17)', (kind) => {
  it('D10 / D15 / rules 93, 94, 95, 96: a client tool suspends the run: beforeTool and its frame, the suspension commit, onAgentSuspended (its throw only logged), then the stream pause', async () => {
    const { make, stateStore } = world(kind);
    const order: string[] = [];
    const agent = hitlAgent([{ toolCalls: [{ name: 'ask_user', args: { question: 'Which file?' }, id: 'q1' }] }, { text: 'thanks' }], {
      beforeTool: () => void order.push('beforeTool'),
      onAgentSuspended: async (ctx: AgentSuspendedHookContext) => {
        order.push(`suspended:${ctx.reason}:${ctx.pendingToolCallIds.join(',')}:${ctx.awaitingChildren.length}:${ctx.stepCount}`);
        order.push(`status:${(await stateStore.getRun(ctx.runId))?.status}`);
        throw new Error('suspension hooks are observe-only');
      },
    });
    const executor = make();
    const handle = await executor.execute(agent, 'clean up', { sessionId: 's1' });
    const chunks = await collect(handle.stream());
    const result = await handle.result();
    expect(result.status).toBe('suspended');
    expect(result.suspension).toMatchObject({ reason: 'client_tool', pending: [{ toolCallId: 'q1', toolName: 'ask_user', kind: 'client' }] });
    expect(order).toEqual(['beforeTool', 'suspended:client_tool:q1:0:1', 'status:suspended']);
    const types = chunks.map((c) => c.type);
    expect(types.indexOf('tool_start')).toBeLessThan(types.indexOf('suspended'));
    expect(types.at(-1)).toBe('suspended');
    expect((await stateStore.getRun(handle.runId))?.suspension?.pending).toHaveLength(1);
  });

  it('rules 101, 103, 107, 108, 109: submitToolResult resumes in a fresh run (after a restart: a new executor on the same store); onAgentResumed is its start signal', async () => {
    const { make, stateStore } = world(kind);
    const agent = hitlAgent([{ toolCalls: [{ name: 'ask_user', args: { question: 'Which file?' }, id: 'q1' }] }, { text: 'deleting notes.txt' }]);
    const first = await make().execute(agent, 'clean up', { sessionId: 's2' });
    await first.result();
    const rec = createHookRecorder();
    const restarted = make([agent]);
    const handle = await restarted.submitToolResult('s2', 'q1', 'notes.txt', { hooks: rec.hooks });
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'completed', output: 'deleting notes.txt' });
    expect(signals(rec)).toEqual(['onAgentResumed']);
    expect(rec.of('onAgentResumed')[0]!.payload).toMatchObject({ previousRunId: first.runId, runId: handle.runId });
    expect(rec.of('afterTool')[0]!.payload).toMatchObject({ result: 'notes.txt', success: true });
    // Rule 108: the resumed run always has a run id of its own.
    expect(handle.runId).not.toBe(first.runId);
    const session = await stateStore.loadSession('s2');
    expect(session!.resumeCount).toBe(1);
    expect(session!.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect((session!.messages[2] as ToolResultMessage).content).toBe('notes.txt');
  });

  it('an approval: the run suspends with a tool_approval_request frame (reason client_tool, C17); approve() with edited arguments runs the tool', async () => {
    const { make, stateStore } = world(kind);
    const agent = hitlAgent([{ toolCalls: [{ name: 'delete_file', args: { path: '/tmp/a' }, id: 'd1' }] }, { text: 'done' }]);
    const executor = make([agent]);
    const first = await executor.execute(agent, 'delete it', { sessionId: 's3' });
    const chunks = await collect(first.stream());
    expect(chunks.find((c) => c.type === 'tool_approval_request')).toMatchObject({ toolCallId: 'd1', arguments: { path: '/tmp/a' } });
    expect((await first.result()).suspension?.reason).toBe('client_tool');
    const resumed = await executor.approve('s3', 'd1', { input: { path: '/tmp/b' } });
    const result = await resumed.result();
    expect(result.status).toBe('completed');
    expect((result.state as Counter).log).toEqual(['deleted /tmp/b']);
    const row = (await stateStore.loadSession('s3'))!.messages.find((m): m is ToolResultMessage => m.role === 'tool');
    expect(row?.content).toEqual({ deleted: '/tmp/b' });
  });

  it('rule 229: reject() sends the reason to the model as permission_denied and the tool never runs', async () => {
    const { make, stateStore } = world(kind);
    const agent = hitlAgent([{ toolCalls: [{ name: 'delete_file', args: { path: '/etc' }, id: 'd1' }] }, { text: 'ok, I will not' }]);
    const executor = make([agent]);
    await (await executor.execute(agent, 'delete it', { sessionId: 's4' })).result();
    const rec = createHookRecorder({ points: ['afterTool'] });
    const result = await (await executor.reject('s4', 'd1', { reason: 'never touch /etc', hooks: rec.hooks })).result();
    expect(result.status).toBe('completed');
    expect((result.state as Counter).log).toEqual([]);
    const row = (await stateStore.loadSession('s4'))!.messages.find((m): m is ToolResultMessage => m.role === 'tool')!;
    expect(row.errorInfo).toMatchObject({ code: 'permission_denied', layer: 'permission', severity: 'warning' });
    expect(String(row.content)).toContain('never touch /etc');
    expect(rec.of('afterTool')[0]!.payload).toMatchObject({ blocked: true, success: false });
  });

  it('signed approvals: a decision must carry the HMAC over session, run, call, decision and input (from signApproval); a replayed or missing signature is refused', async () => {
    const { make } = world(kind, { approvalSecret: 'test-secret' });
    const agent = hitlAgent([{ toolCalls: [{ name: 'delete_file', args: { path: '/tmp/a' }, id: 'd1' }] }, { text: 'done' }]);
    const executor = make([agent]);
    const first = await executor.execute(agent, 'delete', { sessionId: 's5' });
    const request = (await collect(first.stream())).find((c): c is Extract<StreamChunk, { type: 'tool_approval_request' }> => c.type === 'tool_approval_request')!;
    expect(request).not.toHaveProperty('signature');
    await expect(executor.approve('s5', 'd1')).rejects.toMatchObject({ info: { code: 'approval_invalid_signature' } });
    await expect(executor.approve('s5', 'd1', { signature: executor.signApproval('other-session', 'd1', { runId: request.runId, decision: 'approve', input: { path: '/tmp/a' } }) })).rejects.toMatchObject({
      info: { code: 'approval_invalid_signature' },
    });
    const ok = await executor.approve('s5', 'd1', { signature: executor.signApproval('s5', 'd1', { runId: request.runId, decision: 'approve', input: request.arguments }) });
    expect((await ok.result()).status).toBe('completed');
  });

  it('a submission for a call that is not pending, or a second one for the same call, is refused with a clear error and changes nothing', async () => {
    const { make, stateStore } = world(kind);
    const agent = hitlAgent([{ toolCalls: [{ name: 'ask_user', args: { question: 'a?' }, id: 'q1' }] }, { text: 'done' }]);
    const executor = make([agent]);
    await (await executor.execute(agent, 'go', { sessionId: 's6' })).result();
    const before = await stateStore.loadSession('s6');
    await expect(executor.submitToolResult('s6', 'nope', 'x')).rejects.toMatchObject({ info: { code: 'tool_call_not_pending' } });
    await expect(executor.approve('s6', 'q1')).rejects.toMatchObject({ info: { code: 'tool_call_not_pending' } });
    expect((await stateStore.loadSession('s6'))!.version).toBe(before!.version);
    await (await executor.submitToolResult('s6', 'q1', 'yes')).result();
    const after = await stateStore.loadSession('s6');
    await expect(executor.submitToolResult('s6', 'q1', 'again')).rejects.toMatchObject({ info: { code: 'session_not_suspended' } });
    expect((await stateStore.loadSession('s6'))!.version).toBe(after!.version);
  });

  it('answering one of two pending calls suspends the new run again at once; the second answer continues', async () => {
    const { make } = world(kind);
    const agent = hitlAgent([
      { toolCalls: [{ name: 'ask_user', args: { question: 'a?' }, id: 'q1' }, { name: 'ask_user', args: { question: 'b?' }, id: 'q2' }] },
      { text: 'both answered' },
    ]);
    const executor = make([agent]);
    await (await executor.execute(agent, 'go', { sessionId: 's7' })).result();
    const partial = await (await executor.submitToolResult('s7', 'q1', 'A')).result();
    expect(partial.status).toBe('suspended');
    expect(partial.suspension?.pending.map((p) => p.toolCallId)).toEqual(['q2']);
    const done = await (await executor.submitToolResult('s7', 'q2', 'B')).result();
    expect(done).toMatchObject({ status: 'completed', output: 'both answered' });
  });

  it('rules 94, 96: awaiting_children: a tool waits for child sessions; onAgentSuspended lists them; the resumed run gets their outcomes', async () => {
    const { make } = world(kind);
    const child = hitlAgent([{ text: 'child result' }]);
    let childSession = '';
    const delegate = defineTool({
      name: 'delegate',
      description: 'starts a child agent and waits for it',
      inputSchema: z.object({}),
      execute: async (_input, ctx) => {
        const handle = await executor.execute(child, 'sub task', { parentSessionId: ctx.sessionId });
        childSession = handle.sessionId;
        await handle.result();
        return ctx.awaitChildren([{ sessionId: handle.sessionId, agentType: child.name }]);
      },
    });
    const suspended: AgentSuspendedHookContext[] = [];
    const parent = defineAgent({
      name: 'parent',
      llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'delegate', args: {}, id: 'c1' }] }, { text: 'merged' }]) },
      tools: [delegate],
      hooks: { onAgentSuspended: (ctx) => void suspended.push(ctx) },
    });
    const executor = make();
    const first = await (await executor.execute(parent, 'go', { sessionId: 'p1' })).result();
    expect(first.suspension?.reason).toBe('awaiting_children');
    expect(suspended[0]).toMatchObject({ reason: 'awaiting_children', pendingToolCallIds: [], awaitingChildren: [{ sessionId: childSession, agentType: 'hitl', toolCallId: 'c1' }] });
    const done = await (await executor.resume('p1', { mode: 'continue' })).result();
    expect(done).toMatchObject({ status: 'completed', output: 'merged' });
  });
});

describe.each<StoreKind>(['memory', 'sqlite'])('start signals on %s: exactly one per run, as the spec table says (rules 15–23, 101–114)', (kind) => {
  it('rules 15, 16: execute() and a chat send fire onAgentStart(startSignal true)', async () => {
    const { make } = world(kind);
    const agent = hitlAgent([{ text: 'one' }, { text: 'two' }]);
    const executor = make();
    const rec = createHookRecorder();
    await (await executor.execute(agent, 'first', { sessionId: 't1', hooks: rec.hooks })).result();
    await (await executor.send('t1', 'second', { hooks: rec.hooks })).result();
    expect(signals(rec)).toEqual(['onAgentStart:true', 'onAgentStart:true']);
  });

  it('rule 16: a with_message resume starts a new turn (onAgentStart true) and cancels the calls the suspended run waited on', async () => {
    const { make, stateStore } = world(kind);
    const agent = hitlAgent([{ toolCalls: [{ name: 'ask_user', args: { question: 'a?' }, id: 'q1' }] }, { text: 'new turn' }]);
    const executor = make([agent]);
    await (await executor.execute(agent, 'go', { sessionId: 't2' })).result();
    const rec = createHookRecorder();
    const result = await (await executor.resume('t2', { mode: 'with_message', message: 'never mind', hooks: rec.hooks })).result();
    expect(result.output).toBe('new turn');
    expect(signals(rec)).toEqual(['onAgentStart:true']);
    const rows = (await stateStore.loadSession('t2'))!.messages;
    expect(rows.slice(2, 4)).toEqual([
      expect.objectContaining({ role: 'tool', toolCallId: 'q1', errorInfo: expect.objectContaining({ code: 'tool_cancelled' }) }),
      { role: 'user', content: 'never mind' },
    ]);
  });

  it('rules 17, 104: a with_confirmation resume (approve) fires onAgentResumed and no onAgentStart; its errors are logged', async () => {
    const { make, logger } = world(kind);
    const agent = hitlAgent([{ toolCalls: [{ name: 'delete_file', args: { path: 'x' }, id: 'd1' }] }, { text: 'ok' }]);
    const executor = make([agent]);
    const first = await executor.execute(agent, 'go', { sessionId: 't3' });
    await first.result();
    const rec = createHookRecorder();
    const boom = throwing('tracing down');
    const result = await (await executor.approve('t3', 'd1', { hooks: { ...rec.hooks, onAgentResumed: boom } })).result();
    expect(result.status).toBe('completed');
    expect(logger.lines.some((l) => l.includes('tracing down'))).toBe(true);
    expect(signals(rec)).toEqual([]);
  });

  it('rules 17, 106: from_checkpoint rewinds to a listed checkpoint and fires onAgentResumed with resumedFromCheckpointId; state and rows are restored', async () => {
    const { make, stateStore } = world(kind);
    const agent = hitlAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 } }] }, { toolCalls: [{ name: 'increment', args: { by: 10 } }] }, { text: 'first' }, { text: 'rewound' }]);
    const executor = make([agent]);
    const first = await executor.execute(agent, 'go', { sessionId: 't4' });
    expect((await first.result()).state).toMatchObject({ count: 11 });
    const checkpoints = await stateStore.listCheckpoints('t4');
    const afterFirstStep = checkpoints.find((c) => c.kind === 'step')!;
    const rec = createHookRecorder();
    const handle = await executor.resume('t4', { mode: 'from_checkpoint', checkpointId: afterFirstStep.checkpointId, hooks: rec.hooks });
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'completed', output: 'rewound' });
    expect((result.state as Counter).count).toBe(1);
    expect(signals(rec)).toEqual(['onAgentResumed']);
    expect(rec.of('onAgentResumed')[0]!.payload).toMatchObject({ previousRunId: first.runId, resumedFromCheckpointId: afterFirstStep.checkpointId });
    expect((await stateStore.loadSession('t4'))!.messages.map((m: Message) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
  });

  it('rule 22: a rewind before the turn\'s start commit owes the start work: onAgentStart(startSignal false) and onMessage re-fires for the turn input', async () => {
    const { make } = world(kind);
    const agent = hitlAgent([{ text: 'a' }, { text: 'b' }]);
    const executor = make([agent]);
    await (await executor.execute(agent, 'the input', { sessionId: 't5' })).result();
    const rec = createHookRecorder();
    await (await executor.resume('t5', { mode: 'from_checkpoint', checkpointId: 'genesis', hooks: rec.hooks })).result();
    expect(signals(rec)).toEqual(['onAgentResumed', 'onAgentStart:false']);
    expect(rec.of('onMessage')[0]!.payload).toMatchObject({ message: { role: 'user', content: 'the input' }, messageIndex: 0 });
  });

  it('rules 18, 23, 110, 111, 114: retry() fires onAgentRetry after its run-start commit and before its first step; a turn whose start committed does not run it again', async () => {
    const { make, stateStore } = world(kind);
    const agent = hitlAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 } }] }, { error: { status: 401 } }, { text: 'retried' }]);
    const executor = make([agent]);
    const failed = await executor.execute(agent, 'go', { sessionId: 't6' });
    expect((await failed.result()).status).toBe('failed');
    const rec = createHookRecorder();
    const handle = await executor.retry('t6', { hooks: rec.hooks });
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'completed', output: 'retried' });
    expect(signals(rec)).toEqual(['onAgentRetry']);
    const retry = rec.of('onAgentRetry')[0]!.payload as { retriedRunId: string; checkpointId?: string; hasMessage: boolean; runId: string };
    expect(retry).toMatchObject({ retriedRunId: failed.runId, hasMessage: false, runId: handle.runId });
    expect(retry.checkpointId).toBeDefined();
    expect(rec.points().indexOf('onAgentRetry')).toBeLessThan(rec.points().indexOf('beforeLLMCall'));
    expect((result.state as Counter).count).toBe(1);
    expect((await stateStore.getRun(handle.runId))?.signal).toBe('retry');
  });

  it('rule 113 / C7: a retry whose restored state owes the start work runs onAgentStart(false) after onAgentRetry; a retry message is appended', async () => {
    const { make, stateStore } = world(kind);
    let starts = 0;
    const agent = hitlAgent([{ text: 'after retry' }], {
      onAgentStart: () => {
        if (starts++ === 0) throw new Error('first start fails');
      },
    });
    const executor = make([agent]);
    expect((await (await executor.execute(agent, 'go', { sessionId: 't7' })).result()).status).toBe('failed');
    const rec = createHookRecorder();
    const result = await (await executor.retry('t7', { message: 'please try again', hooks: rec.hooks })).result();
    expect(result.status).toBe('completed');
    expect(signals(rec)).toEqual(['onAgentRetry', 'onAgentStart:false']);
    expect(rec.of('onAgentRetry')[0]!.payload).toMatchObject({ hasMessage: true });
    expect((rec.of('onAgentRetry')[0]!.payload as { checkpointId?: string }).checkpointId).toBeUndefined();
    expect((await stateStore.loadSession('t7'))!.messages.slice(0, 2)).toEqual([
      { role: 'user', content: 'go' },
      { role: 'user', content: 'please try again' },
    ]);
  });

  it('retry() refuses a session whose run did not fail, and resume() one that is not suspended', async () => {
    const { make } = world(kind);
    const agent = hitlAgent([{ text: 'ok' }]);
    const executor = make([agent]);
    await (await executor.execute(agent, 'go', { sessionId: 't8' })).result();
    await expect(executor.retry('t8')).rejects.toSatisfy((e: unknown) => AgentError.isInstance(e) && e.code === 'session_not_retryable');
    await expect(executor.resume('t8', { mode: 'continue' })).rejects.toMatchObject({ info: { code: 'session_not_suspended' } });
    await expect(make().resume('t8', { mode: 'continue' })).rejects.toMatchObject({ info: { code: 'agent_not_registered' } });
  });
});
