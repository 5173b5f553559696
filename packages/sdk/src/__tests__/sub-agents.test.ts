import fc from 'fast-check';
import { produce } from 'immer';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { childSessionId, defineAgent, defineSubAgentTool, InMemoryUsageStore, type AgentHooks, type Draft, type StreamChunk } from '../index.js';
import { createGate, createScriptedModel, type Gate } from '../testing/index.js';
import { collect, setup } from './harness.js';

// Sub-agents (docs/rules.md, rules 78–88): a sub-agent tool runs a child agent in its own session.

/** A hook set that records `point@agent` for every hook of interest. */
function trail(into: string[], agentName: string): AgentHooks {
  const note = (point: string) => () => void into.push(`${point}@${agentName}`);
  return {
    onAgentStart: (p, ctx) => void into.push(`onAgentStart(${String(p.startSignal)})@${agentName}${ctx.parentSessionId ? ' parent' : ''}`),
    onAgentComplete: note('onAgentComplete'),
    onAgentFail: note('onAgentFail'),
    beforeTool: note('beforeTool'),
    afterTool: note('afterTool'),
    beforeSubAgent: note('beforeSubAgent'),
    afterSubAgent: note('afterSubAgent'),
    onStateChange: note('onStateChange'),
    onMessage: (p) => void into.push(`onMessage(${p.message.role})@${agentName}`),
  };
}

const Notes = z.object({ notes: z.array(z.string()).default([]), done: z.number().default(0) });

