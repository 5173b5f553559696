import { afterEach, describe, expect, it } from 'vitest';
import { startScriptedOpenAIServer } from './index.js';
import type { ScriptedOpenAIServer, ScriptedOpenAIStep, ScriptedOpenAIStepFunction } from './index.js';

const servers: ScriptedOpenAIServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function serve(script: Array<ScriptedOpenAIStep | ScriptedOpenAIStepFunction>): Promise<ScriptedOpenAIServer> {
  const server = await startScriptedOpenAIServer(script);
  servers.push(server);
  return server;
}

const post = (server: ScriptedOpenAIServer, body: unknown): Promise<Response> =>
  fetch(`${server.baseURL}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

async function events(response: Response): Promise<Array<Record<string, unknown> | '[DONE]'>> {
  const text = await response.text();
  return text
    .split('\n\n')
    .filter((block) => block.startsWith('data: '))
    .map((block) => {
      const data = block.slice('data: '.length);
      return data === '[DONE]' ? '[DONE]' : (JSON.parse(data) as Record<string, unknown>);
    });
}

describe('startScriptedOpenAIServer', () => {
  it('listens on 127.0.0.1 and records request bodies', async () => {
    const server = await serve([{ text: 'hi' }]);
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(server.baseURL).toBe(`${server.url}/v1`);
    await (await post(server, { model: 'm', messages: [{ role: 'user', content: 'x' }] })).text();
    expect(server.requests).toEqual([{ model: 'm', messages: [{ role: 'user', content: 'x' }] }]);
  });

  it('streams SSE chunks: text deltas, tool-call deltas split over chunks, finish_reason, usage, [DONE]', async () => {
    const server = await serve([{ text: 'Hello there', toolCalls: [{ name: 'f', args: { long: 'abcdefghij' }, id: 'call_x' }], usage: { inputTokens: 7, outputTokens: 3, cachedInputTokens: 4 } }]);
    const response = await post(server, { model: 'm', messages: [], stream: true, stream_options: { include_usage: true } });
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const all = await events(response);
    expect(all.at(-1)).toBe('[DONE]');
    const chunks = all.slice(0, -1) as Array<{ object: string; choices: Array<{ delta: Record<string, unknown>; finish_reason: string | null }>; usage?: unknown }>;
    expect(chunks.every((chunk) => chunk.object === 'chat.completion.chunk')).toBe(true);
    const deltas = chunks.flatMap((chunk) => chunk.choices.map((choice) => choice.delta));
    expect(deltas.map((delta) => delta['content'] ?? '').join('')).toBe('Hello there');
    const argumentPieces = deltas.flatMap((delta) => ((delta['tool_calls'] as Array<{ function: { arguments?: string } }> | undefined) ?? []).map((call) => call.function.arguments ?? ''));
    expect(argumentPieces.filter((piece) => piece !== '').length).toBeGreaterThan(1);
    expect(argumentPieces.join('')).toBe('{"long":"abcdefghij"}');
    expect(chunks.flatMap((chunk) => chunk.choices.map((choice) => choice.finish_reason)).filter((reason) => reason !== null)).toEqual(['tool_calls']);
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10, prompt_tokens_details: { cached_tokens: 4 } } });
  });

  it('sends no usage chunk unless include_usage is asked for', async () => {
    const server = await serve([{ text: 'x' }]);
    const chunks = await events(await post(server, { model: 'm', messages: [], stream: true }));
    expect(chunks.some((chunk) => chunk !== '[DONE]' && 'usage' in chunk)).toBe(false);
  });

  it('answers non-streaming requests with a chat.completion', async () => {
    const server = await serve([{ text: 'whole', model: 'm-2025' }]);
    const body = (await (await post(server, { model: 'm', messages: [] })).json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      object: 'chat.completion',
      model: 'm-2025',
      choices: [{ index: 0, message: { role: 'assistant', content: 'whole' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    });
  });

  it('answers error steps with the status, headers and an OpenAI error body', async () => {
    const server = await serve([{ status: 429, headers: { 'retry-after': '2' } }, { status: 418, errorBody: { error: { message: 'teapot' } } }]);
    const limited = await post(server, { model: 'm', messages: [] });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('2');
    expect(await limited.json()).toMatchObject({ error: { type: 'requests', code: 'rate_limit_exceeded', message: expect.any(String) } });
    const custom = await post(server, { model: 'm', messages: [] });
    expect([custom.status, await custom.json()]).toEqual([418, { error: { message: 'teapot' } }]);
  });

  it('computes steps from the request body', async () => {
    const server = await serve([(body, index) => ({ text: `${index}:${String(body.messages.length)}` })]);
    const body = (await (await post(server, { model: 'm', messages: [{}, {}] })).json()) as { choices: Array<{ message: { content: string } }> };
    expect(body.choices[0]!.message.content).toBe('0:2');
  });

  it('says clearly when the script ran out, and 404s unknown routes', async () => {
    const server = await serve([]);
    const exhausted = await post(server, { model: 'm', messages: [] });
    expect(exhausted.status).toBe(500);
    expect(await exhausted.json()).toMatchObject({ error: { message: 'startScriptedOpenAIServer: request 1 has no scripted step (0 scripted).' } });
    expect((await fetch(`${server.baseURL}/embeddings`, { method: 'POST', body: '{}' })).status).toBe(404);
  });

  it('closes with keep-alive connections and pending delays still open, and may be closed twice', async () => {
    const server = await serve([{ text: 'a' }, { text: 'slow', delayMs: 60_000 }]);
    await (await post(server, { model: 'm', messages: [] })).text();
    const pending = post(server, { model: 'm', messages: [] }).catch((error: unknown) => error);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const started = Date.now();
    await server.close();
    await server.close();
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(await pending).toBeInstanceOf(Error);
  });
});
