import { expect } from 'vitest';
import { AgentError } from '../errors.js';
import type { Message } from '../messages.js';
import type { BeginRunRequest } from '../store.js';
import type { UsageEntry } from '../usage.js';

/** A fixed clock origin: lease tests pass `now` explicitly, so they never depend on the wall clock. */
export const T0 = 1_700_000_000_000;

/** Options of {@link beginRequest}. */
export interface BeginOptions {
  readonly input?: string;
  readonly startedAt?: number;
  readonly leaseMs?: number;
  readonly leaseOwner?: string;
  /** False to continue the session's current turn instead of opening a new one. */
  readonly newTurn?: boolean;
  readonly signal?: BeginRunRequest['signal'];
  readonly initialState?: unknown;
}

/** A K1 request with the fields every store needs. */
export function beginRequest(sessionId: string, runId: string, options: BeginOptions = {}): BeginRunRequest {
  const input = options.input ?? 'hello';
  const message: Message = { role: 'user', content: input };
  return {
    sessionId,
    runId,
    agentType: 'agent',
    signal: options.signal ?? 'start',
    initialState: options.initialState ?? { n: 0 },
    ...(options.newTurn === false ? {} : { newTurn: { turnId: `turn-${runId}`, input: [message] } }),
    startedAt: options.startedAt ?? Date.now(),
    leaseOwner: options.leaseOwner ?? 'conformance',
    leaseMs: options.leaseMs ?? 60_000,
    options: { input },
  };
}

/** Asserts that a promise rejects with an AgentError carrying `code`. */
export async function expectCode(promise: Promise<unknown>, code: string): Promise<void> {
  let error: unknown;
  try {
    await promise;
  } catch (caught) {
    error = caught;
  }
  expect(error, `expected a rejection with code ${code}`).toBeDefined();
  expect(AgentError.isInstance(error) ? error.code : String(error)).toBe(code);
}

/** Assistant rows `prefix:0 .. prefix:count-1`. */
export function rows(prefix: string, count: number): Message[] {
  const out: Message[] = [];
  for (let i = 0; i < count; i++) out.push({ role: 'assistant', content: `${prefix}:${i}` });
  return out;
}

/** Lets other tasks (timers, I/O) run. */
export function tick(ms = 0): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** How a suite gets one instance, and optionally a second one on the same database. */
export interface PairFactory<T> {
  readonly create: () => T | Promise<T>;
  readonly destroy?: (first: T) => void | Promise<void>;
  readonly createSecond?: (first: T) => T | Promise<T>;
  readonly destroySecond?: (second: T) => void | Promise<void>;
}

/**
 * Test-body wrappers over a fresh instance (`one`) or two instances of one database (`two`; `second` is
 * `first` when there is no createSecond), destroyed after the body whatever happens.
 */
export function pairs<T>(factory: PairFactory<T>): {
  one: (fn: (first: T) => Promise<void>) => () => Promise<void>;
  two: (fn: (both: { first: T; second: T }) => Promise<void>) => () => Promise<void>;
} {
  async function inPair(fn: (both: { first: T; second: T }) => Promise<void>): Promise<void> {
    const first = await factory.create();
    let second: T | undefined;
    try {
      second = factory.createSecond ? await factory.createSecond(first) : undefined;
      await fn({ first, second: second ?? first });
    } finally {
      try {
        if (second !== undefined) await factory.destroySecond?.(second);
      } finally {
        await factory.destroy?.(first);
      }
    }
  }
  return { one: (fn) => () => inPair(({ first }) => fn(first)), two: (fn) => () => inPair(fn) };
}

/** A model-call usage entry with these token counts (undefined: the provider reported none). */
export function llmUsageEntry(sessionId: string, runId: string, stepIndex: number, tokens: Partial<{ prompt: number; completion: number; cached: number; cacheWrite: number; reasoning: number }> | undefined, success = true): UsageEntry {
  return {
    kind: 'llm',
    sessionId,
    runId,
    stepIndex,
    attempt: 1,
    model: 'scripted',
    usage:
      tokens === undefined
        ? undefined
        : {
            promptTokens: tokens.prompt ?? 0,
            completionTokens: tokens.completion ?? 0,
            totalTokens: (tokens.prompt ?? 0) + (tokens.completion ?? 0),
            ...(tokens.cached === undefined ? {} : { cachedTokens: tokens.cached }),
            ...(tokens.cacheWrite === undefined ? {} : { cacheWriteTokens: tokens.cacheWrite }),
            ...(tokens.reasoning === undefined ? {} : { reasoningTokens: tokens.reasoning }),
          },
    success,
    durationMs: 10,
    at: T0,
  };
}
