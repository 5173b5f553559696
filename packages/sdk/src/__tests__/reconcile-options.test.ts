import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import {
  defineTool,
  InMemoryStateStore,
  InMemoryStreamManager,
  JSAgentExecutor,
  type AfterLLMCallPayload,
  type AgentHooks,
  type HookContext,
  type JSAgentExecutorOptions,
  type LLMAdapter,
  type MessagePayload,
  type ToolResultMessage,
} from '../index.js';
import type { StreamChunkInput, StreamWriter } from '../stream.js';
import { counterAgent, finish, incrementTool, memoryLogger, setup } from './harness.js';

// Rule 68 (onErrorFailure), the §2 reconciliation options (C2 afterLLMCallOnThrow, C6
// interruptFiresOnAgentFail, C16 rewriteBeforeOnMessage: each keeps the default policy unless set) and
// D16's ordering of hook invocations in time.

/** A stream manager whose writers fail every `warning` chunk (the error report of a retried model attempt). */
class FailingWarnings extends InMemoryStreamManager {
  override async claim(streamId: string, runId: string): Promise<StreamWriter> {
    const writer = await super.claim(streamId, runId);
    return {
      get startSeq() {
        return writer.startSeq;
      },
      get owned() {
        return writer.owned;
      },
      write: (chunk: StreamChunkInput) => (chunk.type === 'warning' ? Promise.reject(new Error('stream store down')) : writer.write(chunk)),
    };
  }
}

function afterLLMCalls() {
  const seen: AfterLLMCallPayload[] = [];
  return { seen, hooks: { afterLLMCall: (p: AfterLLMCallPayload) => void seen.push(p) } satisfies AgentHooks };
}

describe('rule 68: onErrorFailure', () => {
  it('rule 68: a failed attempt whose error report cannot be written reaches afterLLMCall with onErrorFailure (stream_write_failed), settled before the hook', async () => {
    const logger = memoryLogger();
    const executor = new JSAgentExecutor(new InMemoryStateStore(), new FailingWarnings(), new VercelAIAdapter(), { logger });
    const { seen, hooks } = afterLLMCalls();
    const handle = await executor.execute(counterAgent([{ error: { status: 503, message: 'overloaded' } }, finish('ok')]), 'go', { hooks });
    expect((await handle.result()).status).toBe('completed');
    expect(seen).toHaveLength(2);
    expect(seen[0]!.error?.code).toBeDefined();
    expect(seen[0]!.onErrorFailure).toMatchObject({ code: 'stream_write_failed', layer: 'transport', severity: 'warning', details: { attempt: 1 } });
    expect(seen[0]!.onErrorFailure?.message).toContain('stream store down');
    expect(seen[1]!.onErrorFailure).toBeUndefined();
    expect(logger.lines.some((l) => l.includes('could not write the error report of model attempt 1'))).toBe(true);
  });

  it('rule 68: when the report is written, afterLLMCall has no onErrorFailure and the warning is already on the stream', async () => {
    const { executor, streamManager } = setup();
    let warningsBeforeHook = -1;
    const handle = await executor.execute(counterAgent([{ error: { status: 503 } }, finish('ok')]), 'go', {
      hooks: {
        afterLLMCall: async (p, ctx) => {
          if (p.attempt !== 1) return;
          const chunks = [];
          for await (const c of streamManager.read(ctx.streamId, { follow: false })) chunks.push(c);
          warningsBeforeHook = chunks.filter((c) => c.type === 'warning').length;
          expect(p.onErrorFailure).toBeUndefined();
        },
      },
    });
    expect((await handle.result()).status).toBe('completed');
    expect(warningsBeforeHook).toBe(1);
  });
});

const throwingAdapter: LLMAdapter = {
  generateStep: () => Promise.reject(new Error('adapter bug')),
};

