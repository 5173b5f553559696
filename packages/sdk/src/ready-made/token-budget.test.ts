import { describe, expect, it } from 'vitest';
import { ConfigError, createHookManager, hookFromJSON, hookToJSON, type HookDecisionChunk, type HookSource, type Message, type WarningChunk } from '../index.js';
import { createScriptedModel, type ScriptedStepObject } from '../testing/index.js';
import { counterAgent, finish, setup } from '../__tests__/harness.js';
import { createTokenBudgetHook, TOKEN_BUDGET_HOOK_TYPE, TOKEN_BUDGET_WARNING_CODE, TokenBudgetHook } from './token-budget.js';

// Each step reports 100 tokens.
const usage = { inputTokens: 60, outputTokens: 40 };
const inc = (id: string): ScriptedStepObject => ({ toolCalls: [{ name: 'increment', args: { by: 1 }, id }], usage });

describe('createTokenBudgetHook', () => {
  it('warns once at warnAt, lets the crossing step finish, then blocks the next model call: the run fails hook_blocked', async () => {
    const { executor, stateStore, streamManager } = setup();
    const model = createScriptedModel([inc('a'), inc('b'), inc('c'), finish('x')]);
    const hook = createTokenBudgetHook({ maxTotalTokens: 150, warnAt: 100 });
    const handle = await executor.execute(counterAgent([], { llmConfig: { model } }), 'go', { hookManager: createHookManager(hook) });
    const result = await handle.result();

    expect(model.calls).toHaveLength(2);
    expect(result.status).toBe('failed');
    expect(result.state.count).toBe(2);
    expect(result.error).toMatchObject({
      code: 'hook_blocked',
      layer: 'hook',
      retryable: false,
      details: { name: 'TokenBudgetHook.beforeLLMCall', reason: 'Token budget exceeded: this run used 200 tokens, over its budget of 150.' },
    });
    const chunks = streamManager.chunks(handle.sessionId);
    const warnings = chunks.filter((c): c is WarningChunk => c.type === 'warning');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.errorInfo).toMatchObject({
      code: TOKEN_BUDGET_WARNING_CODE,
      severity: 'warning',
      message: 'This run has used 100 of its 150-token budget.',
      details: { spent: 100, warnAt: 100, limit: 150 },
    });
    expect(chunks.filter((c): c is HookDecisionChunk => c.type === 'hook_decision')).toEqual([
      expect.objectContaining({ hookPoint: 'beforeLLMCall', hookName: 'TokenBudgetHook.beforeLLMCall', decision: 'block' }),
    ]);
    // The warning precedes the block, and the terminal chunk is the failure.
    expect(chunks.findIndex((c) => c.type === 'warning')).toBeLessThan(chunks.findIndex((c) => c.type === 'hook_decision'));
    expect(chunks.at(-1)).toMatchObject({ type: 'error', status: 'failed', errorInfo: { code: 'hook_blocked' } });
    const messages = (await stateStore.loadSession(handle.sessionId))!.messages;
    expect(messages.at(-1)).toEqual({ role: 'system', content: 'Run blocked by an agent hook: Token budget exceeded: this run used 200 tokens, over its budget of 150.' } satisfies Message);
    // The run's count is forgotten once it ended.
    expect(hook.tokensUsed(handle.runId)).toBe(0);
  });

  it('counts per execution: concurrent runs sharing one hook each get their own budget', async () => {
    const { executor } = setup();
    const hook = createTokenBudgetHook({ maxTotalTokens: 150 });
    const hookManager = createHookManager(hook);
    const models = [createScriptedModel([inc('a'), inc('b'), inc('c')]), createScriptedModel([inc('a'), inc('b'), inc('c')])];
    const results = await Promise.all(models.map(async (model) => (await executor.execute(counterAgent([], { llmConfig: { model } }), 'go', { hookManager })).result()));
    expect(models.map((m) => m.calls.length)).toEqual([2, 2]);
    expect(results.map((r) => r.error?.code)).toEqual(['hook_blocked', 'hook_blocked']);
  });

  it('a run under budget completes untouched', async () => {
    const { executor, streamManager } = setup();
    const hook = createTokenBudgetHook({ maxTotalTokens: 1_000, warnAt: 900 });
    const handle = await executor.execute(counterAgent([inc('a'), { ...finish('x'), usage }]), 'go', { hookManager: createHookManager(hook) });
    expect((await handle.result()).status).toBe('completed');
    expect(streamManager.chunks(handle.sessionId).filter((c) => c.type === 'warning' || c.type === 'hook_decision')).toEqual([]);
  });

  it('differs from limits.maxTotalTokens, which stops right after the crossing call and drops its reply (run_hard_stop)', async () => {
    const { executor } = setup();
    const model = createScriptedModel([inc('a'), inc('b'), inc('c')]);
    const result = await (await executor.execute(counterAgent([], { llmConfig: { model }, limits: { maxTotalTokens: 150 } }), 'go')).result();
    expect(model.calls).toHaveLength(2);
    expect(result.error?.code).toBe('run_hard_stop');
    // The crossing step's tool call never ran; with the hook it did (count 2 above).
    expect(result.state.count).toBe(1);
  });

  it('validates its options, declares its points, and serializes through a registered factory', () => {
    expect(() => createTokenBudgetHook({ maxTotalTokens: 0 })).toThrow(ConfigError);
    expect(() => createTokenBudgetHook({ maxTotalTokens: 100, warnAt: 200 })).toThrow(/warnAt must not exceed/);
    const hook = createTokenBudgetHook({ maxTotalTokens: 5_000, warnAt: 4_000 });
    expect(() => createHookManager({ beforeTool: hook } as HookSource)).toThrow(/allows only beforeLLMCall, afterLLMCall/);
    const json = hookToJSON(hook);
    expect(json).toEqual({ type: TOKEN_BUDGET_HOOK_TYPE, config: { maxTotalTokens: 5_000, warnAt: 4_000 } });
    const rebuilt = hookFromJSON(json) as TokenBudgetHook;
    expect(rebuilt).toBeInstanceOf(TokenBudgetHook);
    expect([rebuilt.maxTotalTokens, rebuilt.warnAt]).toEqual([5_000, 4_000]);
    expect(() => hookFromJSON({ type: TOKEN_BUDGET_HOOK_TYPE, config: { maxTotalTokens: 'lots' } })).toThrow(ConfigError);
  });
});
