import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { InMemoryStateStore, defineTool, type AgentHooks } from '@helix-agents/sdk';
import type { Commit, CommitReceipt } from '@helix-agents/sdk/store';
import { createGate } from '@helix-agents/sdk/testing';
import { z } from 'zod';
import { createOtelHooks, type SpanLifecycleEvent } from '../index.js';
import { agent, finish, interval, isChildOf, memoryTracing, named, only, setup, status, tool } from './harness.js';

describe('createOtelHooks: the span tree of a run', () => {
  it('rule 139: parallel tool calls: one invoke_agent span, a chat span per attempt and an execute_tool span per call, each under the run', async () => {
    const { provider, spans } = memoryTracing();
    const tracing = createOtelHooks({ tracerProvider: provider, captureContent: true });
    // The two calls wait for each other, so they are provably in flight at the same time.
    let arrived = 0;
    const bothStarted = createGate();
    const meet = async (q: string) => {
      if (++arrived === 2) bothStarted.open();
      await bothStarted.opened;
      // Stay open together well past the SDK's clock granularity: it stamps a span's start with Date.now()
      // (whole milliseconds) and its end from performance.now(), so an overlap under 1 ms is not observable.
      await new Promise((r) => setTimeout(r, 5));
      return { found: q };
    };
    const a = agent(
      [
        {
          toolCalls: [
            { name: 'search', args: { q: 'alpha' }, id: 'call-alpha' },
            { name: 'lookup', args: { q: 'beta' }, id: 'call-beta' },
          ],
          usage: { inputTokens: 120, outputTokens: 12, cachedInputTokens: 100, cacheWriteTokens: 8 },
        },
        finish('done'),
      ],
      { tools: [tool('search', (i) => meet(i.q)), tool('lookup', (i) => meet(i.q))] },
    );
    const { executor } = setup();
    const handle = await executor.execute(a, 'find alpha and beta', {
      hooks: tracing.hooks,
      sessionId: 'conv-1',
      userId: 'user-7',
      tags: ['premium', 'beta'],
      metadata: { feature: 'chat' },
    });
    const result = await handle.result();
    expect(result.status).toBe('completed');

    const all = spans();
    const run = only(all, 'invoke_agent researcher');
    expect(run.kind).toBe(SpanKind.INTERNAL);
    expect(run.parentSpanContext).toBeUndefined();
    expect(run.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'researcher',
      'gen_ai.agent.description': 'Finds things out.',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-test',
      'gen_ai.conversation.id': 'conv-1',
      'session.id': 'conv-1',
      'user.id': 'user-7',
      'helix.run.id': handle.runId,
      'helix.tags': ['premium', 'beta'],
      'helix.metadata.feature': 'chat',
      'helix.run.status': 'completed',
      'helix.run.exit_reason': 'finish_tool',
      'helix.run.step_count': 2,
      'helix.run.start_signal': 'start',
    });
    expect(JSON.parse(run.attributes['gen_ai.input.messages'] as string)).toEqual([{ role: 'user', parts: [{ type: 'text', content: 'find alpha and beta' }] }]);
    expect(status(run)).toBe(SpanStatusCode.UNSET);

    const chats = named(all, 'chat');
    expect(chats.map((c) => c.name)).toEqual(['chat gpt-test', 'chat gpt-test']);
    for (const chat of chats) {
      expect(isChildOf(chat, run)).toBe(true);
      expect(chat.kind).toBe(SpanKind.CLIENT);
    }
    const [first, second] = chats as [(typeof chats)[0], (typeof chats)[0]];
    expect(first.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-test',
      'gen_ai.response.model': 'gpt-test',
      'gen_ai.request.temperature': 0.2,
      'gen_ai.conversation.id': 'conv-1',
      'gen_ai.usage.input_tokens': 120,
      'gen_ai.usage.output_tokens': 12,
      'gen_ai.usage.cache_read.input_tokens': 100,
      'gen_ai.usage.cache_creation.input_tokens': 8,
      'gen_ai.response.finish_reasons': ['tool-calls'],
      'helix.step.index': 0,
      'helix.llm.attempt': 1,
      'helix.llm.plan': 'tool_calls',
    });
    expect(second.attributes).toMatchObject({ 'helix.step.index': 1, 'helix.llm.plan': 'finish' });
    expect(JSON.parse(first.attributes['gen_ai.system_instructions'] as string)).toEqual([{ type: 'text', content: 'You research.' }]);
    expect(JSON.parse(first.attributes['gen_ai.output.messages'] as string)[0]).toMatchObject({
      role: 'assistant',
      finish_reason: 'tool-calls',
      parts: [
        { type: 'tool_call', id: 'call-alpha', name: 'search', arguments: { q: 'alpha' } },
        { type: 'tool_call', id: 'call-beta', name: 'lookup', arguments: { q: 'beta' } },
      ],
    });
    // The second call's prompt holds both tool results, in the conventions' shape.
    const secondInput = JSON.parse(second.attributes['gen_ai.input.messages'] as string) as { role: string }[];
    expect(secondInput.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool']);

    const search = only(all, 'execute_tool search');
    const lookup = only(all, 'execute_tool lookup');
    for (const [span, id, q] of [
      [search, 'call-alpha', 'alpha'],
      [lookup, 'call-beta', 'beta'],
    ] as const) {
      expect(isChildOf(span, run)).toBe(true);
      expect(span.kind).toBe(SpanKind.INTERNAL);
      expect(span.attributes).toMatchObject({
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.call.id': id,
        'gen_ai.tool.description': expect.stringContaining('tool'),
        'helix.step.index': 0,
        'gen_ai.tool.call.arguments': JSON.stringify({ q }),
        'gen_ai.tool.call.result': JSON.stringify({ found: q }),
      });
      expect(status(span)).toBe(SpanStatusCode.UNSET);
    }
    // Both calls were open at once: each span still got its own call's result.
    const [searchStart, searchEnd] = interval(search);
    const [lookupStart, lookupEnd] = interval(lookup);
    expect(searchStart).toBeLessThanOrEqual(lookupEnd);
    expect(lookupStart).toBeLessThanOrEqual(searchEnd);
    // __finish__ is internal (D7): no tool span for it.
    expect(named(all, 'execute_tool')).toHaveLength(2);
    expect(tracing.stats()).toEqual({ activeRuns: 0, endedRuns: 1, openSpans: 0 });
  });

  it('a retried model call (429, then success) gives one chat span per attempt; the failed one has error status, error.type and its retry delay', async () => {
    const { provider, spans } = memoryTracing();
    const tracing = createOtelHooks({ tracerProvider: provider });
    const a = agent([{ error: { status: 429, message: 'slow down' } }, finish('ok')]);
    const { executor } = setup();
    const result = await (await executor.execute(a, 'go', { hooks: tracing.hooks })).result();
    expect(result.status).toBe('completed');

    const all = spans();
    const run = only(all, 'invoke_agent researcher');
    const [failed, retried] = named(all, 'chat') as [ReturnType<typeof only>, ReturnType<typeof only>];
    expect(named(all, 'chat')).toHaveLength(2);
    expect(failed.attributes).toMatchObject({
      'helix.step.index': 0,
      'helix.llm.attempt': 1,
      'helix.llm.plan': 'retry',
      'error.type': 'provider_rate_limited',
      'helix.error.layer': 'provider',
      'helix.error.retryable': true,
    });
    expect(failed.attributes['helix.llm.retry_delay_ms']).toBeGreaterThan(0);
    expect(failed.status).toEqual({ code: SpanStatusCode.ERROR, message: expect.stringContaining('slow down') });
    expect(retried.attributes).toMatchObject({ 'helix.step.index': 0, 'helix.llm.attempt': 2, 'helix.llm.plan': 'finish' });
    expect(retried.attributes['error.type']).toBeUndefined();
    expect(status(retried)).toBe(SpanStatusCode.UNSET);
    expect(isChildOf(failed, run) && isChildOf(retried, run)).toBe(true);
    // Without captureContent nothing of the conversation is on the spans.
    for (const span of all) {
      expect(Object.keys(span.attributes).filter((k) => k.includes('messages') || k.includes('instructions') || k.includes('call.arguments'))).toEqual([]);
    }
  });

  it('a failing tool: its execute_tool span has error status and error.type tool_failed; the run goes on and completes', async () => {
    const { provider, spans } = memoryTracing();
    const tracing = createOtelHooks({ tracerProvider: provider });
    const a = agent([{ toolCalls: [{ name: 'flaky', args: { q: 'x' }, id: 'call-flaky' }] }, finish('recovered')], {
      tools: [
        tool('flaky', () => {
          throw new Error('upstream 503');
        }),
      ],
    });
    const { executor } = setup();
    const result = await (await executor.execute(a, 'go', { hooks: tracing.hooks })).result();
    expect(result.status).toBe('completed');
    const all = spans();
    const flaky = only(all, 'execute_tool flaky');
    expect(flaky.attributes).toMatchObject({ 'error.type': 'tool_failed', 'gen_ai.tool.call.id': 'call-flaky', 'helix.error.layer': 'tool' });
    expect(flaky.status).toEqual({ code: SpanStatusCode.ERROR, message: expect.stringContaining('upstream 503') });
    expect(only(all, 'invoke_agent researcher').attributes['helix.run.status']).toBe('completed');
  });

  it('a failed run: the chat span and the run span carry the error; error.type is the stable code', async () => {
    const { provider, spans } = memoryTracing();
    const tracing = createOtelHooks({ tracerProvider: provider });
    const a = agent([{ error: { status: 401, message: 'bad key' } }]);
    const { executor } = setup();
    const result = await (await executor.execute(a, 'go', { hooks: tracing.hooks })).result();
    expect(result.status).toBe('failed');
    const all = spans();
    const run = only(all, 'invoke_agent researcher');
    const chat = only(all, 'chat gpt-test');
    expect(chat.attributes).toMatchObject({ 'error.type': 'provider_auth', 'helix.llm.plan': 'fail' });
    expect(status(chat)).toBe(SpanStatusCode.ERROR);
    expect(run.attributes).toMatchObject({ 'helix.run.status': 'failed', 'error.type': 'provider_auth', 'helix.error.retryable': false, 'helix.run.step_count': 0 });
    expect(run.status).toEqual({ code: SpanStatusCode.ERROR, message: expect.stringContaining('bad key') });
    expect(tracing.stats()).toMatchObject({ activeRuns: 0, openSpans: 0 });
  });

  it('a hook that fails the run before the model answered: the open chat span is closed with the run error, nothing stays open', async () => {
    const { provider, spans } = memoryTracing();
    const tracing = createOtelHooks({ tracerProvider: provider });
    const refuse: AgentHooks = {
      beforeLLMCall: () => {
        throw new Error('Rate limit exceeded');
      },
    };
    const { executor } = setup();
    // Tracing at agent level runs first, the refusing hook at execution level second: our chat span is open when the run fails.
    const result = await (await executor.execute(agent([finish('x')], { hooks: tracing.hooks }), 'go', { hooks: refuse })).result();
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('hook_failed');
    const failedRun = only(spans(), 'invoke_agent researcher');
    expect(failedRun.attributes).toMatchObject({ 'helix.run.status': 'failed', 'error.type': 'hook_failed' });
    const chat = spans().find((s) => s.name === 'chat gpt-test' && isChildOf(s, failedRun))!;
    expect(chat.attributes).toMatchObject({ 'helix.span.abandoned': true, 'error.type': 'hook_failed' });
    expect(status(chat)).toBe(SpanStatusCode.ERROR);
    expect(tracing.stats()).toMatchObject({ activeRuns: 0, openSpans: 0 });
  });

  it('a refused tool call (invalid arguments, D5) fires no tool hooks; it is a helix.tool_call.rejected event on the run span', async () => {
    const { provider, spans } = memoryTracing();
    const tracing = createOtelHooks({ tracerProvider: provider });
    const a = agent([{ toolCalls: [{ name: 'search', args: { q: 42 }, id: 'call-bad' }] }, finish('ok')], { tools: [tool('search', () => 'never')] });
    const { executor } = setup();
    await (await executor.execute(a, 'go', { hooks: tracing.hooks })).result();
    const all = spans();
    expect(named(all, 'execute_tool')).toHaveLength(0);
    const run = only(all, 'invoke_agent researcher');
    const event = run.events.find((e) => e.name === 'helix.tool_call.rejected');
    expect(event?.attributes).toMatchObject({ 'gen_ai.tool.name': 'search', 'gen_ai.tool.call.id': 'call-bad', 'error.type': 'tool_invalid_input', 'helix.step.index': 0 });
  });

  it('interleaved runs on one tracer never cross: each run is its own trace with its own children', async () => {
    const { provider, spans } = memoryTracing();
    const tracing = createOtelHooks({ tracerProvider: provider, parent: 'root' });
    const gates: (() => void)[] = [];
    const waiting = tool('wait', () => new Promise<string>((resolve) => gates.push(() => resolve('done'))));
    const { executor } = setup();
    const handles = await Promise.all(
      ['s1', 's2', 's3'].map((sessionId) =>
        executor.execute(agent([{ toolCalls: [{ name: 'wait', args: { q: sessionId }, id: 'same-id' }] }, finish(sessionId)], { tools: [waiting] }), 'go', {
          hooks: tracing.hooks,
          sessionId,
        }),
      ),
    );
    while (gates.length < 3) await new Promise((r) => setTimeout(r, 1));
    expect(tracing.stats()).toMatchObject({ activeRuns: 3, openSpans: 6 });
    for (const release of gates.reverse()) release();
    await Promise.all(handles.map((h) => h.result()));
    const all = spans();
    const runs = named(all, 'invoke_agent');
    expect(new Set(runs.map((r) => r.spanContext().traceId)).size).toBe(3);
    for (const run of runs) {
      const children = all.filter((s) => isChildOf(s, run));
      expect(children.map((c) => c.name).sort()).toEqual(['chat gpt-test', 'chat gpt-test', 'execute_tool wait']);
      expect(children.every((c) => c.attributes['gen_ai.conversation.id'] === run.attributes['gen_ai.conversation.id'])).toBe(true);
    }
    expect(tracing.stats()).toEqual({ activeRuns: 0, endedRuns: 3, openSpans: 0 });
  });
});