describe('C2: afterLLMCallOnThrow', () => {
  async function run(options: JSAgentExecutorOptions) {
    const executor = new JSAgentExecutor(new InMemoryStateStore(), new InMemoryStreamManager(), throwingAdapter, { logger: memoryLogger(), ...options });
    const { seen, hooks } = afterLLMCalls();
    const handle = await executor.execute(counterAgent([finish('never')]), 'go', { hooks });
    return { result: await handle.result(), seen };
  }

  it('C2: by default an adapter that throws fires no afterLLMCall and the run fails with run_internal_error', async () => {
    const { result, seen } = await run({});
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('run_internal_error');
    expect(seen).toHaveLength(0);
  });

  it('C2: with afterLLMCallOnThrow the throw reaches afterLLMCall with error, threw: true and a fail plan, then the run fails the same way', async () => {
    const { result, seen } = await run({ afterLLMCallOnThrow: true });
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('run_internal_error');
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ threw: true, attempt: 1, error: { code: 'run_internal_error' }, plan: { kind: 'fail' }, result: { ok: false } });
    expect(seen[0]!.error?.message).toContain('adapter bug');
  });
});

describe('C6: interruptFiresOnAgentFail', () => {
  async function interrupted(options: JSAgentExecutorOptions) {
    // The tool waits for the stop, as a tool that passes ctx.abortSignal to its I/O does.
    const waits = defineTool({
      name: 'waits',
      description: 'waits',
      inputSchema: z.object({}),
      execute: (_i, ctx) => new Promise((_resolve, reject) => ctx.abortSignal.addEventListener('abort', () => reject(new Error('aborted')), { once: true })),
    });
    const fails: unknown[] = [];
    const { executor, stateStore } = setup({ executor: options });
    const handle = await executor.execute(counterAgent([{ toolCalls: [{ name: 'waits', args: {}, id: 'w' }] }, finish('x')], { tools: [waits] }), 'go', {
      hooks: { onAgentFail: (p) => void fails.push(p.error.code), beforeTool: () => void setTimeout(() => void handle.interrupt('enough'), 5) },
    });
    const result = await handle.result();
    return { result, fails, run: await stateStore.getRun(result.runId) };
  }

  it('C6: by default an interrupted run fires onAgentFail once with run_interrupted', async () => {
    const { result, fails } = await interrupted({});
    expect(result.status).toBe('interrupted');
    expect(fails).toEqual(['run_interrupted']);
  });

  it('C6: with interruptFiresOnAgentFail: false the interrupted run ends interrupted without onAgentFail', async () => {
    const { result, fails, run } = await interrupted({ interruptFiresOnAgentFail: false });
    expect(result.status).toBe('interrupted');
    expect(run?.status).toBe('interrupted');
    expect(run?.error?.code).toBe('run_interrupted');
    expect(fails).toEqual([]);
  });

  it('C6: interruptFiresOnAgentFail: false leaves onAgentFail of a real failure alone', async () => {
    const fails: string[] = [];
    const boom = defineTool({ name: 'boom', description: 'x', inputSchema: z.object({}), execute: () => 1 });
    const { executor } = setup({ executor: { interruptFiresOnAgentFail: false } });
    const handle = await executor.execute(counterAgent([{ error: { status: 401 } }], { tools: [boom] }), 'go', { hooks: { onAgentFail: (p) => void fails.push(p.error.code) } });
    expect((await handle.result()).status).toBe('failed');
    expect(fails).toHaveLength(1);
  });
});

describe('C16: rewriteBeforeOnMessage', () => {
  async function redacted(options: JSAgentExecutorOptions) {
    const secret = defineTool({ name: 'secret', description: 'reads a secret', inputSchema: z.object({}), execute: () => ({ card: '4111-1111' }) });
    const onMessage: unknown[] = [];
    const afterToolSaw: unknown[] = [];
    const { executor, stateStore } = setup({ executor: options });
    const handle = await executor.execute(counterAgent([{ toolCalls: [{ name: 'secret', args: {}, id: 's' }] }, finish('x')], { tools: [secret] }), 'go', {
      hooks: {
        onMessage: (p: MessagePayload) => void (p.message.role === 'tool' && p.message.toolName === 'secret' && onMessage.push(p.message.content)),
        afterTool: (p) => {
          if (p.tool.name !== 'secret') return undefined;
          afterToolSaw.push(p.result);
          return { result: { card: '****' } };
        },
      },
    });
    const result = await handle.result();
    const row = (await stateStore.loadSession(result.sessionId))!.messages.find((m): m is ToolResultMessage => m.role === 'tool');
    return { onMessage, afterToolSaw, row };
  }

  it('C16: by default onMessage sees the row as executed, afterTool the original result, and the stored row is the rewrite', async () => {
    const { onMessage, afterToolSaw, row } = await redacted({});
    expect(onMessage).toEqual([{ card: '4111-1111' }]);
    expect(afterToolSaw).toEqual([{ card: '4111-1111' }]);
    expect(row?.content).toEqual({ card: '****' });
  });

  it('C16: with rewriteBeforeOnMessage onMessage sees only the rewritten row; afterTool still gets the original result', async () => {
    const { onMessage, afterToolSaw, row } = await redacted({ rewriteBeforeOnMessage: true });
    expect(onMessage).toEqual([{ card: '****' }]);
    expect(afterToolSaw).toEqual([{ card: '4111-1111' }]);
    expect(row?.content).toEqual({ card: '****' });
  });
});

