import { describe, expect, it } from 'vitest';
import type { HookContext, StreamChunk } from '../index.js';
import { createHookRecorder } from '../testing/index.js';
import { collect, counterAgent, finish, setup, textAgent } from './harness.js';

describe('HookContext (section 1.9)', () => {
  it('rules 117, 123: the context carries sessionId, runId, agentType, streamId, stepCount, abortSignal, userId, tags, metadata', async () => {
    const { executor } = setup();
    const seen: Record<string, unknown>[] = [];
    const capture = (_p: unknown, ctx: HookContext) =>
      void seen.push({
        sessionId: ctx.sessionId,
        runId: ctx.runId,
        agentType: ctx.agentType,
        streamId: ctx.streamId,
        stepCount: ctx.stepCount,
        aborted: ctx.abortSignal.aborted,
        userId: ctx.userId,
        tags: ctx.tags,
        metadata: ctx.metadata,
        parentSessionId: ctx.parentSessionId,
      });
    const handle = await executor.execute(counterAgent([finish('x')]), 'go', {
      sessionId: 'conversation-123',
      userId: 'user-456',
      tags: ['production', 'premium'],
      metadata: { environment: 'production' },
      hooks: { onAgentStart: capture, onAgentComplete: capture },
    });
    await handle.result();
    expect(seen[0]).toEqual({
      sessionId: 'conversation-123',
      runId: handle.runId,
      agentType: 'counter',
      streamId: 'conversation-123',
      stepCount: 0,
      aborted: false,
      userId: 'user-456',
      tags: ['production', 'premium'],
      metadata: { environment: 'production' },
      parentSessionId: undefined,
    });
    expect(seen[1]).toMatchObject({ stepCount: 1 });
  });

  it('rules 121, 122: emit() writes a chunk and emitCustom() writes { type: custom, eventName, data } that stream readers see', async () => {
    const { executor } = setup();
    const agent = counterAgent([finish('x')], {
      hooks: {
        onAgentStart: async (_p, ctx) => {
          await ctx.emit({ type: 'custom', agentId: ctx.sessionId, agentType: ctx.agentType, timestamp: Date.now(), eventName: 'tool_starting', data: { a: 1 } });
          await ctx.emitCustom('agent.initialized', { agent: ctx.agentType });
        },
      },
    });
    const handle = await executor.execute(agent, 'go');
    const chunks = await collect(handle.stream());
    const custom = chunks.filter((c): c is Extract<StreamChunk, { type: 'custom' }> => c.type === 'custom');
    expect(custom.map((c) => [c.eventName, c.data])).toEqual([
      ['tool_starting', { a: 1 }],
      ['agent.initialized', { agent: 'counter' }],
    ]);
    expect(custom.every((c) => c.runId === handle.runId && c.streamId === handle.streamId)).toBe(true);
  });
});

describe('streaming', () => {
  it('a run writes the documented chunk types in order and a live reader sees them all exactly once', async () => {
    const { executor } = setup();
    const handle = await executor.execute(counterAgent([{ text: 'thinking', toolCalls: [{ name: 'increment', args: { by: 1 } }] }, finish('x')]), 'go');
    const live = collect(handle.stream());
    const chunks = await live;
    expect(chunks.map((c) => c.type)).toEqual([
      'run_started',
      'step_start',
      'text_delta',
      'actions_requested',
      'tool_start',
      'state_patch',
      'tool_end',
      'actions_completed',
      'step_start',
      'actions_requested',
      'actions_completed',
      'end',
    ]);
    expect(chunks.map((c) => c.seq)).toEqual(chunks.map((_c, i) => chunks[0]!.seq + i));
    expect(chunks.at(-1)).toMatchObject({ type: 'end', output: { answer: 'x' }, state: { count: 1 }, usage: { inputTokens: 0, outputTokens: 0 } });
    expect(chunks.find((c) => c.type === 'actions_requested')).toMatchObject({ stepIndex: 0, calls: [{ toolName: 'increment', args: { by: 1 } }] });
    expect(chunks.find((c) => c.type === 'actions_completed')).toMatchObject({ stepIndex: 0, results: [{ toolName: 'increment', output: { ok: true, by: 1 }, isError: false }] });
  });

  it('a reader can read a run after it ended, and from an offset', async () => {
    const { executor, streamManager } = setup();
    const handle = await executor.execute(textAgent([{ text: 'done' }]), 'go');
    await handle.result();
    const all = await collect(handle.stream());
    expect(all.at(-1)?.type).toBe('end');
    const tail = await collect(streamManager.read(handle.streamId, { fromSeq: 2, follow: false }));
    expect(tail).toEqual(all.slice(2));
  });

  it("two turns on one session share its stream; each handle's stream has only its own run", async () => {
    const { executor, streamManager } = setup();
    const agent = textAgent([{ text: 'one' }, { text: 'two' }]);
    const h1 = await executor.execute(agent, 'a', { sessionId: 's' });
    await h1.result();
    const h2 = await executor.execute(agent, 'b', { sessionId: 's' });
    await h2.result();
    const second = await collect(h2.stream());
    expect(second.every((c) => c.runId === h2.runId)).toBe(true);
    expect(second[0]?.type).toBe('run_started');
    expect(streamManager.chunks('s').filter((c) => c.type === 'run_started')).toHaveLength(2);
  });
});

describe('usage (rule 138)', () => {
  it('rule 138: getUsageRollup() gives tokens (prompt, completion, total, cached, cacheWrite), model calls and tool stats', async () => {
    const { executor, usageStore } = setup();
    const agent = counterAgent([
      { toolCalls: [{ name: 'increment', args: { by: 1 } }, { name: 'increment', args: { by: 2 } }], usage: { inputTokens: 50, outputTokens: 10, cachedInputTokens: 20 } },
      { ...finish('x'), usage: { inputTokens: 70, outputTokens: 5, cacheWriteTokens: 30 } },
    ]);
    const handle = await executor.execute(agent, 'go', { usageStore });
    await handle.result();
    const rollup = await handle.getUsageRollup();
    expect(rollup?.tokens).toMatchObject({ prompt: 120, completion: 15, total: 135, cached: 20, cacheWrite: 30 });
    expect(rollup?.modelCalls).toBe(2);
    expect(rollup?.toolStats.totalCalls).toBe(2);
    expect(rollup?.toolStats.byTool['increment']).toMatchObject({ calls: 2, failures: 0 });
  });

  it('getUsageRollup() is undefined without a usageStore', async () => {
    const { executor } = setup();
    const handle = await executor.execute(textAgent([{ text: 'x' }]), 'go');
    await handle.result();
    expect(await handle.getUsageRollup()).toBeUndefined();
  });

  it('rule 138: records usage separately from hooks: a run with no hooks still has its rollup', async () => {
    const { executor, usageStore } = setup();
    const rec = createHookRecorder({ points: [] });
    const handle = await executor.execute(textAgent([{ text: 'x', usage: { inputTokens: 3, outputTokens: 4 } }]), 'go', { usageStore, hooks: rec.hooks });
    await handle.result();
    expect((await usageStore.getRollup({ sessionId: handle.sessionId })).tokens.total).toBe(7);
  });
});
