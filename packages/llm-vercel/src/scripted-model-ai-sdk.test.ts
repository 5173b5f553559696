// The scripted model must be a valid V3 model for the AI SDK itself, not only for our adapter.
import { createScriptedModel } from '@helix-agents/sdk/testing';
import { generateText, jsonSchema, stepCountIs, streamText, tool } from 'ai';
import { describe, expect, it } from 'vitest';

describe('ScriptedModel under the real AI SDK', () => {
  it('drives generateText through a tool call and a final answer', async () => {
    const model = createScriptedModel([
      { toolCalls: [{ name: 'add', args: { a: 2, b: 3 } }], usage: { inputTokens: 10, outputTokens: 4 } },
      (options) => {
        const last = options.prompt.at(-1);
        const part = last?.role === 'tool' ? last.content[0] : undefined;
        const output = part?.type === 'tool-result' && part.output.type === 'json' ? JSON.stringify(part.output.value) : '?';
        return { text: `The sum is ${output}.`, usage: { inputTokens: 20, outputTokens: 6, cachedInputTokens: 8 } };
      },
    ]);
    const result = await generateText({
      model,
      prompt: 'What is 2 + 3?',
      tools: {
        add: tool({
          description: 'Adds two numbers.',
          inputSchema: jsonSchema<{ a: number; b: number }>({ type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] }),
          execute: async ({ a, b }) => a + b,
        }),
      },
      stopWhen: stepCountIs(3),
    });
    expect(result.text).toBe('The sum is 5.');
    expect(result.steps).toHaveLength(2);
    expect(result.totalUsage).toMatchObject({ inputTokens: 30, outputTokens: 10 });
    expect(model.calls).toHaveLength(2);
  });

  it('streams text through streamText', async () => {
    const model = createScriptedModel([{ textChunks: ['a', 'b', 'c'] }]);
    const result = streamText({ model, prompt: 'x' });
    const chunks: string[] = [];
    for await (const chunk of result.textStream) chunks.push(chunk);
    expect(chunks).toEqual(['a', 'b', 'c']);
    expect(await result.finishReason).toBe('stop');
  });

  it('surfaces a scripted 429 as the APICallError the AI SDK retries on', async () => {
    // A short retry-after also proves the header reaches the SDK's retry logic (its own backoff starts at 2s).
    const model = createScriptedModel([{ error: { status: 429, retryAfterSeconds: 0.01 } }, { error: { status: 429, retryAfterSeconds: 0.01 } }, { text: 'finally' }]);
    const started = Date.now();
    const result = await generateText({ model, prompt: 'x', maxRetries: 2 });
    expect(result.text).toBe('finally');
    expect(model.callCount).toBe(3);
    expect(Date.now() - started).toBeLessThan(1_500);
  });
});
