import type { RunLimits } from '../define.js';
import { AgentError } from '../errors.js';
import type { Message } from '../messages.js';
import type { Spend } from './run-books.js';

/** What a stop condition looks at after a step (or a model attempt). */
export interface StepFacts {
  /** The step's rows (assistant reply, tool results, nudges). */
  readonly rows: readonly Message[];
  /** Whether the model's reply was empty (no text, no calls). */
  readonly emptyReply: boolean;
  /** What the run spent so far. */
  readonly spend: Spend;
}

/**
 * A loop guard: looks at each step's facts and returns the error that ends the run, or undefined. A
 * condition may keep counters across steps (it is made per run).
 */
export type StopCondition = (facts: StepFacts) => AgentError | undefined;

/** `run_repeated_error`: the same tool error (code and message) comes back `limit` times in a run (0 turns it off). */
export function repeatedToolError(limit: number): StopCondition {
  const seen = new Map<string, number>();
  return ({ rows }) => {
    if (limit <= 0) return undefined;
    for (const row of rows) {
      if (row.role !== 'tool' || row.isError !== true || !row.errorInfo || row.errorInfo.code === 'run_stopped') continue;
      const key = `${row.errorInfo.code}:${row.errorInfo.message}`;
      const times = (seen.get(key) ?? 0) + 1;
      seen.set(key, times);
      if (times >= limit) {
        return new AgentError('run_repeated_error', `The same error came back ${times} times: ${row.errorInfo.message}`, {
          hint: 'The agent kept repeating a failing action; check the tool or the instructions, then retry.',
          details: { code: row.errorInfo.code, tool: row.toolName, times },
        });
      }
    }
    return undefined;
  };
}

/** `run_empty_responses`: `limit` consecutive empty replies (0 turns it off). */
export function emptyReplies(limit: number): StopCondition {
  let run = 0;
  return ({ emptyReply }) => {
    run = emptyReply ? run + 1 : 0;
    if (limit > 0 && run >= limit) return new AgentError('run_empty_responses', `The model returned ${run} empty replies in a row.`, { details: { times: run } });
    return undefined;
  };
}

/** `run_hard_stop`: the run's model calls used more than `limit` tokens (retried attempts included). */
export function tokenBudget(limit: number): StopCondition {
  return ({ spend }) =>
    spend.tokens > limit
      ? new AgentError('run_hard_stop', `The run used ${spend.tokens} tokens, over its budget of ${limit}.`, {
          details: { budget: 'tokens', spent: spend.tokens, limit },
          hint: 'Raise limits.maxTotalTokens or make the task smaller.',
        })
      : undefined;
}

/** `run_hard_stop`: the run's model calls cost more than `limit` USD. */
export function costBudget(limit: number): StopCondition {
  return ({ spend }) =>
    spend.costUsd > limit
      ? new AgentError('run_hard_stop', `The run cost $${spend.costUsd.toFixed(4)}, over its budget of $${limit}.`, {
          details: { budget: 'cost', spent: spend.costUsd, limit },
          hint: 'Raise limits.maxCostUsd or make the task smaller.',
        })
      : undefined;
}

/** The first condition that trips, or undefined. */
export function firstTripped(conditions: readonly StopCondition[], facts: StepFacts): AgentError | undefined {
  for (const condition of conditions) {
    const error = condition(facts);
    if (error) return error;
  }
  return undefined;
}

/**
 * A run's guards, from its agent's limits: `afterAttempt` runs after every model attempt (the budgets),
 * `afterStep` after every step's tools or nudge (repeated errors, empty replies).
 */
export interface RunGuards {
  readonly afterAttempt: readonly StopCondition[];
  readonly afterStep: readonly StopCondition[];
}

/** The default guards for `limits` (step limit aside: reaching maxSteps is an ending, not an error). */
export function guardsFor(limits: RunLimits | undefined): RunGuards {
  return {
    afterAttempt: [
      ...(limits?.maxTotalTokens === undefined ? [] : [tokenBudget(limits.maxTotalTokens)]),
      ...(limits?.maxCostUsd === undefined ? [] : [costBudget(limits.maxCostUsd)]),
    ],
    afterStep: [repeatedToolError(limits?.maxRepeatedErrors ?? 3), emptyReplies(limits?.maxEmptyResponses ?? 3)],
  };
}
