import {
  context as otelContext,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type SpanContext,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';
import type {
  AfterLLMCallPayload,
  AfterToolPayload,
  AgentCompletePayload,
  AgentConfig,
  AgentErrorInfo,
  AgentFailPayload,
  AgentHooks,
  AgentResumedHookContext,
  AgentRetryHookContext,
  AgentStartPayload,
  AgentSupersededPayload,
  AgentSuspendedHookContext,
  BeforeLLMCallPayload,
  BeforeToolPayload,
  ExitReason,
  HookContext,
  HookDecisionChunk,
  HookPoint,
  MessagePayload,
  RunAttribution,
  RunIdentity,
  StreamManager,
} from '@helix-agents/sdk';
import type { StreamChunkInput, StreamWriter } from '@helix-agents/sdk/store';
import { replyMessages, splitPrompt, toJson } from './content.js';
import * as C from './conventions.js';

/** How a run ended, as its agent span records it (`helix.run.status`). */
export type RunOutcomeStatus = 'completed' | 'failed' | 'interrupted' | 'superseded' | 'suspended';

/** How a run began (`helix.run.start_signal`): a new turn, a resume of a suspended run, a retry, or a recovery we did not see start. */
export type RunStartSignal = 'start' | 'resume' | 'retry' | 'unknown';

/** Which of our spans an event concerns. */
export type TracedSpanKind = 'run' | 'chat' | 'tool';

/** A traced run's identity and attribution, as its first hook gave them; the same object for the whole run. */
export interface TracedRun extends RunIdentity, RunAttribution {
  /** The traced run at the top of this run's trace: itself, or for a sub-agent the run it nests under (transitively). */
  readonly traceRoot: TracedRun;
}

/**
 * A point in a span's life, handed to {@link OtelHooksOptions.decorate} so another vocabulary (for
 * example Langfuse's `langfuse.*` attributes) can be added to the same spans. `run` is the same object
 * for every event of a run, so a decorator can cache per-run work in a WeakMap keyed by it.
 */
export type SpanLifecycleEvent =
  | {
      readonly type: 'run_start';
      readonly run: TracedRun;
      readonly signal: RunStartSignal;
      /** The agent, when the run's first hook carried it. */
      readonly agent: AgentConfig<unknown, unknown> | undefined;
      /** The user input of a new turn. */
      readonly input: string | undefined;
    }
  | {
      readonly type: 'run_end';
      readonly run: TracedRun;
      readonly status: RunOutcomeStatus;
      readonly output?: unknown;
      readonly error?: AgentErrorInfo;
      readonly exitReason?: ExitReason;
      readonly stepCount: number;
      /** Why a suspended run stopped (`client_tool`, `awaiting_children`, ...). */
      readonly suspendReason?: string;
    }
  | { readonly type: 'chat_start'; readonly run: TracedRun; readonly ctx: HookContext; readonly payload: BeforeLLMCallPayload }
  | { readonly type: 'chat_end'; readonly run: TracedRun; readonly ctx: HookContext; readonly payload: AfterLLMCallPayload }
  | { readonly type: 'tool_start'; readonly run: TracedRun; readonly ctx: HookContext; readonly payload: BeforeToolPayload }
  | { readonly type: 'tool_end'; readonly run: TracedRun; readonly ctx: HookContext; readonly payload: AfterToolPayload }
  | {
      /** A span closed by the tracer because the hook that closes it never came (the run ended or suspended first). */
      readonly type: 'abandoned';
      readonly run: TracedRun;
      readonly kind: TracedSpanKind;
      readonly reason: string;
      /** True for a call left waiting at a suspension (a client tool, an approval, children): not a failure. */
      readonly pending: boolean;
      readonly error?: AgentErrorInfo;
    }
  | {
      /**
       * A zero-length child span standing for a span event (`helix.hook.decision`,
       * `helix.tool_call.rejected`, `helix.run.suspended`, ...), made only with `eventsAsSpans`.
       */
      readonly type: 'event';
      readonly run: TracedRun;
      readonly name: string;
      readonly attributes: Attributes;
      /** The kind of span the event belongs to (its parent). */
      readonly on: TracedSpanKind;
    }
  | {
      /** A terminal hook that came after the run span ended (onAgentFail after onAgentComplete, ...). */
      readonly type: 'late_outcome';
      readonly run: TracedRun;
      readonly status: RunOutcomeStatus;
      readonly error?: AgentErrorInfo;
    };

/** Options of {@link createOtelHooks}. */
export interface OtelHooksOptions {
  /** Where spans go; default: the global provider (a no-op until your app registers one). */
  readonly tracerProvider?: TracerProvider;
  /** Instrumentation scope name; default `@helix-agents/tracing-otel`. */
  readonly tracerName?: string;
  /** Instrumentation scope version; default this package's version. */
  readonly tracerVersion?: string;
  /**
   * Record prompts, replies, tool arguments and results, and the run's input and output on spans
   * (`gen_ai.input.messages`, `gen_ai.output.messages`, `gen_ai.tool.call.arguments`, ...). Default
   * false, as the GenAI conventions ask: content is often sensitive, and a prompt grows with the
   * conversation, so capturing it makes a step cost more as the history grows.
   */
  readonly captureContent?: boolean;
  /**
   * Where a run's `invoke_agent` span hangs when it is not a sub-agent of a traced run: `'active'`
   * (default) under the span active when the run starts (your HTTP request, when a context manager is
   * registered), `'root'` a new trace per run.
   */
  readonly parent?: 'active' | 'root';
  /**
   * How many ended runs are remembered, so that hooks arriving after a run's terminal hook still land
   * on its trace (onAgentFail after onAgentComplete when the terminal commit fails; a sibling tool's
   * afterTool after onAgentSuperseded) and a resumed or retried run can link to the run it continues.
   * The oldest is dropped first, closing its open spans. Default 1000.
   */
  readonly maxEndedRuns?: number;
  /**
   * Also record each span event as a zero-length child span of the same name, for backends that do not
   * read span events (Langfuse does not). Default false.
   */
  readonly eventsAsSpans?: boolean;
  /** Adds attributes to our spans at each point of their life (only called for recording spans). */
  readonly decorate?: (span: Span, event: SpanLifecycleEvent) => void;
  /** Called when tracing itself throws; tracing never fails a run. Default: one console warning per hook point. */
  readonly onError?: (error: unknown, hook: HookPoint | 'recordDecision') => void;
}

/** A steering decision of a hook (block, rewrite, continue), recorded on the trace with its reason. */
export interface TracedDecision {
  /** The hook point that decided, e.g. `beforeTool`. */
  readonly hook: HookPoint | (string & {});
  /** What it decided (the runtime's `hook_decision` values, or your own). */
  readonly decision: 'allow' | 'block' | 'rewrite' | 'continue' | 'error' | (string & {});
  /** Why; for a block, the reason the model is given. */
  readonly reason?: string;
  /** The tool call it concerns; the event goes on that call's span. */
  readonly toolCallId?: string;
  /** Which hook or guard decided, e.g. `pii-guard`. */
  readonly source?: string;
  /** How long the hook took. */
  readonly durationMs?: number;
  /** For `error`: the error policy that handled the hook's failure, and the error's code. */
  readonly policy?: string;
  readonly errorCode?: string;
}

/** Counts of what the tracer holds, to check that long-lived processes do not leak spans. */
export interface OtelTracingStats {
  /** Runs whose `invoke_agent` span is open. */
  readonly activeRuns: number;
  /** Ended runs remembered for late hooks (bounded by `maxEndedRuns`). */
  readonly endedRuns: number;
  /** Open spans of every kind, run spans included. */
  readonly openSpans: number;
}

/**
 * Hooks that fit every agent. Typed with `never` state and output (they read neither), so that
 * `defineAgent({ hooks, stateSchema, outputSchema })` still infers the agent's types from its schemas;
 * `AgentHooks` (unknown) there would widen the agent to `AgentConfig<unknown, unknown>`.
 */
export type AnyAgentHooks = AgentHooks<never, never>;

/** What {@link createOtelHooks} returns: the hooks, and helpers around the spans they keep. */
export interface OtelTracing {
  /** Pass to `defineAgent({ hooks })`, `execute(agent, input, { hooks })` or a hook manager. */
  readonly hooks: AnyAgentHooks;
  /**
   * Wraps the executor's stream manager so that every steering decision the runtime audits (the
   * `hook_decision` chunks: a block, a rewrite, an exit hook's continue, a handled hook error) is
   * recorded on the span it concerns, at the moment it is made. Everything else passes through.
   */
  traceStream<T extends StreamManager>(streamManager: T): T;
  /**
   * Records a steering decision as a `helix.hook.decision` span event: on the tool call's span when
   * `toolCallId` names an open one, on the current model call's span for `beforeLLMCall` /
   * `afterLLMCall`, else on the run's span. Returns false when the run is not traced (or has ended).
   */
  recordDecision(ctx: Pick<HookContext, 'runId'>, decision: TracedDecision): boolean;
  /** Ends every span still open (call it on shutdown, before flushing the provider); returns how many. */
  endOpenSpans(reason?: string): number;
  /** What the tracer holds right now. */
  stats(): OtelTracingStats;
  /** Flushes the tracer provider when it can (`forceFlush`, as the SDK's providers have). */
  flush(): Promise<void>;
}

/** This package's version, reported as the instrumentation scope version. */
export const TRACING_OTEL_VERSION = '0.1.0';

const DEFAULT_TRACER_NAME = '@helix-agents/tracing-otel';
const DEFAULT_MAX_ENDED_RUNS = 1000;
const REJECTED_TOOL_CODES: ReadonlySet<string> = new Set(['tool_not_found', 'tool_invalid_input']);

/** The spans of one run. */
interface RunTrace {
  readonly info: TracedRun;
  /** The run's `invoke_agent` span; undefined once it ended. */
  span: Span | undefined;
  readonly spanContext: SpanContext;
  /** Parent context of the run's children (the run span, or only its span context once it ended). */
  context: Context;
  /** The open span of the current model call attempt. */
  chat: Span | undefined;
  /** Open tool spans by tool call id: parallel calls of a step each keep their own. */
  readonly tools: Map<string, Span>;
  /** Calls left waiting when the run suspended, by tool call id: the resumed run's spans link to them. */
  pending: Map<string, SpanContext> | undefined;
  /** The run this one resumes or retries. */
  previousRunId: string | undefined;
  /** Spans that already carry a block decision (from the stream tap), so afterTool does not record it twice. */
  readonly blocked: WeakSet<Span>;
  /** Decisions about a call whose span does not exist yet (a hook before ours decided): they go on it when it starts. */
  readonly queued: Map<string, TracedDecision[]>;
  status: RunOutcomeStatus | undefined;
}

/**
 * Hooks that emit OpenTelemetry spans following the GenAI semantic conventions: an
 * `invoke_agent {agent}` span per run, a `chat {model}` span per model call attempt and an
 * `execute_tool {tool}` span per tool call, parented by run id and tool call id (not by async context,
 * so parallel tool calls and interleaved runs never cross).
 */
export function createOtelHooks(options: OtelHooksOptions = {}): OtelTracing {
  const provider = options.tracerProvider ?? trace.getTracerProvider();
  const tracer: Tracer = provider.getTracer(options.tracerName ?? DEFAULT_TRACER_NAME, options.tracerVersion ?? TRACING_OTEL_VERSION);
  const captureContent = options.captureContent ?? false;
  const useActiveContext = (options.parent ?? 'active') === 'active';
  const maxEndedRuns = Math.max(0, options.maxEndedRuns ?? DEFAULT_MAX_ENDED_RUNS);
  const decorate = options.decorate;
  const eventsAsSpans = options.eventsAsSpans ?? false;
  const warned = new Set<string>();
  const onError =
    options.onError ??
    ((error: unknown, hook: string) => {
      if (warned.has(hook)) return;
      warned.add(hook);
      console.warn(`[@helix-agents/tracing-otel] tracing failed in ${hook} (the run goes on): ${error instanceof Error ? error.message : String(error)}`);
    });

  const active = new Map<string, RunTrace>();
  /** The current traced run of each session, so a sub-agent run (parentSessionId) nests under it. */
  const bySession = new Map<string, RunTrace>();
  /** Ended runs, oldest first (a Map keeps insertion order). */
  const ended = new Map<string, RunTrace>();

  function safeDecorate(span: Span, event: SpanLifecycleEvent): void {
    if (decorate === undefined || !span.isRecording()) return;
    decorate(span, event);
  }

  function lookup(runId: string): RunTrace | undefined {
    return active.get(runId) ?? ended.get(runId);
  }

  /**
   * Where a sub-agent run hangs: the parent's tool call that started it (`ctx.parentToolCallId`), else
   * the parent's one open tool call, else the parent run.
   */
  function parentContextOf(parentRun: RunTrace | undefined, parentToolCallId: string | undefined): Context {
    if (parentRun === undefined) return useActiveContext ? otelContext.active() : ROOT_CONTEXT;
    const starter = parentToolCallId === undefined ? undefined : parentRun.tools.get(parentToolCallId);
    if (starter !== undefined) return trace.setSpan(parentRun.context, starter);
    if (parentRun.tools.size === 1) {
      const [toolSpan] = parentRun.tools.values();
      if (toolSpan !== undefined) return trace.setSpan(parentRun.context, toolSpan);
    }
    return parentRun.context;
  }

  function startRun(
    ctx: HookContext,
    start: { signal: RunStartSignal; agent?: AgentConfig<unknown, unknown>; input?: string; previousRunId?: string; attributes?: Attributes },
  ): RunTrace {
    const parentRun = ctx.parentSessionId === undefined ? undefined : bySession.get(ctx.parentSessionId);
    const parentContext = parentContextOf(parentRun, ctx.parentToolCallId);
    const model = start.agent?.llmConfig.model;
    const attributes: Attributes = {
      [C.GEN_AI_OPERATION_NAME]: C.OPERATION.invokeAgent,
      [C.GEN_AI_AGENT_NAME]: ctx.agentType,
      [C.GEN_AI_CONVERSATION_ID]: ctx.sessionId,
      [C.HELIX_RUN_ID]: ctx.runId,
      [C.HELIX_RUN_START_SIGNAL]: start.signal,
    };
    // A model id (resolved by the executor's registry) is reported by the model-call spans, which see the resolved model.
    if (model !== undefined && typeof model !== 'string') {
      attributes[C.GEN_AI_PROVIDER_NAME] = C.genAiProviderName(model.provider);
      attributes[C.GEN_AI_REQUEST_MODEL] = model.modelId;
    }
    const previous = start.previousRunId === undefined ? undefined : lookup(start.previousRunId);
    const links: Link[] = previous === undefined ? [] : [{ context: previous.spanContext, attributes: { [C.HELIX_RUN_ID]: previous.info.runId } }];
    const span = tracer.startSpan(`${C.OPERATION.invokeAgent} ${ctx.agentType}`, { kind: SpanKind.INTERNAL, attributes, links }, parentContext);
    const info: { -readonly [K in keyof TracedRun]: TracedRun[K] } = {
      traceRoot: undefined as unknown as TracedRun,
      runId: ctx.runId,
      sessionId: ctx.sessionId,
      agentType: ctx.agentType,
      ...definedFields(ctx, ['parentSessionId', 'parentToolCallId', 'userId', 'tags', 'metadata']),
    };
    info.traceRoot = parentRun?.info.traceRoot ?? info;
    const run: RunTrace = {
      info,
      span,
      spanContext: span.spanContext(),
      context: trace.setSpan(parentContext, span),
      chat: undefined,
      tools: new Map(),
      pending: undefined,
      previousRunId: start.previousRunId,
      blocked: new WeakSet(),
      queued: new Map(),
      status: undefined,
    };
    active.set(ctx.runId, run);
    bySession.set(ctx.sessionId, run);
    if (span.isRecording()) {
      span.setAttribute(C.SESSION_ID, ctx.sessionId);
      span.setAttribute(C.HELIX_RUN_ATTEMPT, ctx.attempt);
      if (ctx.userId !== undefined) span.setAttribute(C.USER_ID, ctx.userId);
      if (ctx.parentSessionId !== undefined) span.setAttribute(C.HELIX_PARENT_SESSION_ID, ctx.parentSessionId);
      if (ctx.parentToolCallId !== undefined) span.setAttribute(C.HELIX_PARENT_TOOL_CALL_ID, ctx.parentToolCallId);
      if (ctx.tags !== undefined && ctx.tags.length > 0) span.setAttribute(C.HELIX_TAGS, Array.from(ctx.tags));
      if (ctx.metadata !== undefined) for (const [key, value] of Object.entries(ctx.metadata)) span.setAttribute(C.HELIX_METADATA_PREFIX + key, value);
      if (start.agent?.description !== undefined) span.setAttribute(C.GEN_AI_AGENT_DESCRIPTION, start.agent.description);
      if (start.attributes !== undefined) span.setAttributes(start.attributes);
      if (captureContent && start.input !== undefined) span.setAttribute(C.GEN_AI_INPUT_MESSAGES, toJson([{ role: 'user', parts: [{ type: 'text', content: start.input }] }]));
      safeDecorate(span, { type: 'run_start', run: info, signal: start.signal, agent: start.agent, input: start.input });
    }
    return run;
  }

  /** The run's trace, started lazily by whichever of its hooks comes first (a run recovered in this process starts mid-way). */
  function runFor(ctx: HookContext, agent?: AgentConfig<unknown, unknown>): RunTrace {
    return lookup(ctx.runId) ?? startRun(ctx, { signal: 'unknown', ...(agent === undefined ? {} : { agent }) });
  }

  function abandon(run: RunTrace, kind: TracedSpanKind, span: Span, reason: string, error?: AgentErrorInfo, pending = false): void {
    if (span.isRecording()) {
      if (pending) {
        span.setAttribute(C.HELIX_TOOL_PENDING, true);
      } else {
        span.setAttribute(C.HELIX_SPAN_ABANDONED, true);
        if (error !== undefined) applyError(span, error);
        else span.setStatus({ code: SpanStatusCode.ERROR, message: reason });
      }
      safeDecorate(span, { type: 'abandoned', run: run.info, kind, reason, pending, ...(error === undefined ? {} : { error }) });
    }
    span.end();
  }

  /** A span event, and with `eventsAsSpans` the same as a zero-length child span. */
  function addEvent(run: RunTrace, on: TracedSpanKind, span: Span, name: string, attributes: Attributes): void {
    if (!span.isRecording()) return;
    span.addEvent(name, attributes);
    if (!eventsAsSpans) return;
    const child = tracer.startSpan(
      name,
      { kind: SpanKind.INTERNAL, attributes: { ...attributes, [C.HELIX_RUN_ID]: run.info.runId, [C.GEN_AI_CONVERSATION_ID]: run.info.sessionId } },
      trace.setSpan(run.context, span),
    );
    safeDecorate(child, { type: 'event', run: run.info, name, attributes, on });
    child.end();
  }

  function closeChat(run: RunTrace, reason: string, error?: AgentErrorInfo): void {
    const chat = run.chat;
    if (chat === undefined) return;
    run.chat = undefined;
    abandon(run, 'chat', chat, reason, error);
  }

  function closeTools(run: RunTrace, reason: string, error?: AgentErrorInfo): void {
    for (const span of run.tools.values()) abandon(run, 'tool', span, reason, error);
    run.tools.clear();
  }

  /** Moves an ended run to the bounded memory of ended runs; its children reference only the span context. */
  function retire(run: RunTrace): void {
    active.delete(run.info.runId);
    if (bySession.get(run.info.sessionId) === run) bySession.delete(run.info.sessionId);
    run.span = undefined;
    // Keep ids only: the ended span (and the caller's context it hung from) can then be collected.
    run.context = trace.setSpanContext(ROOT_CONTEXT, run.spanContext);
    if (maxEndedRuns === 0) {
      closeTools(run, 'The run ended before this tool call finished.');
      return;
    }
    ended.set(run.info.runId, run);
    while (ended.size > maxEndedRuns) {
      const oldest = ended.values().next().value as RunTrace;
      ended.delete(oldest.info.runId);
      closeTools(oldest, 'The run ended and was forgotten before this tool call finished.');
    }
  }

  /** A terminal hook after the run span ended: recorded as a short child span, since an ended span cannot change. */
  function lateOutcome(run: RunTrace, status: RunOutcomeStatus, error: AgentErrorInfo | undefined): void {
    run.status = status;
    const span = tracer.startSpan(
      C.SPAN_RUN_OUTCOME,
      { kind: SpanKind.INTERNAL, attributes: { [C.HELIX_RUN_ID]: run.info.runId, [C.HELIX_RUN_STATUS]: status, [C.GEN_AI_CONVERSATION_ID]: run.info.sessionId } },
      run.context,
    );
    if (span.isRecording()) {
      if (error !== undefined) applyError(span, error);
      safeDecorate(span, { type: 'late_outcome', run: run.info, status, ...(error === undefined ? {} : { error }) });
    }
    span.end();
  }

  function endRun(
    ctx: HookContext,
    status: RunOutcomeStatus,
    details: { output?: unknown; error?: AgentErrorInfo; exitReason?: ExitReason; stepCount: number; suspendReason?: string },
    beforeEnd?: (run: RunTrace, span: Span) => void,
  ): void {
    const run = lookup(ctx.runId);
    if (run === undefined) return;
    const span = run.span;
    if (span === undefined) {
      lateOutcome(run, status, details.error);
      return;
    }
    run.status = status;
    if (details.error?.code === 'hook_blocked' && details.error.details?.['hook'] === 'beforeLLMCall' && !run.blocked.has(run.chat ?? span)) {
      // D11: a model call refused by beforeLLMCall fails the run; say who refused it and why, where it happened.
      addEvent(run, run.chat ? 'chat' : 'run', run.chat ?? span, C.EVENT_HOOK_DECISION, decisionAttributes(blockDecision('beforeLLMCall', details.error)));
    }
    closeChat(run, 'The run ended before this model call returned.', details.error);
    beforeEnd?.(run, span);
    // Decisions about calls that never got a span (the run ended first) still belong on the trace.
    for (const queue of run.queued.values()) for (const decision of queue) addEvent(run, 'run', span, C.EVENT_HOOK_DECISION, decisionAttributes(decision));
    run.queued.clear();
    // A superseded run's sibling tools may still finish (their afterTool can follow onAgentSuperseded): keep their spans open.
    if (status !== 'superseded') closeTools(run, 'The run ended before this tool call finished.', details.error);
    if (span.isRecording()) {
      span.setAttribute(C.HELIX_RUN_STATUS, status);
      span.setAttribute(C.HELIX_RUN_STEP_COUNT, details.stepCount);
      if (details.exitReason !== undefined) span.setAttribute(C.HELIX_RUN_EXIT_REASON, details.exitReason);
      if (details.error !== undefined) applyError(span, details.error);
      if (status === 'superseded') {
        const currentRunId = details.error?.details?.['currentRunId'];
        addEvent(run, 'run', span, C.EVENT_RUN_SUPERSEDED, typeof currentRunId === 'string' ? { [C.HELIX_RUN_CURRENT_ID]: currentRunId } : {});
      } else if (status === 'interrupted') {
        addEvent(run, 'run', span, C.EVENT_RUN_INTERRUPTED, details.error === undefined ? {} : { [C.HELIX_HOOK_REASON]: details.error.message });
      }
      if (captureContent && status === 'completed') span.setAttribute(C.GEN_AI_OUTPUT_MESSAGES, toJson([{ role: 'assistant', parts: [{ type: 'text', content: toJson(details.output) }] }]));
      safeDecorate(span, { type: 'run_end', run: run.info, status, ...details });
    }
    span.end();
    retire(run);
  }

  function recordOn(run: RunTrace, decision: TracedDecision): boolean {
    const toolSpan = decision.toolCallId === undefined ? undefined : run.tools.get(decision.toolCallId);
    if (decision.toolCallId !== undefined && toolSpan === undefined && run.span !== undefined) {
      const queue = run.queued.get(decision.toolCallId);
      if (queue === undefined) run.queued.set(decision.toolCallId, [decision]);
      else queue.push(decision);
      return true;
    }
    const chatSpan = decision.hook === 'beforeLLMCall' || decision.hook === 'afterLLMCall' ? run.chat : undefined;
    const span = toolSpan ?? chatSpan ?? run.span;
    if (span === undefined) return false;
    if (decision.decision === 'block') run.blocked.add(span);
    addEvent(run, toolSpan ? 'tool' : chatSpan ? 'chat' : 'run', span, C.EVENT_HOOK_DECISION, decisionAttributes(decision));
    return true;
  }

  /** Puts the decisions made before a call's span existed on it. */
  function drainQueued(run: RunTrace, toolCallId: string, span: Span): void {
    const queue = run.queued.get(toolCallId);
    if (queue === undefined) return;
    run.queued.delete(toolCallId);
    for (const decision of queue) {
      if (decision.decision === 'block') run.blocked.add(span);
      addEvent(run, 'tool', span, C.EVENT_HOOK_DECISION, decisionAttributes(decision));
    }
  }

  function report(error: unknown, point: HookPoint): void {
    try {
      onError(error, point);
    } catch {
      // An error reporter that throws must not fail the run either.
    }
  }

  // Fixed arity (a payload and a context; the suspension family takes one context): no rest array per call.
  function guard<A, B>(point: HookPoint, fn: (a: A, b: B) => void): (a: A, b: B) => void {
    return (a: A, b: B) => {
      try {
        fn(a, b);
      } catch (error) {
        report(error, point);
      }
    };
  }

  function guard1<A>(point: HookPoint, fn: (a: A) => void): (a: A) => void {
    return (a: A) => {
      try {
        fn(a);
      } catch (error) {
        report(error, point);
      }
    };
  }

  const hooks: AgentHooks = {
    onAgentStart: guard('onAgentStart', (payload: AgentStartPayload, ctx: HookContext) => {
      const existing = lookup(ctx.runId);
      // A resumed or retried run that owes the turn's start work fires onAgentStart(startSignal: false) after its own signal.
      if (existing !== undefined) existing.span?.setAttribute(C.HELIX_RUN_OWED_START, !payload.startSignal);
      else startRun(ctx, { signal: payload.startSignal ? 'start' : 'unknown', agent: payload.agent, input: payload.input });
    }),

    onAgentResumed: guard1('onAgentResumed', (ctx: AgentResumedHookContext) => {
      const attributes: Attributes = { [C.HELIX_RUN_PREVIOUS_ID]: ctx.previousRunId };
      if (ctx.resumedFromCheckpointId !== undefined) attributes[C.HELIX_RUN_CHECKPOINT_ID] = ctx.resumedFromCheckpointId;
      const run = lookup(ctx.runId) ?? startRun(ctx, { signal: 'resume', previousRunId: ctx.previousRunId, attributes });
      if (run.span) addEvent(run, 'run', run.span, C.EVENT_RUN_RESUMED, attributes);
    }),

    onAgentRetry: guard1('onAgentRetry', (ctx: AgentRetryHookContext) => {
      const attributes: Attributes = { [C.HELIX_RUN_RETRIED_ID]: ctx.retriedRunId };
      if (ctx.checkpointId !== undefined) attributes[C.HELIX_RUN_CHECKPOINT_ID] = ctx.checkpointId;
      const run = lookup(ctx.runId) ?? startRun(ctx, { signal: 'retry', previousRunId: ctx.retriedRunId, attributes });
      if (run.span) addEvent(run, 'run', run.span, C.EVENT_RUN_RETRY, attributes);
    }),

    onAgentSuspended: guard1('onAgentSuspended', (ctx: AgentSuspendedHookContext) => {
      runFor(ctx);
      const waiting = new Set([...ctx.pendingToolCallIds, ...ctx.awaitingChildren.map((c) => c.toolCallId)]);
      endRun(ctx, 'suspended', { stepCount: ctx.stepCount, suspendReason: ctx.reason }, (run, span) => {
        addEvent(run, 'run', span, C.EVENT_RUN_SUSPENDED, {
          [C.HELIX_SUSPEND_REASON]: ctx.reason,
          [C.HELIX_PENDING_TOOL_CALL_IDS]: [...waiting],
          [C.HELIX_AWAITED_SESSION_IDS]: ctx.awaitingChildren.map((c) => c.sessionId),
        });
        // The waiting calls end with the run (a span cannot outlive its process); the run that resumes them links to them.
        for (const [id, toolSpan] of run.tools) {
          if (!waiting.has(id)) continue;
          run.pending ??= new Map();
          run.pending.set(id, toolSpan.spanContext());
          run.tools.delete(id);
          abandon(run, 'tool', toolSpan, `The run suspended (${ctx.reason}) while this call waits.`, undefined, true);
        }
      });
    }),

    onAgentComplete: guard('onAgentComplete', (payload: AgentCompletePayload, ctx: HookContext) => {
      endRun(ctx, 'completed', { output: payload.output, exitReason: payload.exitReason, stepCount: payload.stepCount });
    }),

    onAgentFail: guard('onAgentFail', (payload: AgentFailPayload, ctx: HookContext) => {
      const info = payload.error.info;
      endRun(ctx, info.code === 'run_interrupted' ? 'interrupted' : 'failed', { error: info, stepCount: payload.stepCount });
    }),

    onAgentSuperseded: guard('onAgentSuperseded', (payload: AgentSupersededPayload, ctx: HookContext) => {
      endRun(ctx, 'superseded', { error: payload.error.info, stepCount: payload.stepCount });
    }),

    beforeLLMCall: guard('beforeLLMCall', (payload: BeforeLLMCallPayload, ctx: HookContext) => {
      const run = runFor(ctx, payload.config);
      closeChat(run, 'A new attempt started before this one returned.');
      const attributes: Attributes = {
        [C.GEN_AI_OPERATION_NAME]: C.OPERATION.chat,
        [C.GEN_AI_PROVIDER_NAME]: C.genAiProviderName(payload.provider),
        [C.GEN_AI_REQUEST_MODEL]: payload.model,
      };
      const span = tracer.startSpan(`${C.OPERATION.chat} ${payload.model}`, { kind: SpanKind.CLIENT, attributes }, run.context);
      run.chat = span;
      if (!span.isRecording()) return;
      span.setAttribute(C.GEN_AI_CONVERSATION_ID, ctx.sessionId);
      span.setAttribute(C.GEN_AI_AGENT_NAME, ctx.agentType);
      span.setAttribute(C.HELIX_STEP_INDEX, ctx.stepCount);
      span.setAttribute(C.HELIX_LLM_ATTEMPT, payload.attempt);
      setRequestParameters(span, payload.modelParameters);
      if (captureContent) {
        const { system, input } = splitPrompt(payload.messages);
        if (system !== undefined) span.setAttribute(C.GEN_AI_SYSTEM_INSTRUCTIONS, toJson(system));
        span.setAttribute(C.GEN_AI_INPUT_MESSAGES, toJson(input));
      }
      safeDecorate(span, { type: 'chat_start', run: run.info, ctx, payload });
    }),

    afterLLMCall: guard('afterLLMCall', (payload: AfterLLMCallPayload, ctx: HookContext) => {
      const run = runFor(ctx);
      let span = run.chat;
      run.chat = undefined;
      if (span === undefined) {
        // beforeLLMCall did not reach us (a hook before ours threw): still record the attempt, with its real start.
        span = tracer.startSpan(
          `${C.OPERATION.chat} ${payload.model}`,
          { kind: SpanKind.CLIENT, attributes: { [C.GEN_AI_OPERATION_NAME]: C.OPERATION.chat }, startTime: Date.now() - payload.durationMs },
          run.context,
        );
      }
      if (span.isRecording()) {
        const result = payload.result;
        span.setAttribute(C.GEN_AI_RESPONSE_MODEL, payload.model);
        span.setAttribute(C.HELIX_LLM_PLAN, payload.plan.kind);
        setUsage(span, payload.usage);
        if (result.ok) {
          if (result.responseId !== undefined) span.setAttribute(C.GEN_AI_RESPONSE_ID, result.responseId);
          span.setAttribute(C.GEN_AI_RESPONSE_FINISH_REASONS, [result.finishReason]);
          if (captureContent) span.setAttribute(C.GEN_AI_OUTPUT_MESSAGES, toJson(replyMessages(result)));
        }
        const error = payload.error ?? (result.ok ? undefined : result.error);
        if (error !== undefined) applyError(span, error);
        if (payload.plan.kind === 'retry') span.setAttribute(C.HELIX_LLM_RETRY_DELAY_MS, payload.plan.delayMs);
        safeDecorate(span, { type: 'chat_end', run: run.info, ctx, payload });
      }
      span.end();
    }),

    beforeTool: guard('beforeTool', (payload: BeforeToolPayload, ctx: HookContext) => {
      const run = runFor(ctx);
      const { toolCall, tool } = payload;
      const previous = run.tools.get(toolCall.id);
      if (previous !== undefined) abandon(run, 'tool', previous, 'Another call with the same id started.');
      const attributes: Attributes = {
        [C.GEN_AI_OPERATION_NAME]: C.OPERATION.executeTool,
        [C.GEN_AI_TOOL_NAME]: tool.name,
        [C.GEN_AI_TOOL_CALL_ID]: toolCall.id,
      };
      const span = tracer.startSpan(`${C.OPERATION.executeTool} ${tool.name}`, { kind: SpanKind.INTERNAL, attributes }, run.context);
      run.tools.set(toolCall.id, span);
      if (!span.isRecording()) return;
      drainQueued(run, toolCall.id, span);
      span.setAttribute(C.GEN_AI_CONVERSATION_ID, ctx.sessionId);
      span.setAttribute(C.GEN_AI_TOOL_DESCRIPTION, tool.description);
      span.setAttribute(C.HELIX_STEP_INDEX, ctx.stepCount);
      if (tool.finishWith) span.setAttribute(C.HELIX_TOOL_FINISH_WITH, true);
      safeDecorate(span, { type: 'tool_start', run: run.info, ctx, payload });
    }),

    afterTool: guard('afterTool', (payload: AfterToolPayload, ctx: HookContext) => {
      const run = runFor(ctx);
      const { toolCall, tool } = payload;
      let span = run.tools.get(toolCall.id);
      if (span === undefined) {
        // No beforeTool reached us: a call blocked by a hook before ours, or a call answered in a resumed run.
        const waited = run.previousRunId === undefined ? undefined : lookup(run.previousRunId)?.pending?.get(toolCall.id);
        span = tracer.startSpan(
          `${C.OPERATION.executeTool} ${tool.name}`,
          {
            kind: SpanKind.INTERNAL,
            attributes: { [C.GEN_AI_OPERATION_NAME]: C.OPERATION.executeTool, [C.GEN_AI_TOOL_NAME]: tool.name, [C.GEN_AI_TOOL_CALL_ID]: toolCall.id },
            startTime: Date.now() - payload.durationMs,
            ...(waited === undefined ? {} : { links: [{ context: waited }] }),
          },
          run.context,
        );
      } else {
        run.tools.delete(toolCall.id);
      }
      if (span.isRecording()) {
        drainQueued(run, toolCall.id, span);
        // The arguments as the call ran (a beforeTool rewrite included), recorded once, when the span ends.
        if (captureContent) span.setAttribute(C.GEN_AI_TOOL_CALL_ARGUMENTS, toJson(toolCall.arguments));
        if (payload.success) {
          if (captureContent) span.setAttribute(C.GEN_AI_TOOL_CALL_RESULT, toJson(payload.result ?? null));
        } else if (payload.error !== undefined) {
          applyError(span, payload.error.info);
        } else {
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
        if (payload.blocked) {
          span.setAttribute(C.HELIX_TOOL_BLOCKED, true);
          // The decision itself, when the stream tap did not already record it: who blocked the call and why.
          if (!run.blocked.has(span) && payload.error !== undefined) addEvent(run, 'tool', span, C.EVENT_HOOK_DECISION, decisionAttributes({ ...blockDecision('beforeTool', payload.error.info), toolCallId: toolCall.id }));
        }
        safeDecorate(span, { type: 'tool_end', run: run.info, ctx, payload });
      }
      span.end();
    }),

    onMessage: guard('onMessage', (payload: MessagePayload, ctx: HookContext) => {
      const message = payload.message;
      // Only refusals before execution (D5: unknown tool, invalid arguments) need recording here; an
      // executed call's result is on its execute_tool span.
      if (message.role !== 'tool' || message.isError !== true || message.errorInfo === undefined) return;
      if (!REJECTED_TOOL_CODES.has(message.errorInfo.code)) return;
      const run = runFor(ctx);
      if (run.span === undefined) return;
      addEvent(run, 'run', run.span, C.EVENT_TOOL_CALL_REJECTED, {
        [C.GEN_AI_TOOL_NAME]: message.toolName,
        [C.GEN_AI_TOOL_CALL_ID]: message.toolCallId,
        [C.ERROR_TYPE]: message.errorInfo.code,
        [C.HELIX_HOOK_REASON]: message.errorInfo.message,
        [C.HELIX_STEP_INDEX]: ctx.stepCount,
      });
    }),
  };

  function recordDecision(ctx: Pick<HookContext, 'runId'>, decision: TracedDecision): boolean {
    try {
      const run = lookup(ctx.runId);
      return run === undefined ? false : recordOn(run, decision);
    } catch (error) {
      onError(error, 'recordDecision');
      return false;
    }
  }

  function observeChunk(chunk: StreamChunkInput): void {
    if (chunk.type !== 'hook_decision') return;
    const decision = chunk as Omit<HookDecisionChunk, 'seq'>;
    recordDecision(
      { runId: decision.runId },
      {
        hook: decision.hookPoint,
        decision: decision.decision,
        source: decision.hookName,
        durationMs: decision.durationMs,
        ...definedFields(decision, ['reason', 'toolCallId', 'policy']),
        ...(decision.errorInfo === undefined ? {} : { errorCode: decision.errorInfo.code }),
      },
    );
  }

  function traceStream<T extends StreamManager>(streamManager: T): T {
    const claim = async (streamId: string, runId: string): Promise<StreamWriter> => {
      const writer = await streamManager.claim(streamId, runId);
      return new Proxy(writer, {
        get(target, property) {
          if (property === 'write') {
            return (chunk: StreamChunkInput) => {
              // Observed before it is written: the decision lands while the span it concerns is still open.
              observeChunk(chunk);
              return target.write(chunk);
            };
          }
          // The loop queues most chunks (a durable store writes them with the step's commit): observed the same way.
          if (property === 'queue' && target.queue !== undefined) {
            return (chunk: StreamChunkInput) => {
              observeChunk(chunk);
              target.queue?.(chunk);
            };
          }
          const value: unknown = Reflect.get(target, property);
          return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
        },
      });
    };
    return new Proxy(streamManager, {
      get(target, property) {
        if (property === 'claim') return claim;
        const value: unknown = Reflect.get(target, property);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
  }

  function endOpenSpans(reason = 'The tracer was shut down while the run was still going.'): number {
    let count = 0;
    for (const run of [...active.values()]) {
      count += (run.chat ? 1 : 0) + run.tools.size + 1;
      closeChat(run, reason);
      closeTools(run, reason);
      const span = run.span;
      if (span !== undefined) {
        if (span.isRecording()) span.setAttribute(C.HELIX_SPAN_ABANDONED, true);
        span.end();
        retire(run);
      }
    }
    for (const run of ended.values()) {
      count += run.tools.size;
      closeTools(run, reason);
    }
    return count;
  }

  function stats(): OtelTracingStats {
    let openSpans = 0;
    for (const run of active.values()) openSpans += 1 + (run.chat ? 1 : 0) + run.tools.size;
    for (const run of ended.values()) openSpans += run.tools.size;
    return { activeRuns: active.size, endedRuns: ended.size, openSpans };
  }

  async function flush(): Promise<void> {
    const flushable = provider as TracerProvider & { forceFlush?: () => Promise<void> };
    if (typeof flushable.forceFlush === 'function') await flushable.forceFlush();
  }

  return { hooks: hooks as AnyAgentHooks, traceStream, recordDecision, endOpenSpans, stats, flush };
}

/** The decision behind a refused call: a `hook_blocked` error names the hook and the reason; a rejected approval is the user's. */
/** The fields of `source` named in `keys` that are set: an unset one is left out, not copied as undefined. */
function definedFields<T extends object, K extends keyof T>(source: T, keys: readonly K[]): Partial<Pick<T, K>> {
  const fields: Partial<Pick<T, K>> = {};
  for (const key of keys) if (source[key] !== undefined) fields[key] = source[key];
  return fields;
}

function blockDecision(hook: string, error: AgentErrorInfo): TracedDecision {
  const details = error.details ?? {};
  const reason = details['reason'];
  const name = details['name'];
  const point = details['hook'];
  return {
    hook: typeof point === 'string' ? point : error.code === 'permission_denied' ? 'approval' : hook,
    decision: 'block',
    reason: typeof reason === 'string' ? reason : error.message,
    ...(typeof name === 'string' ? { source: name } : {}),
  };
}

function decisionAttributes(decision: TracedDecision): Attributes {
  const attributes: Attributes = { [C.HELIX_HOOK_POINT]: decision.hook, [C.HELIX_HOOK_DECISION]: decision.decision };
  if (decision.reason !== undefined) attributes[C.HELIX_HOOK_REASON] = decision.reason;
  if (decision.source !== undefined) attributes[C.HELIX_HOOK_SOURCE] = decision.source;
  if (decision.toolCallId !== undefined) attributes[C.GEN_AI_TOOL_CALL_ID] = decision.toolCallId;
  if (decision.durationMs !== undefined) attributes[C.HELIX_HOOK_DURATION_MS] = decision.durationMs;
  if (decision.policy !== undefined) attributes[C.HELIX_HOOK_POLICY] = decision.policy;
  if (decision.errorCode !== undefined) attributes[C.ERROR_TYPE] = decision.errorCode;
  return attributes;
}

/** Records an error on a span: `error.type` is our stable code; only `info` errors (a stop, a supersede) leave the status unset. */
function applyError(span: Span, error: AgentErrorInfo): void {
  span.setAttribute(C.ERROR_TYPE, error.code);
  span.setAttribute(C.HELIX_ERROR_LAYER, error.layer);
  span.setAttribute(C.HELIX_ERROR_RETRYABLE, error.retryable);
  if (error.severity !== 'info') span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
}

function setRequestParameters(span: Span, parameters: BeforeLLMCallPayload['modelParameters']): void {
  if (parameters.temperature !== undefined) span.setAttribute(C.GEN_AI_REQUEST_TEMPERATURE, parameters.temperature);
  if (parameters.maxOutputTokens !== undefined) span.setAttribute(C.GEN_AI_REQUEST_MAX_TOKENS, parameters.maxOutputTokens);
  if (parameters.topP !== undefined) span.setAttribute(C.GEN_AI_REQUEST_TOP_P, parameters.topP);
  if (parameters.topK !== undefined) span.setAttribute(C.GEN_AI_REQUEST_TOP_K, parameters.topK);
  if (parameters.presencePenalty !== undefined) span.setAttribute(C.GEN_AI_REQUEST_PRESENCE_PENALTY, parameters.presencePenalty);
  if (parameters.frequencyPenalty !== undefined) span.setAttribute(C.GEN_AI_REQUEST_FREQUENCY_PENALTY, parameters.frequencyPenalty);
  if (parameters.seed !== undefined) span.setAttribute(C.GEN_AI_REQUEST_SEED, parameters.seed);
  if (parameters.stopSequences !== undefined) span.setAttribute(C.GEN_AI_REQUEST_STOP_SEQUENCES, Array.from(parameters.stopSequences));
}

function setUsage(span: Span, usage: AfterLLMCallPayload['usage']): void {
  if (usage === undefined) return;
  span.setAttribute(C.GEN_AI_USAGE_INPUT_TOKENS, usage.promptTokens);
  span.setAttribute(C.GEN_AI_USAGE_OUTPUT_TOKENS, usage.completionTokens);
  if (usage.cachedTokens !== undefined) span.setAttribute(C.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, usage.cachedTokens);
  if (usage.cacheWriteTokens !== undefined) span.setAttribute(C.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS, usage.cacheWriteTokens);
  if (usage.reasoningTokens !== undefined) span.setAttribute(C.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS, usage.reasoningTokens);
}
