import { APICallError, JSONParseError } from '@ai-sdk/provider';
import type { LanguageModelV3CallOptions, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { describe, expect, it } from 'vitest';
import { createScriptedModel, scriptedError, scriptedText, scriptedToolCall } from './scripted-model.js';

const prompt = (text: string): LanguageModelV3CallOptions => ({ prompt: [{ role: 'user', content: [{ type: 'text', text }] }] });

async function collect(stream: ReadableStream<LanguageModelV3StreamPart>): Promise<LanguageModelV3StreamPart[]> {
  const parts: LanguageModelV3StreamPart[] = [];
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return parts;
    parts.push(value);
  }
}

async function rejection(promise: PromiseLike<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('ScriptedModel', () => {
  it('is a V3 language model with overridable provider and model id', () => {
    const model = createScriptedModel([]);
    expect(model.specificationVersion).toBe('v3');
    expect(model.provider).toBe('scripted');
    expect(model.modelId).toBe('scripted-model');
    expect(model.supportedUrls).toEqual({});
    const named = createScriptedModel([], { provider: 'acme', modelId: 'acme-1' });
    expect([named.provider, named.modelId]).toEqual(['acme', 'acme-1']);
  });

  it('streams text chunks as V3 parts, then finish with V3 usage and finish reason', async () => {
    const model = createScriptedModel([{ textChunks: ['Hel', 'lo'], usage: { inputTokens: 12, outputTokens: 4, cachedInputTokens: 8, cacheWriteTokens: 2, reasoningTokens: 1 } }]);
    const { stream } = await model.doStream(prompt('hi'));
    const parts = await collect(stream);
    expect(parts.map((part) => part.type)).toEqual(['stream-start', 'response-metadata', 'text-start', 'text-delta', 'text-delta', 'text-end', 'finish']);
    expect(parts.filter((part) => part.type === 'text-delta').map((part) => part.delta)).toEqual(['Hel', 'lo']);
    expect(parts[1]).toMatchObject({ type: 'response-metadata', id: 'scripted-response-0', modelId: 'scripted-model' });
    expect(parts.at(-1)).toEqual({
      type: 'finish',
      finishReason: { unified: 'stop', raw: 'stop' },
      usage: {
        inputTokens: { total: 12, noCache: 2, cacheRead: 8, cacheWrite: 2 },
        outputTokens: { total: 4, text: 3, reasoning: 1 },
      },
    });
  });

  it('reports unknown usage when a step gives none', async () => {
    const { stream } = await createScriptedModel([scriptedText('ok')]).doStream(prompt('hi'));
    const finish = (await collect(stream)).at(-1);
    expect(finish).toMatchObject({
      usage: { inputTokens: { total: undefined, cacheRead: undefined }, outputTokens: { total: undefined } },
    });
  });

  it('streams tool calls with JSON-string input, per-call ids and a tool-calls finish', async () => {
    const model = createScriptedModel(
      [
        {
          toolCalls: [
            { name: 'search', args: { q: 'x' } },
            { name: 'fetch', args: { url: 'u' }, id: 'fixed' },
          ],
          rawToolCalls: [{ name: 'broken', input: '{"a": ' }],
        },
      ],
      { loop: true },
    );
    const first = await collect((await model.doStream(prompt('a'))).stream);
    const second = await collect((await model.doStream(prompt('b'))).stream);
    const calls = (parts: LanguageModelV3StreamPart[]): unknown[] => parts.filter((part) => part.type === 'tool-call');
    expect(calls(first)).toEqual([
      { type: 'tool-call', toolCallId: 'call_0_0', toolName: 'search', input: '{"q":"x"}' },
      { type: 'tool-call', toolCallId: 'fixed', toolName: 'fetch', input: '{"url":"u"}' },
      { type: 'tool-call', toolCallId: 'call_0_2', toolName: 'broken', input: '{"a": ' },
    ]);
    // A repeated step still gets fresh ids, so a loop never sees the same call id twice.
    expect(calls(second)[0]).toMatchObject({ toolCallId: 'call_1_0' });
    expect(first.at(-1)).toMatchObject({ finishReason: { unified: 'tool-calls', raw: 'tool_calls' } });
  });

  it('accepts a finish reason as a unified string or as the V3 shape', async () => {
    const model = createScriptedModel([{ text: 'a', finishReason: 'length' }, { text: 'b', finishReason: { unified: 'other', raw: 'weird' } }]);
    expect((await collect((await model.doStream(prompt('1'))).stream)).at(-1)).toMatchObject({ finishReason: { unified: 'length', raw: 'length' } });
    expect((await collect((await model.doStream(prompt('2'))).stream)).at(-1)).toMatchObject({ finishReason: { unified: 'other', raw: 'weird' } });
  });

  it('answers function steps from the prompt and the call index, sync or async', async () => {
    const model = createScriptedModel([
      (options, index) => {
        const first = options.prompt[0];
        const text = first?.role === 'user' && first.content[0]?.type === 'text' ? first.content[0].text : '';
        return { text: `${index}:${text.toUpperCase()}` };
      },
      async (_options, index) => ({ text: `async ${index}` }),
    ]);
    const texts = async (): Promise<string> =>
      (await collect((await model.doStream(prompt('shout'))).stream))
        .map((part) => (part.type === 'text-delta' ? part.delta : ''))
        .join('');
    expect(await texts()).toBe('0:SHOUT');
    expect(await texts()).toBe('async 1');
  });

  it('records the options of each call unless recordCalls is false', async () => {
    const recorded = createScriptedModel([scriptedText('a'), scriptedText('b')]);
    await recorded.doStream(prompt('one'));
    await recorded.doGenerate(prompt('two'));
    expect(recorded.calls.map((call) => call.prompt[0])).toEqual([prompt('one').prompt[0], prompt('two').prompt[0]]);
    expect(recorded.callCount).toBe(2);

    const bench = createScriptedModel([scriptedText('a')], { loop: true, recordCalls: false });
    for (let i = 0; i < 5; i++) await bench.doStream(prompt('x'));
    expect(bench.calls).toHaveLength(0);
    expect(bench.callCount).toBe(5);
  });

  it('fails clearly when the script runs out, and repeats the last step with loop', async () => {
    const model = createScriptedModel([scriptedText('a'), scriptedText('b')]);
    await model.doStream(prompt('1'));
    await model.doStream(prompt('2'));
    const error = await rejection(model.doStream(prompt('3')));
    expect(String(error)).toMatch(/the script has 2 steps and all were played; call 3 has no step/);

    const looping = createScriptedModel([scriptedText('a'), scriptedText('last')], { loop: true });
    const texts: string[] = [];
    for (let i = 0; i < 4; i++) texts.push(((await looping.doGenerate(prompt('x'))).content[0] as { text: string }).text);
    expect(texts).toEqual(['a', 'last', 'last', 'last']);
  });

  it('throws HTTP failures as real APICallErrors with status, retryability and retry-after', async () => {
    const model = createScriptedModel([scriptedError(429, undefined, 2), scriptedError(401), scriptedError(503, 'busy')]);
    const limited = await rejection(model.doStream(prompt('x')));
    expect(APICallError.isInstance(limited)).toBe(true);
    expect(limited).toMatchObject({ statusCode: 429, isRetryable: true, responseHeaders: { 'retry-after': '2' } });
    expect(JSON.parse((limited as APICallError).responseBody!)).toMatchObject({ error: { type: 'rate_limit_error' } });
    expect(await rejection(model.doStream(prompt('x')))).toMatchObject({ statusCode: 401, isRetryable: false });
    expect(await rejection(model.doGenerate(prompt('x')))).toMatchObject({ statusCode: 503, isRetryable: true, message: 'busy' });
  });

  it('throws network, timeout and unreadable-reply failures the way fetch-based providers do', async () => {
    const model = createScriptedModel([{ error: { kind: 'network' } }, { error: { kind: 'timeout' } }, { error: { kind: 'invalid-response' } }]);
    const network = await rejection(model.doStream(prompt('x')));
    expect(network).toBeInstanceOf(TypeError);
    expect(network).toMatchObject({ message: 'fetch failed', cause: { code: 'ECONNREFUSED' } });
    const timeout = await rejection(model.doStream(prompt('x')));
    expect(timeout).toBeInstanceOf(DOMException);
    expect((timeout as DOMException).name).toBe('TimeoutError');
    const invalid = await rejection(model.doStream(prompt('x')));
    expect(APICallError.isInstance(invalid)).toBe(true);
    expect(JSONParseError.isInstance((invalid as APICallError).cause)).toBe(true);
  });

  it('can deliver an error as an error stream part after partial output', async () => {
    const model = createScriptedModel([{ text: 'partial', error: { status: 500, inStream: true } }]);
    const parts = await collect((await model.doStream(prompt('x'))).stream);
    expect(parts.map((part) => part.type)).toEqual(['stream-start', 'response-metadata', 'text-start', 'text-delta', 'text-end', 'error', 'finish']);
    const errorPart = parts.find((part) => part.type === 'error');
    expect(APICallError.isInstance(errorPart?.type === 'error' ? errorPart.error : undefined)).toBe(true);
    expect(parts.at(-1)).toMatchObject({ finishReason: { unified: 'error' } });
  });

  it('waits delayMs and rejects with an AbortError when the call is aborted during the wait', async () => {
    const model = createScriptedModel([{ text: 'slow', delayMs: 10_000 }]);
    const controller = new AbortController();
    const started = Date.now();
    const pending = model.doStream({ ...prompt('x'), abortSignal: controller.signal });
    setTimeout(() => controller.abort(), 10);
    const error = await rejection(pending);
    expect(error).toBeInstanceOf(DOMException);
    expect((error as DOMException).name).toBe('AbortError');
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('rejects at once when the signal is already aborted, keeping a TimeoutError reason', async () => {
    const model = createScriptedModel([scriptedText('a'), scriptedText('b')]);
    const aborted = await rejection(model.doStream({ ...prompt('x'), abortSignal: AbortSignal.abort() }));
    expect((aborted as DOMException).name).toBe('AbortError');
    const timedOut = new AbortController();
    timedOut.abort(new DOMException('timed out', 'TimeoutError'));
    const timeout = await rejection(model.doGenerate({ ...prompt('x'), abortSignal: timedOut.signal }));
    expect((timeout as DOMException).name).toBe('TimeoutError');
  });

  it('errors the stream with an AbortError when aborted between chunks', async () => {
    const model = createScriptedModel([{ textChunks: ['a', 'b', 'c', 'd'], chunkDelayMs: 20 }]);
    const controller = new AbortController();
    const { stream } = await model.doStream({ ...prompt('x'), abortSignal: controller.signal });
    const reader = stream.getReader();
    const seen: string[] = [];
    const error = await rejection(
      (async () => {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return;
          if (value.type === 'text-delta') {
            seen.push(value.delta);
            controller.abort();
          }
        }
      })(),
    );
    expect((error as DOMException).name).toBe('AbortError');
    expect(seen).toEqual(['a']);
  });

  it('generates whole replies with content, usage and response metadata', async () => {
    const model = createScriptedModel([{ text: 'answer', reasoning: 'think', ...scriptedToolCall('lookup', { id: 1 }), usage: { inputTokens: 3, outputTokens: 2 } }]);
    const result = await model.doGenerate(prompt('x'));
    expect(result.content).toEqual([
      { type: 'reasoning', text: 'think' },
      { type: 'text', text: 'answer' },
      { type: 'tool-call', toolCallId: 'call_0_0', toolName: 'lookup', input: '{"id":1}' },
    ]);
    expect(result.finishReason).toEqual({ unified: 'tool-calls', raw: 'tool_calls' });
    expect(result.usage.inputTokens.total).toBe(3);
    expect(result.response).toEqual({ id: 'scripted-response-0', modelId: 'scripted-model' });
  });
});
