import type { LanguageModelV3Usage } from '@ai-sdk/provider';
import type { TokenUsage } from '@helix-agents/sdk';

type Writable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * Maps V3 usage (nested input / output counts) to our {@link TokenUsage}; undefined when the provider
 * reported no counts, so "unknown" is never recorded as zero tokens.
 */
export function toTokenUsage(usage: LanguageModelV3Usage | undefined): TokenUsage | undefined {
  if (usage === undefined) return undefined;
  const input = usage.inputTokens;
  const output = usage.outputTokens;
  if (input.total === undefined && output.total === undefined) return undefined;
  const promptTokens = input.total ?? 0;
  const completionTokens = output.total ?? 0;
  const result: Writable<TokenUsage> = { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens };
  if (input.cacheRead !== undefined) result.cachedTokens = input.cacheRead;
  if (input.cacheWrite !== undefined) result.cacheWriteTokens = input.cacheWrite;
  if (output.reasoning !== undefined) result.reasoningTokens = output.reasoning;
  return result;
}
