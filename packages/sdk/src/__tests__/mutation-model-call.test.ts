// A step's model call (runtime/model-call.ts), as the fifth mutation run found it loosely pinned: the plan
// afterLLMCall sees for each kind of reply, the retry delays (backoff, its cap, a provider's retry-after,
// the defaults), the attempts a failure reports, an adapter that throws, the payload beforeLLMCall sees and
// the block it can return.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createHookManager,
  defineAgent,
  defineTool,
  InMemoryStateStore,
  InMemoryUsageStore,
  InMemoryStreamManager,
  JSAgentExecutor,
  type AfterLLMCallPayload,
  type BeforeLLMCallPayload,
  type LLMAdapter,
  type StateStore,
  type StreamChunk,
  type StepPlan,
} from '../index.js';
import type { JournalEntry } from '../store.js';
import { createScriptedModel, type ScriptedStep } from '../testing/index.js';
import { CounterState, counterAgent, deadCounterRun, finish, incrementTool, memoryLogger, setup, textAgent } from './harness.js';

/** Runs `agent` to its end and returns the result and every plan afterLLMCall saw. */
async function plansOf(agent: Parameters<JSAgentExecutor['execute']>[0], options: { abortAt?: (plan: StepPlan) => boolean } = {}) {
  const plans: StepPlan[] = [];
  const payloads: AfterLLMCallPayload[] = [];
  const abort = new AbortController();
  const { executor } = setup();
  const handle = await executor.execute(agent, 'go', {
    abortSignal: abort.signal,
    hooks: {
      afterLLMCall: (p: AfterLLMCallPayload) => {
        plans.push(p.plan);
        payloads.push(p);
        if (options.abortAt?.(p.plan)) abort.abort();
      },
    },
  });
  return { result: await handle.result(), plans, payloads };
}

const unavailable = (message = 'overloaded'): ScriptedStep => ({ error: { status: 503, message } });

describe('the plan of a reply', () => {
  it('afterLLMCall sees tool_calls for a reply calling tools, finish when one of them is __finish__, and the calls themselves', async () => {
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 }, id: 'a' }] }, { toolCalls: [{ name: 'increment', args: { by: 1 }, id: 'b' }, { name: '__finish__', args: { answer: 'x' }, id: 'c' }] }]);
    const { plans } = await plansOf(agent);
    expect(plans.map((p) => p.kind)).toEqual(['tool_calls', 'finish']);
    expect(plans[0]).toEqual({ kind: 'tool_calls', toolCalls: [{ id: 'a', name: 'increment', arguments: { by: 1 } }] });
    expect((plans[1] as unknown as { toolCalls: unknown[] }).toolCalls).toHaveLength(2);
  });

  it('a blank reply is a nudge for empty_reply; text from an agent with an outputSchema a nudge for text_without_output; text from a text agent its answer', async () => {
    const structured = await plansOf(counterAgent([{ text: '  \n' }, { text: 'prose' }, finish('x')]));
    expect(structured.plans).toEqual([
      { kind: 'nudge', reason: 'empty_reply' },
      { kind: 'nudge', reason: 'text_without_output' },
      { kind: 'finish', toolCalls: [expect.objectContaining({ name: '__finish__' })] },
    ]);
    const text = await plansOf(textAgent([{ text: '' }, { text: 'the answer' }]));
    expect(text.plans).toEqual([
      { kind: 'nudge', reason: 'empty_reply' },
      { kind: 'text', text: 'the answer' },
    ]);
    expect(text.result).toMatchObject({ status: 'completed', output: 'the answer' });
  });
});