describe('sub-agent calls', () => {
  it('rules 78, 79, 87, 88: beforeTool → beforeSubAgent → the child run (its own onAgentStart true, parentSessionId set) → afterSubAgent → onStateChange → onMessage → afterTool; the parent gets the child output', async () => {
    const seen: string[] = [];
    const child = defineAgent({ name: 'researcher', llmConfig: { model: createScriptedModel([{ text: 'found it' }]) }, hooks: trail(seen, 'child') });
    const tool = defineSubAgentTool({ agent: child, name: 'research' });
    const parent = defineAgent({
      name: 'lead',
      stateSchema: Notes,
      llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'research', args: { input: 'look' }, id: 'c1' }] }, { text: 'done' }]) },
      tools: [tool],
      hooks: {
        ...trail(seen, 'parent'),
        afterSubAgent: (p, ctx) => {
          seen.push('afterSubAgent@parent');
          ctx.updateState((d) => void (d as Draft<z.infer<typeof Notes>>).notes.push(String(p.result)));
        },
      },
    });
    const { executor, stateStore } = setup();
    const handle = await executor.execute(parent, 'go', { sessionId: 'lead-1' });
    const result = await handle.result();
    expect(result.status).toBe('completed');
    expect(result.state).toEqual({ notes: ['found it'], done: 0 });
    const firstTool = seen.indexOf('beforeTool@parent');
    expect(seen.slice(firstTool)).toEqual([
      'beforeTool@parent',
      'beforeSubAgent@parent',
      'onAgentStart(true)@child parent',
      'onMessage(user)@child',
      'onMessage(assistant)@child',
      'onAgentComplete@child',
      'afterSubAgent@parent',
      'onStateChange@parent',
      'onMessage(tool)@parent',
      'afterTool@parent',
      'onMessage(assistant)@parent',
      'onAgentComplete@parent',
    ]);
    const childSession = await stateStore.loadSession(childSessionId('lead-1', 'c1'));
    expect(childSession?.parentSessionId).toBe('lead-1');
    const toolRow = (await stateStore.loadSession('lead-1'))!.messages.find((m) => m.role === 'tool');
    expect(toolRow).toMatchObject({ role: 'tool', toolCallId: 'c1', content: 'found it' });
  });

  it('a child that fails gives success false, its typed error and an error result to the parent, which goes on', async () => {
    const failures: unknown[] = [];
    const child = defineAgent({ name: 'broken', outputSchema: z.object({ x: z.number() }), maxSteps: 1, llmConfig: { model: createScriptedModel([{ text: 'no finish' }]) } });
    const parent = defineAgent({
      name: 'lead',
      llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'broken', args: { input: 'try' }, id: 'c1' }] }, { text: 'recovered' }]) },
      tools: [defineSubAgentTool({ agent: child })],
      hooks: { afterSubAgent: (p) => void failures.push({ success: p.success, code: p.error?.code }) },
    });
    const { executor } = setup();
    const handle = await executor.execute(parent, 'go');
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'completed', output: 'recovered' });
    expect(failures).toEqual([{ success: false, code: 'run_max_steps' }]);
    const row = (await executor.getSession(handle.sessionId))!.messages.find((m) => m.role === 'tool');
    expect(row).toMatchObject({ isError: true, errorInfo: { code: 'subagent_failed' } });
  });

  it("the parent's stream carries the child's chunks tagged with the child session, the call and the depth; the child's end does not end the parent's stream", async () => {
    const child = defineAgent({ name: 'helper', llmConfig: { model: createScriptedModel([{ text: 'child text' }]) } });
    const parent = defineAgent({ name: 'lead', llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'helper', args: { input: 'x' }, id: 'c9' }] }, { text: 'parent text' }]) }, tools: [defineSubAgentTool({ agent: child })] });
    const { executor } = setup();
    const handle = await executor.execute(parent, 'go', { sessionId: 'p-stream' });
    const chunks = await collect(handle.stream());
    const forwarded = chunks.filter((c): c is Extract<StreamChunk, { type: 'subagent_chunk' }> => c.type === 'subagent_chunk');
    expect(forwarded.length).toBeGreaterThan(2);
    for (const c of forwarded) expect({ child: c.childSessionId, call: c.parentToolCallId, depth: c.depth }).toEqual({ child: childSessionId('p-stream', 'c9'), call: 'c9', depth: 1 });
    expect(forwarded.map((c) => c.chunk.type)).toContain('end');
    expect(chunks.at(-1)?.type).toBe('end');
    expect(chunks.filter((c) => c.type === 'end')).toHaveLength(1);
    // A reader of the child sees only the child.
    const childChunks = await collect(executor.readStream(childSessionId('p-stream', 'c9'), { follow: false }));
    expect(childChunks.some((c) => c.type === 'subagent_chunk')).toBe(false);
  });

  it("the parent's usage rollup includes its children, with a per-sub-agent breakdown and nothing counted twice", async () => {
    const usage = { inputTokens: 10, outputTokens: 5 };
    const child = defineAgent({ name: 'counter', llmConfig: { model: createScriptedModel([{ text: 'c', usage }], { loop: true }) } });
    const parent = defineAgent({ name: 'lead', llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'counter', args: { input: 'a' }, id: 'a' }, { name: 'counter', args: { input: 'b' }, id: 'b' }], usage }, { text: 'p', usage }]) }, tools: [defineSubAgentTool({ agent: child })] });
    const { executor } = setup();
    const usageStore = new InMemoryUsageStore();
    const handle = await executor.execute(parent, 'go', { usageStore });
    await handle.result();
    const rollup = await handle.getUsageRollup();
    expect(rollup?.modelCalls).toBe(4);
    expect(rollup?.tokens.total).toBe(60);
    expect(rollup?.toolStats.byTool['counter']?.calls).toBe(2);
    expect(rollup?.subAgents?.map((s) => s.rollup.modelCalls)).toEqual([1, 1]);
    expect(new Set(rollup?.subAgents?.map((s) => s.sessionId)).size).toBe(2);
  });

  it('maxSubAgentDepth and maxSubAgentsPerStep refuse with typed errors that go back to the model', async () => {
    const leaf = defineAgent({ name: 'leaf', llmConfig: { model: createScriptedModel([{ text: 'leaf' }], { loop: true }) } });
    const middle = defineAgent({ name: 'middle', llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'leaf', args: { input: 'x' }, id: 'm1' }] }, { text: 'middle' }]) }, tools: [defineSubAgentTool({ agent: leaf })] });
    const top = defineAgent({ name: 'top', llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'middle', args: { input: 'x' }, id: 't1' }] }, { text: 'top' }]) }, tools: [defineSubAgentTool({ agent: middle })] });
    const { executor, stateStore } = setup({ executor: { maxSubAgentDepth: 1 } });
    const handle = await executor.execute(top, 'go', { sessionId: 'deep' });
    expect((await handle.result()).status).toBe('completed');
    const middleRows = (await stateStore.loadSession(childSessionId('deep', 't1')))!.messages.filter((m) => m.role === 'tool');
    expect(middleRows).toEqual([expect.objectContaining({ isError: true, errorInfo: expect.objectContaining({ code: 'subagent_depth_exceeded' }) })]);

    const wide = defineAgent({ name: 'wide', llmConfig: { model: createScriptedModel([{ toolCalls: ['a', 'b', 'c'].map((id) => ({ name: 'leaf', args: { input: id }, id })) }, { text: 'wide' }]) }, tools: [defineSubAgentTool({ agent: leaf })] });
    const fan = setup({ executor: { maxSubAgentsPerStep: 2 } });
    const wideHandle = await fan.executor.execute(wide, 'go');
    await wideHandle.result();
    const codes = (await fan.stateStore.loadSession(wideHandle.sessionId))!.messages.flatMap((m) => (m.role === 'tool' ? [m.errorInfo?.code ?? 'ok'] : []));
    expect(codes.filter((c) => c === 'subagent_fanout_exceeded')).toHaveLength(1);
    expect(codes.filter((c) => c === 'ok')).toHaveLength(2);
  });

  it("stopping the parent stops its running child: the child's own onAgentFail fires with run_interrupted", async () => {
    const childEvents: string[] = [];
    const slow = defineAgent({ name: 'slow', llmConfig: { model: createScriptedModel([{ text: 'late', delayMs: 5_000 }]) }, hooks: { onAgentFail: (p) => void childEvents.push(p.error.code) } });
    const parent = defineAgent({ name: 'lead', llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'slow', args: { input: 'x' }, id: 'c1' }] }, { text: 'never' }]) }, tools: [defineSubAgentTool({ agent: slow })] });
    const { executor } = setup();
    const handle = await executor.execute(parent, 'go');
    await new Promise((r) => setTimeout(r, 50));
    const result = await handle.stop();
    expect(result.status).toBe('interrupted');
    expect(childEvents).toEqual(['run_interrupted']);
  });
});

