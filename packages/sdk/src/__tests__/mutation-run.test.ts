// What a run does with its working data (runtime/run.ts), as the fifth mutation run found it loosely
// pinned: the refusal of a conversation edit that touches committed rows, a hook's state write the schema
// refuses, the state of a failing run over maxStateChars, the log lines of a usage store and of a stream
// write that fail, and the state_patch chunks of tool and hook writes.
import { describe, expect, it } from 'vitest';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { defineAgent, InMemoryStateStore, InMemoryStreamManager, JSAgentExecutor, type StreamChunk, type StreamManager } from '../index.js';
import type { StreamWriter } from '../stream.js';
import { createScriptedModel } from '../testing/index.js';
import { counterAgent, finish, memoryLogger, setup, textAgent } from './harness.js';


/** In-memory streams whose writers are the in-memory ones with `writes` (built from the inner writer) on top. */
function wrappedStreams(writes: (writer: StreamWriter) => Partial<StreamWriter>): StreamManager {
  const inner = new InMemoryStreamManager();
  return {
    async claim(streamId, runId) {
      const writer = await inner.claim(streamId, runId);
      return {
        get startSeq() {
          return writer.startSeq;
        },
        get owned() {
          return writer.owned;
        },
        write: (chunk: Parameters<StreamWriter['write']>[0]) => writer.write(chunk),
        ...writes(writer),
      } as StreamWriter;
    },
    read: (streamId, options) => inner.read(streamId, options),
    deleteStream: (streamId) => inner.deleteStream(streamId),
  };
}

/** In-memory streams whose writers refuse every text delta (`delta lost`) and write every other chunk. */
function deltaFailingStreams(): StreamManager {
  return wrappedStreams((writer) => ({
    write: (chunk) => (chunk.type === 'text_delta' ? Promise.reject(new Error('delta lost')) : writer.write(chunk)),
  }));
}
describe('ctx.updateMessages', () => {
  it('an edit that removes a committed row is refused with a ConfigError that says how many rows are committed and what to do instead', async () => {
    let refusal: unknown;
    const agent = textAgent([{ text: 'one' }], {
      hooks: {
        afterLLMCall: async (_p, ctx) => {
          refusal = await ctx.updateMessages((rows) => void rows.splice(0, 1)).then(
            () => undefined,
            (e: unknown) => e,
          );
        },
      },
    });
    const result = await (await setup().executor.execute(agent, 'go')).result();
    expect(result.status).toBe('completed');
    expect(refusal).toMatchObject({
      code: 'config_invalid',
      message:
        'updateMessages() may replace rows of the current step and append rows, not change or remove committed rows (1 are committed); return { messages } from beforeLLMCall to rewrite earlier rows for one call.',
    });
  });

  it('an edit that changes a committed row in place is refused; replacing a row of the current step and appending one are kept', async () => {
    let refusal: unknown;
    const seen: string[] = [];
    const agent = textAgent([{ text: 'one' }], {
      hooks: {
        onMessage: (p) => void seen.push(`${p.message.role}:${p.messageIndex}`),
        onExit: async (_p, ctx) => {
          refusal = await ctx.updateMessages((rows) => void (rows[0] = { role: 'user', content: 'changed' })).then(
            () => undefined,
            (e: unknown) => e,
          );
          await ctx.updateMessages((rows) => {
            rows[1] = { role: 'assistant', content: 'replaced' };
            rows.push({ role: 'user', content: 'appended' });
          });
        },
      },
    });
    const { executor, stateStore } = setup();
    const handle = await executor.execute(agent, 'go');
    await handle.result();
    expect(refusal).toMatchObject({ code: 'config_invalid' });
    const rows = (await stateStore.loadSession(handle.sessionId))!.messages;
    expect(rows.map((m) => m.content)).toEqual(['go', 'replaced', 'appended']);
    expect(seen).toEqual(['user:0', 'assistant:1', 'user:2']);
  });
});

