import { createOpenAI } from '@ai-sdk/openai';
import type { LanguageModelV3 } from '@ai-sdk/provider';
import type { LLMStepRequest, Message } from '@helix-agents/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { VercelAIAdapter } from './index.js';
import { startScriptedOpenAIServer } from './testing/index.js';
import { failure, stepRequest, success, user } from './__tests__/step.js';
import type { ScriptedOpenAIServer, ScriptedOpenAIStep } from './testing/index.js';

const servers: ScriptedOpenAIServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function serve(script: ScriptedOpenAIStep[]): Promise<{ server: ScriptedOpenAIServer; model: LanguageModelV3 }> {
  const server = await startScriptedOpenAIServer(script);
  servers.push(server);
  return { server, model: createOpenAI({ baseURL: server.baseURL, apiKey: 'test' }).chat('gpt-test') };
}

const tools = [
  {
    name: 'weather',
    description: 'Current weather of a city.',
    inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
  },
];

function request(model: LanguageModelV3, messages: readonly Message[], extra: Partial<LLMStepRequest> = {}): LLMStepRequest {
  return stepRequest(model, messages, { systemPrompt: 'You are helpful.', tools, ...extra });
}

describe('VercelAIAdapter over HTTP with the real @ai-sdk/openai chat provider', () => {
  it('streams text deltas and maps usage, cached tokens included', async () => {
    const { server, model } = await serve([
      { textChunks: ['Hello', ', ', 'world', '!'], usage: { inputTokens: 120, outputTokens: 9, cachedInputTokens: 100, reasoningTokens: 2 }, model: 'gpt-test-2025-01-01' },
    ]);
    const deltas: string[] = [];
    const result = success(await new VercelAIAdapter().generateStep(request(model, [user('Say hello.')], { onTextDelta: (delta) => deltas.push(delta) })));
    expect(deltas).toEqual(['Hello', ', ', 'world', '!']);
    expect(result).toMatchObject({ text: 'Hello, world!', toolCalls: [], finishReason: 'stop', model: 'gpt-test-2025-01-01', responseId: 'chatcmpl-scripted-0' });
    expect(result.usage).toEqual({ promptTokens: 120, completionTokens: 9, totalTokens: 129, cachedTokens: 100, reasoningTokens: 2 });

    expect(server.requests).toHaveLength(1);
    const body = server.requests[0]!;
    expect(body).toMatchObject({ model: 'gpt-test', stream: true, stream_options: { include_usage: true } });
    expect(body.messages).toEqual([
      { role: 'system', content: 'You are helpful.' },
      { role: 'user', content: 'Say hello.' },
    ]);
    expect(body.tools).toEqual([{ type: 'function', function: { name: 'weather', description: 'Current weather of a city.', parameters: tools[0]!.inputSchema } }]);
  });

  it('reassembles parallel tool calls whose arguments arrive split over several chunks', async () => {
    const { model } = await serve([
      {
        toolCalls: [
          { name: 'weather', args: { city: 'Paris, France' }, id: 'call_a' },
          { name: 'weather', args: { city: 'Oslo, Norway' }, id: 'call_b' },
        ],
      },
    ]);
    const deltas: string[] = [];
    const result = success(await new VercelAIAdapter().generateStep(request(model, [user('Weather in Paris and Oslo?')], { onTextDelta: (delta) => deltas.push(delta) })));
    expect(result.toolCalls).toEqual([
      { id: 'call_a', name: 'weather', arguments: { city: 'Paris, France' } },
      { id: 'call_b', name: 'weather', arguments: { city: 'Oslo, Norway' } },
    ]);
    expect(result.finishReason).toBe('tool-calls');
    expect(result.text).toBe('');
    expect(deltas).toEqual([]);
  });

  it('sends tool calls and their results back in the shape the Chat Completions API expects', async () => {
    const { server, model } = await serve([{ toolCalls: [{ name: 'weather', args: { city: 'Paris' }, id: 'call_1' }] }, { text: 'It is sunny.' }]);
    const adapter = new VercelAIAdapter();
    const messages: Message[] = [user('Weather in Paris?')];
    const first = success(await adapter.generateStep(request(model, messages)));
    messages.push({ role: 'assistant', content: first.text, toolCalls: first.toolCalls });
    messages.push({ role: 'tool', toolCallId: 'call_1', toolName: 'weather', content: { sky: 'sunny', celsius: 21 } });
    const second = success(await adapter.generateStep(request(model, messages)));
    expect(second.text).toBe('It is sunny.');
    expect(server.requests[1]!.messages.slice(2)).toEqual([
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: '{"sky":"sunny","celsius":21}' },
    ]);
  });

  it('answers a 429 as provider_rate_limited with retryAfterMs, in exactly one request', async () => {
    const { server, model } = await serve([{ status: 429, headers: { 'retry-after': '3' } }]);
    const result = failure(await new VercelAIAdapter().generateStep(request(model, [user('hi')])));
    expect(result.error).toMatchObject({ code: 'provider_rate_limited', layer: 'provider', severity: 'error', retryable: true });
    expect(result.error.message).toBe('The model provider rate-limited the request (HTTP 429): Rate limit reached for requests. Please try again later.');
    expect(result.error.details).toMatchObject({ statusCode: 429, provider: 'openai.chat', modelId: 'gpt-test', providerCode: 'rate_limit_exceeded' });
    expect(result.retryAfterMs).toBe(3000);
    // Retries belong to the run loop: the provider itself must not retry.
    expect(server.requests).toHaveLength(1);
  });

  it('reads retry-after-ms as well', async () => {
    const { model } = await serve([{ status: 429, headers: { 'retry-after-ms': '250' } }]);
    expect(failure(await new VercelAIAdapter().generateStep(request(model, [user('hi')]))).retryAfterMs).toBe(250);
  });

  it('answers a 500 as a retryable provider_server_error, in exactly one request', async () => {
    const { server, model } = await serve([{ status: 500 }]);
    const result = failure(await new VercelAIAdapter().generateStep(request(model, [user('hi')])));
    expect(result.error).toMatchObject({ code: 'provider_server_error', retryable: true, details: { statusCode: 500 } });
    expect(server.requests).toHaveLength(1);
  });

  it('answers a 401 as a fatal provider_auth', async () => {
    const { model } = await serve([{ status: 401 }]);
    const result = failure(await new VercelAIAdapter().generateStep(request(model, [user('hi')])));
    expect(result.error).toMatchObject({ code: 'provider_auth', severity: 'fatal', retryable: false, details: { statusCode: 401, providerCode: 'invalid_api_key' } });
  });

  it('answers a 400 with a custom body as provider_bad_request, keeping a slice of the body', async () => {
    const errorBody = { error: { message: "This model's maximum context length is 8192 tokens.", type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' } };
    const { model } = await serve([{ status: 400, errorBody }]);
    const result = failure(await new VercelAIAdapter().generateStep(request(model, [user('hi')])));
    expect(result.error).toMatchObject({ code: 'provider_bad_request', retryable: false, details: { providerCode: 'context_length_exceeded' } });
    expect(result.error.details?.['responseBody']).toBe(JSON.stringify(errorBody));
  });

  it('answers an unreachable server as provider_network', async () => {
    const { server, model } = await serve([]);
    await server.close();
    const result = failure(await new VercelAIAdapter().generateStep(request(model, [user('hi')])));
    expect(result.error).toMatchObject({ code: 'provider_network', retryable: true });
  });

  it('answers an abort during the request as run_interrupted', async () => {
    const { model } = await serve([{ text: 'too late', delayMs: 5_000 }]);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 30);
    const result = failure(await new VercelAIAdapter().generateStep(request(model, [user('hi')], { abortSignal: controller.signal })));
    expect(result.error).toMatchObject({ code: 'run_interrupted', severity: 'info' });
  });

  it('works without streaming in generate mode', async () => {
    const { server, model } = await serve([{ text: 'Checking.', toolCalls: [{ name: 'weather', args: { city: 'Rome' }, id: 'call_r' }], usage: { inputTokens: 30, outputTokens: 12 } }]);
    const result = success(await new VercelAIAdapter({ mode: 'generate' }).generateStep(request(model, [user('Rome?')])));
    expect(result).toMatchObject({
      text: 'Checking.',
      toolCalls: [{ id: 'call_r', name: 'weather', arguments: { city: 'Rome' } }],
      finishReason: 'tool-calls',
      usage: { promptTokens: 30, completionTokens: 12, totalTokens: 42 },
    });
    expect(server.requests[0]!.stream).toBeUndefined();
  });
});

describe('VercelAIAdapter over HTTP with the real @ai-sdk/openai Responses provider', () => {
  it('streams reasoning summary deltas, then the end of the block, then the text, and returns both', async () => {
    const server = await startScriptedOpenAIServer([{ reasoningChunks: ['The user ', 'greets me.'], textChunks: ['Hi', ' there'], usage: { inputTokens: 12, outputTokens: 8, reasoningTokens: 4 } }]);
    servers.push(server);
    const model = createOpenAI({ baseURL: server.baseURL, apiKey: 'test' }).responses('o-test');
    const events: string[] = [];
    const result = success(
      await new VercelAIAdapter().generateStep(
        stepRequest(model, [user('Hello')], { onReasoningDelta: (d) => events.push(`r:${d}`), onReasoningEnd: () => events.push('end'), onTextDelta: (d) => events.push(`t:${d}`) }),
      ),
    );
    expect(events).toEqual(['r:The user ', 'r:greets me.', 'end', 't:Hi', 't: there']);
    expect(result).toMatchObject({ text: 'Hi there', reasoning: 'The user greets me.', finishReason: 'stop', usage: { promptTokens: 12, completionTokens: 8, reasoningTokens: 4 } });
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]!['stream']).toBe(true);
  });
});