describe('D16: hook invocations are ordered in time', () => {
  it('D16: run-level hook invocations never overlap any other; parallel calls are ordered only within each call (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 0, max: 6 }), { minLength: 1, maxLength: 4 }), fc.integer({ min: 0, max: 3 }), async (delays, hookDelay) => {
        const spans: { point: string; call?: string; enter: number; exit: number; seq: number }[] = [];
        let seq = 0;
        const tick = () => new Promise((r) => setTimeout(r, hookDelay));
        const timed =
          (point: string, callOf: (p: unknown) => string | undefined = () => undefined) =>
          async (payload: unknown, _ctx: HookContext) => {
            const enter = performance.now();
            const at = seq++;
            await tick();
            const call = callOf(payload);
            spans.push({ point, ...(call === undefined ? {} : { call }), enter, exit: performance.now(), seq: at });
          };
        const toolOf = (p: unknown) => (p as { toolCall: { id: string } }).toolCall.id;
        const rowOf = (p: unknown) => {
          const m = (p as MessagePayload).message;
          return m.role === 'tool' ? m.toolCallId : undefined;
        };
        const slow = defineTool({ name: 'slow', description: 'x', inputSchema: z.object({ ms: z.number() }), execute: async (i) => new Promise((r) => setTimeout(() => r({ ms: i.ms }), i.ms)) });
        const { executor } = setup();
        const agent = counterAgent([{ toolCalls: delays.map((ms, i) => ({ name: 'slow', args: { ms }, id: `c${i}` })) }, finish('x')], { tools: [slow, incrementTool] });
        const hooks: AgentHooks = {
          onAgentStart: timed('onAgentStart'),
          beforeLLMCall: timed('beforeLLMCall'),
          afterLLMCall: timed('afterLLMCall'),
          beforeTool: timed('beforeTool', toolOf),
          afterTool: timed('afterTool', toolOf),
          onMessage: timed('onMessage', rowOf),
          onAgentComplete: timed('onAgentComplete'),
        };
        const handle = await executor.execute(agent, 'go', { hooks });
        expect((await handle.result()).status).toBe('completed');
        const runLevel = spans.filter((s) => s.call === undefined);
        // Run-level invocations: in sequence order, each ended before the next invocation of any kind began.
        for (const r of runLevel) {
          for (const o of spans) {
            if (o === r) continue;
            const disjoint = o.exit <= r.enter || r.exit <= o.enter;
            expect(disjoint, `${r.point} overlaps ${o.point}${o.call ? ` (${o.call})` : ''}`).toBe(true);
            if (o.seq > r.seq) expect(o.enter).toBeGreaterThanOrEqual(r.exit);
          }
        }
        // Within a call: beforeTool, then onMessage of its row, then afterTool, each after the previous ended.
        for (const id of delays.map((_d, i) => `c${i}`)) {
          const own = spans.filter((s) => s.call === id).sort((a, b) => a.seq - b.seq);
          expect(own.map((s) => s.point)).toEqual(['beforeTool', 'onMessage', 'afterTool']);
          for (let i = 1; i < own.length; i++) expect(own[i]!.enter).toBeGreaterThanOrEqual(own[i - 1]!.exit);
        }
      }),
      { numRuns: 12 },
    );
  });
});
