import { describe, expect, it } from 'vitest';
import { ConfigError, createHookManager, type HookDecisionChunk } from '../index.js';
import { counterAgent, finish, setup } from '../__tests__/harness.js';
import { createFixedWindowRateLimiter, createRateLimitHooks } from './rate-limit.js';

const twoCalls = () => counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 } }] }, finish('x')]);
const threeCalls = () => counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 } }] }, { toolCalls: [{ name: 'increment', args: { by: 1 } }] }, finish('x')]);

describe('createFixedWindowRateLimiter', () => {
  it('allows `limit` calls per key per window; refused calls do not count; a new window starts fresh', () => {
    let now = 0;
    const limiter = createFixedWindowRateLimiter(2, 1_000, () => now);
    expect([limiter.checkLimit('a'), limiter.checkLimit('a'), limiter.checkLimit('a'), limiter.checkLimit('b')]).toEqual([true, true, false, true]);
    now = 999;
    expect(limiter.checkLimit('a')).toBe(false);
    now = 1_000;
    expect([limiter.checkLimit('a'), limiter.checkLimit('a'), limiter.checkLimit('a')]).toEqual([true, true, false]);
  });

  it('refuses a nonsensical configuration', () => {
    expect(() => createFixedWindowRateLimiter(0, 1_000)).toThrow(ConfigError);
    expect(() => createFixedWindowRateLimiter(1.5, 1_000)).toThrow(ConfigError);
    expect(() => createFixedWindowRateLimiter(1, 0)).toThrow(ConfigError);
  });
});

describe('createRateLimitHooks', () => {
  it("refuses the user's model call over the limit: the run fails hook_blocked, retryable, and the audit records the refusal", async () => {
    const { executor, streamManager } = setup();
    let now = 0;
    const hooks = createRateLimitHooks(createFixedWindowRateLimiter(2, 60_000, () => now));
    const handle = await executor.execute(threeCalls(), 'go', { hooks, userId: 'user-1' });
    const result = await handle.result();
    expect(result.status).toBe('failed');
    expect(result.state.count).toBe(2);
    expect(result.error).toMatchObject({ code: 'hook_blocked', layer: 'hook', retryable: true, message: 'Rate limit exceeded for "user-1".', details: { key: 'user-1' } });
    expect(result.error?.hint).toContain('retry');
    expect(streamManager.chunks(handle.sessionId).filter((c): c is HookDecisionChunk => c.type === 'hook_decision')).toEqual([
      expect.objectContaining({ hookPoint: 'beforeLLMCall', decision: 'error', policy: 'fail-run' }),
    ]);

    // Another user has their own window; the same user gets through once the window has passed.
    expect((await (await executor.execute(twoCalls(), 'go', { hooks, userId: 'user-2' })).result()).status).toBe('completed');
    expect((await (await executor.execute(twoCalls(), 'go', { hooks, userId: 'user-1' })).result()).error?.code).toBe('hook_blocked');
    now = 60_000;
    expect((await (await executor.execute(twoCalls(), 'go', { hooks, userId: 'user-1' })).result()).status).toBe('completed');
  });

  it('keys by anything in the context, and accepts an async limiter', async () => {
    const { executor } = setup();
    const seen: string[] = [];
    const hookManager = createHookManager(createRateLimitHooks({ checkLimit: async (key) => (seen.push(key), true) }, { key: (ctx) => `${ctx.agentType}:${ctx.metadata?.['tenant'] ?? '-'}` }));
    await (await executor.execute(threeCalls(), 'go', { hookManager, metadata: { tenant: 'acme' } })).result();
    expect(seen).toEqual(['counter:acme', 'counter:acme', 'counter:acme']);
  });
});
