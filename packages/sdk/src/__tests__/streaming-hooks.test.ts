import { afterEach, describe, expect, it, vi } from 'vitest';
import type { AfterLLMCallPayload, AgentHooks, HookContext, StreamChunk } from '../index.js';
import { HookDispatcher } from '../runtime/hook-dispatch.js';
import { createGate, createHookRecorder } from '../testing/index.js';
import { setup, textAgent } from './harness.js';

type Reasoning = Extract<StreamChunk, { type: 'reasoning_delta' }>;

afterEach(() => {
  vi.restoreAllMocks();
});

describe('streaming hooks: onTextDelta and onThinking (rule 7)', () => {
  it('rule 7: onTextDelta gets every text delta in order, with the context of the step', async () => {
    const { executor, streamManager } = setup();
    const rec = createHookRecorder({ points: ['onTextDelta'] });
    const handle = await executor.execute(textAgent([{ textChunks: ['Hel', 'lo', ' you'] }]), 'go', { hooks: rec.hooks });
    expect((await handle.result()).output).toBe('Hello you');
    expect(rec.of('onTextDelta').map((c) => c.payload)).toEqual(['Hel', 'lo', ' you']);
    expect(rec.of('onTextDelta').every((c) => c.stepCount === 0 && c.runId === handle.runId)).toBe(true);
    const deltas = streamManager.chunks(handle.sessionId).filter((c) => c.type === 'text_delta');
    expect(deltas.map((d) => d.delta)).toEqual(['Hel', 'lo', ' you']);
  });

  it('rule 7: onThinking gets (delta, false) per reasoning delta, then (whole block, true) when the block ends', async () => {
    const { executor } = setup();
    const rec = createHookRecorder({ points: ['onThinking', 'onTextDelta'] });
    const handle = await executor.execute(textAgent([{ reasoningChunks: ['Let me ', 'think.'], text: 'Done' }]), 'go', { hooks: rec.hooks });
    await handle.result();
    expect(rec.calls.map((c) => [c.point, c.payload])).toEqual([
      ['onThinking', { content: 'Let me ', isComplete: false }],
      ['onThinking', { content: 'think.', isComplete: false }],
      ['onThinking', { content: 'Let me think.', isComplete: true }],
      ['onTextDelta', 'Done'],
    ]);
  });

  it('reasoning reaches the stream as reasoning_delta chunks of its step, the block closed by a blockEnd chunk', async () => {
    const { executor, streamManager } = setup();
    const handle = await executor.execute(textAgent([{ reasoningChunks: ['a', 'b'], text: 'ok' }]), 'go');
    await handle.result();
    const chunks = streamManager.chunks(handle.sessionId);
    const reasoning = chunks.filter((c): c is Reasoning => c.type === 'reasoning_delta');
    expect(reasoning.map((c) => [c.delta, c.blockEnd === true, c.stepIndex])).toEqual([
      ['a', false, 0],
      ['b', false, 0],
      ['', true, 0],
    ]);
    // Reasoning comes before the text of its step.
    const firstText = chunks.findIndex((c) => c.type === 'text_delta');
    expect(chunks.indexOf(reasoning[2]!)).toBeLessThan(firstText);
  });

  it('without a streaming handler, every attempt still streams its deltas as chunks of its own step (retries and later steps included)', async () => {
    const { executor, streamManager } = setup();
    // The run's attempts share one set of callbacks while nothing listens: each chunk must still carry the step it came in.
    const handle = await executor.execute(
      textAgent([
        { textChunks: ['a', 'b'], toolCalls: [{ name: 'increment', args: { by: 1 } }] },
        { error: { kind: 'network' } },
        { reasoningChunks: ['r'], textChunks: ['c', 'd'] },
      ]),
      'go',
    );
    expect(await handle.result()).toMatchObject({ status: 'completed', output: 'cd' });
    const chunks = streamManager.chunks(handle.sessionId);
    const deltas = chunks.filter((c) => c.type === 'text_delta' || c.type === 'reasoning_delta').map((c) => [c.type, c.delta, c.stepIndex, c.runId === handle.runId]);
    expect(deltas).toEqual([
      ['text_delta', 'a', 0, true],
      ['text_delta', 'b', 0, true],
      ['reasoning_delta', 'r', 1, true],
      ['reasoning_delta', '', 1, true],
      ['text_delta', 'c', 1, true],
      ['text_delta', 'd', 1, true],
    ]);
    // The failed attempt of step 1 was retried: two step_start chunks for that step.
    expect(chunks.filter((c) => c.type === 'step_start').map((c) => [c.stepIndex, c.attempt])).toEqual([
      [0, 1],
      [1, 1],
      [1, 2],
    ]);
  });

  it('a streaming handler added for a later run of the session gets its deltas (the shared callbacks are per run, not per session)', async () => {
    const { executor } = setup();
    const agent = textAgent([{ text: 'one' }, { textChunks: ['t', 'wo'] }]);
    const first = await executor.execute(agent, 'go');
    await first.result();
    const rec = createHookRecorder({ points: ['onTextDelta'] });
    const second = await executor.execute(agent, 'again', { sessionId: first.sessionId, hooks: rec.hooks });
    await second.result();
    expect(rec.of('onTextDelta').map((c) => c.payload)).toEqual(['t', 'wo']);
  });

  it('rule 7: a throwing or rejecting streaming hook is logged and never fails the run', async () => {
    const { executor, logger } = setup();
    const hooks: AgentHooks<unknown, unknown> = {
      onTextDelta: () => {
        throw new Error('text observer broke');
      },
      onThinking: async () => {
        await Promise.resolve();
        throw new Error('thinking observer broke');
      },
    };
    const handle = await executor.execute(textAgent([{ reasoning: 'hmm', textChunks: ['a', 'b'] }]), 'go', { hooks });
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'completed', output: 'ab' });
    expect(logger.lines.filter((l) => l.includes('onTextDelta') && l.includes('text observer broke'))).toHaveLength(2);
    expect(logger.lines.filter((l) => l.includes('onThinking') && l.includes('thinking observer broke'))).toHaveLength(2);
  });

  it('the model stream does not wait for a slow onTextDelta, and the step waits for all of them before afterLLMCall', async () => {
    const { executor, streamManager } = setup();
    const gate = createGate();
    const seen: string[] = [];
    let textChunksWhenHookRan = -1;
    let sessionId = '';
    const hooks: AgentHooks<unknown, unknown> = {
      onTextDelta: async (delta: string) => {
        if (seen.length === 0) {
          await gate.opened;
          textChunksWhenHookRan = streamManager.chunks(sessionId).filter((c) => c.type === 'text_delta').length;
        }
        seen.push(delta);
      },
      afterLLMCall: (payload: AfterLLMCallPayload) => {
        expect(payload.result.ok).toBe(true);
        seen.push('afterLLMCall');
      },
    };
    const handle = await executor.execute(textAgent([{ textChunks: ['1', '2', '3'] }]), 'go', { hooks });
    sessionId = handle.sessionId;
    await vi.waitFor(() => expect(streamManager.chunks(sessionId).filter((c) => c.type === 'text_delta')).toHaveLength(3));
    expect(seen).toEqual([]);
    gate.open();
    await handle.result();
    expect(textChunksWhenHookRan).toBe(3);
    expect(seen).toEqual(['1', '2', '3', 'afterLLMCall']);
  });

  it('rule 7: a point nobody handles costs no hook dispatch per delta', async () => {
    const spy = vi.spyOn(HookDispatcher.prototype, 'fireStreaming');
    const { executor } = setup();
    const handle = await executor.execute(textAgent([{ reasoning: 'r', textChunks: ['a', 'b', 'c'] }]), 'go', { hooks: { onAgentStart: () => {} } });
    expect((await handle.result()).status).toBe('completed');
    expect(spy).not.toHaveBeenCalled();
  });

  it('a streaming hook gets a working context (getState, emitCustom)', async () => {
    const { executor, streamManager } = setup();
    const hooks: AgentHooks<{ count: number }, string> = {
      onThinking: async (content: string, isComplete: boolean, ctx: HookContext<{ count: number }, string>) => {
        if (isComplete) await ctx.emitCustom('thought', { content, count: ctx.getState().count });
      },
    };
    const handle = await executor.execute(textAgent([{ reasoning: 'deep', text: 'x' }]), 'go', { hooks: hooks as AgentHooks<unknown, unknown> });
    await handle.result();
    const custom = streamManager.chunks(handle.sessionId).filter((c) => c.type === 'custom');
    expect(custom.map((c) => [c.eventName, c.data])).toEqual([['thought', { content: 'deep', count: 0 }]]);
  });
});
