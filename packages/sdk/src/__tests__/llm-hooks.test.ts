import { describe, expect, it } from 'vitest';
import type { AfterLLMCallPayload, BeforeLLMCallPayload, StepPlan } from '../index.js';
import { createHookRecorder } from '../testing/index.js';
import { counterAgent, finish, recordedRun, setup, textAgent, throwing } from './harness.js';

describe('LLM call hooks (section 1.4)', () => {
  it('rules 61, 201: beforeLLMCall gets { messages, tools, config, model, modelParameters } with the system prompt first', async () => {
    const agent = counterAgent([finish('x')], { llmConfig: { ...counterAgent([]).llmConfig, temperature: 0.3, maxOutputTokens: 100 } });
    const { rec } = await recordedRun(agent, { input: 'hello' });
    const payload = rec.of('beforeLLMCall')[0]!.payload as BeforeLLMCallPayload;
    expect(payload.messages).toEqual([
      { role: 'system', content: 'You count.' },
      { role: 'user', content: 'hello' },
    ]);
    expect(payload.tools.map((t) => t.name)).toEqual(['increment', '__finish__']);
    expect(payload.config).toBe(agent);
    expect(payload.model).toBe('scripted-model');
    expect(payload.modelParameters).toMatchObject({ temperature: 0.3, maxOutputTokens: 100 });
    expect(payload.attempt).toBe(1);
  });

  it('rule 186 / C9: beforeLLMCall fires before every model call, retried attempts included (stepCount 0, 1, 1; attempt 1, 1, 2)', async () => {
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 4 } }] }, finish('x')], {
      systemPrompt: (state) => `count=${state.count}`,
    });
    const { rec } = await recordedRun(agent);
    const prompts = rec.of('beforeLLMCall').map((c) => (c.payload as BeforeLLMCallPayload).messages[0]);
    expect(prompts).toEqual([
      { role: 'system', content: 'count=0' },
      { role: 'system', content: 'count=4' },
    ]);
  });

  it('rule 62: afterLLMCall gets { result, plan, durationMs, model, usage } with cachedTokens and cacheWriteTokens', async () => {
    const agent = counterAgent([{ ...finish('x'), usage: { inputTokens: 100, outputTokens: 20, cachedInputTokens: 60, cacheWriteTokens: 10 } }]);
    const { rec } = await recordedRun(agent);
    const payload = rec.of('afterLLMCall')[0]!.payload as AfterLLMCallPayload;
    expect(payload.result.ok).toBe(true);
    expect(payload.plan.kind).toBe('finish');
    expect(payload.durationMs).toBeGreaterThanOrEqual(0);
    expect(payload.model).toBe('scripted-model');
    expect(payload.usage).toMatchObject({ promptTokens: 100, completionTokens: 20, totalTokens: 120, cachedTokens: 60, cacheWriteTokens: 10 });
    expect(payload.error).toBeUndefined();
  });

  it('rule 63 / C9: ctx.stepCount is 0 in the first beforeLLMCall and counts completed steps; retries do not change it', async () => {
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 } }] }, { error: { status: 500 } }, finish('x')]);
    const { rec } = await recordedRun(agent);
    expect(rec.of('beforeLLMCall').map((c) => c.stepCount)).toEqual([0, 1, 1]);
    expect(rec.of('beforeLLMCall').map((c) => (c.payload as BeforeLLMCallPayload).attempt)).toEqual([1, 1, 2]);
  });

  it('rules 69, 70 / D2: a retried call fires before/afterLLMCall for every attempt and the failed attempt carries its error', async () => {
    const { executor, usageStore } = setup();
    const rec = createHookRecorder();
    const agent = counterAgent([{ error: { status: 429, message: 'slow down' } }, { error: { status: 503 } }, finish('ok')]);
    const handle = await executor.execute(agent, 'go', { hooks: rec.hooks, usageStore });
    const result = await handle.result();
    expect(result.status).toBe('completed');
    const llmPoints = rec.points().filter((p) => p === 'beforeLLMCall' || p === 'afterLLMCall');
    expect(llmPoints).toEqual(['beforeLLMCall', 'afterLLMCall', 'beforeLLMCall', 'afterLLMCall', 'beforeLLMCall', 'afterLLMCall']);
    const afters = rec.of('afterLLMCall').map((c) => c.payload as AfterLLMCallPayload);
    expect(afters[0]!.error?.code).toBe('provider_rate_limited');
    expect(afters[0]!.result.ok).toBe(false);
    expect((afters[0]!.plan as Extract<StepPlan, { kind: 'retry' }>).kind).toBe('retry');
    expect(afters[1]!.error?.code).toBe('provider_server_error');
    expect(afters[2]!.error).toBeUndefined();
    const rollup = await handle.getUsageRollup();
    expect(rollup?.modelCalls).toBe(3);
    expect(rollup?.failedModelCalls).toBe(2);
  });

  it('D2: the assistant message fires onMessage after the afterLLMCall of the attempt that succeeded; error attempts append nothing', async () => {
    const { rec } = await recordedRun(textAgent([{ error: { status: 500 } }, { text: 'hi' }]), { points: ['afterLLMCall', 'onMessage'] });
    const seq = rec.calls.map((c) => (c.point === 'onMessage' ? `msg:${(c.payload as { message: { role: string } }).message.role}` : c.point));
    expect(seq).toEqual(['msg:user', 'afterLLMCall', 'afterLLMCall', 'msg:assistant']);
  });

  it('D12: a retried provider error writes one warning chunk per distinct message, then the run fails with the last classified error', async () => {
    const { executor, streamManager } = setup();
    const agent = counterAgent([{ error: { status: 500, message: 'boom' } }, { error: { status: 500, message: 'boom' } }, { error: { status: 500, message: 'boom' } }]);
    const handle = await executor.execute(agent, 'go');
    const result = await handle.result();
    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({ code: 'provider_server_error', retryable: true });
    const chunks = streamManager.chunks(handle.sessionId);
    const warnings = chunks.filter((c) => c.type === 'warning');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ errorInfo: { code: 'provider_server_error', severity: 'warning' } });
    expect(chunks.at(-1)).toMatchObject({ type: 'error', status: 'failed', errorInfo: { code: 'provider_server_error', retryable: true } });
  });

  it('a non-retryable provider error is not retried', async () => {
    const { result, rec } = await recordedRun(counterAgent([{ error: { status: 401 } }, finish('x')]));
    expect(result.error?.code).toBe('provider_auth');
    expect(rec.of('beforeLLMCall')).toHaveLength(1);
  });

  it("rule 72 / rule 5: a beforeLLMCall that throws (the spec's rate limiter) fails the run with hook_failed and makes no model call", async () => {
    const agent = counterAgent([finish('x')], { hooks: { beforeLLMCall: throwing('Rate limit exceeded') } });
    const { result, rec } = await recordedRun(agent);
    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({ code: 'hook_failed', message: 'The beforeLLMCall hook threw: Rate limit exceeded' });
    expect(rec.of('afterLLMCall')).toHaveLength(0);
    expect(rec.of('onAgentFail')).toHaveLength(1);
  });

  it('rule 71: a model adapter that throws fires no afterLLMCall and fails the run with run_internal_error', async () => {
    const { JSAgentExecutor, InMemoryStateStore, InMemoryStreamManager, silentLogger } = await import('../index.js');
    const executor = new JSAgentExecutor(new InMemoryStateStore(), new InMemoryStreamManager(), {
      generateStep: async () => {
        throw new TypeError('adapter bug');
      },
    }, { logger: silentLogger });
    const rec = createHookRecorder();
    const result = await (await executor.execute(counterAgent([]), 'go', { hooks: rec.hooks })).result();
    expect(result.error?.code).toBe('run_internal_error');
    expect(rec.of('beforeLLMCall')).toHaveLength(1);
    expect(rec.of('afterLLMCall')).toHaveLength(0);
  });

  it('llmConfig.timeoutMs turns a slow attempt into provider_timeout, which is retried', async () => {
    const scripted = counterAgent([{ ...finish('late'), delayMs: 500 }, finish('fast')]);
    const agent = counterAgent([], { llmConfig: { ...scripted.llmConfig, timeoutMs: 30 } });
    const { result, rec } = await recordedRun(agent);
    expect(result).toMatchObject({ status: 'completed', output: { answer: 'fast' } });
    expect((rec.of('afterLLMCall')[0]!.payload as AfterLLMCallPayload).error?.code).toBe('provider_timeout');
  });
});
