import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, defineSubAgentTool, defineTool, InMemoryStateStore, type AgentConfig, type AgentHandle, type AgentResult, type PendingCall } from '../index.js';
import { SubAgentTree, type TreeHost } from '../runtime/sub-agent-tree.js';
import { createScriptedModel } from '../testing/index.js';
import { memoryLogger, refusal } from './harness.js';

// The sub-agent tree (runtime/sub-agent-tree.ts) over the real in-memory store: which parents wake,
// which nested calls a session sees, where a resume's answers go.

const worker = defineAgent({ name: 'worker', llmConfig: { model: createScriptedModel([{ text: 'w' }]) } });
const ask = defineTool({ name: 'ask', description: 'Asks the caller.', inputSchema: z.object({}) });
/** The parent agent: `delegate` is its sub-agent tool, `ask` a client tool. */
const lead = defineAgent({ name: 'lead', llmConfig: { model: createScriptedModel([{ text: 'l' }]) }, tools: [defineSubAgentTool({ agent: worker, name: 'delegate' }), ask] });
const agents = new Map<string, AgentConfig<unknown, unknown>>([
  ['lead', lead as AgentConfig<unknown, unknown>],
  ['worker', worker as AgentConfig<unknown, unknown>],
]);

const children = (id: string, ...sessions: string[]): PendingCall => ({ toolCallId: id, toolName: 'delegate', input: {}, kind: 'children', children: sessions.map((sessionId) => ({ sessionId, agentType: 'worker' })) });
const client = (id: string, input: unknown = {}): PendingCall => ({ toolCallId: id, toolName: 'ask', input, kind: 'client' });
const approval = (id: string): PendingCall => ({ toolCallId: id, toolName: 'send', input: { to: 'ana' }, kind: 'approval' });

let runs = 0;
/** A session whose current run is `runId`, suspended on `pending` (or ended / running, with `status`). */
async function session(store: InMemoryStateStore, sessionId: string, agentType: string, pending: readonly PendingCall[], status: 'suspended' | 'completed' | 'failed' | 'running' | 'interrupted' = 'suspended') {
  const runId = `run-${++runs}`;
  const { lease } = await store.beginRun({ sessionId, runId, agentType, signal: 'start', initialState: {}, newTurn: { turnId: `t-${runs}`, input: [{ role: 'user', content: 'go' }] }, startedAt: Date.now(), leaseOwner: 'test', leaseMs: 60_000, options: {} });
  if (status === 'running') return runId;
  const reason = pending.some((p) => p.kind !== 'children') ? 'client_tool' : 'awaiting_children';
  await store.commit({
    sessionId,
    runId,
    epoch: lease.epoch,
    kind: status === 'suspended' ? 'suspension' : 'terminal',
    runStatus: status,
    ...(status === 'suspended' ? { suspension: { reason, pending, stepIndex: 0, suspendedAt: Date.now() } } : {}),
    ...(status === 'failed' ? { error: { code: 'x', layer: 'tool', severity: 'error', retryable: false, message: 'x' } } : {}),
    committedAt: Date.now(),
  } as Parameters<InMemoryStateStore['commit']>[0]);
  return runId;
}

/** A tree over `store`; `resumed` lists the sessions it resumed (each resume answers a fake handle, or `resume` decides). */
function treeOver(store: InMemoryStateStore, options: { maxDepth?: number; live?: string[]; shuttingDown?: boolean; resume?: (sessionId: string) => Promise<AgentHandle> } = {}) {
  const resumed: string[] = [];
  const logger = memoryLogger();
  const state = { shuttingDown: options.shuttingDown ?? false };
  const host: TreeHost = {
    stateStore: store,
    logger,
    maxDepth: options.maxDepth ?? 3,
    agent: (name) => agents.get(name),
    isLive: (sessionId) => (options.live ?? []).includes(sessionId),
    shuttingDown: () => state.shuttingDown,
    resumeContinue: async (sessionId) => {
      resumed.push(sessionId);
      if (options.resume) return options.resume(sessionId);
      return { sessionId, runId: `resumed-${sessionId}` } as unknown as AgentHandle;
    },
  };
  return { tree: new SubAgentTree(host), resumed, logger, state };
}

