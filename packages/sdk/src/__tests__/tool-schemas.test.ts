import { jsonSchema } from '@ai-sdk/provider-utils';
import type { JSONSchema7 } from 'json-schema';
import { toStandardJsonSchema } from '@valibot/to-json-schema';
import { type } from 'arktype';
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { z as zodV3 } from 'zod/v3';
import { z as z3 } from 'zod3';

import { ConfigError, defineTool, type ToolResultMessage } from '../index.js';
import { checkSchema, toolJSONSchema } from '../tool-schema.js';
import { createScriptedModel } from '../testing/index.js';
import { setup, textAgent } from './harness.js';

// Issue 15, item 6: tools take any Standard Schema and the AI SDK's jsonSchema(); anything else is a ConfigError naming the tool.

const cityJSON: JSONSchema7 = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false };

/** The same `{ city: string }` input in every kind a tool accepts. */
const kinds = {
  'zod 4': z.object({ city: z.string() }),
  'zod 3': z3.object({ city: z3.string() }),
  "zod 4's zod/v3": zodV3.object({ city: zodV3.string() }),
  'valibot (toStandardJsonSchema)': toStandardJsonSchema(v.object({ city: v.string() })),
  arktype: type({ city: 'string' }),
  'AI SDK jsonSchema() with validate': jsonSchema<{ city: string }>(cityJSON, {
    validate: (value) => (typeof (value as { city?: unknown }).city === 'string' ? { success: true, value: value as { city: string } } : { success: false, error: new Error('city must be a string') }),
  }),
};

describe('tool schemas of every kind', () => {
  it.each(Object.keys(kinds) as (keyof typeof kinds)[])('%s: the JSON Schema describes the input, valid arguments reach execute, invalid ones go back to the model as tool_invalid_input', async (kind) => {
    const seen: string[] = [];
    const weather = defineTool({ name: 'weather', description: 'Weather of a city', inputSchema: kinds[kind], execute: async (input) => (seen.push(input.city), `sunny in ${input.city}`) });
    expect(weather.jsonSchema).toMatchObject({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] });
    expect(weather.jsonSchema).not.toHaveProperty('$schema');
    const model = createScriptedModel([{ toolCalls: [{ name: 'weather', args: { city: 7 }, id: 'bad' }] }, { toolCalls: [{ name: 'weather', args: { city: 'Oslo' }, id: 'good' }] }, { text: 'done' }]);
    const { executor, stateStore } = setup();
    const agent = textAgent([], { llmConfig: { model }, tools: [weather] });
    const result = await (await executor.execute(agent, 'go', { sessionId: 'w' })).result();
    expect(result).toMatchObject({ status: 'completed', output: 'done' });
    expect(seen).toEqual(['Oslo']);
    expect(model.calls[0]!.tools).toEqual([{ type: 'function', name: 'weather', description: 'Weather of a city', inputSchema: weather.jsonSchema }]);
    const rows = (await stateStore.loadSession('w'))!.messages.filter((m): m is ToolResultMessage => m.role === 'tool');
    expect(rows[0]).toMatchObject({ toolCallId: 'bad', isError: true, errorInfo: { code: 'tool_invalid_input', layer: 'tool' } });
    expect(rows[0]!.content).toContain('Invalid arguments for tool "weather"');
    expect(rows[1]).toMatchObject({ toolCallId: 'good', content: 'sunny in Oslo' });
  });

  it('zod 3 and arktype issues name the failing path', async () => {
    for (const schema of [kinds['zod 3'], kinds.arktype]) {
      const checked = await checkSchema(schema, { city: 1 });
      expect(checked).toMatchObject({ ok: false, issues: [{ path: ['city'] }] });
    }
    expect(await checkSchema(kinds['zod 3'], { city: 'x', extra: 1 })).toEqual({ ok: true, value: { city: 'x' } });
  });

  it('a schema that validates asynchronously is awaited, in the call and in a beforeTool rewrite', async () => {
    const slow = jsonSchema<{ n: number }>(
      { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
      { validate: async (value) => (typeof (value as { n?: unknown }).n === 'number' ? { success: true, value: value as { n: number } } : { success: false, error: new Error('n must be a number') }) },
    );
    const got: number[] = [];
    const count = defineTool({ name: 'count', description: 'Count', inputSchema: slow, execute: async (input) => got.push(input.n) });
    const model = createScriptedModel([{ toolCalls: [{ name: 'count', args: { n: 'x' }, id: 'a' }, { name: 'count', args: { n: 1 }, id: 'b' }, { name: 'count', args: { n: 2 }, id: 'c' }] }, { text: 'ok' }]);
    const { executor, stateStore } = setup();
    // The hook rewrites call c into an invalid input: the rewrite is checked against the async schema and blocks.
    const hooks = { beforeTool: (p: { toolCall: { id: string } }) => (p.toolCall.id === 'c' ? { input: { n: 'nope' } } : undefined) };
    await (await executor.execute(textAgent([], { llmConfig: { model }, tools: [count] }), 'go', { sessionId: 'slow', hooks: hooks as never })).result();
    expect(got).toEqual([1]);
    const rows = (await stateStore.loadSession('slow'))!.messages.filter((m): m is ToolResultMessage => m.role === 'tool');
    expect(rows.find((r) => r.toolCallId === 'a')!.errorInfo).toMatchObject({ code: 'tool_invalid_input', message: expect.stringContaining('n must be a number') });
    expect(rows.find((r) => r.toolCallId === 'c')!.errorInfo).toMatchObject({ code: 'hook_blocked', message: expect.stringContaining('invalid input') });
  });

  it("an arktype outputSchema checks the tool's result: a wrong one becomes tool_invalid_output and the run goes on", async () => {
    // The result is cast: at run time the tool breaks its own declared type, as a buggy tool would.
    const score = defineTool({ name: 'score', description: 'Score', inputSchema: type({}), outputSchema: type({ score: 'number' }), execute: async () => JSON.parse('{"score":"high"}') as { score: number } });
    const { executor, stateStore } = setup();
    const agent = textAgent([{ toolCalls: [{ name: 'score', args: {}, id: 's' }] }, { text: 'ok' }], { tools: [score] });
    expect((await (await executor.execute(agent, 'go', { sessionId: 'out' })).result()).status).toBe('completed');
    const row = (await stateStore.loadSession('out'))!.messages.find((m): m is ToolResultMessage => m.role === 'tool')!;
    expect(row.errorInfo).toMatchObject({ code: 'tool_invalid_output', message: expect.stringContaining('score') });
  });
});