describe('retries of a failed model call', () => {
  it('the delay doubles from initialDelayMs per attempt up to maxDelayMs, and the failing attempts each report their error', async () => {
    const agent = textAgent([unavailable(), unavailable(), unavailable(), unavailable(), { text: 'up again' }], {
      llmConfig: { model: createScriptedModel([unavailable(), unavailable(), unavailable(), unavailable(), { text: 'up again' }]), retry: { maxAttempts: 5, initialDelayMs: 3, maxDelayMs: 10 } },
    });
    const { plans, payloads, result } = await plansOf(agent);
    expect(result).toMatchObject({ status: 'completed', output: 'up again' });
    expect(plans.map((p) => (p.kind === 'retry' ? p.delayMs : p.kind))).toEqual([3, 6, 10, 10, 'text']);
    expect(payloads.map((p) => p.attempt)).toEqual([1, 2, 3, 4, 5]);
    expect(payloads[0]!.error).toMatchObject({ code: 'provider_server_error', retryable: true });
    expect(payloads[4]!.error).toBeUndefined();
  });

  it("a provider's retry-after lengthens the delay past the backoff, capped at maxDelayMs", async () => {
    const steps: ScriptedStep[] = [{ error: { status: 429, retryAfterSeconds: 1 } }, { text: 'ok' }];
    const capped = await plansOf(textAgent(steps, { llmConfig: { model: createScriptedModel(steps), retry: { initialDelayMs: 1, maxDelayMs: 7 } } }));
    expect(capped.plans[0]).toMatchObject({ kind: 'retry', delayMs: 7 });
    const steps2: ScriptedStep[] = [{ error: { status: 429, retryAfterSeconds: 0.02 } }, { text: 'ok' }];
    const honoured = await plansOf(textAgent(steps2, { llmConfig: { model: createScriptedModel(steps2), retry: { initialDelayMs: 1, maxDelayMs: 1000 } } }));
    expect(honoured.plans[0]).toMatchObject({ kind: 'retry', delayMs: 20 });
  });

  it('the defaults: three attempts, a first delay of 500 ms, a cap of 8000 ms', async () => {
    const steps: ScriptedStep[] = [unavailable(), unavailable()];
    const firstDelay = await plansOf(defineAgent({ name: 'defaults', llmConfig: { model: createScriptedModel(steps) } }), { abortAt: () => true });
    expect(firstDelay.plans).toEqual([expect.objectContaining({ kind: 'retry', delayMs: 500 })]);
    expect(firstDelay.result.status).toBe('interrupted');
    const capSteps: ScriptedStep[] = [unavailable()];
    const cap = await plansOf(defineAgent({ name: 'defaults', llmConfig: { model: createScriptedModel(capSteps), retry: { initialDelayMs: 60_000 } } }), { abortAt: () => true });
    expect(cap.plans).toEqual([expect.objectContaining({ kind: 'retry', delayMs: 8000 })]);
    const threeSteps: ScriptedStep[] = [unavailable('one'), unavailable('two'), unavailable('three'), { text: 'never' }];
    const three = await plansOf(defineAgent({ name: 'defaults', llmConfig: { model: createScriptedModel(threeSteps), retry: { initialDelayMs: 1 } } }));
    expect(three.plans.map((p) => p.kind)).toEqual(['retry', 'retry', 'fail']);
    expect(three.result.error).toMatchObject({ code: 'provider_server_error', details: expect.objectContaining({ attempts: 3 }) });
  });

  it('maxAttempts below one still makes one attempt; a failure after one attempt reports no attempts in its details', async () => {
    const steps: ScriptedStep[] = [unavailable(), { text: 'never' }];
    const { plans, result } = await plansOf(textAgent(steps, { llmConfig: { model: createScriptedModel(steps), retry: { maxAttempts: 0, initialDelayMs: 1 } } }));
    expect(plans).toEqual([expect.objectContaining({ kind: 'fail' })]);
    expect(result.status).toBe('failed');
    expect(result.error?.details?.['attempts']).toBeUndefined();
  });

  it('a failure that is not retryable fails at once, with its own details and no attempts', async () => {
    const steps: ScriptedStep[] = [{ error: { status: 401, message: 'bad key' } }, { text: 'never' }];
    const { plans, result } = await plansOf(textAgent(steps));
    expect(plans).toEqual([expect.objectContaining({ kind: 'fail', error: expect.objectContaining({ retryable: false }) })]);
    expect(result.error?.details?.['attempts']).toBeUndefined();
  });

  it('a failure after retries keeps the details of its provider error and adds the number of attempts', async () => {
    const steps: ScriptedStep[] = [unavailable(), unavailable('still down')];
    const { result } = await plansOf(textAgent(steps, { llmConfig: { model: createScriptedModel(steps), retry: { maxAttempts: 2, initialDelayMs: 1 } } }));
    expect(result.status).toBe('failed');
    const plain = await plansOf(textAgent([unavailable('still down')], { llmConfig: { model: createScriptedModel([unavailable('still down')]), retry: { maxAttempts: 1 } } }));
    expect(result.error?.details).toEqual({ ...plain.result.error?.details, attempts: 2 });
  });

  it('a model call that does not answer within timeoutMs fails provider_timeout, saying so, with the bound in its details', async () => {
    const steps: ScriptedStep[] = [{ text: 'late', delayMs: 5_000 }];
    const { result } = await plansOf(textAgent(steps, { llmConfig: { model: createScriptedModel(steps), timeoutMs: 30, retry: { maxAttempts: 1 } } }));
    expect(result.error).toMatchObject({ code: 'provider_timeout', message: 'The model did not answer within 30 ms.', details: { timeoutMs: 30 } });
  });
});

