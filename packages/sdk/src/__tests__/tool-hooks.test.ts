import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, type AfterToolPayload, type BeforeToolPayload, type MessagePayload, type ToolResultMessage } from '../index.js';
import { createGate, createHookRecorder } from '../testing/index.js';
import { bareTool, counterAgent, finish, incrementTool, recordedRun, setup, throwing, type Counter } from './harness.js';

function point(c: { point: string; payload: unknown }): string {
  if (c.point === 'onMessage') return `onMessage:${(c.payload as MessagePayload).message.role}`;
  return c.point;
}

describe('tool hooks (section 1.5)', () => {
  it('rule 73: beforeTool gets { toolCall: { id, name, arguments }, tool } with the validated arguments', async () => {
    const { rec } = await recordedRun(counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 3 }, id: 'call-1' }] }, finish('x')]));
    const payload = rec.of('beforeTool')[0]!.payload as BeforeToolPayload;
    expect(payload.toolCall).toEqual({ id: 'call-1', name: 'increment', arguments: { by: 3 } });
    expect(payload.tool).toBe(incrementTool);
  });

  it('rules 74, 76: afterTool gets { toolCall, tool, result, success, durationMs } with the same call id, on success and on failure', async () => {
    const broken = bareTool('broken', 'always fails', throwing('disk on fire'));
    const agent = counterAgent(
      [
        {
          toolCalls: [
            { name: 'increment', args: { by: 1 }, id: 'a' },
            { name: 'broken', args: {}, id: 'b' },
          ],
        },
        finish('x'),
      ],
      { tools: [incrementTool, broken] },
    );
    const { result, rec } = await recordedRun(agent);
    expect(result.status).toBe('completed');
    const afters = rec.of('afterTool').map((c) => c.payload as AfterToolPayload);
    const ok = afters.find((a) => a.toolCall.id === 'a')!;
    const bad = afters.find((a) => a.toolCall.id === 'b')!;
    expect(ok).toMatchObject({ success: true, result: { ok: true, by: 1 } });
    expect(ok.error).toBeUndefined();
    expect(ok.durationMs).toBeGreaterThanOrEqual(0);
    expect(bad.success).toBe(false);
    expect(bad.result).toBeUndefined();
    expect(bad.error?.code).toBe('tool_failed');
    expect(bad.error?.message).toContain('disk on fire');
    const befores = rec.of('beforeTool').map((c) => (c.payload as BeforeToolPayload).toolCall.id).sort();
    expect(befores).toEqual(['a', 'b']);
  });

  it('rule 75 / D3: each call fires beforeTool → onStateChange → onMessage → afterTool', async () => {
    const { rec } = await recordedRun(counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 } }] }, finish('x')]), { points: ['beforeTool', 'onStateChange', 'onMessage', 'afterTool'] });
    expect(rec.calls.map(point)).toEqual([
      'onMessage:user',
      'onMessage:assistant',
      'beforeTool',
      'onStateChange',
      'onMessage:tool',
      'afterTool',
      'onMessage:assistant',
      'onMessage:tool',
    ]);
  });

  it('rule 77 / D3: the tools of one step run in parallel, and the canonical order holds per call', async () => {
    const running = new Set<string>();
    let maxConcurrent = 0;
    const sleepy = defineTool({
      name: 'sleepy',
      description: 'sleeps',
      inputSchema: z.object({ ms: z.number(), tag: z.string() }),
      execute: async (input, ctx) => {
        running.add(input.tag);
        maxConcurrent = Math.max(maxConcurrent, running.size);
        await new Promise((r) => setTimeout(r, input.ms));
        ctx.updateState<Counter>((d) => void d.log.push(input.tag));
        running.delete(input.tag);
        return input.tag;
      },
    });
    const agent = counterAgent(
      [
        {
          toolCalls: [
            { name: 'sleepy', args: { ms: 40, tag: 'slow' }, id: 's' },
            { name: 'sleepy', args: { ms: 5, tag: 'fast' }, id: 'f' },
          ],
        },
        finish('x'),
      ],
      { tools: [sleepy] },
    );
    const started = Date.now();
    const { result, rec } = await recordedRun(agent, { points: ['beforeTool', 'onStateChange', 'onMessage', 'afterTool'] });
    expect(Date.now() - started).toBeLessThan(200);
    expect(maxConcurrent).toBe(2);
    // Parallel state folds compose: both writes survive.
    expect([...result.state.log].sort()).toEqual(['fast', 'slow']);
    for (const id of ['s', 'f']) {
      const perCall = rec.calls
        .filter((c) => {
          const p = c.payload as { toolCall?: { id: string }; message?: ToolResultMessage; newState?: Counter };
          if (p.toolCall) return p.toolCall.id === id;
          if (p.message?.role === 'tool') return p.message.toolCallId === id;
          if (c.point === 'onStateChange') return (c.payload as { toolName: string }).toolName === 'sleepy' && p.newState?.log.at(-1) === (id === 's' ? 'slow' : 'fast');
          return false;
        })
        .map((c) => c.point);
      expect(perCall).toEqual(['beforeTool', 'onStateChange', 'onMessage', 'afterTool']);
    }
  });

  it('D9, rule 77: a parallel call\'s state write made while another call\'s onStateChange handler is still running fires onStateChange too', async () => {
    // The second call writes only once the first call's onStateChange handler is running, and that handler
    // waits until the second write is made: the guard against a handler's own writes is per call.
    const handlerRunning = createGate();
    const secondWrote = createGate();
    const writer = defineTool({
      name: 'writer',
      description: 'logs its tag',
      inputSchema: z.object({ tag: z.string() }),
      execute: async (input, ctx) => {
        if (input.tag === 'second') await handlerRunning.opened;
        ctx.updateState<Counter>((d) => void d.log.push(input.tag));
        if (input.tag === 'second') secondWrote.open();
        return input.tag;
      },
    });
    const agent = counterAgent(
      [
        {
          toolCalls: [
            { name: 'writer', args: { tag: 'first' }, id: 'a' },
            { name: 'writer', args: { tag: 'second' }, id: 'b' },
          ],
        },
        finish('x'),
      ],
      { tools: [writer] },
    );
    const changed: string[] = [];
    const wired = setup();
    const handle = await wired.executor.execute(agent, 'go', {
      hooks: {
        onStateChange: async (payload) => {
          const tag = (payload.newState as Counter).log.at(-1) ?? '';
          changed.push(tag);
          if (tag === 'first') {
            handlerRunning.open();
            await secondWrote.opened;
          }
        },
      },
    });
    const result = await handle.result();
    expect(result.status).toBe('completed');
    expect([...result.state.log].sort()).toEqual(['first', 'second']);
    expect(changed.sort()).toEqual(['first', 'second']);
  });

  it('D5: an unknown tool goes back to the model as tool_not_found, fires onMessage only, and the run goes on', async () => {
    const { executor, stateStore } = setup();
    const rec = createHookRecorder();
    const handle = await executor.execute(counterAgent([{ toolCalls: [{ name: 'teleport', args: {} }] }, finish('x')]), 'go', { hooks: rec.hooks });
    const result = await handle.result();
    expect(result.status).toBe('completed');
    expect(rec.of('beforeTool')).toHaveLength(0);
    expect(rec.of('afterTool')).toHaveLength(0);
    const toolMessage = (await stateStore.loadSession(handle.sessionId))!.messages.find((m) => m.role === 'tool') as ToolResultMessage;
    expect(toolMessage).toMatchObject({ isError: true, toolName: 'teleport', errorInfo: { code: 'tool_not_found', layer: 'tool' } });
    expect(String(toolMessage.content)).toContain('Available tools: increment, __finish__');
    expect(rec.of('onMessage').some((c) => (c.payload as MessagePayload).message === toolMessage)).toBe(true);
  });

  it('D5: arguments that fail the input schema go back to the model as tool_invalid_input and the tool never runs', async () => {
    const { executor, stateStore } = setup();
    const rec = createHookRecorder();
    const handle = await executor.execute(counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 'lots' } }] }, finish('x')]), 'go', { hooks: rec.hooks });
    const result = await handle.result();
    expect(result.status).toBe('completed');
    expect(result.state.count).toBe(0);
    expect(rec.of('beforeTool')).toHaveLength(0);
    const toolMessage = (await stateStore.loadSession(handle.sessionId))!.messages.find((m) => m.role === 'tool') as ToolResultMessage;
    expect(toolMessage.errorInfo?.code).toBe('tool_invalid_input');
    expect(String(toolMessage.content)).toContain('by');
  });

  it('malformed tool-call JSON from the model is reported to the model as tool_invalid_input, not a crash', async () => {
    const { executor } = setup();
    const rec = createHookRecorder();
    const result = await (
      await executor.execute(counterAgent([{ rawToolCalls: [{ name: 'increment', input: '{"by": 1' }] }, finish('x')]), 'go', { hooks: rec.hooks })
    ).result();
    expect(result.status).toBe('completed');
    const toolMsg = rec.of('onMessage').map((c) => (c.payload as MessagePayload).message).find((m) => m.role === 'tool') as ToolResultMessage;
    expect(toolMsg.errorInfo?.code).toBe('tool_invalid_input');
  });

  it('a tool outputSchema validates the result; a mismatch is a tool_invalid_output error result', async () => {
    const liar = defineTool({
      name: 'liar',
      description: 'returns the wrong shape',
      inputSchema: z.object({}),
      outputSchema: z.object({ n: z.number() }),
      execute: () => ({ n: 'not a number' }) as unknown as { n: number },
    });
    const { rec } = await recordedRun(counterAgent([{ toolCalls: [{ name: 'liar', args: {} }] }, finish('x')], { tools: [liar] }));
    const after = rec.of('afterTool')[0]!.payload as AfterToolPayload;
    expect(after.success).toBe(false);
    expect(after.error?.code).toBe('tool_invalid_output');
  });

  it('rule 5: a throwing beforeTool fails the run (hook_failed) and afterTool does not fire for that call (D4)', async () => {
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 } }] }, finish('x')], { hooks: { beforeTool: throwing('nope') } });
    const { result, rec } = await recordedRun(agent);
    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({ code: 'hook_failed', details: { hook: 'beforeTool' } });
    expect(result.state.count).toBe(0);
    expect(rec.of('afterTool')).toHaveLength(0);
    expect(rec.of('onAgentFail')).toHaveLength(1);
  });

  it('a tool context offers getState, updateState, emitCustom and an abortSignal', async () => {
    const { executor, streamManager } = setup();
    const seen: unknown[] = [];
    const probe = bareTool('probe', 'looks around', async (_input, ctx) => {
      seen.push(ctx.getState<Counter>().count, ctx.abortSignal.aborted, ctx.toolCallId, ctx.stepCount);
      ctx.updateState<Counter>((d) => void (d.count = 7));
      seen.push(ctx.getState<Counter>().count);
      await ctx.emitCustom('probe.done', { ok: true });
      return 'ok';
    });
    const handle = await executor.execute(counterAgent([{ toolCalls: [{ name: 'probe', args: {}, id: 'p1' }] }, finish('x')], { tools: [probe] }), 'go', {
      initialState: { count: 2 },
    });
    const result = await handle.result();
    expect(seen).toEqual([2, false, 'p1', 0, 7]);
    expect(result.state.count).toBe(7);
    expect(streamManager.chunks(handle.sessionId)).toContainEqual(expect.objectContaining({ type: 'custom', eventName: 'probe.done', data: { ok: true } }));
  });
});
