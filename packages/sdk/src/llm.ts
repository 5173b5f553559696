import type { LanguageModelV3 } from '@ai-sdk/provider';
import type { AgentErrorInfo } from './errors.js';
import type { Message, ToolCall } from './messages.js';

/** The model an agent runs on: any AI SDK language model (spec v3, as `ai@6` providers return). */
export type LanguageModel = LanguageModelV3;

/**
 * Where string model ids are looked up: the AI SDK's `createProviderRegistry({ openai, anthropic })`
 * (ids such as `'openai:gpt-4o-mini'`), or a single provider (`createOpenAI()`: ids such as
 * `'gpt-4o-mini'`). It throws for an id it does not know.
 */
export interface ModelRegistry {
  /** The language model for `id`; throws (`NoSuchProviderError`, `NoSuchModelError`) for an unknown one. */
  languageModel(id: string): LanguageModel;
}

/** A JSON Schema object (draft 2020-12 or 7), as produced by `z.toJSONSchema`. */
export type JSONSchema = Readonly<Record<string, unknown>>;

/** A tool as offered to the model. */
export interface LLMToolSpec {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: JSONSchema;
}

/** Sampling and request parameters passed to the model. */
export interface ModelParameters {
  readonly temperature?: number;
  readonly maxOutputTokens?: number;
  readonly topP?: number;
  readonly topK?: number;
  readonly presencePenalty?: number;
  readonly frequencyPenalty?: number;
  readonly seed?: number;
  readonly stopSequences?: readonly string[];
  /** Provider-specific options, passed through untouched (`providerOptions` of the AI SDK). */
  readonly providerOptions?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /** Extra HTTP headers for the provider request. */
  readonly headers?: Readonly<Record<string, string>>;
}

/** One model call, as the run loop hands it to an {@link LLMAdapter}. */
export interface LLMStepRequest {
  readonly model: LanguageModel;
  /** The resolved system prompt (absent when the agent has none). */
  readonly systemPrompt: string | undefined;
  /** The whole conversation so far, oldest first. Adapters should convert only what they have not seen. */
  readonly messages: readonly Message[];
  readonly tools: readonly LLMToolSpec[];
  readonly modelParameters: ModelParameters;
  /** Aborts the call (stop, or the per-call timeout). */
  readonly abortSignal: AbortSignal;
  /**
   * Called for each streamed text delta. The stream callbacks belong to this call: an adapter calls them only
   * while `generateStep` has not settled (a delta after that is not part of the reply, and the run may have
   * moved on to its next step).
   */
  readonly onTextDelta?: (delta: string) => void;
  /** Called for each streamed reasoning delta (a model's thinking, before or between its text). */
  readonly onReasoningDelta?: (delta: string) => void;
  /** Called when a reasoning block ends (after its last {@link LLMStepRequest.onReasoningDelta}). */
  readonly onReasoningEnd?: () => void;
}

/** Token usage of one model call; the field names are those of `afterLLMCall`'s `usage` (docs/rules.md, rule 62). */
export interface TokenUsage {
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly totalTokens: number;
  /** Prompt tokens served from the provider's cache. */
  readonly cachedTokens?: number;
  /** Prompt tokens written to the provider's cache. */
  readonly cacheWriteTokens?: number;
  /** Output tokens spent on reasoning. */
  readonly reasoningTokens?: number;
}

/** A model call that produced a reply. */
export interface StepSuccess {
  readonly ok: true;
  readonly text: string;
  readonly reasoning?: string;
  readonly toolCalls: readonly ToolCall[];
  /** The provider's finish reason (`stop`, `tool-calls`, `length`, ...). */
  readonly finishReason: string;
  readonly usage?: TokenUsage;
  /** The model id the provider reported (or the configured one). */
  readonly model: string;
  readonly responseId?: string;
}

/** A model call that failed; `error` is classified (provider_rate_limited, provider_auth, ...). */
export interface StepFailure {
  readonly ok: false;
  readonly error: AgentErrorInfo;
  readonly model: string;
  readonly usage?: TokenUsage;
  /** The provider's Retry-After, when it sent one. */
  readonly retryAfterMs?: number;
}

/** What one model call returned: provider failures are results, not exceptions (docs/rules.md, C2). */
export type StepResult = StepSuccess | StepFailure;

/**
 * The model port of the run loop. An adapter turns one {@link LLMStepRequest} into one
 * {@link StepResult}; retries, hooks and persistence are the loop's. It must return a failure
 * result for provider errors and throw only on its own bugs.
 */
export interface LLMAdapter {
  generateStep(request: LLMStepRequest): Promise<StepResult>;
}

/** `provider` and `modelId` of a model, for payloads and traces. */
export function describeModel(model: LanguageModel): { readonly provider: string; readonly modelId: string } {
  return { provider: model.provider, modelId: model.modelId };
}
