// A hook context is built on every hook invocation, so it holds only the invocation's own facts (its
// point, its write scope, its step) and reads the run's fields through accessors (runtime/hook-context.ts).
// These tests pin what that must not change: the fields read the same at any time, the idempotency key
// keeps the step the invocation belonged to, and JSON.stringify(ctx) writes the fields, not the run.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, defineTool, type HookContext } from '../index.js';
import { createScriptedModel } from '../testing/index.js';
import { setup } from './harness.js';

const echo = defineTool({ name: 'echo', description: 'echoes', inputSchema: z.object({ n: z.number() }), execute: async ({ n }) => n });

function agent(steps: number) {
  return defineAgent({
    name: 'ctx-agent',
    llmConfig: { model: createScriptedModel([...Array.from({ length: steps }, (_, i) => ({ toolCalls: [{ name: 'echo', args: { n: i } }] })), { text: 'done' }]) },
    tools: [echo],
    maxSteps: steps + 2,
  });
}

describe('hook context fields', () => {
  it("a context kept past its step: idempotencyKey keeps the invocation's step while stepCount reads the live run", async () => {
    const { executor } = setup();
    const kept: { ctx: HookContext<unknown, unknown>; step: number; key: string }[] = [];
    const handle = await executor.execute(agent(3), 'go', {
      hooks: {
        afterTool: (payload, ctx) => {
          kept.push({ ctx, step: ctx.stepCount, key: ctx.idempotencyKey });
        },
      },
    });
    const result = await handle.result();
    expect(result.status).toBe('completed');
    expect(kept.map((k) => k.step)).toEqual([0, 1, 2]);
    for (const { ctx, step, key } of kept) {
      // Read after the run ended: the key is the one the invocation saw, with its own step.
      expect(ctx.idempotencyKey).toBe(key);
      expect(ctx.idempotencyKey.split(':')[1]).toBe(String(step));
      expect(ctx.idempotencyKey.endsWith(':afterTool')).toBe(true);
      expect(ctx.stepCount).toBe(result.stepCount);
    }
    // Each invocation has its own key.
    expect(new Set(kept.map((k) => k.key)).size).toBe(3);
  });

  it("the run's fields read the same during and after the run, for a run with attribution", async () => {
    const { executor } = setup();
    let during: Record<string, unknown> | undefined;
    let ctx: HookContext<unknown, unknown> | undefined;
    const handle = await executor.execute(agent(1), 'go', {
      sessionId: 'sess-ctx',
      userId: 'user-1',
      tags: ['a', 'b'],
      metadata: { team: 'x' },
      hooks: {
        beforeTool: (_payload, c) => {
          ctx = c;
          during = { sessionId: c.sessionId, runId: c.runId, agentType: c.agentType, streamId: c.streamId, userId: c.userId, tags: c.tags, metadata: c.metadata, attempt: c.attempt, hookPoint: c.hookPoint };
        },
      },
    });
    const result = await handle.result();
    const c = ctx!;
    expect(during).toEqual({ sessionId: 'sess-ctx', runId: result.runId, agentType: 'ctx-agent', streamId: 'sess-ctx', userId: 'user-1', tags: ['a', 'b'], metadata: { team: 'x' }, attempt: 1, hookPoint: 'beforeTool' });
    expect({ sessionId: c.sessionId, runId: c.runId, agentType: c.agentType, streamId: c.streamId, userId: c.userId, tags: c.tags, metadata: c.metadata, attempt: c.attempt, hookPoint: c.hookPoint }).toEqual(during);
    // An optional field the run does not have is absent, not present as undefined (exactOptionalPropertyTypes).
    expect('parentSessionId' in c).toBe(false);
    expect('parentToolCallId' in c).toBe(false);
    expect('userId' in c).toBe(true);
  });

  it("JSON.stringify(ctx) writes the context's fields and none of the run's internals", async () => {
    const { executor } = setup();
    let json: Record<string, unknown> | undefined;
    const handle = await executor.execute(agent(1), 'go', {
      sessionId: 'sess-json',
      userId: 'u',
      hooks: {
        afterLLMCall: (_payload, ctx) => {
          json ??= JSON.parse(JSON.stringify(ctx)) as Record<string, unknown>;
        },
      },
    });
    const result = await handle.result();
    expect(json).toMatchObject({ sessionId: 'sess-json', runId: result.runId, agentType: 'ctx-agent', streamId: 'sess-json', userId: 'u', attempt: 1, hookPoint: 'afterLLMCall', stepCount: 0 });
    expect(json!['idempotencyKey']).toBe(`${result.runId}:0:-:afterLLMCall`);
    expect(json!['tokenUsage']).toEqual(expect.objectContaining({ inputTokens: expect.any(Number) }));
    for (const internal of ['host', 'scope', 'step', 'setup']) expect(Object.keys(json!)).not.toContain(internal);
  });

  it("a signal hook's context: its own fields are set on it and written by toJSON", async () => {
    const { executor } = setup();
    let json: Record<string, unknown> | undefined;
    let reason: unknown;
    let pending: unknown;
    const waiting = defineTool({ name: 'ask', description: 'asks a person', inputSchema: z.object({}), needsApproval: true, execute: async () => 'ok' });
    const approving = defineAgent({ name: 'ctx-approval', llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'ask', args: {} }] }, { text: 'done' }]) }, tools: [waiting] });
    const handle = await executor.execute(approving, 'go', {
      hooks: {
        onAgentSuspended: (ctx) => {
          reason = ctx.reason;
          pending = ctx.pendingToolCallIds;
          json = JSON.parse(JSON.stringify(ctx)) as Record<string, unknown>;
        },
      },
    });
    const result = await handle.result();
    expect(result.status).toBe('suspended');
    expect(typeof reason).toBe('string');
    expect(pending).toHaveLength(1);
    expect(json).toMatchObject({ reason, pendingToolCallIds: pending, hookPoint: 'onAgentSuspended', runId: result.runId });
  });
});
