import { createOpenAI } from '@ai-sdk/openai';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  defineAgent,
  defineTool,
  InMemoryStateStore,
  InMemoryStreamManager,
  InMemoryUsageStore,
  JSAgentExecutor,
  silentLogger,
  type AfterLLMCallPayload,
  type StreamChunk,
} from '@helix-agents/sdk';
import { VercelAIAdapter } from './index.js';
import { startScriptedOpenAIServer, type ScriptedOpenAIServer, type ScriptedOpenAIStep } from './testing/index.js';

// The whole stack over real HTTP: JSAgentExecutor -> VercelAIAdapter -> @ai-sdk/openai (chat) -> a
// scripted OpenAI-compatible server on 127.0.0.1. Only the model's replies are fake.
let server: ScriptedOpenAIServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const lookup = defineTool({
  name: 'lookup',
  description: 'Look a word up',
  inputSchema: z.object({ word: z.string() }),
  execute: async (input, ctx) => {
    ctx.updateState<{ looked: string[] }>((draft) => void draft.looked.push(input.word));
    return { definition: `${input.word}: a thing` };
  },
});

async function run(script: ScriptedOpenAIStep[]) {
  server = await startScriptedOpenAIServer(script);
  const provider = createOpenAI({ baseURL: server.baseURL, apiKey: 'test-key' });
  const agent = defineAgent({
    name: 'http-agent',
    systemPrompt: 'Define words.',
    stateSchema: z.object({ looked: z.array(z.string()).default([]) }),
    llmConfig: { model: provider.chat('gpt-test'), retry: { maxAttempts: 3, initialDelayMs: 5, maxDelayMs: 20 } },
    tools: [lookup],
  });
  const afterLLM: AfterLLMCallPayload[] = [];
  const executor = new JSAgentExecutor(new InMemoryStateStore(), new InMemoryStreamManager(), new VercelAIAdapter(), { logger: silentLogger });
  const usageStore = new InMemoryUsageStore();
  const handle = await executor.execute(agent, 'Define two words', { usageStore, hooks: { afterLLMCall: (p) => void afterLLM.push(p) } });
  const chunks: StreamChunk[] = [];
  for await (const chunk of handle.stream()) chunks.push(chunk);
  return { result: await handle.result(), chunks, afterLLM, usage: await handle.getUsageRollup(), requests: server.requests };
}

describe('the run loop over the real @ai-sdk/openai provider and HTTP', () => {
  it('streams text and parallel tool calls, runs the tools, and completes on the final text', async () => {
    const { result, chunks, requests, usage } = await run([
      { textChunks: ['Looking ', 'them up.'], toolCalls: [{ name: 'lookup', args: { word: 'hook' } }, { name: 'lookup', args: { word: 'agent' } }], usage: { inputTokens: 40, outputTokens: 12, cachedInputTokens: 8 } },
      { textChunks: ['A hook ', 'observes; ', 'an agent acts.'], usage: { inputTokens: 90, outputTokens: 9 } },
    ]);
    expect(result).toMatchObject({ status: 'completed', output: 'A hook observes; an agent acts.', stepCount: 2 });
    expect(result.state).toEqual({ looked: ['hook', 'agent'] });
    const deltas = chunks.filter((c): c is Extract<StreamChunk, { type: 'text_delta' }> => c.type === 'text_delta').map((c) => c.delta);
    expect(deltas.join('')).toBe('Looking them up.A hook observes; an agent acts.');
    expect(deltas.length).toBeGreaterThanOrEqual(5);
    expect(chunks.filter((c) => c.type === 'tool_end')).toHaveLength(2);
    expect(requests).toHaveLength(2);
    // The second request carries the assistant's tool calls and both results.
    const second = requests[1]!.messages;
    expect(second.filter((m) => m['role'] === 'tool')).toHaveLength(2);
    expect(second[0]).toMatchObject({ role: 'system', content: 'Define words.' });
    expect(usage?.tokens).toMatchObject({ prompt: 130, completion: 21, cached: 8 });
  });

  it('a 429 is retried (warning chunk, afterLLMCall per attempt) and the run succeeds', async () => {
    const { result, chunks, afterLLM, requests } = await run([
      { status: 429, headers: { 'retry-after-ms': '10' } },
      { text: 'Fine now.' },
    ]);
    expect(result).toMatchObject({ status: 'completed', output: 'Fine now.' });
    expect(requests).toHaveLength(2);
    expect(afterLLM.map((p) => p.error?.code ?? 'ok')).toEqual(['provider_rate_limited', 'ok']);
    expect(chunks.filter((c) => c.type === 'warning')).toEqual([expect.objectContaining({ errorInfo: expect.objectContaining({ code: 'provider_rate_limited' }) })]);
  });

  it('a 500 is retried to exhaustion and the run fails with provider_server_error, retryable', async () => {
    const { result, chunks, afterLLM, requests } = await run([{ status: 500 }, { status: 500 }, { status: 500 }, { text: 'never reached' }]);
    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({ code: 'provider_server_error', layer: 'provider', retryable: true });
    expect(requests).toHaveLength(3);
    expect(afterLLM).toHaveLength(3);
    expect(chunks.at(-1)).toMatchObject({ type: 'error', status: 'failed', errorInfo: { code: 'provider_server_error' } });
  });

  it('a 401 is not retried: provider_auth, fatal', async () => {
    const { result, requests } = await run([{ status: 401 }, { text: 'never' }]);
    expect(result.error).toMatchObject({ code: 'provider_auth', severity: 'fatal', retryable: false });
    expect(requests).toHaveLength(1);
  });
});
