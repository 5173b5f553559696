import { AgentError, ConfigError, ToolError } from '../errors.js';
import type { ToolCall } from '../messages.js';

/**
 * Size limits that keep one run, and one session, from exhausting memory. Each has a typed error and a
 * documented way of losing nothing (docs/hooks.md, "Timeouts, audit, loop guards and limits"). Sizes are
 * JSON characters (`JSON.stringify(value).length`; a string input counts its characters).
 */
export interface ResourceLimits {
  /** The longest input an entry takes: execute()'s and send()'s message, retry()'s message, an approval's edited input (default 1,000,000). Longer is refused with `run_input_too_large`. */
  readonly maxInputChars?: number;
  /** The largest tool result a step stores, as the row is about to be stored (after afterTool rewrites, so offloading can shrink it; default 1,000,000). Larger becomes a `tool_result_too_large` error result; a client's submitted result is refused at the entry. */
  readonly maxToolResultChars?: number;
  /** The most tool calls one model reply may make (default 64): the first ones in the model's order run, every call beyond gets a `tool_calls_exceeded` error result. */
  readonly maxToolCallsPerStep?: number;
  /** The largest custom state a commit writes (default 2,000,000): a run whose state grows past it fails with `run_state_too_large`; a larger initialState is refused at the entry. */
  readonly maxStateChars?: number;
  /** The most bytes of images and files (decoded, inline ones; URLs count 0) one turn's input may carry (default 10,485,760, 10 MiB). More is refused with `run_input_too_large`. */
  readonly maxInputFileBytes?: number;
  /** The most rows a session's conversation may hold (default 10,000): a new turn that would go past it is refused, and a run whose conversation grew past it fails before its next model call (`run_too_many_messages`). */
  readonly maxMessages?: number;
}

/** {@link ResourceLimits} with every value set. */
export type ResolvedLimits = { readonly [K in keyof ResourceLimits]-?: number };

/** The limits a run has when neither the executor nor the agent sets them. */
export const DEFAULT_RESOURCE_LIMITS: ResolvedLimits = Object.freeze({
  maxInputChars: 1_000_000,
  maxToolResultChars: 1_000_000,
  maxToolCallsPerStep: 64,
  maxStateChars: 2_000_000,
  maxMessages: 10_000,
  maxInputFileBytes: 10 * 1024 * 1024,
});

const LIMIT_NAMES = Object.keys(DEFAULT_RESOURCE_LIMITS) as (keyof ResolvedLimits)[];

/** Throws a ConfigError naming `where` when a set limit is not a positive integer (or Infinity, which turns it off). */
export function checkResourceLimits(limits: ResourceLimits | undefined, where: string): void {
  if (limits === undefined) return;
  for (const name of LIMIT_NAMES) {
    const value = limits[name];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !(value === Infinity || (Number.isInteger(value) && value > 0))) {
      throw new ConfigError(`${where}: limits.${name} must be a positive integer (or Infinity to turn it off), got ${String(value)}.`, { limit: name });
    }
  }
}

/** The limits of a run: the agent's own, then the executor's, then the defaults. */
export function resolveLimits(executor: ResourceLimits | undefined, agent: ResourceLimits | undefined): ResolvedLimits {
  if (executor === undefined && agent === undefined) return DEFAULT_RESOURCE_LIMITS;
  const out: Record<string, number> = {};
  for (const name of LIMIT_NAMES) out[name] = agent?.[name] ?? executor?.[name] ?? DEFAULT_RESOURCE_LIMITS[name];
  return out as ResolvedLimits;
}

/** The JSON length of `value`, or undefined when it cannot be serialized (another check reports that). */
export function safeJsonLength(value: unknown): number | undefined {
  try {
    return JSON.stringify(value)?.length ?? 0;
  } catch {
    // A BigInt or a cycle: not this check's to report.
    return undefined;
  }
}

/** The longest JSON a number, boolean or null has. */
const MAX_SCALAR_JSON = 24;

/**
 * True when `value`'s JSON is longer than `max`; a string is decided by its length where that is
 * enough (its JSON is at least 2 and at most 6 characters per character longer), so a short string is never copied.
 */
export function jsonLongerThan(value: unknown, max: number): number | undefined {
  if (max === Infinity) return undefined;
  if (typeof value === 'string' && value.length * 6 + 2 <= max) return undefined;
  // A number, boolean or null is at most 24 characters of JSON (-1.2345678901234567e-300): nothing to write out.
  if ((typeof value === 'number' || typeof value === 'boolean' || value === null) && max >= MAX_SCALAR_JSON) return undefined;
  const size = safeJsonLength(value);
  return size !== undefined && size > max ? size : undefined;
}

/** `run_input_too_large`: an entry's input over its limit; the entry is refused and nothing is written. */
export function inputTooLarge(what: string, size: number, max: number, limit: keyof ResolvedLimits): AgentError {
  return new AgentError('run_input_too_large', `The ${what} is ${size} characters long, over the limit of ${max} (limits.${limit}); nothing was written.`, {
    details: { what, size, max, limit },
  });
}

/** Refuses an entry whose text input is longer than `limits.maxInputChars`. */
export function checkInputText(text: string, limits: ResolvedLimits, what: string): void {
  if (text.length > limits.maxInputChars) throw inputTooLarge(what, text.length, limits.maxInputChars, 'maxInputChars');
}

/** Refuses an entry whose value's JSON is longer than the limit named. */
export function checkInputValue(value: unknown, limits: ResolvedLimits, what: string, limit: 'maxInputChars' | 'maxToolResultChars' | 'maxStateChars'): void {
  const size = jsonLongerThan(value, limits[limit]);
  if (size !== undefined) throw inputTooLarge(what, size, limits[limit], limit);
}

/** `tool_result_too_large`: the result row a call was about to store is over `maxToolResultChars`. */
export function toolResultTooLarge(toolName: string, size: number, max: number): AgentError {
  return new ToolError('tool_result_too_large', `The result of tool "${toolName}" is ${size} characters long, over the limit of ${max}; it was not stored.`, {
    details: { tool: toolName, size, max, limit: 'maxToolResultChars' },
  });
}

/** `tool_calls_exceeded`: a call beyond the first `max` of one model reply; it does not run. */
export function toolCallRefused(call: ToolCall, position: number, total: number, max: number): AgentError {
  return new ToolError('tool_calls_exceeded', `Call ${position} of ${total} ("${call.name}") was not run: one reply may make at most ${max} tool calls. Make the rest in a later step.`, {
    details: { tool: call.name, position, total, max, limit: 'maxToolCallsPerStep' },
  });
}

/** `run_state_too_large`: the state a commit was about to write is over `maxStateChars`; the run fails without it. */
export function stateTooLarge(size: number, max: number): AgentError {
  return new AgentError('run_state_too_large', `The state is ${size} characters long as JSON, over the limit of ${max} (limits.maxStateChars); the writes that grew it were not committed.`, {
    details: { size, max, limit: 'maxStateChars' },
  });
}

/** `run_too_many_messages`: the conversation holds (or a new turn would make it hold) more rows than `maxMessages`. */
export function tooManyMessages(count: number, max: number, atEntry: boolean): AgentError {
  const what = atEntry ? `A new turn would make the conversation ${count} rows long` : `The conversation is ${count} rows long`;
  return new AgentError('run_too_many_messages', `${what}, over the limit of ${max} (limits.maxMessages)${atEntry ? '; nothing was written' : ''}.`, {
    details: { count, max, limit: 'maxMessages' },
  });
}
