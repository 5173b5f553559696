import { trace } from '@opentelemetry/api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import {
  defineAgent,
  defineTool,
  InMemoryStateStore,
  InMemoryStreamManager,
  JSAgentExecutor,
  silentLogger,
  type AgentDefinition,
  type AgentHooks,
} from '@helix-agents/sdk';
import { createGate, createScriptedModel, type ScriptedStep, type ScriptedStepObject } from '@helix-agents/sdk/testing';
import { createLangfuseHooks, type LangfuseHooksOptions } from '../index.js';
import { json, startOtlpSink, traceOf, type ReceivedSpan } from './otlp-sink.js';

type Sink = Awaited<ReturnType<typeof startOtlpSink>>;

const search = defineTool({ name: 'search', description: 'Search the web', inputSchema: z.object({ query: z.string() }), execute: (i) => ({ results: [`about ${i.query}`] }) });
const flaky = defineTool({
  name: 'flaky',
  description: 'Always fails',
  inputSchema: z.object({ query: z.string() }),
  execute: () => {
    throw new Error('upstream 503');
  },
});

function agent(steps: readonly ScriptedStep[], overrides: Partial<AgentDefinition<Record<string, unknown>, { summary: string }>> = {}) {
  return defineAgent<Record<string, unknown>, { summary: string }>({
    name: 'my-agent',
    systemPrompt: 'You are a research assistant.',
    outputSchema: z.object({ summary: z.string() }),
    llmConfig: { model: createScriptedModel(steps, { provider: 'openai.chat', modelId: 'gpt-4o-mini' }), temperature: 0.3, retry: { initialDelayMs: 1, maxDelayMs: 2 } },
    tools: [search, flaky],
    ...overrides,
  });
}

const finish = (summary: string): ScriptedStepObject => ({ toolCalls: [{ name: '__finish__', args: { summary } }], usage: { inputTokens: 200, outputTokens: 20 } });

function executor() {
  return new JSAgentExecutor(new InMemoryStateStore(), new InMemoryStreamManager(), new VercelAIAdapter(), { logger: silentLogger });
}

let sink: Sink;
beforeEach(async () => {
  sink = await startOtlpSink();
});
afterEach(async () => {
  await sink.close();
});

function langfuse(options: LangfuseHooksOptions = {}) {
  return createLangfuseHooks({
    release: '1.0.0',
    defaultTags: ['production'],
    publicKey: 'pk-lf-test',
    secretKey: 'sk-lf-test',
    baseUrl: sink.url,
    environment: 'test',
    ...options,
  });
}

const rootOf = (spans: readonly ReceivedSpan[]) => spans.filter((s) => s.parentSpanId === undefined);

