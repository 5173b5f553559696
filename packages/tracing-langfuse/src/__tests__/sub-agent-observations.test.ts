import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { defineAgent, defineSubAgentTool, InMemoryStateStore, InMemoryStreamManager, JSAgentExecutor, silentLogger, type AgentDefinition } from '@helix-agents/sdk';
import { createScriptedModel, type ScriptedStep, type ScriptedStepObject } from '@helix-agents/sdk/testing';
import { createLangfuseHooks } from '../index.js';
import { startOtlpSink, traceOf } from './otlp-sink.js';

type Sink = Awaited<ReturnType<typeof startOtlpSink>>;

function agent(name: string, steps: readonly ScriptedStep[], overrides: Partial<AgentDefinition<Record<string, unknown>, { summary: string }>> = {}) {
  return defineAgent<Record<string, unknown>, { summary: string }>({
    name,
    outputSchema: z.object({ summary: z.string() }),
    llmConfig: { model: createScriptedModel(steps, { provider: 'openai.chat', modelId: 'gpt-4o-mini' }), retry: { initialDelayMs: 1, maxDelayMs: 2 } },
    ...overrides,
  });
}

const finish = (summary: string, delayMs = 0): ScriptedStepObject => ({ toolCalls: [{ name: '__finish__', args: { summary } }], usage: { inputTokens: 20, outputTokens: 5 }, delayMs });

let sink: Sink;
beforeEach(async () => {
  sink = await startOtlpSink();
});
afterEach(async () => {
  await sink.close();
});

describe('createLangfuseHooks: sub-agent runs', () => {
  it('three parallel sub-agent calls: each child agent observation nests under the tool observation of the call that started it, all in the parent trace', async () => {
    const { hooks, flush, shutdown } = createLangfuseHooks({ publicKey: 'pk-lf-test', secretKey: 'sk-lf-test', baseUrl: sink.url, captureContent: false });
    // The children's model call takes a while, so the three calls are open at once.
    const researcher = agent('researcher', [finish('found', 60)]);
    const lead = agent('lead', [{ toolCalls: ['a', 'b', 'c'].map((id) => ({ name: 'researcher', args: { input: `topic ${id}` }, id: `call-${id}` })) }, finish('all done')], {
      tools: [defineSubAgentTool({ agent: researcher })],
    });
    const executor = new JSAgentExecutor(new InMemoryStateStore(), new InMemoryStreamManager(), new VercelAIAdapter(), { logger: silentLogger });
    // Execution-level hooks: the children inherit them.
    const result = await (await executor.execute(lead, 'go', { sessionId: 's-lead', userId: 'u-1', hooks })).result();
    expect(result.status).toBe('completed');
    await flush();
    expect(sink.errors).toEqual([]);

    const roots = sink.spans.filter((s) => s.parentSpanId === undefined);
    expect(roots.map((r) => r.name)).toEqual(['invoke_agent lead']);
    const t = traceOf(sink.spans, roots[0]!.traceId);
    expect(t.spans).toHaveLength(sink.spans.length);
    const tools = t.named('execute_tool researcher');
    const children = t.named('invoke_agent researcher');
    expect(tools).toHaveLength(3);
    expect(children).toHaveLength(3);
    for (const tool of tools) {
      expect(tool.parentSpanId).toBe(roots[0]!.spanId);
      const callId = tool.attributes['gen_ai.tool.call.id'];
      const mine = t.childrenOf(tool).filter((s) => s.attributes['langfuse.observation.type'] === 'agent');
      expect(mine).toHaveLength(1);
      expect(mine[0]!.attributes).toMatchObject({
        'langfuse.observation.metadata.parentSessionId': 's-lead',
        'langfuse.observation.metadata.parentToolCallId': callId,
        // Trace-level attributes are the root run's, so filters by user or session see the children's work.
        'session.id': 's-lead',
        'user.id': 'u-1',
      });
      expect(t.childrenOf(mine[0]!).map((s) => s.attributes['langfuse.observation.type'])).toEqual(['generation']);
    }
    await shutdown();
  });
});
