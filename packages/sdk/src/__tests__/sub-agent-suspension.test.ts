import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { openSqliteStores } from '@helix-agents/store-sqlite';
import {
  AgentError,
  childSessionId,
  defineAgent,
  defineSubAgentTool,
  defineTool,
  InMemoryStateStore,
  InMemoryStreamManager,
  JSAgentExecutor,
  type AgentHooks,
  type AgentSuspendedHookContext,
  type Draft,
  type StateStore,
  type StreamChunk,
  type StreamManager,
} from '../index.js';
import { createGate, createScriptedModel, type ScriptedStep } from '../testing/index.js';
import { collect, memoryLogger } from './harness.js';

// Long children and nested approvals (issue 11, item 5): a parent whose children are still running when
// its process must stop suspends with reason awaiting_children and resumes by itself once they end; a
// child's client tool or approval surfaces in the parent's stream and is answered through the parent.

type StoreKind = 'memory' | 'sqlite';
const opened: { close(): void }[] = [];
const folders: string[] = [];
afterAll(() => {
  for (const stores of opened) stores.close();
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

/** Stores, and executors on them: on SQLite each make() opens its own connection, as another process would. */
function world(kind: StoreKind, options: { approvalSecret?: string } = {}) {
  const logger = memoryLogger();
  const folder = mkdtempSync(join(tmpdir(), 'helix-subagent-'));
  folders.push(folder);
  const open = (): { stateStore: StateStore; streamManager: StreamManager } => {
    if (kind === 'memory') return { stateStore: new InMemoryStateStore(), streamManager: new InMemoryStreamManager() };
    const stores = openSqliteStores({ path: join(folder, 'tree.db') });
    opened.push(stores);
    return stores;
  };
  const first = open();
  const make = () => {
    const stores = kind === 'memory' ? first : open();
    return new JSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { logger, leaseMs: 300, ...options });
  };
  return { stateStore: first.stateStore, make, logger };
}

/** Records `point@who` for the lifecycle hooks that matter here. */
function trail(into: string[], who: string): AgentHooks {
  const note = (point: string) => () => void into.push(`${point}@${who}`);
  return {
    onAgentStart: (p) => void into.push(`onAgentStart(${String(p.startSignal)})@${who}`),
    onAgentComplete: note('onAgentComplete'),
    onAgentFail: note('onAgentFail'),
    onAgentSuperseded: note('onAgentSuperseded'),
    onAgentSuspended: (ctx: AgentSuspendedHookContext) => void into.push(`onAgentSuspended(${ctx.reason})@${who}`),
    onAgentResumed: note('onAgentResumed'),
    beforeSubAgent: note('beforeSubAgent'),
  };
}

const Notes = z.object({ notes: z.array(z.string()).default([]) });
type NotesState = z.infer<typeof Notes>;

/** A parent that asks `tool` once per call id, then answers `done`; afterSubAgent pushes each child's result. */
function parentAgent(tool: ReturnType<typeof defineSubAgentTool>, callIds: readonly string[], seen: string[], name = 'lead') {
  return defineAgent({
    name,
    stateSchema: Notes,
    llmConfig: { model: createScriptedModel([(o) => (o.prompt.some((m) => m.role === 'tool') ? { text: 'done' } : { toolCalls: callIds.map((id) => ({ name: tool.name, args: { input: id }, id })) })], { loop: true }) },
    tools: [tool],
    hooks: {
      ...trail(seen, name),
      afterSubAgent: (p, ctx) => {
        seen.push(`afterSubAgent(${String(p.success)})@${name}`);
        ctx.updateState((d) => void (d as Draft<NotesState>).notes.push(String(p.result)));
      },
    },
  });
}

/** The session's current run once it is no longer running. */
async function settledRun(store: StateStore, sessionId: string) {
  let run;
  await waitFor(async () => {
    const session = await store.loadSession(sessionId);
    run = session?.currentRunId === undefined ? undefined : await store.getRun(session.currentRunId);
    return run !== undefined && run.status !== 'running';
  }, `session ${sessionId} to settle`);
  return run as unknown as NonNullable<Awaited<ReturnType<StateStore['getRun']>>>;
}

async function waitFor(check: () => Promise<boolean> | boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe.each<StoreKind>(['memory', 'sqlite'])('a parent whose children still run when its process stops, on %s', (kind) => {
  it('shutdown() suspends the parent with awaiting_children and hands the children off; when the last one ends elsewhere the parent resumes by itself (onAgentResumed) and folds each child once', async () => {
    const seen: string[] = [];
    let childCalls = 0;
    const child = defineAgent({
      name: 'researcher',
      // The first call (in the process that stops) never answers; the recovered child's calls do.
      llmConfig: { model: createScriptedModel([(o) => (childCalls++ < 2 ? { text: 'late', delayMs: 60_000 } : { text: `found ${String((o.prompt.at(-1)?.content as { text: string }[])[0]?.text)}` })], { loop: true }) },
      hooks: trail(seen, 'child'),
    });
    const tool = defineSubAgentTool({ agent: child, name: 'research' });
    const parent = parentAgent(tool, ['a', 'b'], seen);
    const { make, stateStore } = world(kind);
    const first = make();
    const handle = await first.execute(parent, 'go', { sessionId: 'long-1' });
    await waitFor(() => childCalls === 2, 'both children in their model call');
    await first.shutdown();

    const suspended = await handle.result();
    expect(suspended.status).toBe('suspended');
    expect(suspended.suspension).toMatchObject({ reason: 'awaiting_children' });
    expect(suspended.suspension?.pending.map((p) => ({ id: p.toolCallId, kind: p.kind, children: p.children }))).toEqual([
      { id: 'a', kind: 'children', children: [{ sessionId: childSessionId('long-1', 'a'), agentType: 'researcher' }] },
      { id: 'b', kind: 'children', children: [{ sessionId: childSessionId('long-1', 'b'), agentType: 'researcher' }] },
    ]);
    expect(seen.filter((s) => s.startsWith('onAgentSuspended'))).toEqual(['onAgentSuspended(awaiting_children)@lead']);
    // The children were let go, not ended: still running, their leases released, no terminal hook.
    for (const id of ['a', 'b']) {
      const session = await stateStore.loadSession(childSessionId('long-1', id));
      const run = await stateStore.getRun(session!.currentRunId!);
      expect(run?.status).toBe('running');
      expect(run!.leaseExpiresAt).toBeLessThanOrEqual(Date.now());
    }
    expect(seen.some((s) => /onAgent(Complete|Fail|Superseded)@child/.test(s))).toBe(false);

    // Another process recovers the children; the parent resumes there once the second one has ended.
    const second = make();
    const recovered = await second.recover({ agents: [parent, child] });
    expect(recovered.map((h) => h.sessionId).sort()).toEqual([childSessionId('long-1', 'a'), childSessionId('long-1', 'b')].sort());
    await Promise.all(recovered.map((h) => h.result()));
    const done = await settledRun(stateStore, 'long-1');
    expect(done).toMatchObject({ status: 'completed', output: 'done', options: { previousRunId: suspended.runId } });
    expect([...((await stateStore.loadSession('long-1'))!.state as NotesState).notes].sort()).toEqual(['found a', 'found b']);
    expect(seen.filter((s) => s.endsWith('@lead'))).toEqual([
      'onAgentStart(true)@lead',
      'beforeSubAgent@lead',
      'beforeSubAgent@lead',
      'onAgentSuspended(awaiting_children)@lead',
      'onAgentResumed@lead',
      'afterSubAgent(true)@lead',
      'afterSubAgent(true)@lead',
      'onAgentComplete@lead',
    ]);
    // Each child ran once: one start signal, one completion.
    expect(seen.filter((s) => s === 'onAgentStart(true)@child')).toHaveLength(2);
    expect(seen.filter((s) => s === 'onAgentComplete@child')).toHaveLength(2);
    const rows = (await stateStore.loadSession('long-1'))!.messages.filter((m) => m.role === 'tool');
    expect(rows.map((r) => (r.role === 'tool' ? [r.toolCallId, r.content] : [])).sort()).toEqual([
      ['a', 'found a'],
      ['b', 'found b'],
    ]);
    await second.close();
  });

  it('shutdown() hands off a run that waits on no children: its handle resolves running with run_handed_off, no terminal hook fires, and recover() elsewhere finishes it with one start signal', async () => {
    const seen: string[] = [];
    const inCall = createGate();
    let calls = 0;
    const agent = defineAgent({
      name: 'slow',
      llmConfig: {
        model: createScriptedModel(
          [
            () => {
              inCall.open();
              return calls++ === 0 ? { text: 'never', delayMs: 60_000 } : { text: 'finished elsewhere' };
            },
          ],
          { loop: true },
        ),
      },
      hooks: trail(seen, 'slow'),
    });
    const { make } = world(kind);
    const first = make();
    const handle = await first.execute(agent, 'go', { sessionId: 'handoff-1' });
    await inCall.opened;
    await first.close();
    const let_go = await handle.result();
    expect(let_go.status).toBe('running');
    expect(let_go.error).toMatchObject({ code: 'run_handed_off', severity: 'info' });
    const [recovered] = await make().recover({ agents: [agent] });
    expect(recovered?.runId).toBe(handle.runId);
    expect(await recovered!.result()).toMatchObject({ status: 'completed', output: 'finished elsewhere' });
    expect(seen).toEqual(['onAgentStart(true)@slow', 'onAgentComplete@slow']);
    // An executor that shut down runs what it is given afterwards as usual.
    const again = defineAgent({ name: 'again', llmConfig: { model: createScriptedModel([{ text: 'still here' }]) } });
    expect(await (await first.execute(again, 'go')).result()).toMatchObject({ status: 'completed', output: 'still here' });
  });
});

const sendEmail = defineTool({
  name: 'send_email',
  description: 'sends an email (a person approves it first)',
  inputSchema: z.object({ to: z.string() }),
  needsApproval: true,
  execute: ({ to }) => `sent to ${to}`,
});
const askUser = defineTool({ name: 'ask_user', description: 'asks the user (answered by the client)', inputSchema: z.object({ question: z.string() }) });

/** A child that calls `call` once (with id `callId`), then reports what it got back. */
function askingChild(name: string, call: { readonly name: string; readonly args: unknown }, callId: string, seen: string[], hooks: AgentHooks = {}) {
  const steps: ScriptedStep[] = [
    (o) => {
      const row = o.prompt.find((m) => m.role === 'tool');
      if (!row) return { toolCalls: [{ name: call.name, args: call.args as Record<string, unknown>, id: callId }] };
      const part = row.content[0] as { output?: { value?: unknown } };
      return { text: `child got ${JSON.stringify(part.output?.value)}` };
    },
  ];
  return defineAgent({ name, llmConfig: { model: createScriptedModel(steps, { loop: true }) }, tools: [sendEmail, askUser], hooks: { ...trail(seen, name), ...hooks } });
}

describe.each<StoreKind>(['memory', 'sqlite'])("a child's approval or client tool, answered through the parent, on %s", (kind) => {
  it("the child's approval request surfaces in the parent's stream; approve() on the parent's session with the child's call id resumes the child, then the parent, which re-attaches and streams the child live", async () => {
    const seen: string[] = [];
    const child = askingChild('mailer', { name: 'send_email', args: { to: 'ana' } }, 'm1', seen);
    const parent = parentAgent(defineSubAgentTool({ agent: child, name: 'mail' }), ['p1'], seen);
    const { make } = world(kind);
    const executor = make();
    const handle = await executor.execute(parent, 'go', { sessionId: 'nest-1' });
    const parentChunks = await collect(handle.stream());
    const first = await handle.result();
    expect(first.status).toBe('suspended');
    expect(first.suspension?.reason).toBe('awaiting_children');
    const childSession = childSessionId('nest-1', 'p1');
    const request = parentChunks.find((c): c is Extract<StreamChunk, { type: 'subagent_chunk' }> => c.type === 'subagent_chunk' && c.chunk.type === 'tool_approval_request');
    expect(request).toMatchObject({ childSessionId: childSession, parentToolCallId: 'p1', depth: 1, chunk: { toolCallId: 'm1', toolName: 'send_email', arguments: { to: 'ana' } } });
    expect(parentChunks.at(-1)).toMatchObject({ type: 'suspended', reason: 'awaiting_children', pendingToolCallIds: ['p1'] });
    const pending = await executor.pendingCalls('nest-1');
    expect(pending).toEqual([{ sessionId: childSession, runId: request!.chunk.runId, toolCallId: 'm1', toolName: 'send_email', kind: 'approval', input: { to: 'ana' }, depth: 1 }]);

    const resumed = await executor.approve('nest-1', 'm1');
    expect(resumed.sessionId).toBe('nest-1');
    const liveChunks = await collect(resumed.stream());
    const done = await resumed.result();
    expect(done).toMatchObject({ status: 'completed', output: 'done', state: { notes: ['child got "sent to ana"'] } });
    // The resumed parent carried the resumed child's chunks live, up to the child's end.
    const forwarded = liveChunks.flatMap((c) => (c.type === 'subagent_chunk' ? [c.chunk.type] : []));
    expect(forwarded).toEqual(expect.arrayContaining(['run_started', 'tool_end', 'end']));
    const resumedOrder = seen.filter((s) => s.startsWith('onAgentResumed') || s.startsWith('afterSubAgent') || s.startsWith('onAgentComplete'));
    // The child resumes first and its parent wakes once the child's onAgentResumed fired; from there the two
    // runs go on side by side, so the child may complete before or after the parent's onAgentResumed. The
    // parent folds the child's outcome only after the child completed, and completes last.
    expect(resumedOrder[0]).toBe('onAgentResumed@mailer');
    expect([...resumedOrder].sort()).toEqual(['afterSubAgent(true)@lead', 'onAgentComplete@lead', 'onAgentComplete@mailer', 'onAgentResumed@lead', 'onAgentResumed@mailer']);
    expect(resumedOrder.slice(-2)).toEqual(['afterSubAgent(true)@lead', 'onAgentComplete@lead']);
    expect(seen.filter((s) => s === 'beforeSubAgent@lead')).toHaveLength(1);
  });

  it("an edited approval through the parent still goes through the child's beforeTool chain: a guard's block there applies", async () => {
    const seen: string[] = [];
    const guard: AgentHooks = { beforeTool: (p) => ((p.toolCall.arguments as { to: string }).to === 'eve' ? { block: true, reason: 'eve is not a customer' } : undefined) };
    const child = askingChild('mailer', { name: 'send_email', args: { to: 'ana' } }, 'm1', seen, guard);
    const parent = parentAgent(defineSubAgentTool({ agent: child, name: 'mail' }), ['p1'], seen);
    const { make, stateStore } = world(kind);
    const executor = make();
    await (await executor.execute(parent, 'go', { sessionId: 'nest-2' })).result();
    const done = await (await executor.approve('nest-2', 'm1', { input: { to: 'eve' } })).result();
    expect(done.status).toBe('completed');
    const childRows = (await stateStore.loadSession(childSessionId('nest-2', 'p1')))!.messages.filter((m) => m.role === 'tool');
    expect(childRows).toEqual([expect.objectContaining({ toolCallId: 'm1', isError: true, content: 'Tool "send_email" was blocked by an agent hook: eve is not a customer' })]);
    expect((done.state as NotesState).notes[0]).toContain('blocked by an agent hook');
  });

  it('reject() and submitToolResult() on the parent session reach the child: a rejection is permission_denied there, a client result is the call result', async () => {
    const seen: string[] = [];
    const mailer = askingChild('mailer', { name: 'send_email', args: { to: 'ana' } }, 'm1', seen);
    const asker = askingChild('asker', { name: 'ask_user', args: { question: 'which?' } }, 'q1', seen);
    const { make, stateStore } = world(kind);
    const executor = make();
    const rejecting = parentAgent(defineSubAgentTool({ agent: mailer, name: 'mail' }), ['p1'], seen, 'lead-r');
    await (await executor.execute(rejecting, 'go', { sessionId: 'nest-3' })).result();
    const rejected = await (await executor.reject('nest-3', 'm1', { reason: 'not today' })).result();
    expect(rejected.status).toBe('completed');
    const mailerRows = (await stateStore.loadSession(childSessionId('nest-3', 'p1')))!.messages.filter((m) => m.role === 'tool');
    expect(mailerRows).toEqual([expect.objectContaining({ toolCallId: 'm1', errorInfo: expect.objectContaining({ code: 'permission_denied' }) })]);

    const asking = parentAgent(defineSubAgentTool({ agent: asker, name: 'ask' }), ['p1'], seen, 'lead-c');
    await (await executor.execute(asking, 'go', { sessionId: 'nest-4' })).result();
    expect(await executor.pendingCalls('nest-4')).toEqual([expect.objectContaining({ toolCallId: 'q1', kind: 'client', depth: 1 })]);
    const answered = await (await executor.submitToolResult('nest-4', 'q1', 'the blue one')).result();
    expect(answered).toMatchObject({ status: 'completed', state: { notes: ['child got "the blue one"'] } });
  });

  it('signatures bind the session and run that asked: through the parent, a decision signed for the child session is accepted and one signed for the parent is refused', async () => {
    const seen: string[] = [];
    const child = askingChild('mailer', { name: 'send_email', args: { to: 'ana' } }, 'm1', seen);
    const parent = parentAgent(defineSubAgentTool({ agent: child, name: 'mail' }), ['p1'], seen);
    const { make, stateStore } = world(kind, { approvalSecret: 'top secret' });
    const executor = make();
    const first = await (await executor.execute(parent, 'go', { sessionId: 'nest-5' })).result();
    const [asked] = await executor.pendingCalls('nest-5');
    const input = { to: 'ana' };
    const forParent = executor.signApproval('nest-5', 'm1', { runId: first.runId, decision: 'approve', input });
    await expect(executor.approve('nest-5', 'm1', { signature: forParent })).rejects.toMatchObject({ info: { code: 'approval_invalid_signature' } });
    await expect(executor.approve('nest-5', 'm1')).rejects.toMatchObject({ info: { code: 'approval_invalid_signature' } });
    const otherInput = executor.signApproval(asked!.sessionId, 'm1', { runId: asked!.runId, decision: 'approve', input: { to: 'eve' } });
    await expect(executor.approve('nest-5', 'm1', { signature: otherInput })).rejects.toMatchObject({ info: { code: 'approval_invalid_signature' } });
    // Refused decisions changed nothing: both sessions are still suspended.
    expect((await stateStore.getRun(first.runId))?.status).toBe('suspended');
    expect((await stateStore.getRun(asked!.runId))?.status).toBe('suspended');
    const good = executor.signApproval(asked!.sessionId, 'm1', { runId: asked!.runId, decision: 'approve', input });
    expect(await (await executor.approve('nest-5', 'm1', { signature: good })).result()).toMatchObject({ status: 'completed', state: { notes: ['child got "sent to ana"'] } });
  });

  it('a grandchild approval answered through the root resumes the grandchild, then the child, then the root', async () => {
    const seen: string[] = [];
    const grandchild = askingChild('mailer', { name: 'send_email', args: { to: 'ana' } }, 'g1', seen);
    const middle = parentAgent(defineSubAgentTool({ agent: grandchild, name: 'mail' }), ['c1'], seen, 'middle');
    const root = parentAgent(defineSubAgentTool({ agent: middle, name: 'delegate' }), ['r1'], seen, 'root');
    const { make } = world(kind);
    const executor = make();
    await (await executor.execute(root, 'go', { sessionId: 'nest-6' })).result();
    expect(await executor.pendingCalls('nest-6')).toEqual([expect.objectContaining({ sessionId: childSessionId(childSessionId('nest-6', 'r1'), 'c1'), toolCallId: 'g1', depth: 2 })]);
    expect(seen.filter((s) => s.startsWith('onAgentSuspended'))).toEqual(['onAgentSuspended(client_tool)@mailer', 'onAgentSuspended(awaiting_children)@middle', 'onAgentSuspended(awaiting_children)@root']);
    const done = await (await executor.approve('nest-6', 'g1')).result();
    expect(done).toMatchObject({ status: 'completed', state: { notes: ['done'] } });
    expect(seen.filter((s) => s.startsWith('onAgentResumed'))).toEqual(['onAgentResumed@mailer', 'onAgentResumed@middle', 'onAgentResumed@root']);
  });

  it('a call id two children wait on is ambiguous through the parent (tool_call_ambiguous, nothing changes); answered on each child session, the parent folds each one as it ends', async () => {
    const seen: string[] = [];
    const child = askingChild('mailer', { name: 'send_email', args: { to: 'ana' } }, 'same', seen);
    const parent = parentAgent(defineSubAgentTool({ agent: child, name: 'mail' }), ['p1', 'p2'], seen);
    const { make, stateStore } = world(kind);
    const executor = make();
    const first = await (await executor.execute(parent, 'go', { sessionId: 'nest-7' })).result();
    const error: unknown = await executor.approve('nest-7', 'same').catch((e: unknown) => e);
    expect(AgentError.isInstance(error) && error.info).toMatchObject({ code: 'tool_call_ambiguous', details: { sessions: [childSessionId('nest-7', 'p1'), childSessionId('nest-7', 'p2')] } });
    expect((await stateStore.getRun(first.runId))?.status).toBe('suspended');

    const partly = await executor.approve(childSessionId('nest-7', 'p1'), 'same');
    expect(partly.sessionId).toBe(childSessionId('nest-7', 'p1'));
    // The parent resumed with the child, re-attached to it, folded it, and waits on the other one again.
    const parentAgain = executor.current('nest-7');
    expect(parentAgain?.runId).not.toBe(first.runId);
    await partly.result();
    const second = await parentAgain!.result();
    expect(second.status).toBe('suspended');
    expect(second.state).toEqual({ notes: ['child got "sent to ana"'] });
    expect(second.suspension?.pending.map((p) => p.toolCallId)).toEqual(['p2']);
    const done = await (await executor.approve('nest-7', 'same')).result();
    expect(done).toMatchObject({ status: 'completed', state: { notes: ['child got "sent to ana"', 'child got "sent to ana"'] } });
    expect(seen.filter((s) => s.startsWith('afterSubAgent'))).toHaveLength(2);
  });
});
