import type { LanguageModelV3, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import type { LLMStepRequest, Message, StepResult } from '@helix-agents/sdk';
import { ERROR_CODES } from '@helix-agents/sdk';
import { createScriptedModel, scriptedError, scriptedText } from '@helix-agents/sdk/testing';
import type { ScriptedStep } from '@helix-agents/sdk/testing';
import { describe, expect, it } from 'vitest';
import { VercelAIAdapter } from './index.js';
import { failure, stepRequest as request, success, user } from './__tests__/step.js';

async function runOne(step: ScriptedStep, extra: Partial<LLMStepRequest> = {}): Promise<StepResult> {
  const model = createScriptedModel([step]);
  return new VercelAIAdapter().generateStep(request(model, [user('hi')], extra));
}

describe('VercelAIAdapter with a scripted model', () => {
  it('forwards text deltas in order and returns the whole text', async () => {
    const deltas: string[] = [];
    const result = success(await runOne({ textChunks: ['The ', 'answer ', 'is ', '42.'] }, { onTextDelta: (delta) => deltas.push(delta) }));
    expect(deltas).toEqual(['The ', 'answer ', 'is ', '42.']);
    expect(result).toMatchObject({ ok: true, text: 'The answer is 42.', toolCalls: [], finishReason: 'stop', model: 'scripted-model', responseId: 'scripted-response-0' });
  });

  it('returns parallel tool calls with parsed arguments', async () => {
    const result = success(
      await runOne({
        toolCalls: [
          { name: 'weather', args: { city: 'Paris' }, id: 'c1' },
          { name: 'weather', args: { city: 'Oslo' }, id: 'c2' },
          { name: 'time', args: {}, id: 'c3' },
        ],
      }),
    );
    expect(result.toolCalls).toEqual([
      { id: 'c1', name: 'weather', arguments: { city: 'Paris' } },
      { id: 'c2', name: 'weather', arguments: { city: 'Oslo' } },
      { id: 'c3', name: 'time', arguments: {} },
    ]);
    expect(result.finishReason).toBe('tool-calls');
  });

  it('keeps malformed tool-call JSON as the raw string, and reads an empty input as no arguments', async () => {
    const result = success(await runOne({ rawToolCalls: [{ name: 'weather', input: '{"city": "Par', id: 'bad' }, { name: 'ping', input: '', id: 'empty' }] }));
    expect(result.toolCalls).toEqual([
      { id: 'bad', name: 'weather', arguments: '{"city": "Par' },
      { id: 'empty', name: 'ping', arguments: {} },
    ]);
  });

  it('maps V3 usage to TokenUsage, cache reads and writes and reasoning included', async () => {
    const result = success(await runOne({ text: 'ok', usage: { inputTokens: 1200, outputTokens: 80, cachedInputTokens: 1000, cacheWriteTokens: 150, reasoningTokens: 30 } }));
    expect(result.usage).toEqual({ promptTokens: 1200, completionTokens: 80, totalTokens: 1280, cachedTokens: 1000, cacheWriteTokens: 150, reasoningTokens: 30 });
    const unknown = success(await runOne(scriptedText('no usage')));
    expect(unknown.usage).toBeUndefined();
  });

  it('returns reasoning and the model id the provider reported', async () => {
    const result = success(await runOne({ text: 'done', reasoning: 'step by step', modelId: 'scripted-model-2025' }));
    expect(result.reasoning).toBe('step by step');
    expect(result.model).toBe('scripted-model-2025');
  });

  it('forwards reasoning deltas in order and the end of each reasoning block, before the text', async () => {
    const events: string[] = [];
    const result = success(
      await runOne(
        { reasoningChunks: ['Think ', 'hard.'], textChunks: ['Ok'] },
        { onReasoningDelta: (d) => events.push(`r:${d}`), onReasoningEnd: () => events.push('end'), onTextDelta: (d) => events.push(`t:${d}`) },
      ),
    );
    expect(events).toEqual(['r:Think ', 'r:hard.', 'end', 't:Ok']);
    expect(result.reasoning).toBe('Think hard.');
  });

  it('rethrows an exception of the onReasoningDelta callback instead of blaming the provider', async () => {
    const call = runOne(
      { reasoning: 'hmm', text: 'x' },
      {
        onReasoningDelta: () => {
          throw new RangeError('reasoning listener bug');
        },
      },
    );
    await expect(call).rejects.toThrow('reasoning listener bug');
  });

  it('in generate mode reports the reasoning once, then its end, then the text', async () => {
    const model = createScriptedModel([{ reasoning: 'all at once', text: 'reply' }]);
    const events: string[] = [];
    const result = success(
      await new VercelAIAdapter({ mode: 'generate' }).generateStep(
        request(model, [user('a')], { onReasoningDelta: (d) => events.push(`r:${d}`), onReasoningEnd: () => events.push('end'), onTextDelta: (d) => events.push(`t:${d}`) }),
      ),
    );
    expect(events).toEqual(['r:all at once', 'end', 't:reply']);
    expect(result.reasoning).toBe('all at once');
  });

  const errorCases: Array<{ name: string; step: ScriptedStep; code: string; retryable: boolean; retryAfterMs?: number; statusCode?: number }> = [
    { name: '429', step: scriptedError(429, 'Rate limit reached for gpt-test.', 7), code: 'provider_rate_limited', retryable: true, retryAfterMs: 7000, statusCode: 429 },
    { name: '401', step: scriptedError(401), code: 'provider_auth', retryable: false, statusCode: 401 },
    { name: '403', step: scriptedError(403), code: 'provider_auth', retryable: false, statusCode: 403 },
    { name: '408', step: scriptedError(408), code: 'provider_timeout', retryable: true, statusCode: 408 },
    { name: '504', step: scriptedError(504), code: 'provider_timeout', retryable: true, statusCode: 504 },
    { name: '500', step: scriptedError(500), code: 'provider_server_error', retryable: true, statusCode: 500 },
    { name: '503 with retry-after', step: scriptedError(503, undefined, 1), code: 'provider_server_error', retryable: true, retryAfterMs: 1000, statusCode: 503 },
    { name: '400', step: scriptedError(400, 'This model maximum context length is 8192 tokens.'), code: 'provider_bad_request', retryable: false, statusCode: 400 },
    { name: '404', step: scriptedError(404), code: 'provider_bad_request', retryable: false, statusCode: 404 },
    { name: '422', step: scriptedError(422), code: 'provider_bad_request', retryable: false, statusCode: 422 },
    { name: 'network', step: { error: { kind: 'network' } }, code: 'provider_network', retryable: true },
    { name: 'timeout', step: { error: { kind: 'timeout' } }, code: 'provider_timeout', retryable: true },
    { name: 'invalid response', step: { error: { kind: 'invalid-response' } }, code: 'provider_invalid_response', retryable: true },
    { name: 'invalid stream chunk', step: { text: 'par', error: { kind: 'invalid-response', inStream: true } }, code: 'provider_invalid_response', retryable: true },
    { name: 'error stream part', step: { text: 'par', error: { status: 500, inStream: true } }, code: 'provider_server_error', retryable: true, statusCode: 500 },
  ];

  it.each(errorCases)('returns $name as $code', async ({ step, code, retryable, retryAfterMs, statusCode }) => {
    const result = failure(await runOne(step));
    const defaults: { readonly severity: string; readonly hint?: string } = ERROR_CODES[code as keyof typeof ERROR_CODES];
    expect(result.error).toMatchObject({ code, layer: 'provider', severity: defaults.severity, retryable });
    expect(result.error.hint).toBe(defaults.hint);
    expect(result.retryAfterMs).toBe(retryAfterMs);
    expect(result.model).toBe('scripted-model');
    expect(result.error.message.length).toBeLessThan(400);
    expect(result.error.details).toMatchObject({ provider: 'scripted', modelId: 'scripted-model' });
    if (statusCode !== undefined) expect(result.error.details?.['statusCode']).toBe(statusCode);
  });

  it('keeps the provider message, bounded, and a bounded slice of the response body in details', async () => {
    const long = `Rate limit reached. ${'x'.repeat(2_000)}`;
    const result = failure(await runOne(scriptedError(429, long)));
    expect(result.error.message).toMatch(/^The model provider rate-limited the request \(HTTP 429\): Rate limit reached\. x+\.\.\.$/);
    expect(result.error.message.length).toBeLessThan(400);
    expect(String(result.error.details?.['responseBody']).length).toBeLessThanOrEqual(500);
  });

  it('keeps the same message for the same failure, so repeated warnings are deduplicated', async () => {
    const model = createScriptedModel([scriptedError(429, 'Slow down.', 1), scriptedError(429, 'Slow down.', 9)]);
    const adapter = new VercelAIAdapter();
    const first = failure(await adapter.generateStep(request(model, [user('a')])));
    const second = failure(await adapter.generateStep(request(model, [user('a')])));
    expect(second.error.message).toBe(first.error.message);
    expect([first.retryAfterMs, second.retryAfterMs]).toEqual([1000, 9000]);
  });

  it('returns run_interrupted when the request is aborted while waiting for the provider', async () => {
    const controller = new AbortController();
    const model = createScriptedModel([{ text: 'never', delayMs: 10_000 }]);
    const pending = new VercelAIAdapter().generateStep(request(model, [user('a')], { abortSignal: controller.signal }));
    setTimeout(() => controller.abort(), 5);
    const result = failure(await pending);
    expect(result.error).toMatchObject({ code: 'run_interrupted', layer: 'run', severity: 'info', retryable: true });
  });

  it('returns run_interrupted when aborted mid-stream, after forwarding the deltas seen so far', async () => {
    const controller = new AbortController();
    const deltas: string[] = [];
    const model = createScriptedModel([{ textChunks: ['one ', 'two ', 'three'], chunkDelayMs: 15 }]);
    const result = failure(
      await new VercelAIAdapter().generateStep(
        request(model, [user('a')], {
          abortSignal: controller.signal,
          onTextDelta: (delta) => {
            deltas.push(delta);
            controller.abort();
          },
        }),
      ),
    );
    expect(result.error.code).toBe('run_interrupted');
    expect(deltas).toEqual(['one ']);
  });

  it('does not call the model when the signal is already aborted', async () => {
    const model = createScriptedModel([scriptedText('a')]);
    const result = failure(await new VercelAIAdapter().generateStep(request(model, [user('a')], { abortSignal: AbortSignal.abort() })));
    expect(result.error.code).toBe('run_interrupted');
    expect(model.callCount).toBe(0);
  });

  it('reports a per-call timeout (a TimeoutError abort reason) as provider_timeout, not as an interruption', async () => {
    const model = createScriptedModel([{ text: 'late', delayMs: 10_000 }]);
    const result = failure(await new VercelAIAdapter().generateStep(request(model, [user('a')], { abortSignal: AbortSignal.timeout(10) })));
    expect(result.error).toMatchObject({ code: 'provider_timeout', retryable: true });
  });

  it('rethrows an exception of the onTextDelta callback instead of blaming the provider', async () => {
    const model = createScriptedModel([scriptedText('boom')]);
    const call = new VercelAIAdapter().generateStep(
      request(model, [user('a')], {
        onTextDelta: () => {
          throw new RangeError('listener bug');
        },
      }),
    );
    await expect(call).rejects.toThrow(RangeError);
  });

  it('returns a failure naming the script when a scripted model runs out of steps', async () => {
    const model = createScriptedModel([scriptedText('only')]);
    const adapter = new VercelAIAdapter();
    success(await adapter.generateStep(request(model, [user('a')])));
    const result = failure(await adapter.generateStep(request(model, [user('a')])));
    expect(result.error.code).toBe('provider_error');
    expect(result.error.message).toMatch(/the script has 1 step/);
  });

  it('passes system prompt, tools and model parameters to the model', async () => {
    const model = createScriptedModel([scriptedText('ok')]);
    const tools = [{ name: 'search', description: 'Search the web.', inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] } }];
    await new VercelAIAdapter().generateStep(
      request(model, [user('find it')], {
        systemPrompt: 'You are terse.',
        tools,
        modelParameters: { temperature: 0.2, maxOutputTokens: 100, stopSequences: ['END'], seed: 7, headers: { 'x-trace': '1' }, providerOptions: { openai: { user: 'u1' } } },
      }),
    );
    const call = model.calls[0]!;
    expect(call.prompt).toEqual([
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: [{ type: 'text', text: 'find it' }] },
    ]);
    expect(call.tools).toEqual([{ type: 'function', name: 'search', description: 'Search the web.', inputSchema: tools[0]!.inputSchema }]);
    expect(call).toMatchObject({ temperature: 0.2, maxOutputTokens: 100, stopSequences: ['END'], seed: 7, headers: { 'x-trace': '1' }, providerOptions: { openai: { user: 'u1' } } });
    expect(call).not.toHaveProperty('topP');
  });

  it('converts only the new messages on the next step and reuses the converted ones', async () => {
    const model = createScriptedModel([scriptedText('a'), scriptedText('b')]);
    const adapter = new VercelAIAdapter();
    const tools = [{ name: 'search', description: 'Search.', inputSchema: { type: 'object' } }];
    const history: Message[] = [user('question'), { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'search', arguments: { q: 'x' } }] }];
    history.push({ role: 'tool', toolCallId: 'c1', toolName: 'search', content: { hits: 3 } });
    await adapter.generateStep(request(model, history, { systemPrompt: 'sys', tools }));
    const next = [...history, { role: 'assistant', content: 'Found 3.' } as const, user('thanks')];
    await adapter.generateStep(request(model, next, { systemPrompt: 'sys', tools }));

    const [first, second] = model.calls;
    expect(second!.prompt).toHaveLength(first!.prompt.length + 2);
    // The earlier messages are the very same converted objects: nothing was converted twice.
    for (let i = 0; i < first!.prompt.length; i++) expect(second!.prompt[i]).toBe(first!.prompt[i]);
    expect(second!.tools![0]).toBe(first!.tools![0]);
    // And the first prompt was not changed by the second step.
    expect(first!.prompt).toHaveLength(4);
  });

  it('in generate mode calls doGenerate and reports the text once', async () => {
    const model = createScriptedModel([{ text: 'whole reply', toolCalls: [{ name: 'f', args: { a: 1 }, id: 'x' }], usage: { inputTokens: 5, outputTokens: 3 } }, scriptedError(429, 'slow', 3)]);
    let streamed = 0;
    model.doStream = () => {
      streamed++;
      throw new Error('doStream must not be called in generate mode');
    };
    const adapter = new VercelAIAdapter({ mode: 'generate' });
    expect(adapter.mode).toBe('generate');
    const deltas: string[] = [];
    const result = success(await adapter.generateStep(request(model, [user('a')], { onTextDelta: (d) => deltas.push(d) })));
    expect(result).toMatchObject({ text: 'whole reply', toolCalls: [{ id: 'x', name: 'f', arguments: { a: 1 } }], finishReason: 'tool-calls', usage: { promptTokens: 5, completionTokens: 3, totalTokens: 8 } });
    expect(deltas).toEqual(['whole reply']);
    const limited = failure(await adapter.generateStep(request(model, [user('a')])));
    expect(limited).toMatchObject({ error: { code: 'provider_rate_limited' }, retryAfterMs: 3000 });
    expect(streamed).toBe(0);
  });

  it('ignores provider-executed tool calls, which the loop has nothing to run for', async () => {
    const parts: LanguageModelV3StreamPart[] = [
      { type: 'stream-start', warnings: [] },
      { type: 'tool-call', toolCallId: 'p1', toolName: 'web_search', input: '{}', providerExecuted: true },
      { type: 'tool-call', toolCallId: 'c1', toolName: 'mine', input: '{"a":1}' },
      { type: 'finish', finishReason: { unified: 'tool-calls', raw: undefined }, usage: { inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 1, text: 1, reasoning: undefined } } },
    ];
    const model: LanguageModelV3 = {
      specificationVersion: 'v3',
      provider: 'custom',
      modelId: 'custom-1',
      supportedUrls: {},
      doGenerate: () => Promise.reject(new Error('unused')),
      doStream: async () => ({
        stream: new ReadableStream({
          start(controller) {
            for (const part of parts) controller.enqueue(part);
            controller.close();
          },
        }),
      }),
    };
    const result = success(await new VercelAIAdapter().generateStep(request(model, [user('a')])));
    expect(result.toolCalls).toEqual([{ id: 'c1', name: 'mine', arguments: { a: 1 } }]);
    expect(result.usage).toEqual({ promptTokens: 1, completionTokens: 1, totalTokens: 2 });
  });
});