describe('createOtelHooks: terminal hooks that come late, supersede, sub-agents, decisions', () => {
  it('a failed terminal commit (onAgentComplete then onAgentFail): the run span says completed, a helix.run.outcome child records the real failure', async () => {
    class TerminalFails extends InMemoryStateStore {
      override async commit(commit: Commit): Promise<CommitReceipt> {
        if (commit.kind === 'terminal' && commit.runStatus === 'completed') throw new Error('disk full');
        return super.commit(commit);
      }
    }
    const { provider, spans } = memoryTracing();
    const tracing = createOtelHooks({ tracerProvider: provider });
    const { executor } = setup({ stateStore: new TerminalFails() });
    const result = await (await executor.execute(agent([finish('x')]), 'go', { hooks: tracing.hooks })).result();
    expect(result.status).toBe('failed');
    const all = spans();
    const run = only(all, 'invoke_agent researcher');
    const outcome = only(all, 'helix.run.outcome');
    expect(isChildOf(outcome, run)).toBe(true);
    expect(outcome.attributes).toMatchObject({ 'helix.run.status': 'failed', 'error.type': 'state_commit_failed', 'helix.run.id': result.runId });
    expect(status(outcome)).toBe(SpanStatusCode.ERROR);
  });

  it('a superseded run: status superseded with an event naming the run that took over, no error status', async () => {
    const { provider, spans } = memoryTracing();
    const tracing = createOtelHooks({ tracerProvider: provider });
    const gate = createGate();
    const slow = tool('slow', async () => {
      await gate.opened;
      return 'late';
    });
    const { executor } = setup();
    const a = await executor.execute(agent([{ toolCalls: [{ name: 'slow', args: { q: 'x' } }] }, finish('a')], { tools: [slow] }), 'first', {
      sessionId: 'busy',
      hooks: tracing.hooks,
    });
    await new Promise((r) => setTimeout(r, 20));
    const b = await executor.execute(agent([finish('b')]), 'second', { sessionId: 'busy', hooks: tracing.hooks });
    await b.result();
    gate.open();
    expect((await a.result()).status).toBe('superseded');
    const runA = named(spans(), 'invoke_agent').find((s) => s.attributes['helix.run.id'] === a.runId)!;
    expect(runA.attributes['helix.run.status']).toBe('superseded');
    expect(runA.attributes['error.type']).toBe('state_run_superseded');
    expect(status(runA)).toBe(SpanStatusCode.UNSET);
    expect(runA.events.find((e) => e.name === 'helix.run.superseded')?.attributes).toEqual({ 'helix.run.current_id': b.runId });
    // The slow tool finished after the supersede was detected at the step commit: its span closed normally.
    const slowSpan = only(spans(), 'execute_tool slow');
    expect(isChildOf(slowSpan, runA)).toBe(true);
    expect(tracing.stats()).toMatchObject({ activeRuns: 0, openSpans: 0 });
  });

  it('rule 139: a sub-agent run (parentSessionId of a traced run) nests under the tool call that started it, in the same trace', async () => {
    const { provider, spans } = memoryTracing();
    const tracing = createOtelHooks({ tracerProvider: provider });
    const { executor } = setup();
    const child = agent([finish('child answer')], { name: 'helper' });
    const delegate = defineTool({
      name: 'delegate',
      description: 'asks the helper',
      inputSchema: z.object({ q: z.string() }),
      execute: async (input, ctx) => {
        const handle = await executor.execute(child, input.q, { parentSessionId: ctx.sessionId, hooks: tracing.hooks });
        return (await handle.result()).output;
      },
    });
    const parent = agent([{ toolCalls: [{ name: 'delegate', args: { q: 'sub-question' } }] }, finish('parent answer')], { tools: [delegate] });
    await (await executor.execute(parent, 'go', { hooks: tracing.hooks })).result();
    const all = spans();
    const parentRun = only(all, 'invoke_agent researcher');
    const childRun = only(all, 'invoke_agent helper');
    const delegateSpan = only(all, 'execute_tool delegate');
    expect(isChildOf(delegateSpan, parentRun)).toBe(true);
    expect(isChildOf(childRun, delegateSpan)).toBe(true);
    expect(all.filter((s) => isChildOf(s, childRun)).map((s) => s.name)).toEqual(['chat gpt-test']);
    expect(childRun.attributes['helix.session.parent_id']).toBe(parentRun.attributes['gen_ai.conversation.id']);
    expect(all.filter((s) => s.spanContext().traceId === parentRun.spanContext().traceId)).toHaveLength(all.length);
  });

  it('recordDecision puts a helix.hook.decision event on the span it concerns (tool call, model call, or run)', async () => {
    const { provider, spans } = memoryTracing();
    const tracing = createOtelHooks({ tracerProvider: provider });
    const guard: AgentHooks = {
      beforeLLMCall: (_p, ctx) => void tracing.recordDecision(ctx, { hook: 'beforeLLMCall', decision: 'rewrite', reason: 'redacted an email', source: 'pii-guard' }),
      beforeTool: (p, ctx) => void tracing.recordDecision(ctx, { hook: 'beforeTool', decision: 'continue', reason: 'allow-listed', toolCallId: p.toolCall.id }),
      onAgentComplete: (_p, ctx) => void tracing.recordDecision(ctx, { hook: 'onExit', decision: 'continue', reason: 'done' }),
    };
    // Tracing hooks run first (agent level), the guard second (execution level): the spans are open when it decides.
    const a = agent([{ toolCalls: [{ name: 'search', args: { q: 'x' }, id: 'call-1' }] }, finish('ok')], { tools: [tool('search', () => 'r')], hooks: tracing.hooks });
    const { executor } = setup();
    const handle = await executor.execute(a, 'go', { hooks: guard });
    await handle.result();
    const all = spans();
    const decisions = (name: string) => only(all, name).events.filter((e) => e.name === 'helix.hook.decision').map((e) => e.attributes);
    expect(decisions('execute_tool search')).toEqual([
      { 'helix.hook.point': 'beforeTool', 'helix.hook.decision': 'continue', 'helix.hook.reason': 'allow-listed', 'gen_ai.tool.call.id': 'call-1' },
    ]);
    expect(named(all, 'chat')[0]!.events.map((e) => e.attributes)).toContainEqual({
      'helix.hook.point': 'beforeLLMCall',
      'helix.hook.decision': 'rewrite',
      'helix.hook.reason': 'redacted an email',
      'helix.hook.source': 'pii-guard',
    });
    expect(tracing.recordDecision({ runId: 'unknown' }, { hook: 'beforeTool', decision: 'block' })).toBe(false);
  });
});