describe('superseding a parent whose children run', () => {
  /** A parent that fans out to `slow` children (each waits in its model call until stopped) and records every terminal hook. */
  function fanOut(events: string[], count: number) {
    const slow = defineAgent({
      name: 'slow',
      llmConfig: { model: createScriptedModel([{ text: 'late', delayMs: 5_000 }], { loop: true }) },
      hooks: { onAgentStart: (p) => void events.push(`start ${p.input}`), onAgentFail: (p, ctx) => void events.push(`fail ${ctx.sessionId} ${p.error.code}`), onAgentComplete: () => void events.push('child complete') },
    });
    return defineAgent({
      name: 'lead',
      llmConfig: { model: createScriptedModel([{ toolCalls: Array.from({ length: count }, (_v, i) => ({ name: 'slow', args: { input: `c${i}` }, id: `c${i}` })) }, { text: 'never' }]) },
      tools: [defineSubAgentTool({ agent: slow })],
      hooks: {
        afterSubAgent: () => void events.push('afterSubAgent'),
        afterTool: () => void events.push('afterTool'),
        onAgentSuperseded: () => void events.push('parent superseded'),
        onAgentFail: () => void events.push('parent fail'),
        onAgentComplete: () => void events.push('parent complete'),
      },
    });
  }

  async function started(events: readonly string[], count: number): Promise<void> {
    for (let i = 0; i < 200 && events.filter((e) => e.startsWith('start')).length < count; i++) await new Promise((r) => setTimeout(r, 5));
  }

  it("rules 46–49: a newer execute on the parent's session while two parallel children run stops both (each child's own onAgentFail run_interrupted), and the parent fires onAgentSuperseded only: no afterSubAgent, no afterTool, nothing written", async () => {
    const events: string[] = [];
    const { executor, stateStore } = setup();
    const handle = await executor.execute(fanOut(events, 2), 'first', { sessionId: 'sup-1' });
    await started(events, 2);
    const newer = defineAgent({ name: 'lead', llmConfig: { model: createScriptedModel([{ text: 'newer' }]) } });
    const winner = await (await executor.execute(newer, 'second', { sessionId: 'sup-1' })).result();
    const result = await handle.result();
    expect(winner.status).toBe('completed');
    expect(result.status).toBe('superseded');
    expect(events.filter((e) => !e.startsWith('start')).sort()).toEqual([`fail ${childSessionId('sup-1', 'c0')} run_interrupted`, `fail ${childSessionId('sup-1', 'c1')} run_interrupted`, 'parent superseded'].sort());
    expect(events.at(-1)).toBe('parent superseded');
    expect((await stateStore.loadSession('sup-1'))!.messages.map((m) => m.role)).toEqual(['user', 'user', 'assistant']);
  });

  it("rule 46: a from_checkpoint rewind of the parent's session while its child runs supersedes the parent the same way: the child is stopped (its onAgentFail), the parent fires onAgentSuperseded only", async () => {
    const events: string[] = [];
    const { executor } = setup();
    const first = defineAgent({ name: 'lead', llmConfig: { model: createScriptedModel([{ text: 'one' }, { text: 'redo' }]) } });
    await (await executor.execute(first, 'first', { sessionId: 'sup-2' })).result();
    const checkpoint = (await executor.listCheckpoints('sup-2')).find((c) => c.kind === 'step');
    const handle = await executor.execute(fanOut(events, 1), 'second', { sessionId: 'sup-2' });
    await started(events, 1);
    const rewind = await executor.resume('sup-2', { mode: 'from_checkpoint', checkpointId: checkpoint!.checkpointId });
    expect((await handle.result()).status).toBe('superseded');
    // The rewind runs the session's agent (the same lead) from the checkpoint: it completes on its own.
    expect(await rewind.result()).toMatchObject({ status: 'completed', output: 'never' });
    expect(events.filter((e) => e !== 'parent complete')).toEqual(['start c0', `fail ${childSessionId('sup-2', 'c0')} run_interrupted`, 'parent superseded']);
    expect(events.filter((e) => e === 'parent complete')).toHaveLength(1);
  });
});

