import { AgentError } from '../../errors.js';
import { HookManager, type HookManagerOptions } from '../../hooks/manager.js';
import {
  HOOK_POINTS,
  type AfterLLMCallPayload,
  type AfterToolPayload,
  type AgentCompletePayload,
  type AgentFailPayload,
  type AgentHooks,
  type AgentResumedHookContext,
  type AgentRetryHookContext,
  type AgentStartPayload,
  type AfterSubAgentPayload,
  type BeforeSubAgentPayload,
  type AgentSupersededPayload,
  type AgentSuspendedHookContext,
  type BeforeLLMCallPayload,
  type BeforeToolPayload,
  type ExitPayload,
  type HookContext,
  type HookPoint,
  type MessagePayload,
  type StateChangePayload,
} from '../../hooks/types.js';
import type { Message } from '../../messages.js';
import { toJson, type TraceEvent, type TraceMessage } from './trace.js';

const STREAMING_POINTS: ReadonlySet<HookPoint> = new Set<HookPoint>(['onTextDelta', 'onThinking']);

/**
 * A layer of a scenario's own handlers (steering returns, throws, probes) with their error policies.
 * Every handler is wrapped so that each of its invocations is recorded in the trace.
 */
export interface HookLayer<TState = unknown, TOutput = unknown> {
  /** Recorded as the events' `handler`; name layers when a point has handlers in several of them. */
  readonly name?: string;
  readonly hooks: AgentHooks<TState, TOutput>;
  /** The layer's error policies, as `createHookManager(hooks, { onError })` takes them. */
  readonly onError?: HookManagerOptions['onError'];
}

/** A recorded event with raw ids, and the call it belongs to (for the per-call ordering of parallel tools). */
export interface RawEvent {
  readonly event: TraceEvent;
  readonly callId?: string;
}

type AnyFunction = (...args: never[]) => unknown;

/** The trace row of a conversation message (raw ids). */
export function traceMessage(message: Message): TraceMessage {
  switch (message.role) {
    case 'user':
    case 'system':
      return { role: message.role, text: message.content };
    case 'assistant':
      return {
        role: 'assistant',
        text: message.content,
        ...(message.toolCalls && message.toolCalls.length > 0
          ? { calls: message.toolCalls.map((c) => ({ call: c.id, tool: c.name, args: toJson(c.arguments) })) }
          : {}),
      };
    case 'tool':
      return message.isError === true
        ? { role: 'tool', call: message.toolCallId, tool: message.toolName, error: message.errorInfo?.code ?? 'error' }
        : { role: 'tool', call: message.toolCallId, tool: message.toolName, content: toJson(message.content) };
  }
}

function errorCode(error: unknown): string {
  return AgentError.isInstance(error) ? error.code : 'error';
}

/**
 * Records every hook invocation of the agents a scenario builds. Ids stay raw here; the trace builder
 * numbers them. It also keeps, per run, the calls of the latest assistant row, to tell which call a
 * tool's state change belongs to.
 */
export class TraceRecorder {
  readonly events: RawEvent[] = [];
  readonly runIds = new Set<string>();
  readonly sessionIds = new Set<string>();
  readonly callIds = new Set<string>();
  /** Calls in the order the model asked for them (assistant rows' onMessage), for per-call ordering. */
  readonly callOrder: string[] = [];
  #frozen = false;
  readonly #stepCalls = new Map<string, readonly { readonly id: string; readonly name: string }[]>();
  /** Calls whose beforeTool fired and whose result row did not come yet, by run. */
  readonly #inFlight = new Map<string, Map<string, string>>();

