import type { StepResult } from '../llm.js';
import type { RunUsageSummary } from '../stream.js';
import type { UsageEntry } from '../usage.js';
import type { AgentHandle } from './agent-runtime.js';

/** Tokens and cost a run has spent so far. */
export interface Spend {
  readonly tokens: number;
  readonly costUsd: number;
  readonly input: number;
  readonly output: number;
  readonly cacheRead: number;
  readonly cacheWrite: number;
  readonly reasoning: number;
  readonly model: string | undefined;
}

/** Token prices, per million tokens. */
export interface Pricing {
  readonly inputPerMillion: number;
  readonly outputPerMillion: number;
  readonly cachedInputPerMillion?: number;
}

/**
 * A run's books: usage entries not yet handed to a store, what the run spent (for the budgets and the
 * terminal chunk), and how often each tool was executed (onExit's toolCallCounts).
 */
export class RunBooks {
  readonly #usage: UsageEntry[] = [];
  readonly #toolCalls: Record<string, number> = {};
  readonly #childrenPerStep = new Map<number, number>();
  readonly #children: AgentHandle[] = [];
  #waitingOnChildren = 0;
  #spend: Spend = { tokens: 0, costUsd: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0, model: undefined };

  /** Books one usage entry (it is written with, or after, the commit of the work it belongs to). */
  addUsage(entry: UsageEntry): void {
    this.#usage.push(entry);
  }

  /** Usage entries not written yet. */
  get pendingUsage(): readonly UsageEntry[] {
    return this.#usage;
  }

  /** Takes the pending usage entries (they are being written). */
  takeUsage(): UsageEntry[] {
    return this.#usage.splice(0, this.#usage.length);
  }

  /** Adds a model attempt's usage to what the run spent; returns the new totals. */
  charge(result: StepResult, pricing: Pricing | undefined): Spend {
    const usage = result.usage;
    if (!usage) return this.#spend;
    const s = this.#spend;
    const cached = usage.cachedTokens ?? 0;
    const cost = pricing
      ? ((usage.promptTokens - cached) * pricing.inputPerMillion + cached * (pricing.cachedInputPerMillion ?? pricing.inputPerMillion) + usage.completionTokens * pricing.outputPerMillion) / 1_000_000
      : 0;
    this.#spend = {
      tokens: s.tokens + usage.totalTokens,
      costUsd: s.costUsd + cost,
      input: s.input + usage.promptTokens,
      output: s.output + usage.completionTokens,
      cacheRead: s.cacheRead + cached,
      cacheWrite: s.cacheWrite + (usage.cacheWriteTokens ?? 0),
      reasoning: s.reasoning + (usage.reasoningTokens ?? 0),
      model: result.model,
    };
    return this.#spend;
  }

  /** What the run spent so far. */
  get spend(): Spend {
    return this.#spend;
  }

  /** Counts one executed call of `toolName`. */
  countToolCall(toolName: string): void {
    this.#toolCalls[toolName] = (this.#toolCalls[toolName] ?? 0) + 1;
  }

  /** Executed calls per tool (a copy). */
  toolCallCounts(): Record<string, number> {
    return { ...this.#toolCalls };
  }

  /** Counts one sub-agent call of `step`; returns how many that step has made. */
  countChild(step: number): number {
    const count = (this.#childrenPerStep.get(step) ?? 0) + 1;
    this.#childrenPerStep.set(step, count);
    return count;
  }

  /** Notes a child run this run's sub-agent calls ran (its usage belongs to this run's rollup too). */
  addChild(handle: AgentHandle): void {
    this.#children.push(handle);
  }

  /** A sub-agent call began (+1) or stopped (-1) waiting for its child run. */
  waitingOnChildren(delta: 1 | -1): void {
    this.#waitingOnChildren += delta;
  }

  /** How many of this run's sub-agent calls wait for their child runs right now. */
  get childWaits(): number {
    return this.#waitingOnChildren;
  }

  /** The child runs of this run's sub-agent calls, in the order they ended. */
  children(): readonly AgentHandle[] {
    return this.#children;
  }

  /** The run's token totals for its terminal chunk. */
  summary(priced: boolean): RunUsageSummary {
    const s = this.#spend;
    return {
      inputTokens: s.input,
      outputTokens: s.output,
      cacheReadTokens: s.cacheRead,
      cacheWriteTokens: s.cacheWrite,
      reasoningTokens: s.reasoning,
      ...(priced ? { costUsd: s.costUsd } : {}),
      ...(s.model === undefined ? {} : { model: s.model }),
    };
  }
}
