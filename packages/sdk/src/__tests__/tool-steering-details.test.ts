// The details of a refused or rewritten tool call: the error it leaves, its chunks, and afterTool rewrites.
import { describe, expect, it } from 'vitest';
import { type AfterToolPayload, type HookDecisionChunk, type StreamChunk, type ToolResultMessage } from '../index.js';
import { createGate, createHookRecorder } from '../testing/index.js';
import { bareTool, counterAgent, finish, incrementTool, setup, type Counter } from './harness.js';

const toolRow = async (stateStore: ReturnType<typeof setup>['stateStore'], sessionId: string) =>
  (await stateStore.loadSession(sessionId))!.messages.find((m): m is ToolResultMessage => m.role === 'tool')!;

describe('refused and rewritten tool calls (C13, D4)', () => {
  it('rule 218 / C13: a block with a blank reason is "Blocked by beforeTool."; the error names the hook, the handler and the tool, with no threw flag', async () => {
    const { executor, stateStore } = setup();
    const rec = createHookRecorder({ points: ['afterTool'] });
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 }, id: 'b1' }] }, finish('x')], {
      hooks: { beforeTool: function gatekeeper() {
        return { block: true as const, reason: '   ' };
      } },
    });
    const handle = await executor.execute(agent, 'go', { hooks: rec.hooks });
    await handle.result();
    const row = await toolRow(stateStore, handle.sessionId);
    expect(row.content).toBe('Tool "increment" was blocked by an agent hook: Blocked by beforeTool.');
    expect(row.errorInfo).toMatchObject({ code: 'hook_blocked', layer: 'tool', severity: 'warning', retryable: false });
    expect(row.errorInfo?.details).toEqual({ hook: 'beforeTool', name: 'gatekeeper', reason: 'Blocked by beforeTool.', tool: 'increment' });
    const after = rec.of('afterTool')[0]!.payload as AfterToolPayload;
    expect(after).toMatchObject({ blocked: true, success: false, durationMs: 0 });
    expect(after.error?.info.details).toEqual(row.errorInfo?.details);
  });

  it('D4: a blocked call still writes its tool_start and a failed tool_end (duration 0, the error) to the stream', async () => {
    const { executor, streamManager } = setup();
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 4 }, id: 'b2' }] }, finish('x')], {
      hooks: { beforeTool: () => ({ block: true as const, reason: 'no' }) },
    });
    const handle = await executor.execute(agent, 'go');
    await handle.result();
    const chunks: readonly StreamChunk[] = streamManager.chunks(handle.sessionId);
    expect(chunks.find((c) => c.type === 'tool_start')).toMatchObject({ toolCallId: 'b2', toolName: 'increment', arguments: { by: 4 } });
    expect(chunks.find((c) => c.type === 'tool_end')).toMatchObject({ toolCallId: 'b2', toolName: 'increment', success: false, durationMs: 0, error: { code: 'hook_blocked' } });
  });

  it('rule 218: a rewrite into invalid input blocks the call with a reason naming the handler and the schema errors', async () => {
    const { executor, stateStore } = setup();
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 5 } }] }, finish('x')], {
      hooks: { beforeTool: function rewriter() {
        return { input: { by: 'many' } };
      } },
    });
    const handle = await executor.execute(agent, 'go');
    expect((await handle.result()).state.count).toBe(0);
    const row = await toolRow(stateStore, handle.sessionId);
    expect(String(row.content)).toMatch(/^Tool "increment" was blocked by an agent hook: beforeTool hook "rewriter" rewrote the arguments into an invalid input:\n.+/);
    expect(row.errorInfo?.details).toMatchObject({ hook: 'beforeTool', name: 'rewriter', tool: 'increment' });
    expect(row.errorInfo?.details?.['threw']).toBeUndefined();
  });

  it('rule 218: a beforeTool return that is not an object, or an object without block or input, allows the call unchanged', async () => {
    const { executor } = setup();
    const answers: unknown[] = ['yes', 42, { note: 'looked at it' }, { block: false }, null];
    let i = 0;
    const agent = counterAgent([{ toolCalls: answers.map((_, n) => ({ name: 'increment', args: { by: 1 }, id: `a${n}` })) }, finish('x')], {
      hooks: { beforeTool: () => answers[i++] as never },
    });
    const result = await (await executor.execute(agent, 'go')).result();
    expect(result.state.count).toBe(answers.length);
  });

  it('rule 221 / C16: afterTool { result: undefined } stores null; on a failed call the rewrite keeps the row an error', async () => {
    const { executor, stateStore } = setup();
    const failing = bareTool('failing', 'always throws', () => {
      throw new Error('disk on fire');
    });
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 }, id: 'ok1' }, { name: 'failing', args: {}, id: 'bad1' }] }, finish('x')], {
      tools: [incrementTool, failing],
      hooks: { afterTool: (p) => (p.success ? { result: undefined } : { result: 'redacted failure' }) },
    });
    const handle = await executor.execute(agent, 'go');
    await handle.result();
    const rows = (await stateStore.loadSession(handle.sessionId))!.messages.filter((m): m is ToolResultMessage => m.role === 'tool');
    expect(rows.find((r) => r.toolCallId === 'ok1')).toMatchObject({ content: null });
    expect(rows.find((r) => r.toolCallId === 'bad1')).toMatchObject({ content: 'redacted failure', isError: true, errorInfo: { code: 'tool_failed' } });
  });

  it('rule 221: an afterTool handler that returns nothing leaves the row exactly as executed', async () => {
    const { executor, stateStore } = setup();
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 3 }, id: 'n1' }] }, finish('x')], {
      hooks: { afterTool: () => ({ note: 'no result key' }) as never },
    });
    const handle = await executor.execute(agent, 'go');
    await handle.result();
    expect((await toolRow(stateStore, handle.sessionId)).content).toEqual({ ok: true, by: 3 });
    // Nor do a string or null (no `result` to look for).
    for (const answer of ['logged', null]) {
      const other = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 2 }, id: 'n2' }] }, finish('x')], { hooks: { afterTool: () => answer as never } });
      const h = await executor.execute(other, 'go');
      expect((await h.result()).status).toBe('completed');
      expect((await toolRow(stateStore, h.sessionId)).content).toEqual({ ok: true, by: 2 });
    }
  });

  it('rule 191: a result over maxToolResultChars becomes tool_result_too_large, unless afterTool shrank it first', async () => {
    const big = bareTool('big', 'returns a lot', () => 'x'.repeat(500));
    const run = async (shrink: boolean) => {
      const { executor, stateStore } = setup({ executor: { limits: { maxToolResultChars: 100 } } });
      const agent = counterAgent([{ toolCalls: [{ name: 'big', args: {}, id: 'g1' }] }, finish('x')], {
        tools: [big],
        ...(shrink ? { hooks: { afterTool: () => ({ result: 'stored elsewhere: ref-1' }) } } : {}),
      });
      const handle = await executor.execute(agent, 'go');
      await handle.result();
      return toolRow(stateStore, handle.sessionId);
    };
    expect((await run(false)).errorInfo?.code).toBe('tool_result_too_large');
    expect(await run(true)).toMatchObject({ content: 'stored elsewhere: ref-1' });
    expect((await run(true)).isError).not.toBe(true);
  });
  it('rule 218 / C13: a block with no reason at all is "Blocked by beforeTool." too, and the run goes on', async () => {
    const { executor, stateStore } = setup();
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 } }] }, finish('x')], { hooks: { beforeTool: () => ({ block: true as const }) } });
    const handle = await executor.execute(agent, 'go');
    expect((await handle.result()).status).toBe('completed');
    expect((await toolRow(stateStore, handle.sessionId)).errorInfo?.details).toMatchObject({ reason: 'Blocked by beforeTool.' });
  });

  it('rule 218: the audit records a valid { input } as a rewrite and an invalid one as a block', async () => {
    const { executor, streamManager } = setup();
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 }, id: 'r1' }, { name: 'increment', args: { by: 1 }, id: 'r2' }] }, finish('x')], {
      hooks: { beforeTool: (p) => ({ input: p.toolCall.id === 'r1' ? { by: 2 } : { by: 'two' } }) },
    });
    const handle = await executor.execute(agent, 'go');
    expect((await handle.result()).state.count).toBe(2);
    const audit = streamManager.chunks(handle.sessionId).filter((c): c is HookDecisionChunk => c.type === 'hook_decision');
    expect(audit.map((d) => [d.toolCallId, d.decision]).sort()).toEqual([
      ['r1', 'rewrite'],
      ['r2', 'block'],
    ]);
  });

  it('rule 125: on a stop, a blocked call keeps the writes of its beforeTool (its result is recorded); a call a stop cancels after beforeTool gets afterTool with run_stopped', async () => {
    const { executor, stateStore } = setup();
    const rec = createHookRecorder({ points: ['afterTool'] });
    const gate = createGate();
    const stuck = bareTool('stuck', 'waits for the stop', async (_i, ctx) => {
      await new Promise((_r, reject) => ctx.abortSignal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }));
    });
    const late = bareTool('late', 'never runs', () => 'ran');
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 }, id: 'blocked' }, { name: 'stuck', args: {}, id: 'stuck' }, { name: 'late', args: {}, id: 'late' }] }, finish('x')], {
      tools: [incrementTool, stuck, late],
      hooks: {
        beforeTool: async (p, ctx) => {
          if (p.toolCall.id === 'blocked') {
            ctx.updateState((d) => void d.log.push('guard saw the call'));
            return { block: true as const, reason: 'no counting' };
          }
          if (p.toolCall.id === 'late') await gate.opened;
          return undefined;
        },
      },
    });
    const handle = await executor.execute(agent, 'go', { hooks: rec.hooks });
    await new Promise((r) => setTimeout(r, 30));
    const stopping = handle.stop('user pressed stop');
    gate.open();
    const result = await stopping;
    expect(result.status).toBe('interrupted');
    expect((result.state as Counter).log).toEqual(['guard saw the call']);
    expect(((await stateStore.loadSession(handle.sessionId))!.state as Counter).log).toEqual(['guard saw the call']);
    const cancelled = rec.of('afterTool').map((c) => c.payload as AfterToolPayload).find((p) => p.toolCall.id === 'late');
    expect(cancelled).toMatchObject({ success: false, blocked: false, result: undefined, durationMs: 0 });
    expect(cancelled?.error?.code).toBe('run_stopped');
  });
});
