import { APICallError, JSONParseError } from '@ai-sdk/provider';
import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3Content,
  LanguageModelV3FinishReason,
  LanguageModelV3GenerateResult,
  LanguageModelV3StreamPart,
  LanguageModelV3StreamResult,
  LanguageModelV3Usage,
} from '@ai-sdk/provider';

/** Token counts a scripted step reports; omitted counts are reported as unknown, as a provider without usage would. */
export interface ScriptedUsage {
  /** Prompt tokens, cache reads and writes included. */
  readonly inputTokens?: number;
  /** Completion tokens, reasoning included. */
  readonly outputTokens?: number;
  /** Prompt tokens served from the provider's cache. */
  readonly cachedInputTokens?: number;
  /** Prompt tokens written to the provider's cache. */
  readonly cacheWriteTokens?: number;
  /** Output tokens spent on reasoning. */
  readonly reasoningTokens?: number;
}

/** A tool call a scripted step makes; `args` is JSON-encoded the way a provider sends it. */
export interface ScriptedToolCall {
  readonly name: string;
  readonly args: unknown;
  /** The call id; defaults to `call_<callIndex>_<n>` so ids stay unique when a step repeats. */
  readonly id?: string;
}

/** A tool call whose input is sent verbatim, to script malformed JSON. */
export interface ScriptedRawToolCall {
  readonly name: string;
  /** The raw input text, e.g. `'{"city": '`. */
  readonly input: string;
  readonly id?: string;
}

/** How a scripted step fails, shaped like the errors real AI SDK providers throw. */
export interface ScriptedError {
  /** HTTP status: thrown as an `APICallError` with `statusCode`, `isRetryable` and an OpenAI-style body. */
  readonly status?: number;
  /** The provider's error message. */
  readonly message?: string;
  /** Sent as the `retry-after` response header. */
  readonly retryAfterSeconds?: number;
  /**
   * `network`: `TypeError('fetch failed')` caused by ECONNREFUSED; `timeout`: a `TimeoutError` DOMException
   * (what `AbortSignal.timeout` makes fetch throw); `invalid-response`: an unparseable reply. Wins over `status`.
   */
  readonly kind?: 'network' | 'timeout' | 'invalid-response';
  /** Deliver the error as an `error` stream part after the step's output instead of rejecting `doStream`. */
  readonly inStream?: boolean;
}

/** The finish reason of a step: the unified value alone, or the full V3 shape. */
export type ScriptedFinishReason = LanguageModelV3FinishReason['unified'] | LanguageModelV3FinishReason;

/** One scripted model reply. */
export interface ScriptedStepObject {
  /** The reply text, streamed as one delta unless `textChunks` is given. */
  readonly text?: string;
  /** The reply text as separate deltas (wins over `text`). */
  readonly textChunks?: readonly string[];
  /** Reasoning text, streamed before the reply as one block of one delta unless `reasoningChunks` is given. */
  readonly reasoning?: string;
  /** Reasoning as separate deltas of one block (wins over `reasoning`). */
  readonly reasoningChunks?: readonly string[];
  readonly toolCalls?: readonly ScriptedToolCall[];
  readonly rawToolCalls?: readonly ScriptedRawToolCall[];
  readonly usage?: ScriptedUsage;
  /** Time to first byte; an abort of the call's signal during the wait rejects with an AbortError. */
  readonly delayMs?: number;
  /** Delay before each stream part, to test aborts mid-stream. */
  readonly chunkDelayMs?: number;
  readonly error?: ScriptedError;
  /** Defaults to `tool-calls` when the step calls tools, else `stop`. */
  readonly finishReason?: ScriptedFinishReason;
  /** The model id the reply reports (defaults to the model's). */
  readonly modelId?: string;
}

/** A step computed from the call, so a test can answer based on the prompt it received. */
export type ScriptedStepFunction = (
  callOptions: LanguageModelV3CallOptions,
  callIndex: number,
) => ScriptedStepObject | PromiseLike<ScriptedStepObject>;

/** One entry of a script: a fixed reply or a function of the call. */
export type ScriptedStep = ScriptedStepObject | ScriptedStepFunction;

/** Options of {@link createScriptedModel}. */
export interface ScriptedModelOptions {
  /** Defaults to `scripted`. */
  readonly provider?: string;
  /** Defaults to `scripted-model`. */
  readonly modelId?: string;
  /** Repeat the last step forever instead of failing when the script runs out (for benchmarks). */
  readonly loop?: boolean;
  /** Keep the options of every call in `calls` (default true); turn off in benchmarks so memory stays flat. */
  readonly recordCalls?: boolean;
}