  /** The call a tool's state change belongs to: the one call of that tool in flight (else the one in the step), if unambiguous. */
  #callOfToolWrite(run: string, toolName: string | undefined): string | undefined {
    const flying = [...(this.#inFlight.get(run) ?? new Map<string, string>()).entries()].filter(([, name]) => name === toolName);
    if (flying.length === 1 && flying[0]) return flying[0][0];
    if (flying.length > 1) return undefined;
    const inStep = (this.#stepCalls.get(run) ?? []).filter((c) => c.name === toolName);
    return inStep.length === 1 && inStep[0] ? inStep[0].id : undefined;
  }

  /** Stops recording (the trace is being built; late hooks are ignored). */
  freeze(): void {
    this.#frozen = true;
  }

  /**
   * A hook manager for an agent: the layers' handlers, each wrapped to record its invocations, then a
   * bare recorder at every point no layer handles (so every invocation of every point is recorded once).
   */
  manager<TState, TOutput>(layers: readonly HookLayer<TState, TOutput>[]): HookManager<TState, TOutput> {
    const manager = new HookManager<TState, TOutput>();
    const covered = new Set<HookPoint>();
    for (const layer of layers) {
      const wrapped: Record<string, AnyFunction> = {};
      for (const point of HOOK_POINTS) {
        const handler = (layer.hooks as Record<string, AnyFunction | undefined>)[point];
        if (handler === undefined) continue;
        covered.add(point);
        wrapped[point] = this.#wrap(point, handler, layer.name);
      }
      manager.register(wrapped as AgentHooks<TState, TOutput>, layer.onError === undefined ? {} : { onError: layer.onError });
    }
    const bare: Record<string, AnyFunction> = {};
    // The streaming points get a bare recorder only when a layer handles them: a listener there costs a hook call per delta.
    for (const point of HOOK_POINTS) if (!covered.has(point) && !STREAMING_POINTS.has(point)) bare[point] = this.#wrap(point, undefined, undefined);
    manager.register(bare as AgentHooks<TState, TOutput>);
    return manager;
  }

  #wrap(point: HookPoint, handler: AnyFunction | undefined, name: string | undefined): AnyFunction {
    const call = handler as ((...args: unknown[]) => unknown) | undefined;
    if (point === 'onAgentSuspended' || point === 'onAgentResumed' || point === 'onAgentRetry') {
      // Suspension-family hooks take one context object carrying their fields.
      return (ctx: HookContext) => {
        this.#record(point, undefined, ctx, name);
        return call?.(ctx);
      };
    }
    if (point === 'onThinking') {
      return (content: string, isComplete: boolean, ctx: HookContext) => {
        this.#record(point, undefined, ctx, name);
        return call?.(content, isComplete, ctx);
      };
    }
    return (payload: unknown, ctx: HookContext) => {
      this.#record(point, payload, ctx, name);
      return call?.(payload, ctx);
    };
  }

  #record(point: HookPoint, payload: unknown, ctx: HookContext, handler: string | undefined): void {
    if (this.#frozen) return;
    this.runIds.add(ctx.runId);
    this.sessionIds.add(ctx.sessionId);
    const raw = this.#event(point, payload, ctx);
    const event = (handler === undefined ? raw.event : { ...raw.event, handler }) as TraceEvent;
    this.events.push(raw.callId === undefined ? { event } : { event, callId: raw.callId });
  }

  #call(id: string): string {
    this.callIds.add(id);
    return id;
  }

