import { createOpenAI } from '@ai-sdk/openai';
import { toStandardJsonSchema } from '@valibot/to-json-schema';
import { jsonSchema } from 'ai';
import { type } from 'arktype';
import * as v from 'valibot';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { z as z3 } from 'zod3';
import { defineAgent, defineTool, InMemoryStateStore, InMemoryStreamManager, JSAgentExecutor, silentLogger, type ToolResultMessage, type ToolSchema } from '@helix-agents/sdk';
import { VercelAIAdapter } from './index.js';
import { startScriptedOpenAIServer, type ScriptedOpenAIServer } from './testing/index.js';

// Issue 15, item 6, over real HTTP: each kind of tool schema reaches OpenAI's Chat Completions API as
// the tool's `parameters`, and the arguments the model sends are checked against it.
let server: ScriptedOpenAIServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

type Forecast = { city: string; days: number };
const isForecast = (value: unknown): value is Forecast => typeof (value as Forecast).city === 'string' && typeof (value as Forecast).days === 'number';

const schemas: Record<string, ToolSchema<Forecast>> = {
  'zod 4': z.object({ city: z.string(), days: z.number() }),
  'zod 3': z3.object({ city: z3.string(), days: z3.number() }),
  'valibot with toStandardJsonSchema()': toStandardJsonSchema(v.object({ city: v.string(), days: v.number() })),
  arktype: type({ city: 'string', days: 'number' }),
  "jsonSchema() from 'ai'": jsonSchema<Forecast>(
    { type: 'object', properties: { city: { type: 'string' }, days: { type: 'number' } }, required: ['city', 'days'], additionalProperties: false },
    { validate: (value) => (isForecast(value) ? { success: true, value } : { success: false, error: new Error('expected { city: string, days: number }') }) },
  ),
};

describe('tool schemas through the real @ai-sdk/openai chat provider', () => {
  it.each(Object.keys(schemas))('%s: the request carries its JSON Schema; invalid arguments go back to the model, valid ones run the tool', async (kind) => {
    server = await startScriptedOpenAIServer([
      { toolCalls: [{ name: 'forecast', args: { city: 'Oslo', days: 'three' }, id: 'call_bad' }] },
      { toolCalls: [{ name: 'forecast', args: { city: 'Oslo', days: 3 }, id: 'call_good' }] },
      { text: 'Three sunny days in Oslo.' },
    ]);
    const ran: Forecast[] = [];
    const forecast = defineTool({ name: 'forecast', description: 'Weather forecast', inputSchema: schemas[kind]!, execute: async (input) => (ran.push(input), `sunny for ${input.days} days`) });
    const agent = defineAgent({ name: 'weather', llmConfig: { model: createOpenAI({ baseURL: server.baseURL, apiKey: 'test' }).chat('gpt-test') }, tools: [forecast] });
    const stateStore = new InMemoryStateStore();
    const executor = new JSAgentExecutor(stateStore, new InMemoryStreamManager(), new VercelAIAdapter(), { logger: silentLogger });
    const result = await (await executor.execute(agent, 'Forecast for Oslo?', { sessionId: 'forecast' })).result();
    expect(result).toMatchObject({ status: 'completed', output: 'Three sunny days in Oslo.' });
    expect(ran).toEqual([{ city: 'Oslo', days: 3 }]);

    const parameters = (server.requests[0]!.tools![0] as { function: { parameters: Record<string, unknown> } }).function.parameters;
    expect(parameters).toMatchObject({ type: 'object', properties: { city: { type: 'string' }, days: { type: 'number' } } });
    expect([...(parameters['required'] as string[])].sort()).toEqual(['city', 'days']);
    expect(parameters).toEqual(forecast.jsonSchema);

    const rows = (await stateStore.loadSession('forecast'))!.messages.filter((m): m is ToolResultMessage => m.role === 'tool');
    expect(rows[0]).toMatchObject({ toolCallId: 'call_bad', isError: true, errorInfo: { code: 'tool_invalid_input' } });
    // The model read the error in its next request, as a tool message.
    const toolMessage = server.requests[1]!.messages.find((m) => m['role'] === 'tool' && m['tool_call_id'] === 'call_bad');
    expect(String(toolMessage?.['content'])).toContain('Invalid arguments for tool "forecast"');
    expect(rows[1]).toMatchObject({ toolCallId: 'call_good', content: 'sunny for 3 days' });
  });
});