const ended = (status: AgentResult['status'], suspension?: AgentResult['suspension']): AgentResult => ({ status, sessionId: 'x', runId: 'x', state: undefined, stepCount: 0, durationMs: 0, ...(suspension ? { suspension } : {}) });

describe('SubAgentTree.wake', () => {
  it('a parent suspended only on sub-agent children resumes once every child has ended (completed, failed, interrupted), not while one still runs', async () => {
    const store = new InMemoryStateStore();
    await session(store, 'a', 'worker', [], 'completed');
    await session(store, 'b', 'worker', [], 'running');
    await session(store, 'c', 'worker', [], 'failed');
    await session(store, 'd', 'worker', [], 'interrupted');
    await session(store, 'p-wait', 'lead', [children('c1', 'a', 'b')]);
    await session(store, 'p-due', 'lead', [children('c1', 'a', 'c'), children('c2', 'd')]);
    const { tree, resumed } = treeOver(store);
    expect(await tree.wake('p-wait', { kind: 'ended' })).toBeUndefined();
    expect((await tree.wake('p-due', { kind: 'ended' }))?.runId).toBe('resumed-p-due');
    expect(resumed).toEqual(['p-due']);
  });

  it('a child session that is missing, or whose run is suspended, keeps its parent waiting', async () => {
    const store = new InMemoryStateStore();
    await session(store, 'asks', 'worker', [client('x')]);
    await session(store, 'p1', 'lead', [children('c1', 'nowhere')]);
    await session(store, 'p2', 'lead', [children('c1', 'asks')]);
    const { tree, resumed } = treeOver(store);
    await tree.wake('p1', { kind: 'ended' });
    await tree.wake('p2', { kind: 'ended' });
    expect(resumed).toEqual([]);
  });

  it('a parent that also waits on a client call does not resume when its children end, only when an answer resumed one of them', async () => {
    const store = new InMemoryStateStore();
    await session(store, 'a', 'worker', [], 'completed');
    await session(store, 'p', 'lead', [children('c1', 'a'), client('x')]);
    const { tree, resumed } = treeOver(store);
    await tree.wake('p', { kind: 'ended' });
    expect(resumed).toEqual([]);
    await tree.wake('p', { kind: 'resumed', childSessionId: 'a' });
    expect(resumed).toEqual(['p']);
  });

  it('a resumed child wakes its parent when any of the calls the parent waits on has it among its children; another session does not', async () => {
    const store = new InMemoryStateStore();
    await session(store, 'p', 'lead', [children('c1', 'a', 'b')]);
    const { tree, resumed } = treeOver(store);
    await tree.wake('p', { kind: 'resumed', childSessionId: 'stranger' });
    expect(resumed).toEqual([]);
    await tree.wake('p', { kind: 'resumed', childSessionId: 'b' });
    expect(resumed).toEqual(['p']);
  });

  it('while shutting down, a resumed child does not wake its parent; an ended one still does', async () => {
    const store = new InMemoryStateStore();
    await session(store, 'a', 'worker', [], 'completed');
    await session(store, 'p', 'lead', [children('c1', 'a')]);
    const { tree, resumed } = treeOver(store, { shuttingDown: true });
    await tree.wake('p', { kind: 'resumed', childSessionId: 'a' });
    expect(resumed).toEqual([]);
    await tree.wake('p', { kind: 'ended' });
    expect(resumed).toEqual(['p']);
  });

  it('nothing wakes a session that is not suspended, or suspended on client calls only (no warning even when its agent is unknown)', async () => {
    const store = new InMemoryStateStore();
    await session(store, 'done', 'lead', [], 'completed');
    await session(store, 'asks', 'ghost', [client('x')]);
    const { tree, resumed, logger } = treeOver(store);
    expect(await tree.wake('done', { kind: 'ended' })).toBeUndefined();
    expect(await tree.wake('never-seen', { kind: 'ended' })).toBeUndefined();
    expect(await tree.wake('asks', { kind: 'ended' })).toBeUndefined();
    expect(resumed).toEqual([]);
    expect(logger.lines).toEqual([]);
  });

  it("a parent whose agent is not registered here is not resumed, with a warning that says how to resume it", async () => {
    const store = new InMemoryStateStore();
    await session(store, 'a', 'worker', [], 'completed');
    await session(store, 'orphan', 'ghost', [{ ...children('c1', 'a'), toolName: 'delegate' }, client('x')]);
    const { tree, resumed, logger } = treeOver(store);
    await tree.wake('orphan', { kind: 'ended' });
    expect(resumed).toEqual([]);
    expect(logger.lines.filter((l) => l.includes(`session orphan waits on sub-agents, but its agent "ghost" is not registered here; resume it with resume(sessionId, { mode: 'continue' })`))).toHaveLength(1);
  });

  it('a resume another resume beat (state_conflict, session_not_suspended) is not an error; any other failure is logged', async () => {
    const store = new InMemoryStateStore();
    await session(store, 'a', 'worker', [], 'completed');
    await session(store, 'p', 'lead', [children('c1', 'a')]);
    const { AgentError } = await import('../index.js');
    for (const code of ['state_conflict', 'session_not_suspended']) {
      const { tree, logger } = treeOver(store, { resume: () => Promise.reject(new AgentError(code, 'lost the race')) });
      expect(await tree.wake('p', { kind: 'ended' })).toBeUndefined();
      expect(logger.lines).toEqual([]);
    }
    for (const failure of [new AgentError('state_store_failed', 'disk full'), new Error('disk full')]) {
      const { tree, logger } = treeOver(store, { resume: () => Promise.reject(failure) });
      expect(await tree.wake('p', { kind: 'ended' })).toBeUndefined();
      expect(logger.lines.filter((l) => l.includes('resuming session p after its children failed: disk full'))).toHaveLength(1);
    }
    const { tree, logger } = treeOver(store, { resume: () => Promise.reject('a string') });
    await tree.wake('p', { kind: 'ended' });
    expect(logger.lines.some((l) => l.includes('resuming session p after its children failed: a string'))).toBe(true);
  });

  it('wakes of one parent run one after another; idle() resolves once all have settled', async () => {
    const store = new InMemoryStateStore();
    await session(store, 'a', 'worker', [], 'completed');
    await session(store, 'p', 'lead', [children('c1', 'a')]);
    const order: string[] = [];
    let calls = 0;
    const { tree } = treeOver(store, {
      resume: async (sessionId) => {
        const n = ++calls;
        order.push(`start ${n}`);
        await new Promise((r) => setTimeout(r, 20));
        order.push(`end ${n}`);
        return { sessionId, runId: `r${n}` } as unknown as AgentHandle;
      },
    });
    const first = tree.wake('p', { kind: 'ended' });
    const second = tree.wake('p', { kind: 'ended' });
    expect((await first)?.runId).toBe('r1');
    // Asked while the second runs: it waits for the second, though the first has settled meanwhile.
    const third = tree.wake('p', { kind: 'ended' });
    await tree.idle();
    expect(order).toEqual(['start 1', 'end 1', 'start 2', 'end 2', 'start 3', 'end 3']);
    expect((await second)?.runId).toBe('r2');
    expect((await third)?.runId).toBe('r3');
  });
});