describe('createOtelHooks: safety and bookkeeping', () => {
  it('tracing never fails a run: a throwing decorator is reported to onError and the run completes', async () => {
    const { provider } = memoryTracing();
    const errors: string[] = [];
    const tracing = createOtelHooks({
      tracerProvider: provider,
      decorate: (_span, event: SpanLifecycleEvent) => {
        if (event.type === 'chat_start') throw new Error('decorator bug');
      },
      onError: (error, hook) => errors.push(`${hook}: ${(error as Error).message}`),
    });
    const { executor } = setup();
    const result = await (await executor.execute(agent([finish('x')]), 'go', { hooks: tracing.hooks })).result();
    expect(result.status).toBe('completed');
    expect(errors).toEqual(['beforeLLMCall: decorator bug']);
  });

  it('ended runs are remembered up to maxEndedRuns, and the global no-op provider costs no spans', async () => {
    const { provider } = memoryTracing();
    const tracing = createOtelHooks({ tracerProvider: provider, maxEndedRuns: 2 });
    const { executor } = setup();
    for (let i = 0; i < 5; i++) await (await executor.execute(agent([finish(String(i))]), 'go', { hooks: tracing.hooks })).result();
    expect(tracing.stats()).toEqual({ activeRuns: 0, endedRuns: 2, openSpans: 0 });

    const noop = createOtelHooks();
    const result = await (await executor.execute(agent([finish('x')]), 'go', { hooks: noop.hooks })).result();
    expect(result.status).toBe('completed');
    expect(noop.stats()).toMatchObject({ activeRuns: 0, openSpans: 0 });
    await expect(noop.flush()).resolves.toBeUndefined();
  });

  it('endOpenSpans closes the spans of runs still in flight (shutdown) and marks them abandoned', async () => {
    const { provider, spans } = memoryTracing();
    const tracing = createOtelHooks({ tracerProvider: provider });
    const gate = createGate();
    const { executor } = setup();
    const handle = await executor.execute(
      agent([{ toolCalls: [{ name: 'wait', args: { q: 'x' } }] }, finish('x')], {
        tools: [
          tool('wait', async () => {
            await gate.opened;
            return 'ok';
          }),
        ],
      }),
      'go',
      { hooks: tracing.hooks },
    );
    while (tracing.stats().openSpans < 2) await new Promise((r) => setTimeout(r, 1));
    expect(tracing.endOpenSpans('shutting down')).toBe(2);
    expect(tracing.stats()).toEqual({ activeRuns: 0, endedRuns: 1, openSpans: 0 });
    const closed = spans();
    expect(only(closed, 'execute_tool wait').attributes['helix.span.abandoned']).toBe(true);
    expect(only(closed, 'invoke_agent researcher').attributes['helix.span.abandoned']).toBe(true);
    gate.open();
    expect((await handle.result()).status).toBe('completed');
    // What the run did after the shutdown still hangs under its (ended) run span, not under a new run.
    expect(named(spans(), 'invoke_agent')).toHaveLength(1);
    expect(spans().filter((s) => s.name !== 'invoke_agent researcher').every((s) => isChildOf(s, only(closed, 'invoke_agent researcher')))).toBe(true);
  });
});