// What a step object compiles to once, so that a repeated step costs only its per-call ids.
interface CompiledStep {
  readonly delayMs: number;
  readonly chunkDelayMs: number;
  readonly modelId: string | undefined;
  /** Reasoning and text parts, shared by every call of the step. */
  readonly contentParts: readonly LanguageModelV3StreamPart[];
  readonly toolCalls: readonly { readonly name: string; readonly input: string; readonly id: string | undefined }[];
  readonly finish: LanguageModelV3StreamPart;
  readonly finishReason: LanguageModelV3FinishReason;
  readonly usage: LanguageModelV3Usage;
  readonly text: string;
  readonly reasoning: string;
  readonly error: ScriptedError | undefined;
}

const STREAM_START: LanguageModelV3StreamPart = { type: 'stream-start', warnings: [] };
const SCRIPTED_URL = 'https://scripted.invalid/v1/chat/completions';

const STATUS_TEXT: Readonly<Record<number, string>> = {
  400: 'Invalid request.',
  401: 'Incorrect API key provided.',
  403: 'You are not allowed to use this model.',
  404: 'The model does not exist.',
  408: 'Request timed out.',
  422: 'Unprocessable request.',
  429: 'Rate limit reached for requests.',
  500: 'The server had an error while processing your request.',
  502: 'Bad gateway.',
  503: 'The engine is currently overloaded, please try again later.',
  504: 'Gateway timeout.',
};

const ERROR_TYPE: Readonly<Record<number, string>> = {
  401: 'invalid_request_error',
  403: 'permission_error',
  404: 'not_found_error',
  429: 'rate_limit_error',
};

function toUsage(usage: ScriptedUsage | undefined): LanguageModelV3Usage {
  const input = usage?.inputTokens;
  const output = usage?.outputTokens;
  const cacheRead = usage?.cachedInputTokens;
  const cacheWrite = usage?.cacheWriteTokens;
  const reasoning = usage?.reasoningTokens;
  return {
    inputTokens: {
      total: input,
      noCache: input === undefined ? undefined : input - (cacheRead ?? 0) - (cacheWrite ?? 0),
      cacheRead,
      cacheWrite,
    },
    outputTokens: {
      total: output,
      text: output === undefined ? undefined : output - (reasoning ?? 0),
      reasoning,
    },
  };
}

function toFinishReason(reason: ScriptedFinishReason | undefined, hasToolCalls: boolean): LanguageModelV3FinishReason {
  if (reason === undefined) return hasToolCalls ? { unified: 'tool-calls', raw: 'tool_calls' } : { unified: 'stop', raw: 'stop' };
  return typeof reason === 'string' ? { unified: reason, raw: reason } : reason;
}

function compileStep(step: ScriptedStepObject): CompiledStep {
  const contentParts: LanguageModelV3StreamPart[] = [];
  const thoughts = step.reasoningChunks ?? (step.reasoning === undefined || step.reasoning === '' ? [] : [step.reasoning]);
  if (thoughts.length > 0) {
    contentParts.push({ type: 'reasoning-start', id: 'reasoning-0' });
    for (const delta of thoughts) contentParts.push({ type: 'reasoning-delta', id: 'reasoning-0', delta });
    contentParts.push({ type: 'reasoning-end', id: 'reasoning-0' });
  }
  const chunks = step.textChunks ?? (step.text === undefined || step.text === '' ? [] : [step.text]);
  if (chunks.length > 0) {
    contentParts.push({ type: 'text-start', id: 'text-0' });
    for (const delta of chunks) contentParts.push({ type: 'text-delta', id: 'text-0', delta });
    contentParts.push({ type: 'text-end', id: 'text-0' });
  }
  const toolCalls = [
    ...(step.toolCalls ?? []).map((call) => ({ name: call.name, input: JSON.stringify(call.args ?? {}), id: call.id })),
    ...(step.rawToolCalls ?? []).map((call) => ({ name: call.name, input: call.input, id: call.id })),
  ];
  const error = step.error;
  const finishReason = error?.inStream === true ? { unified: 'error' as const, raw: undefined } : toFinishReason(step.finishReason, toolCalls.length > 0);
  const usage = toUsage(step.usage);
  return {
    delayMs: step.delayMs ?? 0,
    chunkDelayMs: step.chunkDelayMs ?? 0,
    modelId: step.modelId,
    contentParts,
    toolCalls,
    finish: { type: 'finish', usage, finishReason },
    finishReason,
    usage,
    text: chunks.join(''),
    reasoning: thoughts.join(''),
    error,
  };
}

