import { z } from 'zod';
import { ConfigError, type AgentErrorInfo } from '../errors.js';
import type { HookObject } from '../hooks/manager.js';
import { registerHookFactory, type SerializedHook } from '../hooks/serialize.js';
import type { AfterLLMCallPayload, BeforeLLMCallResult, HookContext, HookPoint } from '../hooks/types.js';

/** Options of {@link createTokenBudgetHook}. */
export interface TokenBudgetOptions {
  /** Once a run has used more tokens than this (all attempts, prompt and completion), its next model call is refused. */
  readonly maxTotalTokens: number;
  /** A `warning` chunk is written once, when the run's tokens reach this many. */
  readonly warnAt?: number;
}

/** The serialized type of {@link TokenBudgetHook}. */
export const TOKEN_BUDGET_HOOK_TYPE = '@helix-agents/sdk/TokenBudgetHook';

/** The code of the warning chunk written at `warnAt`. */
export const TOKEN_BUDGET_WARNING_CODE = 'token_budget_warning';

const OptionsSchema = z
  .object({ maxTotalTokens: z.number().positive(), warnAt: z.number().positive().optional() })
  .refine((o) => o.warnAt === undefined || o.warnAt <= o.maxTotalTokens, { message: 'warnAt must not exceed maxTotalTokens' });

interface Spend {
  tokens: number;
  warned: boolean;
}

/**
 * A token budget per execution: afterLLMCall adds each attempt's tokens to its run, a warning chunk marks
 * `warnAt`, and once the run is over budget the next beforeLLMCall blocks, so the run fails `hook_blocked`
 * before spending more. Unlike the agent's `limits.maxTotalTokens` (a `run_hard_stop` thrown right after
 * the call that crossed it, discarding that reply), the step that crossed the budget still completes, and
 * the hook can be added per execution and composed with other hooks. Counts live in this process's memory.
 */
export class TokenBudgetHook implements HookObject {
  /** The LLM points it steers and the terminal points where it forgets a run. */
  readonly allowedHookPoints: readonly HookPoint[] = Object.freeze(['beforeLLMCall', 'afterLLMCall', 'onAgentComplete', 'onAgentFail', 'onAgentSuperseded'] as const);
  readonly maxTotalTokens: number;
  readonly warnAt: number | undefined;
  readonly #spend = new Map<string, Spend>();

  constructor(options: TokenBudgetOptions) {
    const parsed = OptionsSchema.safeParse(options);
    if (!parsed.success) throw new ConfigError(`Invalid token budget: ${z.prettifyError(parsed.error)}`);
    this.maxTotalTokens = parsed.data.maxTotalTokens;
    this.warnAt = parsed.data.warnAt;
  }

  /** Tokens a live run has used so far (0 for an unknown or finished run). */
  tokensUsed(runId: string): number {
    return this.#spend.get(runId)?.tokens ?? 0;
  }

  /** Refuses the call when the run is already over budget. */
  beforeLLMCall(_payload: unknown, ctx: HookContext): BeforeLLMCallResult | undefined {
    const spent = this.tokensUsed(ctx.runId);
    if (spent <= this.maxTotalTokens) return undefined;
    return { block: true, reason: `Token budget exceeded: this run used ${spent} tokens, over its budget of ${this.maxTotalTokens}.` };
  }

  /** Adds the attempt's tokens and warns once at `warnAt`. */
  async afterLLMCall(payload: AfterLLMCallPayload, ctx: HookContext): Promise<void> {
    const tokens = payload.usage?.totalTokens ?? 0;
    let spend = this.#spend.get(ctx.runId);
    if (!spend) {
      spend = { tokens: 0, warned: false };
      this.#spend.set(ctx.runId, spend);
    }
    spend.tokens += tokens;
    if (this.warnAt === undefined || spend.warned || spend.tokens < this.warnAt) return;
    spend.warned = true;
    const errorInfo: AgentErrorInfo = {
      code: TOKEN_BUDGET_WARNING_CODE,
      layer: 'run',
      severity: 'warning',
      message: `This run has used ${spend.tokens} of its ${this.maxTotalTokens}-token budget.`,
      retryable: false,
      hint: 'Once the budget is exceeded the next model call is refused; wrap up, or raise maxTotalTokens.',
      details: { spent: spend.tokens, warnAt: this.warnAt, limit: this.maxTotalTokens },
    };
    await ctx.emit({ type: 'warning', errorInfo });
  }

  /** Forgets a completed run. */
  onAgentComplete(_payload: unknown, ctx: HookContext): void {
    this.#spend.delete(ctx.runId);
  }

  /** Forgets a failed run. */
  onAgentFail(_payload: unknown, ctx: HookContext): void {
    this.#spend.delete(ctx.runId);
  }

  /** Forgets a superseded run. */
  onAgentSuperseded(_payload: unknown, ctx: HookContext): void {
    this.#spend.delete(ctx.runId);
  }

  /** `{ type, config: { maxTotalTokens, warnAt } }`. */
  toJSON(): SerializedHook {
    return { type: TOKEN_BUDGET_HOOK_TYPE, config: { maxTotalTokens: this.maxTotalTokens, ...(this.warnAt === undefined ? {} : { warnAt: this.warnAt }) } };
  }
}

registerHookFactory(TOKEN_BUDGET_HOOK_TYPE, (config) => new TokenBudgetHook(config as TokenBudgetOptions));

/** Creates a {@link TokenBudgetHook}: `execute(agent, input, { hookManager: createHookManager(createTokenBudgetHook({ maxTotalTokens: 50_000 })) })`. */
export function createTokenBudgetHook(options: TokenBudgetOptions): TokenBudgetHook {
  return new TokenBudgetHook(options);
}