describe('SubAgentTree.runEnded and reattachable', () => {
  it('a run that suspends awaiting children that have all ended wakes itself; a child that ends completed, failed or interrupted wakes its parent', async () => {
    const store = new InMemoryStateStore();
    await session(store, 'a', 'worker', [], 'completed');
    await session(store, 'p', 'lead', [children('c1', 'a')]);
    const { tree, resumed } = treeOver(store);
    await tree.runEnded({ sessionId: 'p', result: ended('suspended', { reason: 'awaiting_children', pending: [children('c1', 'a')], stepIndex: 0, suspendedAt: 0 }) });
    expect(resumed).toEqual(['p']);
    for (const status of ['completed', 'failed', 'interrupted'] as const) await tree.runEnded({ sessionId: 'a', parentSessionId: 'p', result: ended(status) });
    expect(resumed).toEqual(['p', 'p', 'p', 'p']);
  });

  it('a child that suspends or is superseded does not wake its parent, and a root run that ends wakes nothing', async () => {
    const store = new InMemoryStateStore();
    await session(store, 'a', 'worker', [], 'completed');
    await session(store, 'p', 'lead', [children('c1', 'a')]);
    const { tree, resumed } = treeOver(store);
    await tree.runEnded({ sessionId: 'a', parentSessionId: 'p', result: ended('suspended', { reason: 'client_tool', pending: [client('x')], stepIndex: 0, suspendedAt: 0 }) });
    await tree.runEnded({ sessionId: 'a', parentSessionId: 'p', result: ended('superseded') });
    await tree.runEnded({ sessionId: 'p', result: ended('completed') });
    expect(resumed).toEqual([]);
  });

  it('a sub-agent call is re-attachable when every child of it runs here, and not while shutting down or for a client call', () => {
    const store = new InMemoryStateStore();
    const { tree, state } = treeOver(store, { live: ['a', 'b'] });
    const lead_ = lead as AgentConfig<unknown, unknown>;
    expect(tree.reattachable(lead_, children('c1', 'a', 'b'))).toBe(true);
    expect(tree.reattachable(lead_, children('c1', 'a', 'elsewhere'))).toBe(false);
    expect(tree.reattachable(lead_, { ...children('c1'), children: undefined } as PendingCall)).toBe(true);
    expect(tree.reattachable(lead_, { ...client('x'), kind: 'children', children: [{ sessionId: 'a', agentType: 'worker' }] })).toBe(false);
    expect(tree.reattachable(lead_, { ...children('c1', 'a'), toolName: 'ask' })).toBe(false);
    expect(tree.reattachable(lead_, { ...children('c1', 'a'), kind: 'client' })).toBe(false);
    state.shuttingDown = true;
    expect(tree.reattachable(lead_, children('c1', 'a', 'b'))).toBe(false);
  });
});

