import type { TokenUsage } from './llm.js';

/** One usage record: a billed model call or a tool call. */
export type UsageEntry =
  | {
      readonly kind: 'llm';
      readonly sessionId: string;
      readonly runId: string;
      readonly stepIndex: number;
      readonly attempt: number;
      readonly model: string;
      readonly usage: TokenUsage | undefined;
      readonly success: boolean;
      readonly durationMs: number;
      readonly at: number;
    }
  | {
      readonly kind: 'tool';
      readonly sessionId: string;
      readonly runId: string;
      readonly stepIndex: number;
      readonly toolName: string;
      readonly toolCallId: string;
      readonly success: boolean;
      readonly durationMs: number;
      readonly at: number;
    };

/** Per-tool statistics in a {@link UsageRollup}. */
export interface ToolUsageStats {
  readonly calls: number;
  readonly failures: number;
  readonly totalDurationMs: number;
}

/** Aggregated usage of a run or a session. */
export interface UsageRollup {
  readonly tokens: {
    readonly prompt: number;
    readonly completion: number;
    readonly total: number;
    readonly cached: number;
    readonly cacheWrite: number;
    readonly reasoning: number;
  };
  /** Billed model calls, retried attempts included. */
  readonly modelCalls: number;
  /** Model calls that failed. */
  readonly failedModelCalls: number;
  readonly toolStats: {
    readonly totalCalls: number;
    readonly failures: number;
    readonly byTool: Readonly<Record<string, ToolUsageStats>>;
  };
  /** A run's sub-agent children, each with its own rollup (its own children included); the totals above include them. */
  readonly subAgents?: readonly { readonly sessionId: string; readonly runId: string; readonly rollup: UsageRollup }[];
}

/** Which entries a rollup covers. */
export interface UsageFilter {
  readonly sessionId?: string;
  readonly runId?: string;
}

/** The usage port: the run loop records model and tool calls after each step commit. */
export interface UsageStore {
  record(entries: readonly UsageEntry[]): Promise<void>;
  getRollup(filter: UsageFilter): Promise<UsageRollup>;
  /**
   * Drops every entry of the session; resolves true when there were some. Optional: a store without it
   * keeps its entries when the session is deleted. `JSAgentExecutor.deleteSession` calls it on each
   * usage store its runs were given (except the state store, which deletes its own usage with the
   * session). A state store that is a usage store too implements it as its own `deleteSession`.
   */
  deleteSession?(sessionId: string): Promise<boolean>;
}

/** Folds usage entries into a rollup (shared by every UsageStore implementation). */
export function rollupUsage(entries: Iterable<UsageEntry>): UsageRollup {
  let prompt = 0, completion = 0, total = 0, cached = 0, cacheWrite = 0, reasoning = 0;
  let modelCalls = 0, failedModelCalls = 0, totalCalls = 0, failures = 0;
  // A Map, not an object: a tool named `constructor` or `__proto__` stays a plain key.
  const tools = new Map<string, { calls: number; failures: number; totalDurationMs: number }>();
  for (const entry of entries) {
    if (entry.kind === 'llm') {
      modelCalls++;
      if (!entry.success) failedModelCalls++;
      const u = entry.usage;
      if (u) {
        prompt += u.promptTokens;
        completion += u.completionTokens;
        total += u.totalTokens;
        cached += u.cachedTokens ?? 0;
        cacheWrite += u.cacheWriteTokens ?? 0;
        reasoning += u.reasoningTokens ?? 0;
      }
    } else {
      totalCalls++;
      let stats = tools.get(entry.toolName);
      if (stats === undefined) tools.set(entry.toolName, (stats = { calls: 0, failures: 0, totalDurationMs: 0 }));
      stats.calls++;
      stats.totalDurationMs += entry.durationMs;
      if (!entry.success) {
        stats.failures++;
        failures++;
      }
    }
  }
  return {
    tokens: { prompt, completion, total, cached, cacheWrite, reasoning },
    modelCalls,
    failedModelCalls,
    toolStats: { totalCalls, failures, byTool: Object.fromEntries(tools) },
  };
}

/** Adds rollups together (a run's own usage and its sub-agents'): every total is the sum, nothing is counted twice. */
export function mergeRollups(own: UsageRollup, children: readonly { readonly sessionId: string; readonly runId: string; readonly rollup: UsageRollup }[]): UsageRollup {
  if (children.length === 0) return own;
  const sum = (pick: (r: UsageRollup) => number) => children.reduce((acc, c) => acc + pick(c.rollup), pick(own));
  // A Map, not an object: a tool named `constructor` or `__proto__` (a remote child reports its own names) stays a plain key.
  const tools = new Map<string, { calls: number; failures: number; totalDurationMs: number }>();
  for (const r of [own, ...children.map((c) => c.rollup)]) {
    for (const [name, stats] of Object.entries(r.toolStats.byTool)) {
      let into = tools.get(name);
      if (into === undefined) tools.set(name, (into = { calls: 0, failures: 0, totalDurationMs: 0 }));
      into.calls += stats.calls;
      into.failures += stats.failures;
      into.totalDurationMs += stats.totalDurationMs;
    }
  }
  const byTool = Object.fromEntries(tools);
  return {
    tokens: {
      prompt: sum((r) => r.tokens.prompt),
      completion: sum((r) => r.tokens.completion),
      total: sum((r) => r.tokens.total),
      cached: sum((r) => r.tokens.cached),
      cacheWrite: sum((r) => r.tokens.cacheWrite),
      reasoning: sum((r) => r.tokens.reasoning),
    },
    modelCalls: sum((r) => r.modelCalls),
    failedModelCalls: sum((r) => r.failedModelCalls),
    toolStats: { totalCalls: sum((r) => r.toolStats.totalCalls), failures: sum((r) => r.toolStats.failures), byTool },
    subAgents: children,
  };
}
