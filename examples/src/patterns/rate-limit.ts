import type { AgentHooks } from '@helix-agents/sdk';

/** Decides whether a user may make another model call. */
export interface RateLimiter {
  checkLimit(key: string): Promise<boolean>;
}

/** The spec's rate-limiting pattern: a throwing beforeLLMCall refuses the call and fails the run (hook_failed). */
export function createRateLimitHooks(rateLimiter: RateLimiter): AgentHooks {
  return {
    beforeLLMCall: async (_payload, ctx) => {
      const allowed = await rateLimiter.checkLimit(ctx.userId ?? 'anonymous');
      if (!allowed) throw new Error('Rate limit exceeded');
    },
  };
}

/** A fixed-window limiter: at most `limit` calls per key per `windowMs`. */
export function createWindowRateLimiter(limit: number, windowMs: number, now: () => number = Date.now): RateLimiter {
  const windows = new Map<string, { start: number; count: number }>();
  return {
    async checkLimit(key) {
      const t = now();
      const w = windows.get(key);
      if (!w || t - w.start >= windowMs) {
        windows.set(key, { start: t, count: 1 });
        return true;
      }
      w.count++;
      return w.count <= limit;
    },
  };
}