describe('an adapter that throws', () => {
  function throwingAdapter(thrown: unknown): LLMAdapter {
    return {
      generateStep: () => {
        throw thrown;
      },
    };
  }

  it('fails the run run_internal_error with the thrown message, and a thrown non-error as text', async () => {
    for (const [thrown, message] of [
      [new Error('adapter bug'), 'The model adapter threw: adapter bug'],
      [42, 'The model adapter threw: 42'],
    ] as const) {
      const executor = new JSAgentExecutor(new InMemoryStateStore(), new InMemoryStreamManager(), throwingAdapter(thrown), { logger: memoryLogger() });
      const result = await (await executor.execute(textAgent([{ text: 'unused' }]), 'go')).result();
      expect(result.status).toBe('failed');
      expect(result.error).toMatchObject({ code: 'run_internal_error', message });
    }
  });
});

describe('beforeLLMCall', () => {
  it('sees the system prompt first, then the conversation, the tools, the model, its provider, the model parameters and the attempt; toJSON gives the same', async () => {
    const seen: { payload: BeforeLLMCallPayload; json: Record<string, unknown> }[] = [];
    const model = createScriptedModel([unavailable(), { text: 'hi' }], { provider: 'acme', modelId: 'acme-1' });
    const llmConfig = { model, temperature: 0.5, retry: { initialDelayMs: 1 } };
    const agent = defineAgent({
      name: 'payload',
      systemPrompt: (state: { count: number }) => `count is ${state.count}`,
      stateSchema: CounterState,
      llmConfig,
      tools: [incrementTool],
      hooks: {
        beforeLLMCall: (payload) => void seen.push({ payload, json: (payload as unknown as { toJSON(): Record<string, unknown> }).toJSON() }),
      },
    });
    const { executor } = setup();
    const result = await (await executor.execute(agent, 'hello')).result();
    expect(result.status).toBe('completed');
    expect(seen.map((s) => s.payload.attempt)).toEqual([1, 2]);
    const { payload, json } = seen[0]!;
    expect(payload.messages).toEqual([
      { role: 'system', content: 'count is 0' },
      { role: 'user', content: 'hello' },
    ]);
    expect(payload.tools.map((t) => t.name)).toEqual(['increment']);
    expect(payload.model).toBe('acme-1');
    expect(payload.provider).toBe('acme');
    expect(payload.modelParameters).toMatchObject({ temperature: 0.5 });
    expect(json).toEqual({ messages: payload.messages, tools: payload.tools, model: 'acme-1', provider: 'acme', modelParameters: payload.modelParameters, attempt: 1 });
  });

  it('a payload without a system prompt starts with the conversation', async () => {
    let messages: unknown;
    const agent = textAgent([{ text: 'hi' }], { hooks: { beforeLLMCall: (p) => void (messages = p.messages) } });
    await (await setup().executor.execute(agent, 'hello')).result();
    expect(messages).toEqual([{ role: 'user', content: 'hello' }]);
  });

  it('a { messages } rewrite is the whole list sent, system prompt included; a { tools } rewrite keeps the messages; later handlers see the rewrite', async () => {
    const model = createScriptedModel([{ text: 'one' }]);
    const laterSaw: { messages: unknown; tools: unknown }[] = [];
    const agent = defineAgent({
      name: 'rewrite',
      systemPrompt: 'the original prompt',
      llmConfig: { model },
      tools: [incrementTool],
    });
    const hookManager = createHookManager({ beforeLLMCall: () => ({ messages: [{ role: 'system', content: 'replaced prompt' }, { role: 'user', content: 'rewritten' }] }) })
      .register({ beforeLLMCall: () => ({ tools: [] }) })
      .register({ beforeLLMCall: (p: BeforeLLMCallPayload) => void laterSaw.push({ messages: p.messages, tools: p.tools }) });
    const result = await (await setup().executor.execute(agent, 'hello', { hookManager })).result();
    expect(result.status).toBe('completed');
    expect(laterSaw).toEqual([{ messages: [{ role: 'system', content: 'replaced prompt' }, { role: 'user', content: 'rewritten' }], tools: [] }]);
    const prompt = model.calls[0]!.prompt;
    expect(prompt.map((m) => m.role)).toEqual(['system', 'user']);
    expect(JSON.stringify(prompt)).toContain('replaced prompt');
    expect(JSON.stringify(prompt)).not.toContain('the original prompt');
    expect(model.calls[0]!.tools ?? []).toEqual([]);
  });

  it('a { block } with a blank reason fails the run hook_blocked with the default reason, the hook named in the hint and details, and no model call', async () => {
    const model = createScriptedModel([{ text: 'never' }]);
    const agent = defineAgent({ name: 'blocked', llmConfig: { model }, hooks: { beforeLLMCall: () => ({ block: true, reason: '   ' }) } });
    const { executor } = setup();
    const result = await (await executor.execute(agent, 'go')).result();
    expect(result.error).toMatchObject({
      code: 'hook_blocked',
      message: 'The model call was blocked by an agent hook: Blocked by beforeLLMCall.',
      details: { hook: 'beforeLLMCall', reason: 'Blocked by beforeLLMCall.', note: 'Run blocked by an agent hook: Blocked by beforeLLMCall.' },
    });
    expect(result.error?.hint).toMatch(/^Blocked by the `beforeLLMCall` hook ".+"\.$/);
    expect(model.callCount).toBe(0);
  });

  it('a return that is not an object, or an object asking for nothing, changes nothing', async () => {
    const model = createScriptedModel([{ text: 'plain' }]);
    const agent = defineAgent({ name: 'noop', systemPrompt: 'sp', llmConfig: { model } });
    const hookManager = createHookManager({ beforeLLMCall: (() => 'block') as never }).register({ beforeLLMCall: () => ({ block: false }) as never });
    const result = await (await setup().executor.execute(agent, 'go', { hookManager })).result();
    expect(result).toMatchObject({ status: 'completed', output: 'plain' });
    expect(JSON.stringify(model.calls[0]!.prompt)).toContain('sp');
  });
});