describe('state writes', () => {
  it("a hook's write the stateSchema refuses is dropped with state_invalid naming the agent, the source and the issues", async () => {
    let refusal: unknown;
    const agent = counterAgent([finish('x')], {
      hooks: {
        onAgentStart: (_p, ctx) => {
          try {
            ctx.updateState((d) => void ((d as { count: unknown }).count = 'many'));
          } catch (error) {
            refusal = error;
          }
        },
      },
    });
    const result = await (await setup().executor.execute(agent, 'go')).result();
    expect(result.state).toMatchObject({ count: 0 });
    expect(refusal).toMatchObject({
      code: 'state_invalid',
      message: "A hook's state write does not match counter's stateSchema; it was dropped.",
      info: { details: { source: 'hook', issues: [expect.objectContaining({ path: ['count'] })] } },
    });
  });

  it("a tool's write streams a state_patch naming the tool; a hook's names none", async () => {
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 } }] }, finish('x')], {
      hooks: { onAgentStart: (_p, ctx) => ctx.updateState((d) => void (d.count = 10)) },
    });
    const { executor, streamManager } = setup();
    const handle = await executor.execute(agent, 'go');
    await handle.result();
    const patches = streamManager.chunks(handle.sessionId).filter((c) => c.type === 'state_patch') as (StreamChunk & { source: string; toolName?: string })[];
    expect(patches.map((p) => [p.source, p.toolName])).toEqual([
      ['hook', undefined],
      ['tool', 'increment'],
    ]);
    expect('toolName' in patches[0]!).toBe(false);
  });

  it('a failing run whose kept state is over maxStateChars logs it and ends with its committed state', async () => {
    // afterLLMCall's writes are kept by a failure after the reply, so the terminal commit meets the large state.
    const agent = counterAgent([finish('x')], { hooks: { afterLLMCall: (_p, ctx) => ctx.updateState((d) => void d.log.push('x'.repeat(200))) } });
    const { executor, logger } = setup({ executor: { limits: { maxStateChars: 100 } } });
    const handle = await executor.execute(agent, 'go');
    const result = await handle.result();
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('run_state_too_large');
    expect(result.state).toEqual({ count: 0, log: [] });
    expect(logger.lines.some((l) => new RegExp(`^warn: the state of failing run ${handle.runId} is \\d+ characters long, over limits\\.maxStateChars \\(100\\); its uncommitted writes are dropped$`).test(l))).toBe(true);
  });
});

describe('best-effort writes', () => {
  it('a usage store that fails is logged; the run completes', async () => {
    const { executor, logger } = setup();
    const usageStore = { record: () => Promise.reject(new Error('usage db down')), getRollup: () => Promise.reject(new Error('unused')) };
    const result = await (await executor.execute(textAgent([{ text: 'hi', usage: { inputTokens: 3, outputTokens: 1 } }]), 'go', { usageStore: usageStore as never })).result();
    expect(result.status).toBe('completed');
    expect(logger.lines).toContain('error: usage store write failed: usage db down');
  });

  it('a text delta the stream cannot take is logged as a failed stream write; the run completes', async () => {
    const streams = deltaFailingStreams();
    const logger = memoryLogger();
    const executor = new JSAgentExecutor(new InMemoryStateStore(), streams, new VercelAIAdapter(), { logger });
    const result = await (await executor.execute(textAgent([{ text: 'hello' }]), 'go')).result();
    expect(result.status).toBe('completed');
    expect(logger.lines).toContain('error: stream write failed: delta lost');
  });
});

/** A logger that keeps each line with its fields. */
function fieldLogger() {
  const lines: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
  const keep = (level: string) => (message: string, fields?: Record<string, unknown>) => void lines.push({ level, message, ...(fields ? { fields } : {}) });
  return { lines, debug: keep('debug'), info: keep('info'), warn: keep('warn'), error: keep('error') };
}

describe('more edits of the conversation', () => {
  it('replacing a row of the current step (same length) is kept; changing one of several committed rows is refused', async () => {
    let refusal: unknown;
    const agent = textAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 } }] }, { text: 'two' }], {
      hooks: {
        onExit: async (_p, ctx) => {
          // Committed: the input, the first reply and its tool row; the current step: the reply 'two'.
          refusal = await ctx.updateMessages((rows) => void (rows[1] = { role: 'assistant', content: 'rewritten history' })).then(
            () => undefined,
            (e: unknown) => e,
          );
          await ctx.updateMessages((rows) => void (rows[3] = { role: 'assistant', content: 'replaced' }));
        },
      },
    });
    const { executor, stateStore } = setup();
    const handle = await executor.execute(agent, 'go');
    await handle.result();
    expect(refusal).toMatchObject({ code: 'config_invalid', message: expect.stringContaining('(3 are committed)') });
    const rows = (await stateStore.loadSession(handle.sessionId))!.messages;
    expect(rows.map((m) => m.content)).toEqual(['go', '', expect.anything(), 'replaced']);
  });
});

describe('writes that change nothing, and agents without a schema', () => {
  it('a write that changes nothing streams no state_patch and fires no onStateChange', async () => {
    let changes = 0;
    const agent = counterAgent([finish('x')], {
      hooks: {
        onAgentStart: (_p, ctx) => ctx.updateState((d) => void (d.count = 0)),
        onStateChange: () => void changes++,
      },
    });
    const { executor, streamManager } = setup();
    const handle = await executor.execute(agent, 'go');
    await handle.result();
    expect(streamManager.chunks(handle.sessionId).some((c) => c.type === 'state_patch')).toBe(false);
    expect(changes).toBe(0);
  });

  it("a hook's write on an agent without a stateSchema is kept", async () => {
    const agent = defineAgent({
      name: 'schemaless',
      llmConfig: { model: createScriptedModel([{ text: 'ok' }]) },
      hooks: { onAgentStart: (_p, ctx) => ctx.updateState((d) => void ((d as Record<string, unknown>)['seen'] = true)) },
    });
    const result = await (await setup().executor.execute(agent, 'go')).result();
    expect(result).toMatchObject({ status: 'completed', state: { seen: true } });
  });
});

