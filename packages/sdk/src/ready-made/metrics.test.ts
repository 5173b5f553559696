import { describe, expect, it } from 'vitest';
import { createHookManager, guardPolicy } from '../index.js';
import { createScriptedModel } from '../testing/index.js';
import { counterAgent, finish, setup } from '../__tests__/harness.js';
import { createMetricsHooks, type MetricsClient } from './metrics.js';
import { createToolGuard } from './tool-guard.js';

function memoryMetrics(): MetricsClient & { readonly samples: [string, string, number, Record<string, string>][] } {
  const samples: [string, string, number, Record<string, string>][] = [];
  return {
    samples,
    histogram: (name, value, tags = {}) => void samples.push(['histogram', name, value, tags]),
    counter: (name, value, tags = {}) => void samples.push(['counter', name, value, tags]),
  };
}

describe('createMetricsHooks', () => {
  it('records run duration and steps, model latency and tokens, tool latency by tool and outcome', async () => {
    const { executor } = setup();
    const metrics = memoryMetrics();
    const model = createScriptedModel([
      { toolCalls: [{ name: 'increment', args: { by: 1 } }], usage: { inputTokens: 100, outputTokens: 20, cachedInputTokens: 60 } },
      { ...finish('x'), usage: { inputTokens: 130, outputTokens: 10 } },
    ]);
    await (await executor.execute(counterAgent([], { llmConfig: { model } }), 'go', { hooks: createMetricsHooks(metrics) })).result();
    const byName = (name: string) => metrics.samples.filter((s) => s[1] === name);
    expect(byName('llm.duration')).toHaveLength(2);
    expect(byName('llm.duration')[0]![3]).toEqual({ model: 'scripted-model' });
    expect(byName('llm.tokens.input').map((s) => s[2])).toEqual([100, 130]);
    expect(byName('llm.tokens.output').map((s) => s[2])).toEqual([20, 10]);
    expect(byName('llm.tokens.cached').map((s) => s[2])).toEqual([60]);
    expect(byName('tool.duration').map((s) => s[3])).toEqual([{ tool: 'increment', success: 'true' }]);
    expect(byName('agent.duration')[0]![3]).toEqual({ agent: 'counter' });
    expect(byName('agent.steps').map((s) => s[2])).toEqual([2]);
    expect(byName('agent.failures')).toEqual([]);
  });

  it('counts blocked tool calls and failed runs by code', async () => {
    const { executor } = setup();
    const metrics = memoryMetrics();
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 } }] }]);
    const hookManager = createHookManager(createToolGuard({ deny: ['increment'] }), { onError: guardPolicy }).register(createMetricsHooks(metrics));
    const result = await (await executor.execute(agent, 'go', { hookManager })).result();
    expect(metrics.samples.filter((s) => s[1] === 'tool.blocked')).toEqual([['counter', 'tool.blocked', 1, { tool: 'increment' }]]);
    expect(metrics.samples.filter((s) => s[1] === 'tool.duration').map((s) => s[3])).toEqual([{ tool: 'increment', success: 'false' }]);
    expect(metrics.samples.filter((s) => s[1] === 'agent.failures')).toEqual([['counter', 'agent.failures', 1, { agent: 'counter', code: result.error!.code }]]);
  });
});