describe('the reply row', () => {
  it('a reply with reasoning keeps it in its row; a reply without tool calls has no toolCalls field', async () => {
    const { executor, stateStore } = setup();
    const handle = await executor.execute(textAgent([{ text: 'answer', reasoning: 'thinking it over' }]), 'go');
    await handle.result();
    const rows = (await stateStore.loadSession(handle.sessionId))!.messages;
    const reply = rows.find((m) => m.role === 'assistant') as unknown as Record<string, unknown>;
    expect(reply['content']).toBe('answer');
    expect(reply['reasoning']).toBeDefined();
    expect('toolCalls' in reply).toBe(false);
    const plain = setup();
    const h2 = await plain.executor.execute(textAgent([{ text: 'answer' }]), 'go');
    await h2.result();
    const row2 = (await plain.stateStore.loadSession(h2.sessionId))!.messages.find((m) => m.role === 'assistant') as unknown as Record<string, unknown>;
    expect('reasoning' in row2).toBe(false);
  });
});

/** A store that keeps the key of every journal entry written (the journal itself is emptied by each step commit). */
function journalKeys(): { store: StateStore; keys: string[]; entries: JournalEntry[] } {
  const keys: string[] = [];
  const entries: JournalEntry[] = [];
  const store = new Proxy(new InMemoryStateStore(), {
    get(target, prop) {
      if (prop === 'appendJournal') return (e: JournalEntry) => (keys.push(e.key), entries.push(e), target.appendJournal(e));
      const value: unknown = Reflect.get(target, prop);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store, keys, entries };
}

const send = defineTool({ name: 'send', description: 'sends a message', inputSchema: z.object({ to: z.string() }), sideEffects: true, execute: ({ to }) => `sent to ${to}` });

describe('which model replies are journaled', () => {
  it("by default, of an agent with side-effecting and pure tools, only a reply that calls a side-effecting tool is recorded; a pure call's or a finish's is not", async () => {
    const { store, keys } = journalKeys();
    const { executor } = setup({ stateStore: store });
    const agent = counterAgent(
      [
        { toolCalls: [{ name: 'increment', args: { by: 1 } }] },
        { toolCalls: [{ name: 'send', args: { to: 'a' } }, { name: 'increment', args: { by: 1 } }] },
        finish('done'),
      ],
      { tools: [incrementTool, send] },
    );
    const result = await (await executor.execute(agent, 'go')).result();
    expect(result.status).toBe('completed');
    expect(keys.filter((k) => k.startsWith('model_reply'))).toEqual(['model_reply:1']);
  });

  it("journalModelReplies 'always' records every reply, of an agent without side-effecting tools too", async () => {
    const { store, keys, entries } = journalKeys();
    const { executor } = setup({ stateStore: store, executor: { journalModelReplies: 'always' } });
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 }, id: 'i1' }], usage: { inputTokens: 5, outputTokens: 2 } }, { ...finish('done'), reasoning: 'done thinking' }]);
    const result = await (await executor.execute(agent, 'go')).result();
    expect(result.status).toBe('completed');
    expect(keys.filter((k) => k.startsWith('model_reply'))).toEqual(['model_reply:0', 'model_reply:1']);
    // The record holds the reply's fields, usage and reasoning only when the reply had them.
    const [first, second] = entries.filter((e) => e.kind === 'model_reply').map((e) => (e.data as { reply: Record<string, unknown> }).reply);
    expect(first).toMatchObject({ ok: true, text: '', toolCalls: [{ id: 'i1', name: 'increment', arguments: { by: 1 } }], finishReason: 'tool-calls', model: 'scripted-model', usage: expect.objectContaining({ promptTokens: 5 }) });
    expect(Object.keys(first!).sort()).toEqual(['finishReason', 'model', 'ok', 'text', 'toolCalls', 'usage']);
    expect(second).toMatchObject({ reasoning: expect.anything() });
  });

  it('a reply a dead process recorded is replayed by recover(): the model is not asked again, and its usage is counted once as a successful first attempt of no duration', async () => {
    const store = new InMemoryStateStore();
    const dead = await deadCounterRun(store);
    await store.commit({ ...dead, kind: 'turn_start', appendMessages: [{ role: 'user', content: 'go' }], committedAt: Date.now() });
    const usage = { promptTokens: 7, completionTokens: 3, totalTokens: 10 };
    const reply = { ok: true, text: '', finishReason: 'tool-calls', model: 'recorded-model', usage, toolCalls: [{ id: 'i1', name: 'increment', arguments: { by: 4 } }] };
    await store.appendJournal({ ...dead, stepIndex: 0, kind: 'model_reply', key: 'model_reply:0', data: { reply, patches: [] }, at: Date.now() });
    const model = createScriptedModel([finish('done')]);
    const usageStore = new InMemoryUsageStore();
    const { executor } = setup({ stateStore: store });
    const [handle] = await executor.recover({ agents: [counterAgent([], { llmConfig: { model } })], usageStore });
    const result = await handle!.result();
    expect(result).toMatchObject({ status: 'completed', output: { answer: 'done' }, state: { count: 4 } });
    expect(model.callCount).toBe(1);
    const llm = usageStore.entries().filter((e) => e.kind === 'llm');
    expect(llm[0]).toMatchObject({ kind: 'llm', sessionId: dead.sessionId, runId: dead.runId, stepIndex: 0, attempt: 1, model: 'recorded-model', usage, success: true, durationMs: 0 });
    expect(llm).toHaveLength(2);
  });
});