describe('log fields, durations and usage', () => {
  it('the log lines of a failed usage write, a failed stream write and an oversized failing state carry the run id', async () => {
    const logger = fieldLogger();
    const streams = deltaFailingStreams();
    const executor = new JSAgentExecutor(new InMemoryStateStore(), streams, new VercelAIAdapter(), { logger, limits: { maxStateChars: 100 } });
    const usageStore = { record: () => Promise.reject(new Error('usage db down')), getRollup: () => Promise.reject(new Error('unused')) };
    const agent = counterAgent([{ ...finish('x'), text: 'hello' }], { hooks: { afterLLMCall: (_p, ctx) => ctx.updateState((d) => void d.log.push('x'.repeat(200))) } });
    const handle = await executor.execute(agent, 'go', { usageStore: usageStore as never });
    await handle.result();
    const fieldsOf = (start: string) => logger.lines.find((l) => l.message.startsWith(start))?.fields;
    expect(fieldsOf('stream write failed')).toEqual({ runId: handle.runId });
    expect(fieldsOf('the state of failing run')).toEqual({ runId: handle.runId });
    expect(fieldsOf('usage store write failed')).toEqual({ runId: handle.runId });
  });

  it("a result's durationMs is the run's own duration", async () => {
    const before = Date.now();
    const result = await (await setup().executor.execute(textAgent([{ text: 'hi' }]), 'go')).result();
    expect(result.durationMs).toBeGreaterThanOrEqual(0);
    expect(result.durationMs).toBeLessThanOrEqual(Date.now() - before);
  });

  it('the end chunk reports a cost only for an agent with pricing', async () => {
    const usage = { inputTokens: 1_000, outputTokens: 1_000 };
    const priced = counterAgent([{ ...finish('x'), usage }], { limits: { pricing: { inputPerMillion: 1, outputPerMillion: 2 } } });
    const plain = counterAgent([{ ...finish('x'), usage }]);
    const endOf = async (agent: typeof plain) => {
      const { executor, streamManager } = setup();
      const handle = await executor.execute(agent, 'go');
      await handle.result();
      return streamManager.chunks(handle.sessionId).find((c) => c.type === 'end') as StreamChunk & { usage: Record<string, unknown> };
    };
    expect((await endOf(priced)).usage['costUsd']).toBeCloseTo(0.003);
    expect('costUsd' in (await endOf(plain)).usage).toBe(false);
  });
});

describe('a writer that queues', () => {
  it("non-terminal chunks go to the writer's queue, terminal ones are written; a queue that throws is logged", async () => {
    const written: string[] = [];
    const queued: string[] = [];
    const logger = fieldLogger();
    const streams = wrappedStreams((writer) => ({
      write: (chunk) => (written.push(chunk.type), writer.write(chunk)),
      queue: (chunk) => {
        queued.push(chunk.type);
        if (chunk.type === 'text_delta') throw new Error('queue full');
        void writer.write(chunk);
      },
    }));
    const executor = new JSAgentExecutor(new InMemoryStateStore(), streams, new VercelAIAdapter(), { logger });
    const handle = await executor.execute(textAgent([{ text: 'hello' }]), 'go');
    expect((await handle.result()).status).toBe('completed');
    expect(queued).toContain('step_start');
    expect(queued).toContain('text_delta');
    expect(queued).not.toContain('end');
    expect(written).toContain('end');
    expect(written).not.toContain('step_start');
    expect(logger.lines.find((l) => l.message === 'stream write failed: queue full')?.fields).toEqual({ runId: handle.runId });
  });
});

describe('the index of an appended row', () => {
  it('an afterTool rewrite replaces the row it rewrites when an async onMessage handler is waited for first', async () => {
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 }, id: 'c1' }] }, finish('x')], {
      hooks: {
        onMessage: async () => {
          await new Promise((r) => setTimeout(r, 1));
        },
        afterTool: () => ({ result: 'rewritten' }),
      },
    });
    const { executor, stateStore } = setup();
    const handle = await executor.execute(agent, 'go');
    expect((await handle.result()).status).toBe('completed');
    const rows = (await stateStore.loadSession(handle.sessionId))!.messages;
    const toolRows = rows.filter((m) => m.role === 'tool');
    expect(toolRows.find((m) => m.toolCallId === 'c1')?.content).toBe('rewritten');
    expect(toolRows.filter((m) => m.toolCallId === 'c1')).toHaveLength(1);
  });
});
