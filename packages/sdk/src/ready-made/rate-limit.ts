import { ConfigError, HookError } from '../errors.js';
import type { AgentHooks, HookContext } from '../hooks/types.js';

/** Decides whether a key (a user, by default) may make another model call. */
export interface RateLimiter {
  checkLimit(key: string): boolean | Promise<boolean>;
}

/** Options of {@link createRateLimitHooks}. */
export interface RateLimitHooksOptions {
  /** What is limited (default: `ctx.userId`, or `anonymous`). */
  readonly key?: (ctx: HookContext) => string;
}

/**
 * The spec's rate-limit pattern: beforeLLMCall asks the limiter and refuses the call by throwing. The error
 * is a `hook_blocked` marked retryable, so under the default fail-run policy the run fails with it and a UI
 * can offer a retry once the window has passed.
 */
export function createRateLimitHooks<TState = unknown, TOutput = unknown>(limiter: RateLimiter, options: RateLimitHooksOptions = {}): AgentHooks<TState, TOutput> {
  const keyOf = options.key ?? ((ctx: HookContext) => ctx.userId ?? 'anonymous');
  return {
    beforeLLMCall: async (_payload, ctx) => {
      const key = keyOf(ctx);
      if (await limiter.checkLimit(key)) return;
      throw new HookError('hook_blocked', `Rate limit exceeded for "${key}".`, {
        retryable: true,
        hint: 'Too many model calls in the current window; wait, then retry the run.',
        details: { hook: 'beforeLLMCall', name: 'rateLimit', key },
      });
    },
  };
}

/** A fixed-window limiter: at most `limit` calls per key in each window of `windowMs`. */
export function createFixedWindowRateLimiter(limit: number, windowMs: number, now: () => number = Date.now): RateLimiter {
  if (!Number.isInteger(limit) || limit < 1) throw new ConfigError(`A rate limit must be a positive integer, got ${String(limit)}.`);
  if (!(windowMs > 0)) throw new ConfigError(`A rate-limit window must be positive, got ${String(windowMs)} ms.`);
  const windows = new Map<string, { start: number; count: number }>();
  return {
    checkLimit(key) {
      const t = now();
      if (windows.size > 1_000) {
        // Forget expired windows so a long-lived limiter does not grow with every key it ever saw.
        for (const [k, w] of windows) if (t - w.start >= windowMs) windows.delete(k);
      }
      const w = windows.get(key);
      if (!w || t - w.start >= windowMs) {
        windows.set(key, { start: t, count: 1 });
        return true;
      }
      if (w.count >= limit) return false;
      w.count++;
      return true;
    },
  };
}
