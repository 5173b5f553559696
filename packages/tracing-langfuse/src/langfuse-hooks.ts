import type { Attributes, Span } from '@opentelemetry/api';
import { BasicTracerProvider, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { LangfuseSpanProcessor } from '@langfuse/otel';
import { createObservationAttributes, LangfuseOtelSpanAttributes, type LangfuseObservationAttributes, type LangfuseObservationType } from '@langfuse/tracing';
import type { HookContext, HookPoint, Message, StepResult, StreamManager, TokenUsage } from '@helix-agents/sdk';
import { createRedactingTracerProvider, type RedactionOptions, type Redactor } from '@helix-agents/sdk/ready-made';
import { createOtelHooks, type AnyAgentHooks, type OtelTracingStats, type RunOutcomeStatus, type SpanLifecycleEvent, type TracedDecision, type TracedRun } from '@helix-agents/tracing-otel';

/** Options of {@link createLangfuseHooks}. Keys and URL fall back to Langfuse's own environment variables. */
export interface LangfuseHooksOptions {
  /** Your application's release, on every trace (`LANGFUSE_RELEASE` when absent). */
  readonly release?: string;
  /** Tags on every trace, before the execution's own `tags`. */
  readonly defaultTags?: readonly string[];
  /** Langfuse public key (`LANGFUSE_PUBLIC_KEY` when absent). */
  readonly publicKey?: string;
  /** Langfuse secret key (`LANGFUSE_SECRET_KEY` when absent). */
  readonly secretKey?: string;
  /** Langfuse URL (`LANGFUSE_BASE_URL` when absent, then `https://cloud.langfuse.com`). */
  readonly baseUrl?: string;
  /** Langfuse environment, e.g. `production` (`LANGFUSE_TRACING_ENVIRONMENT` when absent). */
  readonly environment?: string;
  /** Version of your agent or app, on every observation (`langfuse.version`). */
  readonly version?: string;
  /**
   * Send inputs and outputs: the run's input and output, each generation's prompt and reply, each tool
   * call's arguments and result. Default true (what Langfuse is for). A generation's prompt is the
   * whole conversation so far, so with this on a step costs more as the history grows; use `mask` to
   * redact, or false to send only names, timings, usage and errors.
   */
  readonly captureContent?: boolean;
  /** Redacts inputs, outputs and metadata before they leave the process (Langfuse's `mask`). */
  readonly mask?: (params: { readonly data: unknown }) => unknown;
  /**
   * Redacts secrets and PII in everything an observation carries, with `createRedactor`'s patterns (true:
   * the built-in ones): input, output, metadata, and the status message (an error's text), which `mask`
   * does not reach. It wraps this integration's tracer provider in `createRedactingTracerProvider`.
   */
  readonly redact?: boolean | RedactionOptions | Redactor;
  /** `batched` (default; long-lived processes) or `immediate` (serverless: export every observation as it ends). */
  readonly exportMode?: 'batched' | 'immediate';
  /** Observations per export batch (`LANGFUSE_FLUSH_AT`). */
  readonly flushAt?: number;
  /** Seconds between scheduled exports (`LANGFUSE_FLUSH_INTERVAL`). */
  readonly flushInterval?: number;
  /** Export request timeout in seconds (`LANGFUSE_TIMEOUT`, default 5). */
  readonly timeout?: number;
  /** Extra HTTP headers on export requests (a proxy's auth, ...). */
  readonly additionalHeaders?: Readonly<Record<string, string>>;
  /** Upload base64 media found in inputs and outputs to Langfuse (default true, as Langfuse's processor does). */
  readonly mediaUploadEnabled?: boolean;
  /** Send spans somewhere else than Langfuse's OTLP endpoint (tests, a collector); replaces the default exporter. */
  readonly exporter?: SpanExporter;
  /** Ended runs remembered for late hooks (see `@helix-agents/tracing-otel`); default 1000. */
  readonly maxEndedRuns?: number;
  /** Called when tracing itself throws; tracing never fails a run. */
  readonly onError?: (error: unknown, hook: HookPoint | 'recordDecision') => void;
}

/** What {@link createLangfuseHooks} returns. */
export interface LangfuseTracing {
  /** Pass to `defineAgent({ hooks })`, `execute(..., { hooks })` or a hook manager; typed to fit any agent. */
  readonly hooks: AnyAgentHooks;
  /** Sends everything recorded so far; await it before a serverless function returns. */
  flush(): Promise<void>;
  /** Closes spans still open, flushes, and stops the exporter (call once, when the process stops). */
  shutdown(): Promise<void>;
  /**
   * Wraps the executor's stream manager so that every steering decision the runtime audits (a block, a
   * rewrite, an exit hook's continue, a handled hook error) becomes a guardrail observation with its
   * reason, under the call it concerns. See `@helix-agents/tracing-otel`'s `traceStream`.
   */
  traceStream<T extends StreamManager>(streamManager: T): T;
  /** Records a steering decision of your own (block, rewrite, continue) as a guardrail observation with its reason. */
  recordDecision(ctx: Pick<HookContext, 'runId'>, decision: TracedDecision): boolean;
  /** What the tracer holds right now (open spans, remembered runs). */
  stats(): OtelTracingStats;
  /** The tracer provider this integration owns; it is not registered globally. */
  readonly tracerProvider: BasicTracerProvider;
}

/** This package's version, reported as the instrumentation scope version. */
export const TRACING_LANGFUSE_VERSION = '0.1.0';

const A = LangfuseOtelSpanAttributes;

/** The options handed to Langfuse's span processor as they are; one left unset gets the processor's default. */
const PROCESSOR_OPTIONS = ['publicKey', 'secretKey', 'baseUrl', 'environment', 'release', 'exportMode', 'flushAt', 'flushInterval', 'timeout', 'mediaUploadEnabled', 'exporter', 'mask'] as const;

/**
 * Langfuse tracing as hooks, on the official Langfuse SDK (`@langfuse/otel`'s span processor, which
 * exports over OTLP/HTTP, and `@langfuse/tracing`'s attribute mapping): a trace per run with userId,
 * sessionId, tags, metadata and release; a generation per model call attempt with model, usage and
 * latency; a tool observation per tool call; sub-agent runs nested in their parent's trace.
 *
 * It uses its own tracer provider with a `LangfuseSpanProcessor`, and registers nothing globally,
 * so it neither needs nor disturbs an OpenTelemetry setup your app already has.
 */
export function createLangfuseHooks(options: LangfuseHooksOptions = {}): LangfuseTracing {
  const captureContent = options.captureContent ?? true;
  const defaultTags = options.defaultTags ?? [];
  const processor = new LangfuseSpanProcessor({
    ...definedFields(options, PROCESSOR_OPTIONS),
    ...(options.additionalHeaders === undefined ? {} : { additionalHeaders: { ...options.additionalHeaders } }),
    // The provider is ours alone, so every span on it is one of ours; the default filter (Langfuse or
    // gen_ai.* spans only) would drop the event observations that carry no gen_ai.* attribute.
    shouldExportSpan: () => true,
  });
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [processor] });

  // Trace-level attributes go on every observation (as Langfuse's propagateAttributes does), so
  // observation-level filters by user, session or tag see every generation and tool call. A sub-agent's
  // observations are in its parent's trace, so they carry the attributes of the run at the top.
  const traceAttributesOf = new WeakMap<TracedRun, Attributes>();
  function traceAttributes(run: TracedRun): Attributes {
    if (run.traceRoot !== run) return traceAttributes(run.traceRoot);
    let attributes = traceAttributesOf.get(run);
    if (attributes === undefined) {
      attributes = { [A.TRACE_NAME]: run.agentType, [A.TRACE_SESSION_ID]: run.sessionId, [`${A.TRACE_METADATA}.runId`]: run.runId };
      if (run.userId !== undefined) attributes[A.TRACE_USER_ID] = run.userId;
      const tags = [...new Set([...defaultTags, ...(run.tags ?? [])])];
      if (tags.length > 0) attributes[A.TRACE_TAGS] = tags;
      for (const [key, value] of Object.entries(run.metadata ?? {})) attributes[`${A.TRACE_METADATA}.${key}`] = value;
      if (options.version !== undefined) attributes[A.VERSION] = options.version;
      traceAttributesOf.set(run, attributes);
    }
    return attributes;
  }

  // A prompt is the whole conversation so far; each message is serialised once (messages never change
  // once appended) and the prompt is joined from the pieces, instead of serialising the history every step.
  const messageJson = new WeakMap<Message, string>();
  function promptJson(messages: readonly Message[]): string {
    const parts: string[] = [];
    for (const message of messages) {
      let json = messageJson.get(message);
      if (json === undefined) {
        json = JSON.stringify(toChatMessage(message));
        messageJson.set(message, json);
      }
      parts.push(json);
    }
    return `[${parts.join(',')}]`;
  }

  function observe(span: Span, type: LangfuseObservationType, attributes: LangfuseObservationAttributes, run?: TracedRun): void {
    span.setAttributes(createObservationAttributes(type, attributes));
    if (run !== undefined) span.setAttributes(traceAttributes(run));
  }

  function decorate(span: Span, event: SpanLifecycleEvent): void {
    switch (event.type) {
      case 'run_start':
        observe(
          span,
          'agent',
          {
            ...(captureContent && event.input !== undefined ? { input: event.input } : {}),
            metadata: {
              runId: event.run.runId,
              ...(event.signal === 'start' ? {} : { startSignal: event.signal }),
              // A sub-agent: its own session, in the parent's trace.
              ...(event.run.parentSessionId === undefined ? {} : { sessionId: event.run.sessionId, parentSessionId: event.run.parentSessionId }),
              // The parent's tool call that started it (the observation it nests under).
              ...(event.run.parentToolCallId === undefined ? {} : { parentToolCallId: event.run.parentToolCallId }),
            },
          },
          event.run,
        );
        return;
      case 'run_end':
        observe(span, 'agent', {
          ...(captureContent && event.status === 'completed' ? { output: event.output } : {}),
          ...levelOf(event.status, event.error?.message ?? (event.suspendReason === undefined ? undefined : `Suspended: ${event.suspendReason}`)),
          metadata: {
            status: event.status,
            stepCount: event.stepCount,
            ...(event.exitReason === undefined ? {} : { exitReason: event.exitReason }),
            ...(event.suspendReason === undefined ? {} : { suspendReason: event.suspendReason }),
            ...errorMetadata(event.error),
          },
        });
        return;
      case 'chat_start':
        observe(
          span,
          'generation',
          {
            model: event.payload.model,
            modelParameters: definedFields(event.payload.modelParameters, MODEL_PARAMETERS),
            metadata: { provider: event.payload.provider, attempt: event.payload.attempt, stepIndex: event.ctx.stepCount },
            ...(captureContent ? { input: promptJson(event.payload.messages) } : {}),
          },
          event.run,
        );
        return;
      case 'chat_end': {
        const { payload } = event;
        const error = payload.error;
        observe(span, 'generation', {
          model: payload.model,
          ...(payload.usage === undefined ? {} : { usageDetails: usageDetails(payload.usage) }),
          ...(captureContent && payload.result.ok ? { output: replyOf(payload.result) } : {}),
          // A failed attempt that will be retried is a warning; the one that fails the run is an error.
          ...(error === undefined ? {} : { level: payload.plan.kind === 'retry' ? 'WARNING' : 'ERROR', statusMessage: error.message }),
          metadata: { plan: payload.plan.kind, ...(payload.result.ok ? { finishReason: payload.result.finishReason } : {}), ...errorMetadata(error) },
        });
        return;
      }
      case 'tool_start':
        observe(span, 'tool', { metadata: { toolCallId: event.payload.toolCall.id, stepIndex: event.ctx.stepCount } }, event.run);
        return;
      case 'tool_end': {
        const { payload } = event;
        observe(span, 'tool', {
          // The arguments as the call ran (after any beforeTool rewrite).
          ...(captureContent ? { input: payload.toolCall.arguments } : {}),
          ...(captureContent && payload.success ? { output: payload.result ?? null } : {}),
          ...(payload.success ? {} : { level: payload.blocked ? 'WARNING' : 'ERROR', statusMessage: payload.error?.message ?? 'The tool call failed.' }),
          metadata: { toolCallId: payload.toolCall.id, ...(payload.blocked ? { blocked: true } : {}), ...errorMetadata(payload.error?.info) },
        });
        return;
      }
      case 'abandoned':
        observe(span, event.kind === 'run' ? 'agent' : event.kind === 'chat' ? 'generation' : 'tool', {
          ...(event.pending ? { statusMessage: event.reason } : { level: event.error?.severity === 'info' ? 'WARNING' : 'ERROR', statusMessage: event.error?.message ?? event.reason }),
          metadata: { ...(event.pending ? { pending: true } : { abandoned: true }), reason: event.reason, ...errorMetadata(event.error) },
        });
        return;
      case 'event': {
        const isDecision = event.name === 'helix.hook.decision';
        const reason = event.attributes['helix.hook.reason'];
        observe(
          span,
          isDecision ? 'guardrail' : 'event',
          {
            metadata: { ...event.attributes },
            ...(typeof reason === 'string' ? { statusMessage: reason } : {}),
            ...(event.name === 'helix.tool_call.rejected' || event.attributes['helix.hook.decision'] === 'block' || event.attributes['helix.hook.decision'] === 'error' ? { level: 'WARNING' } : {}),
          },
          event.run,
        );
        return;
      }
      case 'late_outcome':
        observe(span, 'event', { ...levelOf(event.status, event.error?.message), metadata: { status: event.status, late: true, ...errorMetadata(event.error) } }, event.run);
        return;
    }
  }

  const redact = options.redact ?? false;
  const tracing = createOtelHooks({
    tracerProvider: redact === false ? tracerProvider : createRedactingTracerProvider(tracerProvider, redact === true ? {} : redact),
    tracerName: '@helix-agents/tracing-langfuse',
    tracerVersion: TRACING_LANGFUSE_VERSION,
    // Content travels as langfuse.observation.input/output; the gen_ai.* copies would double the payload.
    captureContent: false,
    // One trace per run: a span of the app's own (global) provider would be a parent Langfuse never receives.
    parent: 'root',
    // Langfuse does not read span events; decisions and refusals become observations.
    eventsAsSpans: true,
    decorate,
    ...definedFields(options, ['maxEndedRuns', 'onError']),
  });

  let shutdown: Promise<void> | undefined;
  return {
    hooks: tracing.hooks,
    traceStream: tracing.traceStream,
    recordDecision: tracing.recordDecision,
    stats: tracing.stats,
    tracerProvider,
    flush: () => tracerProvider.forceFlush(),
    shutdown: () => {
      shutdown ??= (async () => {
        tracing.endOpenSpans('The Langfuse tracer was shut down while the run was still going.');
        await tracerProvider.shutdown();
      })();
      return shutdown;
    },
  };
}

