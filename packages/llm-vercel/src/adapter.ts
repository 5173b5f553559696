import type { LanguageModelV3CallOptions, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import type { LLMAdapter, LLMStepRequest, StepResult, TokenUsage, ToolCall } from '@helix-agents/sdk';
import { PromptConverter } from './convert-prompt.js';
import { toFunctionTools } from './convert-tools.js';
import { classifyProviderError } from './map-error.js';
import { toTokenUsage } from './map-usage.js';

type Writable<T> = { -readonly [K in keyof T]: T[K] };
type StepSuccess = Extract<StepResult, { ok: true }>;
type StepFailure = Extract<StepResult, { ok: false }>;

/** Options of {@link VercelAIAdapter}. */
export interface VercelAIAdapterOptions {
  /** `stream` (default) calls `doStream` and forwards text deltas; `generate` calls `doGenerate` and reports the text once. */
  readonly mode?: 'stream' | 'generate';
  /**
   * How many conversations besides the last one served keep their converted prompt (default 32), so
   * interleaved sessions on one adapter still convert only new messages. Each holds its history in memory until evicted.
   */
  readonly cachedConversations?: number;
}

// A throw from the caller's onTextDelta is the caller's bug, not a provider failure: it must escape the classification.
class CallbackFailure {
  constructor(readonly cause: unknown) {}
}

/** Calls a caller's stream callback; its throw cancels the provider stream and escapes as a {@link CallbackFailure}. */
function notify<A>(reader: ReadableStreamDefaultReader<unknown>, callback: (arg: A) => void, arg: A): void {
  try {
    callback(arg);
  } catch (error) {
    reader.cancel().catch(() => {});
    throw new CallbackFailure(error);
  }
}

/** Parses a tool call's JSON input; text that does not parse is kept so the loop can report tool_invalid_input. */
function parseToolInput(input: string): unknown {
  try {
    return JSON.parse(input);
  } catch {
    // Providers send '' for a call without arguments.
    return input.trim() === '' ? {} : input;
  }
}

function buildCallOptions(request: LLMStepRequest, prompt: LanguageModelV3CallOptions['prompt']): LanguageModelV3CallOptions {
  const options: LanguageModelV3CallOptions = { prompt, abortSignal: request.abortSignal };
  const tools = toFunctionTools(request.tools);
  if (tools !== undefined) options.tools = tools;
  const p = request.modelParameters;
  if (p.temperature !== undefined) options.temperature = p.temperature;
  if (p.maxOutputTokens !== undefined) options.maxOutputTokens = p.maxOutputTokens;
  if (p.topP !== undefined) options.topP = p.topP;
  if (p.topK !== undefined) options.topK = p.topK;
  if (p.presencePenalty !== undefined) options.presencePenalty = p.presencePenalty;
  if (p.frequencyPenalty !== undefined) options.frequencyPenalty = p.frequencyPenalty;
  if (p.seed !== undefined) options.seed = p.seed;
  if (p.stopSequences !== undefined) options.stopSequences = p.stopSequences.slice();
  // Passed through untouched: the provider validates its own options.
  if (p.providerOptions !== undefined) options.providerOptions = p.providerOptions as LanguageModelV3CallOptions['providerOptions'];
  if (p.headers !== undefined) options.headers = p.headers;
  return options;
}

/**
 * Runs helix-agents on any AI SDK `LanguageModelV3` by calling its `doStream` / `doGenerate` directly
 * (not `streamText`), so the prompt is built incrementally and one step is one provider request.
 * Provider failures come back as `{ ok: false, error }` with a classified error; it never retries.
 */
export class VercelAIAdapter implements LLMAdapter {
  /** Whether the adapter streams (`doStream`) or asks for whole replies (`doGenerate`). */
  readonly mode: 'stream' | 'generate';
  readonly #prompts: PromptConverter;

  constructor(options: VercelAIAdapterOptions = {}) {
    this.mode = options.mode ?? 'stream';
    this.#prompts = new PromptConverter(options.cachedConversations === undefined ? {} : { maxParked: options.cachedConversations });
  }

  /** Makes one model call for `request` and returns its reply, or its classified failure. */
  async generateStep(request: LLMStepRequest): Promise<StepResult> {
    const model = request.model;
    if (request.abortSignal.aborted) return this.#failure(request, undefined, model.modelId, undefined);
    const options = buildCallOptions(request, this.#prompts.convert(request.systemPrompt, request.messages));
    return this.mode === 'generate' ? this.#generate(request, options) : this.#stream(request, options);
  }

  async #stream(request: LLMStepRequest, options: LanguageModelV3CallOptions): Promise<StepResult> {
    const model = request.model;
    const { onTextDelta, onReasoningDelta, onReasoningEnd } = request;
    let modelId = model.modelId;
    let responseId: string | undefined;
    let text = '';
    let reasoning = '';
    const toolCalls: ToolCall[] = [];
    let finishReason = 'other';
    let usage: TokenUsage | undefined;
    let streamError: unknown;
    let failed = false;
    try {
      const { stream } = await model.doStream(options);
      const reader = stream.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        const part: LanguageModelV3StreamPart = value;
        switch (part.type) {
          case 'text-delta':
            // Empty deltas are keep-alives (OpenAI opens every reply with one); after an error nothing more is shown.
            if (part.delta === '' || failed) break;
            text += part.delta;
            if (onTextDelta !== undefined) notify(reader, onTextDelta, part.delta);
            break;
          case 'reasoning-delta':
            if (part.delta === '' || failed) break;
            reasoning += part.delta;
            if (onReasoningDelta !== undefined) notify(reader, onReasoningDelta, part.delta);
            break;
          case 'reasoning-end':
            if (onReasoningEnd !== undefined && !failed) notify(reader, onReasoningEnd, undefined);
            break;
          case 'tool-call':
            // A provider-executed tool already ran on the provider's side; there is nothing for the loop to run.
            if (part.providerExecuted !== true) toolCalls.push({ id: part.toolCallId, name: part.toolName, arguments: parseToolInput(part.input) });
            break;
          case 'response-metadata':
            if (part.modelId !== undefined) modelId = part.modelId;
            if (part.id !== undefined) responseId = part.id;
            break;
          case 'finish':
            finishReason = part.finishReason.unified;
            usage = toTokenUsage(part.usage);
            break;
          case 'error':
            // Read on to the finish part for usage; providers end the stream after an error.
            if (!failed) {
              failed = true;
              streamError = part.error;
            }
            break;
          default:
            break;
        }
      }
    } catch (error) {
      if (error instanceof CallbackFailure) throw error.cause;
      return this.#failure(request, error, modelId, usage);
    }
    if (failed) return this.#failure(request, streamError, modelId, usage);
    return success(text, reasoning, toolCalls, finishReason, usage, modelId, responseId);
  }

  async #generate(request: LLMStepRequest, options: LanguageModelV3CallOptions): Promise<StepResult> {
    const model = request.model;
    let result: Awaited<ReturnType<typeof model.doGenerate>>;
    try {
      result = await model.doGenerate(options);
    } catch (error) {
      return this.#failure(request, error, model.modelId, undefined);
    }
    let text = '';
    let reasoning = '';
    const toolCalls: ToolCall[] = [];
    for (const part of result.content) {
      if (part.type === 'text') text += part.text;
      else if (part.type === 'reasoning') reasoning += part.text;
      else if (part.type === 'tool-call' && part.providerExecuted !== true) {
        toolCalls.push({ id: part.toolCallId, name: part.toolName, arguments: parseToolInput(part.input) });
      }
    }
    // A UI that renders deltas still gets the reasoning and the reply, each in one piece.
    if (reasoning !== '' && request.onReasoningDelta !== undefined) {
      request.onReasoningDelta(reasoning);
      request.onReasoningEnd?.();
    }
    if (text !== '' && request.onTextDelta !== undefined) request.onTextDelta(text);
    const usage = toTokenUsage(result.usage);
    return success(text, reasoning, toolCalls, result.finishReason.unified, usage, result.response?.modelId ?? model.modelId, result.response?.id);
  }

  #failure(request: LLMStepRequest, error: unknown, modelId: string, usage: TokenUsage | undefined): StepFailure {
    const { error: info, retryAfterMs } = classifyProviderError(error, {
      provider: request.model.provider,
      modelId,
      abortSignal: request.abortSignal,
    });
    const failure: Writable<StepFailure> = { ok: false, error: info, model: modelId };
    if (usage !== undefined) failure.usage = usage;
    if (retryAfterMs !== undefined) failure.retryAfterMs = retryAfterMs;
    return failure;
  }
}

function success(
  text: string,
  reasoning: string,
  toolCalls: ToolCall[],
  finishReason: string,
  usage: TokenUsage | undefined,
  model: string,
  responseId: string | undefined,
): StepSuccess {
  const result: Writable<StepSuccess> = { ok: true, text, toolCalls, finishReason, model };
  if (reasoning !== '') result.reasoning = reasoning;
  if (usage !== undefined) result.usage = usage;
  if (responseId !== undefined) result.responseId = responseId;
  return result;
}