/** One child's fold into the parent state. */
type Fold = { readonly kind: 'push'; readonly v: string } | { readonly kind: 'edit'; readonly index: number; readonly v: string } | { readonly kind: 'editId'; readonly id: string; readonly v: string } | { readonly kind: 'remove'; readonly index: number } | { readonly kind: 'count'; readonly by: number } | { readonly kind: 'same'; readonly v: string };

const Board = z.object({ items: z.array(z.object({ id: z.string(), v: z.string() })).default([]), count: z.number().default(0), last: z.string().default('') });
type BoardState = z.infer<typeof Board>;

function fold(d: Draft<BoardState>, f: Fold): void {
  if (f.kind === 'push') d.items.push({ id: `n${d.items.length}`, v: f.v });
  else if (f.kind === 'edit') {
    const item = d.items[f.index];
    if (item) item.v = f.v;
  } else if (f.kind === 'editId') {
    const item = d.items.find((i) => i.id === f.id);
    if (item) item.v = f.v;
  } else if (f.kind === 'remove') d.items.splice(f.index, 1);
  else if (f.kind === 'count') d.count += f.by;
  else d.last = f.v;
}

/** Runs one wave: a parent that calls one child per fold; child i finishes at position order.indexOf(i). */
async function wave(initial: BoardState, folds: readonly Fold[], order: readonly number[]) {
  const gates: Gate[] = folds.map(() => createGate());
  const afterSubAgent: number[] = [];
  const child = defineAgent({
    name: 'worker',
    llmConfig: { model: createScriptedModel([{ text: 'ok' }], { loop: true }) },
    hooks: {
      onAgentStart: async (p) => {
        const i = Number(p.input);
        const position = order.indexOf(i);
        if (position > 0) await gates[order[position - 1] as number]!.opened;
      },
    },
  });
  const parent = defineAgent({
    name: 'lead',
    stateSchema: Board,
    llmConfig: { model: createScriptedModel([{ toolCalls: folds.map((_f, i) => ({ name: 'worker', args: { input: String(i) }, id: `w${i}` })) }, { text: 'done' }]) },
    tools: [defineSubAgentTool({ agent: child })],
    hooks: {
      afterSubAgent: (p, ctx) => {
        const i = Number((p.call.input as { input: string }).input);
        afterSubAgent.push(i);
        ctx.updateState((d) => fold(d as Draft<BoardState>, folds[i] as Fold));
        gates[i]!.open();
      },
    },
  });
  const { executor } = setup();
  const handle = await executor.execute(parent, 'go', { initialState: initial });
  const result = await handle.result();
  return { result, afterSubAgent };
}

/**
 * Runs one wave whose children finish on their own, concurrently: child i waits `delays[i]` ms in its
 * start hook, and the parent's afterSubAgent of child i yields `yields[i]` times before its fold. Nothing
 * orders the outcomes; the order the folds were applied in is recorded as they are applied.
 */
async function concurrentWave(initial: BoardState, folds: readonly Fold[], delays: readonly number[], yields: readonly number[]) {
  const applied: number[] = [];
  const child = defineAgent({
    name: 'worker',
    llmConfig: { model: createScriptedModel([{ text: 'ok' }], { loop: true }) },
    hooks: { onAgentStart: (p) => new Promise<void>((resolve) => setTimeout(resolve, delays[Number(p.input)] ?? 0)) },
  });
  const parent = defineAgent({
    name: 'lead',
    stateSchema: Board,
    llmConfig: { model: createScriptedModel([{ toolCalls: folds.map((_f, i) => ({ name: 'worker', args: { input: String(i) }, id: `w${i}` })) }, { text: 'done' }]) },
    tools: [defineSubAgentTool({ agent: child })],
    hooks: {
      afterSubAgent: async (p, ctx) => {
        const i = Number((p.call.input as { input: string }).input);
        for (let k = 0; k < (yields[i] ?? 0); k++) await Promise.resolve();
        applied.push(i);
        ctx.updateState((d) => fold(d as Draft<BoardState>, folds[i] as Fold));
      },
    },
  });
  const { executor } = setup();
  const result = await (await executor.execute(parent, 'go', { initialState: initial })).result();
  return { result, applied };
}