function abortReason(signal: AbortSignal): unknown {
  // fetch rejects with a TimeoutError for AbortSignal.timeout(); keep that distinction, as real providers do.
  const reason: unknown = signal.reason;
  if (reason instanceof DOMException && (reason.name === 'AbortError' || reason.name === 'TimeoutError')) return reason;
  return new DOMException('This operation was aborted', 'AbortError');
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted === true) {
      reject(abortReason(signal));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(abortReason(signal as AbortSignal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Builds the error a real AI SDK provider would throw (or stream) for a scripted failure. */
function createScriptedError(error: ScriptedError): unknown {
  if (error.kind === 'network') {
    const cause = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:443'), {
      code: 'ECONNREFUSED',
      errno: -111,
      syscall: 'connect',
      address: '127.0.0.1',
      port: 443,
    });
    return new TypeError(error.message ?? 'fetch failed', { cause });
  }
  if (error.kind === 'timeout') {
    return new DOMException(error.message ?? 'The operation was aborted due to timeout', 'TimeoutError');
  }
  if (error.kind === 'invalid-response') {
    const text = '{"id": "chatcmpl-1", "choices": [';
    const cause = new JSONParseError({ text, cause: new SyntaxError(error.message ?? 'Unexpected end of JSON input') });
    // A streamed reply fails chunk by chunk; a whole reply fails as the provider's "Invalid JSON response".
    if (error.inStream === true) return cause;
    return new APICallError({
      message: 'Invalid JSON response',
      url: SCRIPTED_URL,
      requestBodyValues: {},
      statusCode: 200,
      responseHeaders: { 'content-type': 'application/json' },
      responseBody: text,
      cause,
    });
  }
  const status = error.status ?? 500;
  const message = error.message ?? STATUS_TEXT[status] ?? `Request failed with status ${status}.`;
  const data = { error: { message, type: ERROR_TYPE[status] ?? (status >= 500 ? 'server_error' : 'invalid_request_error'), param: null, code: null } };
  const responseHeaders: Record<string, string> = { 'content-type': 'application/json' };
  if (error.retryAfterSeconds !== undefined) responseHeaders['retry-after'] = String(error.retryAfterSeconds);
  return new APICallError({
    message,
    url: SCRIPTED_URL,
    requestBodyValues: {},
    statusCode: status,
    responseHeaders,
    responseBody: JSON.stringify(data),
    data,
  });
}

/**
 * A `LanguageModelV3` that plays a fixed script, one step per `doStream` / `doGenerate` call, so a
 * test or a benchmark exercises the real adapter path without a network. Steps are compiled once.
 */
export class ScriptedModel implements LanguageModelV3 {
  /** The AI SDK language model spec this model implements. */
  readonly specificationVersion = 'v3';
  /** Provider id, reported in payloads and traces. */
  readonly provider: string;
  /** Model id, reported unless a step overrides it. */
  readonly modelId: string;
  /** No URL is fetched natively; files are passed as data. */
  readonly supportedUrls: Record<string, RegExp[]> = {};
  /** The options of every call so far (empty when `recordCalls` is false). */
  readonly calls: LanguageModelV3CallOptions[] = [];

  readonly #steps: readonly ScriptedStep[];
  readonly #compiled: (CompiledStep | undefined)[];
  readonly #loop: boolean;
  readonly #recordCalls: boolean;
  // Steps returned by functions are often constants; compiling each object once keeps them cheap too.
  readonly #dynamicCompiled = new WeakMap<ScriptedStepObject, CompiledStep>();
  #callCount = 0;

  constructor(steps: readonly ScriptedStep[], options: ScriptedModelOptions = {}) {
    this.provider = options.provider ?? 'scripted';
    this.modelId = options.modelId ?? 'scripted-model';
    this.#steps = steps;
    this.#compiled = steps.map((step) => (typeof step === 'function' ? undefined : compileStep(step)));
    this.#loop = options.loop ?? false;
    this.#recordCalls = options.recordCalls ?? true;
  }

  /** How many calls the model has received, including failed ones. */
  get callCount(): number {
    return this.#callCount;
  }

  /** Plays the next step as a V3 stream: stream-start, response-metadata, content, tool calls, finish. */
  async doStream(options: LanguageModelV3CallOptions): Promise<LanguageModelV3StreamResult> {
    const callIndex = this.#callCount;
    const next = this.#next(options);
    // Only function steps may be async; a fixed step skips the extra await on the benchmark path.
    const step = next instanceof Promise ? await next : (next as CompiledStep);
    const signal = options.abortSignal;
    if (step.delayMs > 0) await sleep(step.delayMs, signal);
    else if (signal?.aborted === true) throw abortReason(signal);
    const error = step.error;
    if (error !== undefined && error.inStream !== true) throw createScriptedError(error);

    const parts: LanguageModelV3StreamPart[] = [
      STREAM_START,
      { type: 'response-metadata', id: `scripted-response-${callIndex}`, modelId: step.modelId ?? this.modelId },
      ...step.contentParts,
    ];
    const toolCalls = step.toolCalls;
    for (let i = 0; i < toolCalls.length; i++) {
      const call = toolCalls[i]!;
      parts.push({ type: 'tool-call', toolCallId: call.id ?? `call_${callIndex}_${i}`, toolName: call.name, input: call.input });
    }
    if (error !== undefined) parts.push({ type: 'error', error: createScriptedError(error) });
    parts.push(step.finish);

    if (step.chunkDelayMs > 0) return { stream: delayedStream(parts, step.chunkDelayMs, signal) };
    return {
      stream: new ReadableStream<LanguageModelV3StreamPart>({
        start(controller) {
          for (const part of parts) controller.enqueue(part);
          controller.close();
        },
      }),
    };
  }

  /** Plays the next step as one whole reply. */
  async doGenerate(options: LanguageModelV3CallOptions): Promise<LanguageModelV3GenerateResult> {
    const callIndex = this.#callCount;
    const step = await this.#next(options);
    const signal = options.abortSignal;
    if (step.delayMs > 0) await sleep(step.delayMs, signal);
    else if (signal?.aborted === true) throw abortReason(signal);
    if (step.error !== undefined) throw createScriptedError(step.error);

    const content: LanguageModelV3Content[] = [];
    if (step.reasoning !== '') content.push({ type: 'reasoning', text: step.reasoning });
    if (step.text !== '') content.push({ type: 'text', text: step.text });
    const toolCalls = step.toolCalls;
    for (let i = 0; i < toolCalls.length; i++) {
      const call = toolCalls[i]!;
      content.push({ type: 'tool-call', toolCallId: call.id ?? `call_${callIndex}_${i}`, toolName: call.name, input: call.input });
    }
    return {
      content,
      finishReason: step.finishReason,
      usage: step.usage,
      warnings: [],
      response: { id: `scripted-response-${callIndex}`, modelId: step.modelId ?? this.modelId },
    };
  }

  #next(options: LanguageModelV3CallOptions): CompiledStep | Promise<CompiledStep> {
    const callIndex = this.#callCount++;
    if (this.#recordCalls) this.calls.push(options);
    const count = this.#steps.length;
    let index = callIndex;
    if (index >= count) {
      if (!this.#loop || count === 0) {
        throw new Error(
          `ScriptedModel: the script has ${count} step${count === 1 ? '' : 's'} and all were played; call ${callIndex + 1} has no step. ` +
            'Script more steps, or pass { loop: true } to repeat the last one.',
        );
      }
      index = count - 1;
    }
    const compiled = this.#compiled[index];
    if (compiled !== undefined) return compiled;
    const step = this.#steps[index] as ScriptedStepFunction;
    const produced = step(options, callIndex);
    if (isPromiseLike(produced)) return Promise.resolve(produced).then((value) => this.#compileDynamic(value));
    return this.#compileDynamic(produced);
  }

  #compileDynamic(step: ScriptedStepObject): CompiledStep {
    let compiled = this.#dynamicCompiled.get(step);
    if (compiled === undefined) {
      compiled = compileStep(step);
      this.#dynamicCompiled.set(step, compiled);
    }
    return compiled;
  }
}

function isPromiseLike(value: ScriptedStepObject | PromiseLike<ScriptedStepObject>): value is PromiseLike<ScriptedStepObject> {
  return typeof (value as { then?: unknown }).then === 'function';
}

function delayedStream(
  parts: readonly LanguageModelV3StreamPart[],
  delayMs: number,
  signal: AbortSignal | undefined,
): ReadableStream<LanguageModelV3StreamPart> {
  let index = 0;
  return new ReadableStream<LanguageModelV3StreamPart>({
    async pull(controller) {
      try {
        await sleep(delayMs, signal);
      } catch (error) {
        controller.error(error);
        return;
      }
      const part = parts[index++];
      if (part === undefined) controller.close();
      else controller.enqueue(part);
    },
  });
}

/** Creates a {@link ScriptedModel} that plays `steps` in order. */
export function createScriptedModel(steps: readonly ScriptedStep[], options?: ScriptedModelOptions): ScriptedModel {
  return new ScriptedModel(steps, options);
}

/** A step that replies with `text`. */
export function scriptedText(text: string, usage?: ScriptedUsage): ScriptedStepObject {
  return usage === undefined ? { text } : { text, usage };
}

/** A step that calls one tool with `args`. */
export function scriptedToolCall(name: string, args: unknown, id?: string): ScriptedStepObject {
  return { toolCalls: [id === undefined ? { name, args } : { name, args, id }] };
}

/** A step that fails with an HTTP `status`, as a provider's `APICallError`. */
export function scriptedError(status: number, message?: string, retryAfterSeconds?: number): ScriptedStepObject {
  return { error: { status, ...(message === undefined ? {} : { message }), ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }) } };
}