function levelOf(status: RunOutcomeStatus, message: string | undefined): LangfuseObservationAttributes {
  if (status === 'completed') return {};
  // A suspension is a normal pause (a human or a client will answer); only its reason is worth showing.
  if (status === 'suspended') return message === undefined ? {} : { statusMessage: message };
  return { level: status === 'failed' ? 'ERROR' : 'WARNING', ...(message === undefined ? {} : { statusMessage: message }) };
}

function errorMetadata(error: { readonly code: string; readonly layer: string; readonly retryable: boolean } | undefined): Record<string, unknown> {
  return error === undefined ? {} : { errorCode: error.code, errorLayer: error.layer, retryable: error.retryable };
}

/**
 * Usage with Langfuse's usage types: `input` counts only uncached prompt tokens, because Langfuse sums
 * every type whose name contains "input" (cache reads and writes are their own types).
 */
export function usageDetails(usage: TokenUsage): Record<string, number> {
  const cacheRead = usage.cachedTokens ?? 0;
  const cacheWrite = usage.cacheWriteTokens ?? 0;
  const details: Record<string, number> = {
    input: Math.max(0, usage.promptTokens - cacheRead - cacheWrite),
    output: usage.completionTokens,
    total: usage.totalTokens,
  };
  if (cacheRead > 0) details['input_cache_read'] = cacheRead;
  if (cacheWrite > 0) details['input_cache_creation'] = cacheWrite;
  return details;
}