  #event(point: HookPoint, payload: unknown, ctx: HookContext): RawEvent {
    const run = ctx.runId;
    const step = ctx.stepCount;
    switch (point) {
      case 'beforeSubAgent': {
        const p = payload as BeforeSubAgentPayload;
        return { event: { point, run, step, call: this.#call(p.call.id), agentType: p.call.agentType }, callId: p.call.id };
      }
      case 'afterSubAgent': {
        const p = payload as AfterSubAgentPayload;
        return { event: { point, run, step, call: this.#call(p.call.id), agentType: p.call.agentType, success: p.success, ...(p.error ? { error: p.error.code } : {}) }, callId: p.call.id };
      }
      case 'onAgentStart': {
        const p = payload as AgentStartPayload;
        return { event: { point, run, step, startSignal: p.startSignal, input: p.input } };
      }
      case 'onAgentComplete': {
        const p = payload as AgentCompletePayload;
        return { event: { point, run, stepCount: p.stepCount, exitReason: p.exitReason, output: toJson(p.output) } };
      }
      case 'onAgentFail': {
        const p = payload as AgentFailPayload;
        return { event: { point, run, stepCount: p.stepCount, error: errorCode(p.error), recoverable: p.recoverable } };
      }
      case 'onAgentSuperseded': {
        const p = payload as AgentSupersededPayload;
        return { event: { point, run, error: errorCode(p.error) } };
      }
      case 'beforeLLMCall': {
        const p = payload as BeforeLLMCallPayload;
        return { event: { point, run, step, attempt: p.attempt, messages: p.messages.length, tools: p.tools.length } };
      }
      case 'afterLLMCall': {
        const p = payload as AfterLLMCallPayload;
        return { event: { point, run, step, attempt: p.attempt, plan: p.plan.kind, ...(p.error === undefined ? {} : { error: p.error.code }) } };
      }
      case 'beforeTool': {
        const p = payload as BeforeToolPayload;
        const call = this.#call(p.toolCall.id);
        let flying = this.#inFlight.get(run);
        if (!flying) this.#inFlight.set(run, (flying = new Map()));
        flying.set(call, p.toolCall.name);
        return { event: { point, run, step, call, tool: p.toolCall.name, args: toJson(p.toolCall.arguments) }, callId: call };
      }
      case 'afterTool': {
        const p = payload as AfterToolPayload;
        const call = this.#call(p.toolCall.id);
        return {
          event: {
            point,
            run,
            step,
            call,
            tool: p.toolCall.name,
            args: toJson(p.toolCall.arguments),
            success: p.success,
            blocked: p.blocked,
            ...(p.error === undefined ? {} : { error: errorCode(p.error) }),
            ...(p.result === undefined ? {} : { result: toJson(p.result) }),
          },
          callId: call,
        };
      }
      case 'onStateChange': {
        const p = payload as StateChangePayload;
        const event: TraceEvent = { point, run, step, source: p.source, ...(p.toolName === undefined ? {} : { toolName: p.toolName }), state: toJson(p.newState) };
        const callId = p.source === 'tool' ? this.#callOfToolWrite(run, p.toolName) : undefined;
        return callId === undefined ? { event } : { event, callId };
      }
      case 'onMessage': {
        const p = payload as MessagePayload;
        const m = p.message;
        if (m.role === 'assistant' && m.toolCalls && m.toolCalls.length > 0) {
          this.#stepCalls.set(run, m.toolCalls.map((c) => ({ id: c.id, name: c.name })));
          for (const c of m.toolCalls) {
            this.#call(c.id);
            if (!this.callOrder.includes(c.id)) this.callOrder.push(c.id);
          }
        }
        const event: TraceEvent = { point, run, step, index: p.messageIndex, message: traceMessage(m) };
        if (m.role !== 'tool') return { event };
        this.#inFlight.get(run)?.delete(m.toolCallId);
        return { event, callId: this.#call(m.toolCallId) };
      }
      case 'onExit': {
        const p = payload as ExitPayload;
        return { event: { point, run, step, reason: p.reason, stepCount: p.stepCount, toolCallCounts: { ...p.toolCallCounts } } };
      }
      case 'onAgentSuspended': {
        const c = ctx as AgentSuspendedHookContext;
        for (const id of c.pendingToolCallIds) this.#call(id);
        for (const child of c.awaitingChildren) this.sessionIds.add(child.sessionId);
        return { event: { point, run, step, reason: c.reason, pending: [...c.pendingToolCallIds], children: c.awaitingChildren.map((child) => child.sessionId) } };
      }
      case 'onAgentResumed': {
        const c = ctx as AgentResumedHookContext;
        this.runIds.add(c.previousRunId);
        return { event: { point, run, step, previousRun: c.previousRunId, checkpoint: c.resumedFromCheckpointId !== undefined } };
      }
      case 'onAgentRetry': {
        const c = ctx as AgentRetryHookContext;
        this.runIds.add(c.retriedRunId);
        return { event: { point, run, step, retriedRun: c.retriedRunId, checkpoint: c.checkpointId !== undefined, hasMessage: c.hasMessage } };
      }
      case 'onTextDelta':
      case 'onThinking':
        return { event: { point, run, step } };
    }
  }
}

/**
 * A transcript with each stretch of consecutive tool rows in the order of the calls of the assistant row
 * before it (parallel calls append their rows as they finish, docs/rules.md, D16).
 */
export function orderToolRows(messages: readonly Message[]): Message[] {
  const out: Message[] = [];
  let order = new Map<string, number>();
  let stretch: Message[] = [];
  const flush = (): void => {
    const ranked = stretch.map((m, i) => ({ m, i, r: m.role === 'tool' ? (order.get(m.toolCallId) ?? Infinity) : Infinity }));
    ranked.sort((a, b) => a.r - b.r || a.i - b.i);
    for (const { m } of ranked) out.push(m);
    stretch = [];
  };
  for (const m of messages) {
    if (m.role === 'tool') {
      stretch.push(m);
      continue;
    }
    flush();
    if (m.role === 'assistant') order = new Map((m.toolCalls ?? []).map((c, i) => [c.id, i] as const));
    out.push(m);
  }
  flush();
  return out;
}

/**
 * Lists the events of parallel calls call by call (docs/rules.md, D16: hooks of parallel tool calls are
 * ordered only per call): each maximal stretch of consecutive events of one run and step that all belong
 * to a call is stably sorted by the order the model asked for the calls, and the result rows' indexes in
 * that stretch are given to the calls in that order too (rows are appended as calls finish).
 */
export function orderParallelCalls(events: readonly RawEvent[], callOrder: readonly string[]): RawEvent[] {
  const rank = new Map(callOrder.map((id, i) => [id, i] as const));
  const out: RawEvent[] = [];
  let block: RawEvent[] = [];
  const flush = (): void => {
    const sorted = block
      .map((e, i) => ({ e, i }))
      .sort((a, b) => (rank.get(a.e.callId ?? '') ?? Infinity) - (rank.get(b.e.callId ?? '') ?? Infinity) || a.i - b.i)
      .map(({ e }) => e);
    // The step's result rows take the positions they were appended at, in the model's order of the calls.
    const positions = sorted.flatMap((e) => (e.event.point === 'onMessage' && e.event.message.role === 'tool' ? [e.event.index] : [])).sort((a, b) => a - b);
    let next = 0;
    for (const e of sorted) {
      if (e.event.point === 'onMessage' && e.event.message.role === 'tool') {
        const index = positions[next++] ?? e.event.index;
        out.push(index === e.event.index ? e : { ...e, event: { ...e.event, index } });
      } else {
        out.push(e);
      }
    }
    block = [];
  };
  const sameStretch = (a: RawEvent, b: RawEvent): boolean =>
    a.event.run === b.event.run && 'step' in a.event && 'step' in b.event && a.event.step === b.event.step;
  for (const raw of events) {
    const last = block[block.length - 1];
    if (raw.callId === undefined) {
      flush();
      out.push(raw);
    } else if (last === undefined || sameStretch(last, raw)) {
      block.push(raw);
    } else {
      flush();
      block.push(raw);
    }
  }
  flush();
  return out;
}