describe('createOtelHooks: steering decisions, suspension, resume and retry on the trace', () => {
  const decisionsOf = (span: { events: { name: string; attributes?: Record<string, unknown> }[] }) => span.events.filter((e) => e.name === 'helix.hook.decision').map((e) => e.attributes);

  it('a tool blocked by a later beforeTool hook: its span says blocked, and the decision (hook, reason) is on it once, from the stream tap', async () => {
    const { provider, spans } = memoryTracing();
    const tracing = createOtelHooks({ tracerProvider: provider });
    const guard: AgentHooks = {
      beforeTool: (p) => (p.tool.name === 'wipe' ? { block: true, reason: 'wiping is not allowed' } : undefined),
    };
    const a = agent([{ toolCalls: [{ name: 'wipe', args: { q: 'all' }, id: 'call-wipe' }, { name: 'search', args: { q: 'ok' }, id: 'call-ok' }] }, finish('done')], {
      tools: [tool('wipe', () => 'wiped'), tool('search', () => 'found')],
      hooks: tracing.hooks,
    });
    const { executor } = setup({ wrapStream: (streams) => tracing.traceStream(streams) });
    const handle = await executor.execute(a, 'go', { hooks: guard });
    expect((await handle.result()).status).toBe('completed');
    // The tapped stream manager still is the stream manager: the run's chunks read back as usual.
    const chunks: { type: string }[] = [];
    for await (const chunk of handle.stream()) chunks.push(chunk);
    expect(chunks.filter((c) => c.type === 'hook_decision')).toHaveLength(1);
    expect(chunks.at(-1)?.type).toBe('end');
    const all = spans();
    const wipe = only(all, 'execute_tool wipe');
    expect(wipe.attributes).toMatchObject({ 'helix.tool.blocked': true, 'error.type': 'hook_blocked', 'gen_ai.tool.call.id': 'call-wipe' });
    expect(status(wipe)).toBe(SpanStatusCode.ERROR);
    expect(decisionsOf(wipe)).toEqual([
      expect.objectContaining({ 'helix.hook.point': 'beforeTool', 'helix.hook.decision': 'block', 'helix.hook.reason': 'wiping is not allowed', 'helix.hook.source': 'beforeTool', 'gen_ai.tool.call.id': 'call-wipe' }),
    ]);
    // Allowed calls carry no decision (the runtime audits steering decisions, not allows, by default).
    expect(decisionsOf(only(all, 'execute_tool search'))).toEqual([]);
  });

  it('a tool blocked before our hooks ran (no tap): the span is still made at afterTool, blocked, with the decision taken from the payload', async () => {
    const { provider, spans } = memoryTracing();
    const tracing = createOtelHooks({ tracerProvider: provider });
    const guard: AgentHooks = { beforeTool: () => ({ block: true, reason: 'read-only mode' }) };
    const a = agent([{ toolCalls: [{ name: 'wipe', args: { q: 'all' }, id: 'call-wipe' }] }, finish('done')], { tools: [tool('wipe', () => 'wiped')], hooks: guard });
    const { executor } = setup();
    await (await executor.execute(a, 'go', { hooks: tracing.hooks })).result();
    const wipe = only(spans(), 'execute_tool wipe');
    expect(isChildOf(wipe, only(spans(), 'invoke_agent researcher'))).toBe(true);
    expect(wipe.attributes).toMatchObject({ 'helix.tool.blocked': true, 'error.type': 'hook_blocked' });
    expect(decisionsOf(wipe)).toEqual([expect.objectContaining({ 'helix.hook.decision': 'block', 'helix.hook.reason': 'read-only mode', 'helix.hook.point': 'beforeTool' })]);
  });

  it('a block decided before our beforeTool ran, seen by the tap, waits for the call span and lands on it once', async () => {
    const { provider, spans } = memoryTracing();
    const tracing = createOtelHooks({ tracerProvider: provider });
    const guard: AgentHooks = { beforeTool: () => ({ block: true, reason: 'read-only mode' }) };
    const a = agent([{ toolCalls: [{ name: 'wipe', args: { q: 'all' }, id: 'call-wipe' }] }, finish('done')], { tools: [tool('wipe', () => 'wiped')], hooks: guard });
    const { executor } = setup({ wrapStream: (streams) => tracing.traceStream(streams) });
    await (await executor.execute(a, 'go', { hooks: tracing.hooks })).result();
    const wipe = only(spans(), 'execute_tool wipe');
    expect(decisionsOf(wipe)).toEqual([expect.objectContaining({ 'helix.hook.decision': 'block', 'helix.hook.reason': 'read-only mode', 'helix.hook.duration_ms': expect.any(Number) })]);
    expect(decisionsOf(only(spans(), 'invoke_agent researcher'))).toEqual([]);
  });

  it('a model call blocked by beforeLLMCall: the run fails hook_blocked; the chat span carries the decision and the error', async () => {
    const { provider, spans } = memoryTracing();
    const tracing = createOtelHooks({ tracerProvider: provider });
    const budget: AgentHooks = { beforeLLMCall: () => ({ block: true, reason: 'over budget' }) };
    const { executor } = setup();
    const result = await (await executor.execute(agent([finish('x')], { hooks: tracing.hooks }), 'go', { hooks: budget })).result();
    expect(result.error?.code).toBe('hook_blocked');
    const chat = only(spans(), 'chat gpt-test');
    expect(decisionsOf(chat)).toEqual([expect.objectContaining({ 'helix.hook.point': 'beforeLLMCall', 'helix.hook.decision': 'block', 'helix.hook.reason': 'over budget' })]);
    expect(chat.attributes).toMatchObject({ 'error.type': 'hook_blocked', 'helix.span.abandoned': true });
    expect(only(spans(), 'invoke_agent researcher').attributes).toMatchObject({ 'helix.run.status': 'failed', 'error.type': 'hook_blocked' });
  });

  it('rewrites and an exit hook that keeps the run going are recorded from the tap; the tool span shows the arguments as they ran', async () => {
    const { provider, spans } = memoryTracing();
    const tracing = createOtelHooks({ tracerProvider: provider, captureContent: true });
    let exits = 0;
    const steer: AgentHooks = {
      beforeTool: (p) => ({ input: { q: String((p.toolCall.arguments as { q: string }).q).replace('secret', '***') } }),
      onExit: () => (exits++ === 0 ? { continue: true, message: 'Double-check first.' } : undefined),
    };
    const a = agent([{ toolCalls: [{ name: 'search', args: { q: 'the secret plan' }, id: 'call-1' }] }, finish('first'), finish('second')], {
      tools: [tool('search', (i) => `found ${i.q}`)],
      hooks: tracing.hooks,
    });
    const { executor } = setup({ wrapStream: (streams) => tracing.traceStream(streams) });
    const result = await (await executor.execute(a, 'go', { hooks: steer })).result();
    expect(result.output).toEqual({ answer: 'second' });
    const all = spans();
    const search = only(all, 'execute_tool search');
    expect(decisionsOf(search)).toEqual([expect.objectContaining({ 'helix.hook.point': 'beforeTool', 'helix.hook.decision': 'rewrite', 'gen_ai.tool.call.id': 'call-1' })]);
    expect(search.attributes['gen_ai.tool.call.arguments']).toBe(JSON.stringify({ q: 'the *** plan' }));
    const run = only(all, 'invoke_agent researcher');
    expect(decisionsOf(run)).toEqual([expect.objectContaining({ 'helix.hook.point': 'onExit', 'helix.hook.decision': 'continue' })]);
  });

  it('rule 115: suspension and resume (a client tool): the run span ends suspended with an event; the resumed run links to it, and so does the answered call', async () => {
    const { provider, spans } = memoryTracing();
    const tracing = createOtelHooks({ tracerProvider: provider });
    const askUser = defineTool({ name: 'ask_user', description: 'asks the user', inputSchema: z.object({ q: z.string() }) });
    const a = agent([{ toolCalls: [{ name: 'ask_user', args: { q: 'colour?' }, id: 'call-ask' }] }, finish('blue')], { tools: [askUser], hooks: tracing.hooks });
    const { executor } = setup();
    executor.registerAgent(a);
    const first = await executor.execute(a, 'go', { sessionId: 's-hitl' });
    expect((await first.result()).status).toBe('suspended');
    expect(tracing.stats()).toMatchObject({ activeRuns: 0, openSpans: 0 });
    const second = await executor.submitToolResult('s-hitl', 'call-ask', 'blue');
    expect((await second.result()).status).toBe('completed');

    const runs = named(spans(), 'invoke_agent');
    const suspended = runs.find((r) => r.attributes['helix.run.id'] === first.runId)!;
    const resumed = runs.find((r) => r.attributes['helix.run.id'] === second.runId)!;
    expect(suspended.attributes).toMatchObject({ 'helix.run.status': 'suspended', 'helix.run.start_signal': 'start' });
    expect(status(suspended)).toBe(SpanStatusCode.UNSET);
    expect(suspended.events.find((e) => e.name === 'helix.run.suspended')?.attributes).toEqual({
      'helix.suspend.reason': 'client_tool',
      'helix.suspend.pending_tool_call_ids': ['call-ask'],
      'helix.suspend.awaited_session_ids': [],
    });
    const [waiting, answered] = named(spans(), 'execute_tool ask_user') as [ReturnType<typeof only>, ReturnType<typeof only>];
    expect(isChildOf(waiting, suspended)).toBe(true);
    expect(waiting.attributes['helix.tool.pending']).toBe(true);
    expect(status(waiting)).toBe(SpanStatusCode.UNSET);

    expect(resumed.attributes).toMatchObject({ 'helix.run.start_signal': 'resume', 'helix.run.previous_id': first.runId, 'gen_ai.conversation.id': 's-hitl' });
    expect(resumed.links.map((l) => l.context.spanId)).toEqual([suspended.spanContext().spanId]);
    expect(resumed.events.map((e) => e.name)).toContain('helix.run.resumed');
    expect(isChildOf(answered, resumed)).toBe(true);
    expect(answered.links.map((l) => l.context.spanId)).toEqual([waiting.spanContext().spanId]);
  });

  it('a rejected approval is a blocked call with the decision; retry() starts a run that links to the failed one', async () => {
    const { provider, spans } = memoryTracing();
    const tracing = createOtelHooks({ tracerProvider: provider });
    const pay = defineTool({ name: 'pay', description: 'pays', inputSchema: z.object({ q: z.string() }), needsApproval: true, execute: () => 'paid' });
    const a = agent([{ toolCalls: [{ name: 'pay', args: { q: '100' }, id: 'call-pay' }] }, { error: { status: 401 } }, finish('ok')], { tools: [pay], hooks: tracing.hooks });
    const { executor } = setup();
    executor.registerAgent(a);
    await (await executor.execute(a, 'go', { sessionId: 's-pay' })).result();
    const rejected = await executor.reject('s-pay', 'call-pay', { reason: 'too expensive' });
    expect((await rejected.result()).status).toBe('failed');
    const retried = await executor.retry('s-pay');
    expect((await retried.result()).status).toBe('completed');

    const payAnswered = named(spans(), 'execute_tool pay').find((s) => s.attributes['helix.tool.blocked'] === true)!;
    expect(payAnswered.attributes['error.type']).toBe('permission_denied');
    expect(decisionsOf(payAnswered)).toEqual([expect.objectContaining({ 'helix.hook.point': 'approval', 'helix.hook.decision': 'block', 'helix.hook.reason': 'too expensive' })]);
    const failedRun = named(spans(), 'invoke_agent').find((r) => r.attributes['helix.run.id'] === rejected.runId)!;
    const retryRun = named(spans(), 'invoke_agent').find((r) => r.attributes['helix.run.id'] === retried.runId)!;
    expect(retryRun.attributes).toMatchObject({ 'helix.run.start_signal': 'retry', 'helix.run.retried_id': rejected.runId });
    expect(retryRun.links.map((l) => l.context.spanId)).toEqual([failedRun.spanContext().spanId]);
    expect(tracing.stats()).toMatchObject({ activeRuns: 0, openSpans: 0 });
  });
});