describe('what an attempt reports', () => {
  it('a retried failure writes one warning chunk with its attempt; a failure that is not retried writes none', async () => {
    const steps: ScriptedStep[] = [unavailable('flaky'), { error: { status: 401, message: 'bad key' } }];
    const { executor, streamManager } = setup();
    const handle = await executor.execute(textAgent(steps, { llmConfig: { model: createScriptedModel(steps), retry: { initialDelayMs: 1 } } }), 'go');
    const result = await handle.result();
    expect(result.error?.code).toBe('provider_auth');
    const warnings = streamManager.chunks(handle.sessionId).filter((c) => c.type === 'warning') as (StreamChunk & { errorInfo: { message: string; details?: Record<string, unknown> } })[];
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.errorInfo.message).toContain('flaky');
    expect(warnings[0]!.errorInfo.details).toMatchObject({ attempt: 1, maxAttempts: 3 });
  });

  it("afterLLMCall's durationMs is the attempt's own duration, also for an adapter that threw (afterLLMCallOnThrow)", async () => {
    const durations: number[] = [];
    const hooks = { afterLLMCall: (p: AfterLLMCallPayload) => void durations.push(p.durationMs) };
    const before = performance.now();
    await (await setup().executor.execute(textAgent([{ text: 'hi', delayMs: 20 }]), 'go', { hooks })).result();
    const throwing: LLMAdapter = {
      generateStep: () => {
        throw new Error('adapter bug');
      },
    };
    const executor = new JSAgentExecutor(new InMemoryStateStore(), new InMemoryStreamManager(), throwing, { logger: memoryLogger(), afterLLMCallOnThrow: true });
    await (await executor.execute(textAgent([{ text: 'unused' }]), 'go', { hooks })).result();
    const elapsed = performance.now() - before;
    expect(durations).toHaveLength(2);
    expect(durations[0]).toBeGreaterThanOrEqual(15);
    for (const d of durations) {
      expect(d).toBeGreaterThanOrEqual(0);
      expect(d).toBeLessThanOrEqual(elapsed);
    }
  });

  it('a run stopped before its first model call makes no attempt: no beforeLLMCall, no model call', async () => {
    const abort = new AbortController();
    const model = createScriptedModel([{ text: 'never' }]);
    let before = 0;
    const agent = textAgent([], { llmConfig: { model }, hooks: { onAgentStart: () => abort.abort(), beforeLLMCall: () => void before++ } });
    const result = await (await setup().executor.execute(agent, 'go', { abortSignal: abort.signal })).result();
    expect(result.status).toBe('interrupted');
    expect(before).toBe(0);
    expect(model.callCount).toBe(0);
  });
});

describe('beforeLLMCall returns', () => {
  it('null, a string or a number from beforeLLMCall changes nothing', async () => {
    for (const value of [null, 'block', 7]) {
      const model = createScriptedModel([{ text: 'plain' }]);
      const agent = defineAgent({ name: 'odd-returns', llmConfig: { model }, hooks: { beforeLLMCall: (() => value) as never } });
      const result = await (await setup().executor.execute(agent, 'go')).result();
      expect(result).toMatchObject({ status: 'completed', output: 'plain' });
    }
  });

  it('the list a { messages } rewrite returns stays the handler\'s: it is copied, not frozen', async () => {
    const mine = [{ role: 'user' as const, content: 'rewritten' }];
    const agent = textAgent([{ text: 'ok' }], { hooks: { beforeLLMCall: () => ({ messages: mine }) } });
    const result = await (await setup().executor.execute(agent, 'go')).result();
    expect(result.status).toBe('completed');
    expect(Object.isFrozen(mine)).toBe(false);
  });
});
