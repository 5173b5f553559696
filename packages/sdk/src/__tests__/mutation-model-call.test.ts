// A step's model call (runtime/model-call.ts), as the fifth mutation run found it loosely pinned: the plan
// afterLLMCall sees for each kind of reply, the retry delays (backoff, its cap, a provider's retry-after,
// the defaults), the attempts a failure reports, an adapter that throws, the payload beforeLLMCall sees and
// the block it can return.
import { describe, expect, it } from 'vitest';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import {
  createHookManager,
  defineAgent,
  InMemoryStateStore,
  InMemoryStreamManager,
  JSAgentExecutor,
  type AfterLLMCallPayload,
  type BeforeLLMCallPayload,
  type LLMAdapter,
  type StepPlan,
} from '../index.js';
import { createScriptedModel, type ScriptedStep } from '../testing/index.js';
import { CounterState, counterAgent, finish, incrementTool, memoryLogger, setup, textAgent } from './harness.js';

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
    expect((plans[1] as { toolCalls: unknown[] }).toolCalls).toHaveLength(2);
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
    const reply = rows.find((m) => m.role === 'assistant') as Record<string, unknown>;
    expect(reply['content']).toBe('answer');
    expect(reply['reasoning']).toBeDefined();
    expect('toolCalls' in reply).toBe(false);
    const plain = setup();
    const h2 = await plain.executor.execute(textAgent([{ text: 'answer' }]), 'go');
    await h2.result();
    const row2 = (await plain.stateStore.loadSession(h2.sessionId))!.messages.find((m) => m.role === 'assistant') as Record<string, unknown>;
    expect('reasoning' in row2).toBe(false);
  });
});
