// The run metadata hooks and tools read (docs/rules.md, rule 203): token usage so far and tool call counts.
import type { RunTokenUsage } from '../hooks/types.js';
import type { Spend } from './run-books.js';

/** A run's spend as the token usage a hook context shows (a fresh frozen object). */
export function tokenUsageOf(spend: Spend): RunTokenUsage {
  return Object.freeze({
    inputTokens: spend.input,
    outputTokens: spend.output,
    totalTokens: spend.tokens,
    cacheReadTokens: spend.cacheRead,
    cacheWriteTokens: spend.cacheWrite,
    reasoningTokens: spend.reasoning,
  });
}