function sequential(initial: BoardState, folds: readonly Fold[], order: readonly number[]): BoardState {
  return order.reduce((state, i) => produce(state, (d) => fold(d as Draft<BoardState>, folds[i] as Fold)), initial);
}

describe('parallel folds compose (rules 81–84)', () => {
  const foldArb: fc.Arbitrary<Fold> = fc.oneof(
    fc.record({ kind: fc.constant('push' as const), v: fc.string({ maxLength: 2 }) }),
    fc.record({ kind: fc.constant('edit' as const), index: fc.integer({ min: 0, max: 5 }), v: fc.string({ maxLength: 2 }) }),
    fc.record({ kind: fc.constant('editId' as const), id: fc.constantFrom('n0', 'n1', 'n2', 'n3'), v: fc.string({ maxLength: 2 }) }),
    fc.record({ kind: fc.constant('remove' as const), index: fc.integer({ min: 0, max: 5 }) }),
    fc.record({ kind: fc.constant('count' as const), by: fc.integer({ min: 1, max: 9 }) }),
    fc.record({ kind: fc.constant('same' as const), v: fc.string({ maxLength: 2 }) }),
  );
  const stateArb = fc.array(fc.string({ maxLength: 2 }), { maxLength: 4 }).map((vs): BoardState => ({ items: vs.map((v, i) => ({ id: `n${i}`, v })), count: 0, last: '' }));
  const waveArb = fc.array(foldArb, { minLength: 1, maxLength: 8 }).chain((folds) => fc.tuple(fc.constant(folds), fc.shuffledSubarray(folds.map((_f, i) => i), { minLength: folds.length, maxLength: folds.length })));

  it('rules 80, 81, 82, 83, 84: property: for any parent state, wave of 1–8 children and completion order (pushes, in-place edits, removals, edits of one path), the afterSubAgent folds with ctx.updateState equal running them one after another in recorded order, without locks; afterSubAgent fires once per child', async () => {
    await fc.assert(
      fc.asyncProperty(stateArb, waveArb, async (initial, [folds, order]) => {
        const { result, afterSubAgent } = await wave(initial, folds, order);
        expect(result.status).toBe('completed');
        expect(afterSubAgent).toEqual(order);
        expect(result.state).toEqual(sequential(initial, folds, order));
      }),
      { numRuns: 500 },
    );
  }, 120_000);

  it('rules 80, 81, 82, 83, 84: property: children that finish concurrently (random delays, no gates, afterSubAgent handlers that yield before their fold): the state equals running the folds one after another in the order they were recorded, and each child is folded exactly once', async () => {
    const concurrent = fc.array(fc.tuple(foldArb, fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 3 })), { minLength: 1, maxLength: 8 });
    await fc.assert(
      fc.asyncProperty(stateArb, concurrent, async (initial, children) => {
        const folds = children.map(([f]) => f);
        const { result, applied } = await concurrentWave(initial, folds, children.map(([, delay]) => delay), children.map(([, , yields]) => yields));
        expect(result.status).toBe('completed');
        expect([...applied].sort((a, b) => a - b)).toEqual(folds.map((_f, i) => i));
        expect(result.state).toEqual(sequential(initial, folds, applied));
      }),
      { numRuns: 500 },
    );
  }, 120_000);

  it('rule 81: property: children with disjoint edits give the same state whatever order they finish in', async () => {
    const disjoint = fc.array(fc.string({ maxLength: 2 }), { minLength: 1, maxLength: 4 }).chain((vs) =>
      fc.tuple(fc.constant(vs.map((v, i): Fold => ({ kind: 'editId', id: `n${i}`, v }))), fc.shuffledSubarray(vs.map((_v, i) => i), { minLength: vs.length, maxLength: vs.length })),
    );
    await fc.assert(
      fc.asyncProperty(disjoint, async ([folds, order]) => {
        const initial: BoardState = { items: folds.map((_f, i) => ({ id: `n${i}`, v: '' })), count: 0, last: '' };
        const { result } = await wave(initial, folds, order);
        expect(result.state).toEqual(sequential(initial, folds, folds.map((_f, i) => i)));
      }),
      { numRuns: 500 },
    );
  }, 120_000);
});
