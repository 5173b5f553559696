// What a hook's context and a tool's context carry (runtime/hook-context.ts, runtime/tool-context.ts),
// field by field, as the mutation run of those files found them loosely pinned: ids, the idempotency
// key of each, the attempt, the attribution of the run, the run metadata (rule 203), the hookContext
// given by reference (rule 202), getState, and what emit() and emitCustom() write.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, defineTool, type HookContext, type StreamChunk, type ToolContext } from '../index.js';
import { createScriptedModel } from '../testing/index.js';
import { collect, setup } from './harness.js';

type Seen = { point: string; ctx: Record<string, unknown> };

function snapshot(ctx: HookContext<unknown, unknown> | ToolContext): Record<string, unknown> {
  const c = ctx as unknown as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const key of ['sessionId', 'runId', 'agentType', 'streamId', 'parentSessionId', 'parentToolCallId', 'userId', 'tags', 'metadata', 'idempotencyKey', 'attempt', 'hookPoint', 'stepCount', 'toolCallId']) {
    if (key in c) out[key] = c[key];
  }
  out['hookContext'] = c['hookContext'];
  out['state'] = (ctx as { getState(): unknown }).getState();
  return out;
}

describe('hook and tool contexts', () => {
  it('rules 202, 203: every field of a hook context and a tool context, for a run with attribution and a hookContext', async () => {
    const seen: Seen[] = [];
    const resources = { db: { name: 'db' } };
    let hookUsage: unknown;
    let hookCounts: unknown;
    const look = defineTool({
      name: 'look',
      description: 'looks',
      inputSchema: z.object({}),
      execute: async (_input, ctx) => {
        seen.push({ point: 'tool', ctx: snapshot(ctx) });
        await ctx.emitCustom('tool.custom', { from: 'tool' });
        ctx.updateState<{ n: number }>((d) => {
          d.n += 1;
        });
        return 'seen';
      },
    });
    const agent = defineAgent({
      name: 'ctx-agent',
      llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'look', args: {}, id: 'c1' }], usage: { inputTokens: 10, outputTokens: 4 } }, { text: 'done' }]) },
      tools: [look],
      stateSchema: z.object({ n: z.number().default(0) }),
      hooks: {
        onAgentStart: async (_p, ctx) => {
          seen.push({ point: 'onAgentStart', ctx: snapshot(ctx) });
          await ctx.emit({ type: 'custom', eventName: 'hook.emit', data: 1, streamId: 'forged', runId: 'forged' } as never);
          await ctx.emitCustom('hook.custom', { from: 'hook' });
        },
        beforeTool: (_p, ctx) => {
          seen.push({ point: 'beforeTool', ctx: snapshot(ctx) });
        },
        afterTool: (_p, ctx) => {
          seen.push({ point: 'afterTool', ctx: snapshot(ctx) });
          hookUsage = ctx.tokenUsage;
          hookCounts = ctx.toolCallCounts;
        },
      },
    });
    const { executor, streamManager } = setup({ executor: { generateId: (kind) => `${kind}-1` } });
    const handle = await executor.execute(agent, 'go', { sessionId: 's1', parentSessionId: 'p1', userId: 'u1', tags: ['a', 'b'], metadata: { k: 'v' }, hookContext: resources });
    const result = await handle.result();
    expect(result.status).toBe('completed');
    const runId = result.runId;
    const common = { sessionId: 's1', runId, agentType: 'ctx-agent', userId: 'u1', tags: ['a', 'b'], metadata: { k: 'v' }, attempt: 1 };
    const [start, before, tool, after] = seen;
    expect(start).toEqual({ point: 'onAgentStart', ctx: { ...common, streamId: 's1', parentSessionId: 'p1', hookPoint: 'onAgentStart', idempotencyKey: `${runId}:0:-:onAgentStart`, stepCount: 0, hookContext: resources, state: { n: 0 } } });
    expect(start!.ctx['hookContext']).toBe(resources);
    expect(before).toEqual({ point: 'beforeTool', ctx: { ...common, streamId: 's1', parentSessionId: 'p1', hookPoint: 'beforeTool', idempotencyKey: `${runId}:0:c1:beforeTool`, stepCount: 0, hookContext: resources, state: { n: 0 } } });
    expect(tool).toEqual({ point: 'tool', ctx: { ...common, toolCallId: 'c1', idempotencyKey: `${runId}:0:c1:look`, stepCount: 0, hookContext: resources, state: { n: 0 } } });
    expect(tool!.ctx['hookContext']).toBe(resources);
    expect(after!.ctx).toMatchObject({ hookPoint: 'afterTool', state: { n: 1 } });
    expect(hookCounts).toEqual({ look: 1 });
    expect(hookUsage).toMatchObject({ inputTokens: 10, outputTokens: 4 });
    const chunks = await collect(streamManager.read('s1', { follow: false }));
    const customs = chunks.filter((c): c is Extract<StreamChunk, { type: 'custom' }> => c.type === 'custom');
    expect(customs.map((c) => [c.eventName, c.data, c.streamId, c.runId, c.agentType])).toEqual([
      ['hook.emit', 1, 's1', runId, 'ctx-agent'],
      ['hook.custom', { from: 'hook' }, 's1', runId, 'ctx-agent'],
      ['tool.custom', { from: 'tool' }, 's1', runId, 'ctx-agent'],
    ]);
  });

  it('a run without attribution: its contexts have no userId, tags, metadata, parentSessionId or parentToolCallId', async () => {
    const seen: Seen[] = [];
    const look = defineTool({ name: 'look', description: 'looks', inputSchema: z.object({}), execute: async (_i, ctx) => (seen.push({ point: 'tool', ctx: snapshot(ctx) }), 'x') });
    const agent = defineAgent({
      name: 'plain',
      llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'look', args: {}, id: 'c1' }] }, { text: 'done' }]) },
      tools: [look],
      hooks: { onAgentStart: (_p, ctx) => void seen.push({ point: 'start', ctx: snapshot(ctx) }) },
    });
    const { executor } = setup();
    await (await executor.execute(agent, 'go', { sessionId: 's2' })).result();
    for (const { point, ctx } of seen) {
      for (const key of ['userId', 'tags', 'metadata', 'parentSessionId', 'parentToolCallId']) expect(ctx[key]).toBeUndefined();
      // A tool's context leaves them out altogether.
      if (point === 'tool') for (const key of ['userId', 'tags', 'metadata']) expect(ctx).not.toHaveProperty(key);
      expect(ctx['hookContext']).toBeUndefined();
    }
    expect(seen).toHaveLength(2);
  });
});