describe('createLangfuseHooks against a local OTLP endpoint', () => {
  it('rule 139: the spec example: a trace per run with userId, sessionId, tags, metadata and release; generations per attempt; tool observations', async () => {
    const { hooks, flush, shutdown, recordDecision } = langfuse();
    const guard: AgentHooks = {
      beforeTool: (payload, ctx) => void recordDecision(ctx, { hook: 'beforeTool', decision: 'continue', reason: 'query allowed', toolCallId: payload.toolCall.id, source: 'policy' }),
    };
    const a = agent(
      [
        {
          toolCalls: [
            { name: 'search', args: { query: 'quantum' }, id: 'call-search' },
            { name: 'flaky', args: { query: 'x' }, id: 'call-flaky' },
            { name: 'search', args: { query: 42 }, id: 'call-invalid' },
          ],
          usage: { inputTokens: 1200, outputTokens: 80, cachedInputTokens: 1000, cacheWriteTokens: 150 },
        },
        { error: { status: 429, message: 'Rate limit reached for requests.' } },
        finish('Quantum computers use qubits.'),
      ],
      { hooks },
    );
    const handle = await executor().execute(a, 'Research quantum computing', {
      hooks: guard,
      userId: 'user-123',
      sessionId: 'conversation-456',
      tags: ['premium'],
      metadata: { feature: 'chat' },
    });
    expect((await handle.result()).status).toBe('completed');
    await flush();

    // What went over the wire: OTLP/HTTP JSON to Langfuse's endpoint, with Basic auth from the keys.
    expect(sink.errors).toEqual([]);
    expect(sink.requests.length).toBeGreaterThan(0);
    for (const request of sink.requests) {
      expect(request).toMatchObject({ method: 'POST', path: '/api/public/otel/v1/traces', contentType: 'application/json' });
      expect(request.headers['authorization']).toBe(`Basic ${Buffer.from('pk-lf-test:sk-lf-test').toString('base64')}`);
      expect(request.headers['x-langfuse-public-key']).toBe('pk-lf-test');
    }

    const [root] = rootOf(sink.spans);
    expect(rootOf(sink.spans)).toHaveLength(1);
    const t = traceOf(sink.spans, root!.traceId);
    expect(t.spans).toHaveLength(sink.spans.length);
    expect(root!.name).toBe('invoke_agent my-agent');
    expect(root!.scope).toBe('@helix-agents/tracing-langfuse');
    expect(root!.attributes).toMatchObject({
      'langfuse.observation.type': 'agent',
      'langfuse.trace.name': 'my-agent',
      'user.id': 'user-123',
      'session.id': 'conversation-456',
      'langfuse.trace.tags': ['production', 'premium'],
      'langfuse.trace.metadata.feature': 'chat',
      'langfuse.trace.metadata.runId': handle.runId,
      'langfuse.release': '1.0.0',
      'langfuse.environment': 'test',
      'langfuse.observation.input': 'Research quantum computing',
      'gen_ai.operation.name': 'invoke_agent',
    });
    expect(json(root!.attributes['langfuse.observation.output'])).toEqual({ summary: 'Quantum computers use qubits.' });

    // Every observation carries the trace attributes, so observation filters by user or tag see them all.
    for (const span of t.spans) {
      expect(span.attributes).toMatchObject({ 'user.id': 'user-123', 'session.id': 'conversation-456', 'langfuse.release': '1.0.0' });
      expect(span.attributes['langfuse.trace.tags']).toEqual(['production', 'premium']);
    }

    // Generations: one per model call attempt (step 0; step 1 failed with 429 and was retried).
    const generations = t.byType('generation');
    expect(generations.map((g) => g.name)).toEqual(['chat gpt-4o-mini', 'chat gpt-4o-mini', 'chat gpt-4o-mini']);
    expect(generations.every((g) => g.parentSpanId === root!.spanId)).toBe(true);
    const [first, limited, retried] = generations as [ReceivedSpan, ReceivedSpan, ReceivedSpan];
    expect(first.attributes).toMatchObject({ 'langfuse.observation.model.name': 'gpt-4o-mini' });
    expect(json(first.attributes['langfuse.observation.usage_details'])).toEqual({ input: 50, input_cache_read: 1000, input_cache_creation: 150, output: 80, total: 1280 });
    expect(json(first.attributes['langfuse.observation.model.parameters'])).toEqual({ temperature: 0.3 });
    expect(json(first.attributes['langfuse.observation.input'])).toEqual([
      { role: 'system', content: 'You are a research assistant.' },
      { role: 'user', content: 'Research quantum computing' },
    ]);
    expect(json(first.attributes['langfuse.observation.output'])).toMatchObject({
      role: 'assistant',
      tool_calls: [
        { id: 'call-search', type: 'function', function: { name: 'search', arguments: '{"query":"quantum"}' } },
        { id: 'call-flaky', type: 'function', function: { name: 'flaky' } },
        { id: 'call-invalid', type: 'function', function: { name: 'search' } },
      ],
    });
    expect(limited.attributes).toMatchObject({
      'langfuse.observation.level': 'WARNING',
      'langfuse.observation.status_message': expect.stringContaining('Rate limit reached for requests.'),
      'langfuse.observation.metadata.attempt': '1',
      'langfuse.observation.metadata.plan': 'retry',
      'langfuse.observation.metadata.errorCode': 'provider_rate_limited',
      'error.type': 'provider_rate_limited',
    });
    expect(limited.statusCode).toBe(2);
    expect(retried.attributes).toMatchObject({ 'langfuse.observation.metadata.attempt': '2', 'langfuse.observation.metadata.stepIndex': '1' });
    expect(retried.attributes['langfuse.observation.level']).toBeUndefined();
    expect(json(retried.attributes['langfuse.observation.usage_details'])).toEqual({ input: 200, output: 20, total: 220 });
    // Latency: every observation has a real duration.
    expect(generations.every((g) => g.durationMs >= 0)).toBe(true);

    // Tool observations: arguments, result, and the failure as an ERROR level.
    const tools = t.byType('tool');
    expect(tools.map((s) => s.name).sort()).toEqual(['execute_tool flaky', 'execute_tool search']);
    const searchSpan = t.named('execute_tool search')[0]!;
    expect(searchSpan.parentSpanId).toBe(root!.spanId);
    expect(json(searchSpan.attributes['langfuse.observation.input'])).toEqual({ query: 'quantum' });
    expect(json(searchSpan.attributes['langfuse.observation.output'])).toEqual({ results: ['about quantum'] });
    expect(searchSpan.attributes['gen_ai.tool.call.id']).toBe('call-search');
    const flakySpan = t.named('execute_tool flaky')[0]!;
    expect(flakySpan.attributes).toMatchObject({ 'langfuse.observation.level': 'ERROR', 'langfuse.observation.metadata.errorCode': 'tool_failed' });
    expect(flakySpan.attributes['langfuse.observation.status_message']).toContain('upstream 503');

    // The hook's decision is a guardrail observation under the tool call it concerns; the refused call an event.
    const [decision] = t.byType('guardrail');
    expect(decision!.parentSpanId).toBe(searchSpan.spanId);
    expect(decision!.attributes).toMatchObject({
      'langfuse.observation.status_message': 'query allowed',
      'langfuse.observation.metadata.helix.hook.decision': 'continue',
      'langfuse.observation.metadata.helix.hook.source': 'policy',
    });
    const rejected = t.byType('event').find((s) => s.name === 'helix.tool_call.rejected')!;
    expect(rejected.parentSpanId).toBe(root!.spanId);
    expect(rejected.attributes).toMatchObject({ 'langfuse.observation.level': 'WARNING', 'gen_ai.tool.call.id': 'call-invalid', 'error.type': 'tool_invalid_input' });

    await shutdown();
  });

  it('a failed run is an ERROR agent observation; each run is its own trace; a sub-agent run nests in its parent trace', async () => {
    const { hooks, flush, shutdown, stats } = langfuse({ captureContent: false });
    const ex = executor();
    const failed = await (await ex.execute(agent([{ error: { status: 401, message: 'Incorrect API key provided.' } }], { hooks }), 'go', { sessionId: 's-fail' })).result();
    expect(failed.status).toBe('failed');

    const child = agent([finish('child')], { name: 'helper', hooks });
    const delegate = defineTool({
      name: 'delegate',
      description: 'asks the helper',
      inputSchema: z.object({ query: z.string() }),
      execute: async (input, ctx) => (await (await ex.execute(child, input.query, { parentSessionId: ctx.sessionId })).result()).output,
    });
    const parent = agent([{ toolCalls: [{ name: 'delegate', args: { query: 'sub' } }] }, finish('parent')], { tools: [delegate], hooks });
    await (await ex.execute(parent, 'go', { sessionId: 's-parent' })).result();
    await flush();
    expect(sink.errors).toEqual([]);

    const roots = rootOf(sink.spans);
    expect(roots.map((r) => r.attributes['session.id']).sort()).toEqual(['s-fail', 's-parent']);
    const failedRoot = roots.find((r) => r.attributes['session.id'] === 's-fail')!;
    expect(failedRoot.attributes).toMatchObject({
      'langfuse.observation.level': 'ERROR',
      'langfuse.observation.status_message': expect.stringContaining('Incorrect API key provided.'),
      'langfuse.observation.metadata.status': 'failed',
      'langfuse.observation.metadata.errorCode': 'provider_auth',
    });
    const failedGeneration = traceOf(sink.spans, failedRoot.traceId).byType('generation')[0]!;
    expect(failedGeneration.attributes['langfuse.observation.level']).toBe('ERROR');

    const parentRoot = roots.find((r) => r.attributes['session.id'] === 's-parent')!;
    const parentTrace = traceOf(sink.spans, parentRoot.traceId);
    const childAgent = parentTrace.byType('agent').find((s) => s.name === 'invoke_agent helper')!;
    const delegateTool = parentTrace.named('execute_tool delegate')[0]!;
    expect(delegateTool.parentSpanId).toBe(parentRoot.spanId);
    expect(childAgent.parentSpanId).toBe(delegateTool.spanId);
    // The sub-agent's observations are in the parent's trace: trace attributes are the parent run's, its own session is metadata.
    expect(childAgent.attributes).toMatchObject({
      'session.id': 's-parent',
      'langfuse.trace.name': 'my-agent',
      'langfuse.observation.metadata.parentSessionId': 's-parent',
      'langfuse.observation.metadata.sessionId': expect.not.stringMatching(/^s-parent$/),
    });
    expect(parentTrace.childrenOf(childAgent).map((s) => s.attributes['langfuse.observation.type'])).toEqual(['generation']);

    // captureContent: false sends no inputs or outputs at all.
    for (const span of sink.spans) {
      expect(Object.keys(span.attributes).filter((k) => k.endsWith('.input') || k.endsWith('.output') || k.startsWith('gen_ai.input') || k.startsWith('gen_ai.tool.call.arg'))).toEqual([]);
    }
    expect(stats()).toMatchObject({ activeRuns: 0, openSpans: 0 });
    await shutdown();
  });

  it('a blocked tool call shows who blocked it and why (a guardrail observation); a suspended run ends with its reason, the resumed run is its own trace in the same session', async () => {
    const { hooks, flush, shutdown, traceStream } = langfuse();
    const guard: AgentHooks = { beforeTool: (p) => (p.tool.name === 'flaky' ? { block: true, reason: 'flaky is disabled today' } : undefined) };
    const askUser = defineTool({ name: 'ask_user', description: 'asks the user', inputSchema: z.object({ q: z.string() }) });
    const a = agent(
      [{ toolCalls: [{ name: 'flaky', args: { query: 'x' }, id: 'call-flaky' }, { name: 'ask_user', args: { q: 'which topic?' }, id: 'call-ask' }] }, finish('done')],
      { tools: [flaky, askUser], hooks },
    );
    const ex = new JSAgentExecutor(new InMemoryStateStore(), traceStream(new InMemoryStreamManager()), new VercelAIAdapter(), { logger: silentLogger });
    ex.registerAgent(a);
    const first = await ex.execute(a, 'go', { sessionId: 's-hitl', hooks: guard });
    expect((await first.result()).status).toBe('suspended');
    const second = await ex.submitToolResult('s-hitl', 'call-ask', 'quantum');
    expect((await second.result()).status).toBe('completed');
    await flush();

    const roots = rootOf(sink.spans);
    expect(roots.map((r) => r.attributes['langfuse.trace.metadata.runId'])).toEqual([first.runId, second.runId]);
    expect(roots.every((r) => r.attributes['session.id'] === 's-hitl')).toBe(true);
    const [suspended, resumed] = roots as [ReceivedSpan, ReceivedSpan];
    expect(suspended.attributes).toMatchObject({ 'langfuse.observation.metadata.status': 'suspended', 'langfuse.observation.status_message': 'Suspended: client_tool' });
    expect(suspended.attributes['langfuse.observation.level']).toBeUndefined();
    expect(resumed.attributes['langfuse.observation.metadata.startSignal']).toBe('resume');

    const t = traceOf(sink.spans, suspended.traceId);
    const blocked = t.named('execute_tool flaky')[0]!;
    expect(blocked.attributes).toMatchObject({ 'langfuse.observation.level': 'WARNING', 'langfuse.observation.metadata.blocked': 'true', 'error.type': 'hook_blocked' });
    const [decision] = t.childrenOf(blocked);
    expect(decision!.attributes).toMatchObject({
      'langfuse.observation.type': 'guardrail',
      'langfuse.observation.level': 'WARNING',
      'langfuse.observation.status_message': 'flaky is disabled today',
      'langfuse.observation.metadata.helix.hook.decision': 'block',
      'langfuse.observation.metadata.helix.hook.point': 'beforeTool',
    });
    expect(t.childrenOf(blocked)).toHaveLength(1);
    const waiting = t.named('execute_tool ask_user')[0]!;
    expect(waiting.attributes['langfuse.observation.metadata.pending']).toBe('true');
    expect(t.byType('event').map((e) => e.name)).toContain('helix.run.suspended');
    expect(traceOf(sink.spans, resumed.traceId).named('execute_tool ask_user')[0]!.attributes['langfuse.observation.output']).toBe('quantum');
    await shutdown();
  });

  it('installs no global tracer provider, and shutdown closes spans still open and stops exporting', async () => {
    const before = trace.getTracerProvider().getTracer('probe').startSpan('probe');
    const { hooks, shutdown, tracerProvider } = langfuse();
    const after = trace.getTracerProvider().getTracer('probe').startSpan('probe');
    expect(before.isRecording()).toBe(false);
    expect(after.isRecording()).toBe(false);
    expect(tracerProvider.getTracer('x').startSpan('x').isRecording()).toBe(true);

    const gate = createGate();
    const wait = defineTool({
      name: 'wait',
      description: 'waits',
      inputSchema: z.object({}),
      execute: async () => {
        await gate.opened;
        return 'ok';
      },
    });
    const handle = await executor().execute(agent([{ toolCalls: [{ name: 'wait', args: {} }] }, finish('x')], { tools: [wait], hooks }), 'go');
    await new Promise((r) => setTimeout(r, 20));
    await shutdown();
    const open = sink.spans.filter((s) => s.attributes['helix.span.abandoned'] === true).map((s) => s.name);
    expect(open.sort()).toEqual(['execute_tool wait', 'invoke_agent my-agent']);
    gate.open();
    expect((await handle.result()).status).toBe('completed');
  });
});