const MODEL_PARAMETERS = ['temperature', 'maxOutputTokens', 'topP', 'topK', 'presencePenalty', 'frequencyPenalty', 'seed'] as const;

/** The fields of `source` named in `keys` that are set: an unset one is left out, not copied as undefined. */
function definedFields<T extends object, K extends keyof T>(source: T, keys: readonly K[]): Partial<Pick<T, K>> {
  const fields: Partial<Pick<T, K>> = {};
  for (const key of keys) if (source[key] !== undefined) fields[key] = source[key];
  return fields;
}

/** One message as OpenAI-style chat JSON, which Langfuse renders as a conversation. */
export function toChatMessage(message: Message): Record<string, unknown> {
  switch (message.role) {
    case 'system':
    case 'user':
      return { role: message.role, content: message.content };
    case 'assistant':
      return {
        role: 'assistant',
        content: message.content,
        ...(message.toolCalls && message.toolCalls.length > 0
          ? { tool_calls: message.toolCalls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: JSON.stringify(call.arguments) } })) }
          : {}),
      };
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, name: message.toolName, content: message.content };
  }
}

function replyOf(result: Extract<StepResult, { ok: true }>): Record<string, unknown> {
  return toChatMessage({ role: 'assistant', content: result.text, ...(result.toolCalls.length > 0 ? { toolCalls: result.toolCalls } : {}) });
}