describe('SubAgentTree.pendingCalls', () => {
  it('lists the client and approval calls of a session and its suspended descendants with their session, run, input and depth, nearest first', async () => {
    const store = new InMemoryStateStore();
    // DFS meets the grandchild (depth 2) before the second child (depth 1): the list is sorted by depth.
    const g = await session(store, 'g', 'worker', [client('deep', { q: 1 })]);
    const c1 = await session(store, 'c1', 'lead', [children('to-g', 'g')]);
    const c2 = await session(store, 'c2', 'worker', [approval('near')]);
    const root = await session(store, 'root', 'lead', [children('to-c1', 'c1'), children('to-c2', 'c2'), client('own', { mine: true })]);
    const { tree } = treeOver(store);
    expect(await tree.pendingCalls('root')).toEqual([
      { sessionId: 'root', runId: root, toolCallId: 'own', toolName: 'ask', kind: 'client', input: { mine: true }, depth: 0 },
      { sessionId: 'c2', runId: c2, toolCallId: 'near', toolName: 'send', kind: 'approval', input: { to: 'ana' }, depth: 1 },
      { sessionId: 'g', runId: g, toolCallId: 'deep', toolName: 'ask', kind: 'client', input: { q: 1 }, depth: 2 },
    ]);
    expect(c1).toBeDefined();
  });

  it('walks only sub-agent calls of a known agent, each session once (a cycle ends), down to maxDepth + 1, past ended sessions', async () => {
    const store = new InMemoryStateStore();
    await session(store, 'd3', 'worker', [client('too-deep')]);
    await session(store, 'd2', 'lead', [children('to-d3', 'd3'), client('at-2')]);
    await session(store, 'd1', 'lead', [children('to-d2', 'd2'), children('back', 'top')]);
    await session(store, 'top', 'lead', [children('to-d1', 'd1'), children('to-ended', 'ended'), { ...children('not-sub', 'hidden'), toolName: 'ask' }]);
    await session(store, 'ended', 'worker', [], 'completed');
    await session(store, 'hidden', 'worker', [client('unreachable')]);
    const { tree } = treeOver(store, { maxDepth: 1 });
    expect((await tree.pendingCalls('top')).map((c) => [c.toolCallId, c.depth])).toEqual([['at-2', 2]]);
    const { tree: deeper } = treeOver(store, { maxDepth: 2 });
    expect((await deeper.pendingCalls('top')).map((c) => [c.toolCallId, c.depth])).toEqual([
      ['at-2', 2],
      ['too-deep', 3],
    ]);
  });
});

