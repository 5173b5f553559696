// A tool's retry policy (docs/rules.md, rule 157): checked when the tool is defined, resolved for a call.
import type { ToolRetryPolicy } from '../define.js';
import { AgentError, ConfigError } from '../errors.js';

/** Defaults of a {@link ToolRetryPolicy}. */
export const TOOL_RETRY_DEFAULTS = Object.freeze({ maxAttempts: 3, initialDelayMs: 200, maxDelayMs: 5_000 });

/** The most tries a policy may ask for. */
export const MAX_TOOL_ATTEMPTS = 10;

/** Refuses (`config_invalid`) a malformed policy, and one on a side-effecting tool that does not say it is idempotent. */
export function checkToolRetry(tool: string, policy: ToolRetryPolicy, sideEffects: boolean): void {
  const bad = (message: string): never => {
    throw new ConfigError(`Tool "${tool}": retry.${message}`, { tool });
  };
  if (typeof policy !== 'object' || policy === null) bad('must be an object');
  const { maxAttempts, initialDelayMs, maxDelayMs, retryOn } = policy;
  if (maxAttempts !== undefined && (!Number.isInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > MAX_TOOL_ATTEMPTS)) bad(`maxAttempts must be an integer from 1 to ${MAX_TOOL_ATTEMPTS}`);
  for (const [name, value] of [['initialDelayMs', initialDelayMs], ['maxDelayMs', maxDelayMs]] as const) {
    if (value !== undefined && (typeof value !== 'number' || !Number.isFinite(value) || value < 0)) bad(`${name} must be a finite number >= 0`);
  }
  if (retryOn !== undefined && typeof retryOn !== 'function') bad('retryOn must be a function');
  if (sideEffects && policy.idempotent !== true) {
    bad('is refused on a sideEffects: true tool unless it sets idempotent: true (running the call again must be safe)');
  }
}

/** The delay before try `attempt` (2 for the first retry): exponential, capped. */
export function retryDelay(policy: ToolRetryPolicy, attempt: number): number {
  const initial = policy.initialDelayMs ?? TOOL_RETRY_DEFAULTS.initialDelayMs;
  const max = policy.maxDelayMs ?? TOOL_RETRY_DEFAULTS.maxDelayMs;
  return Math.min(max, initial * 2 ** Math.max(0, attempt - 2));
}

/** Whether the error try `attempt` threw is worth another try: the policy's retryOn, else anything but a non-retryable AgentError. */
export function wantsRetry(policy: ToolRetryPolicy, error: unknown, attempt: number): boolean {
  if (policy.retryOn) return policy.retryOn(error, attempt) === true;
  return !(AgentError.isInstance(error) && error.retryable === false);
}