describe('anything else is a ConfigError naming the tool', () => {
  it.each([
    ['a plain JSON Schema object', cityJSON, "jsonSchema() from 'ai'"],
    ['undefined', undefined, 'got undefined'],
    ['a number', 42, 'got a number'],
    ['a valibot schema without a JSON Schema converter', v.object({ city: v.string() }), "toStandardJsonSchema() from '@valibot/to-json-schema'"],
    ['a JSON Schema given as a promise', jsonSchema(Promise.resolve(cityJSON) as never), 'promise'],
  ])('%s as inputSchema', (_name, schema, fix) => {
    const define = () => defineTool({ name: 'lookup', description: 'Look up', inputSchema: schema as never, execute: async () => 1 });
    expect(define).toThrow(ConfigError);
    expect(define).toThrow(expect.objectContaining({ info: expect.objectContaining({ code: 'config_invalid', message: expect.stringMatching(/^Tool "lookup": inputSchema/), details: expect.objectContaining({ tool: 'lookup' }) }) }));
    expect(define).toThrow(expect.objectContaining({ message: expect.stringContaining(fix) }));
  });

  it('a plain object as outputSchema is refused the same way, naming the outputSchema', () => {
    expect(() => defineTool({ name: 'lookup', description: 'Look up', inputSchema: z.object({}), outputSchema: cityJSON as never, execute: async () => 1 })).toThrow(
      expect.objectContaining({ message: expect.stringMatching(/^Tool "lookup": outputSchema must be a Standard Schema/) }),
    );
    expect(() => toolJSONSchema({ '~standard': { vendor: 'x', version: 1 } }, 'Tool "t": inputSchema')).toThrow(ConfigError);
  });
});
