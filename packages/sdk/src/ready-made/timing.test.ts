import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createHookManager, defineTool, guardPolicy } from '../index.js';
import { createScriptedModel } from '../testing/index.js';
import { counterAgent, finish, incrementTool, setup } from '../__tests__/harness.js';
import { createTimingHooks, type ToolTiming } from './timing.js';
import { createToolGuard } from './tool-guard.js';

const sleepy = defineTool({
  name: 'sleepy',
  description: 'sleeps',
  inputSchema: z.object({ ms: z.number() }),
  execute: async (input) => {
    await new Promise((r) => setTimeout(r, input.ms));
    return 'rested';
  },
});

describe('createTimingHooks', () => {
  it('reports each call from beforeTool to afterTool, parallel calls and blocked calls included', async () => {
    const { executor } = setup();
    const reports: [string, number, ToolTiming][] = [];
    const agent = counterAgent(
      [
        {
          toolCalls: [
            { name: 'sleepy', args: { ms: 40 }, id: 'slow' },
            { name: 'sleepy', args: { ms: 1 }, id: 'fast' },
            { name: 'increment', args: { by: 1 }, id: 'no' },
          ],
        },
        finish('x'),
      ],
      { tools: [sleepy, incrementTool] },
    );
    // Timing first, so it sees the call the guard then blocks.
    const hookManager = createHookManager(createTimingHooks((tool, ms, timing) => void reports.push([tool, ms, timing]))).register(createToolGuard({ deny: ['increment'] }), { onError: guardPolicy });
    await (await executor.execute(agent, 'go', { hookManager })).result();
    const byId = new Map(reports.map((r) => [r[2].toolCallId, r] as const));
    expect(byId.size).toBe(3);
    expect(byId.get('slow')![1]).toBeGreaterThanOrEqual(35);
    expect(byId.get('fast')![1]).toBeLessThan(byId.get('slow')![1]);
    expect(byId.get('slow')![2]).toEqual({ toolCallId: 'slow', success: true, blocked: false });
    expect(byId.get('no')).toEqual(['increment', expect.any(Number), { toolCallId: 'no', success: false, blocked: true }]);
  });

  it('keeps concurrent runs apart even when their call ids are the same', async () => {
    const { executor } = setup();
    const reports: number[] = [];
    const hooks = createTimingHooks((_tool, ms) => void reports.push(ms));
    const run = (ms: number) =>
      executor.execute(counterAgent([], { llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'sleepy', args: { ms }, id: 'same' }] }, finish('x')]) }, tools: [sleepy] }), 'go', { hooks });
    const handles = await Promise.all([run(60), run(1)]);
    await Promise.all(handles.map((h) => h.result()));
    expect(reports.sort((a, b) => a - b)[1]).toBeGreaterThanOrEqual(55);
    expect(reports[0]).toBeLessThan(55);
  });
});