describe('SubAgentTree.route', () => {
  async function nested() {
    const store = new InMemoryStateStore();
    await session(store, 'k1', 'worker', [approval('shared'), client('own-id')]);
    await session(store, 'k2', 'worker', [approval('shared'), client('k2-call')]);
    await session(store, 'k3', 'worker', [client('k3-call')]);
    await session(store, 'root', 'lead', [children('c1', 'k1'), children('c2', 'k2'), children('c3', 'k3'), client('root-call')]);
    return treeOver(store).tree;
  }
  const own = [children('c1', 'k1'), children('c2', 'k2'), children('c3', 'k3'), client('root-call'), approval('own-id')];

  it("answers for the session's own calls stay there; answers for one descendant's calls go to it", async () => {
    const tree = await nested();
    expect(await tree.route('root', own, { mode: 'continue', toolResults: [{ toolCallId: 'root-call', result: 1 }] })).toBeUndefined();
    expect(await tree.route('root', own, { mode: 'continue', toolResults: [{ toolCallId: 'k3-call', result: 1 }] })).toBe('k3');
    expect(await tree.route('root', own, { mode: 'with_confirmation', decisions: [{ toolCallId: 'k3-call', decision: 'approve' }], toolResults: [] })).toBeUndefined();
  });

  it('an answer matches a call by id and kind: a client result for an id the session has as an approval goes to the descendant whose client call it is', async () => {
    const tree = await nested();
    expect(await tree.route('root', own, { mode: 'continue', toolResults: [{ toolCallId: 'own-id', result: 1 }] })).toBe('k1');
  });

  it('resumes of other modes, and answers nobody waits on, are not routed', async () => {
    const tree = await nested();
    expect(await tree.route('root', own, { mode: 'with_message', message: 'hi' })).toBeUndefined();
    expect(await tree.route('root', own, { mode: 'continue', toolResults: [{ toolCallId: 'nobody', result: 1 }] })).toBeUndefined();
    expect(await tree.route('root', own, { mode: 'continue', toolResults: [{ toolCallId: 'k3-call', result: 1 }, { toolCallId: 'nobody', result: 1 }] })).toBeUndefined();
  });

  it('a call id two descendants wait on is tool_call_ambiguous, naming the sessions', async () => {
    const tree = await nested();
    const error = await refusal(tree.route('root', own, { mode: 'continue', decisions: [{ toolCallId: 'shared', decision: 'approve' }] }));
    expect(error.info).toMatchObject({
      code: 'tool_call_ambiguous',
      message: 'Call shared is pending in 2 sessions under root; answer it on the session that asked.',
      details: { sessionId: 'root', toolCallId: 'shared', sessions: ['k1', 'k2'] },
    });
  });

  it("answers for calls of two sessions, or mixing the session's own with a descendant's, are tool_call_not_pending, naming sessions and calls", async () => {
    const tree = await nested();
    const spanning = await refusal(tree.route('root', own, { mode: 'continue', toolResults: [{ toolCallId: 'k2-call', result: 1 }, { toolCallId: 'k3-call', result: 2 }] }));
    expect(spanning.info).toMatchObject({
      code: 'tool_call_not_pending',
      message: "The answers of one resume of session root are for calls of different sessions; answer each session's calls separately.",
      details: { sessionId: 'root', sessions: ['k2', 'k3'], toolCallIds: ['k2-call', 'k3-call'] },
    });
    const mixed = await refusal(tree.route('root', own, { mode: 'continue', toolResults: [{ toolCallId: 'root-call', result: 1 }, { toolCallId: 'k3-call', result: 2 }] }));
    expect(mixed.info).toMatchObject({ code: 'tool_call_not_pending', details: { sessions: ['k3'], toolCallIds: ['root-call', 'k3-call'] } });
  });

  it("a session whose agent is not registered here, or whose pending call names a tool its agent lacks, still lists its own calls (its children are not walked)", async () => {
    const store = new InMemoryStateStore();
    await session(store, 'kid', 'worker', [client('kid-call')]);
    await session(store, 'unknown-agent', 'ghost', [children('c1', 'kid'), client('mine')]);
    await session(store, 'unknown-tool', 'lead', [{ ...children('c1', 'kid'), toolName: 'gone' }, client('mine-too')]);
    const { tree } = treeOver(store);
    expect((await tree.pendingCalls('unknown-agent')).map((c) => c.toolCallId)).toEqual(['mine']);
    expect((await tree.pendingCalls('unknown-tool')).map((c) => c.toolCallId)).toEqual(['mine-too']);
  });
});
