import { AgentError, HookError, RunSupersededError, type AgentErrorInfo } from '../errors.js';
import type { HookEntry, HookManager } from '../hooks/manager.js';
import type { AgentHooks, Draft, HookContext, HookPoint, StateChangeSource } from '../hooks/types.js';
import type { Message } from '../messages.js';
import type { HookDecision, StatePatch, StreamChunkInput } from '../stream.js';
import { HookCallContext, type HookHost } from './hook-context.js';
import type { Logger } from './logger.js';

/** Which hook invocations are written to the stream as `hook_decision` chunks. */
export type AuditHooks = 'decisions' | 'all' | 'off';

/** A state change waiting for its onStateChange hooks (fired at the canonical point, not inside updateState). */
export interface PendingStateChange {
  readonly previousState: unknown;
  readonly newState: unknown;
  readonly source: StateChangeSource;
  readonly toolName?: string;
  readonly patches: readonly StatePatch[];
}

/**
 * Where writes are booked: `owner` names who made them (a tool call, the step, the run), so that a stop
 * keeps the writes of a call whose result is recorded and drops the rest; `changes` queues their
 * onStateChange hooks.
 */
export interface WriteScope {
  readonly owner: string;
  readonly changes: PendingStateChange[];
  /** The call this scope belongs to (part of hook idempotency keys and audit chunks). */
  readonly callId?: string;
}

/** How one handler invocation went. */
export type Invocation = { readonly ok: true; readonly value: unknown; readonly durationMs: number } | { readonly ok: false; readonly error: AgentError; readonly durationMs: number };

/**
 * A steering point's interpretation of one handler's return: nothing (allow), a rewritten payload for
 * the next handler, or an end to the chain with its result. `decision` and `reason` go to the audit.
 */
export type Verdict<P, R> = undefined | { readonly decision: HookDecision; readonly reason?: string; readonly payload?: P; readonly end?: R };

/** What a chain ends with: the payload as the last handler left it and, when a handler ended it, its result. */
export interface ChainEnd<P, R> {
  readonly payload: P;
  readonly result?: R;
}

/** Turns a `block-tool` policy's handled error into the chain's result (beforeTool only). */
export type BlockOnError<R> = (error: AgentError, entry: HookEntry, durationMs: number) => R;

type Handler = (payload: unknown, ctx: HookContext<unknown, unknown>) => unknown;

/** True for the errors every policy lets through: the run's own stop and supersede. */
function passesThrough(error: AgentError): boolean {
  return error.code === 'run_interrupted' || RunSupersededError.isInstance(error);
}

/** A hook's throw as a typed error (`hook_failed`), keeping helix errors the hook raised on purpose. */
export function asHookError(point: HookPoint, error: unknown): AgentError {
  if (AgentError.isInstance(error) && (passesThrough(error) || HookError.isInstance(error))) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new HookError('hook_failed', `The ${point} hook threw: ${message}`, { details: { hook: point, cause: message }, cause: error });
}

/**
 * Hook dispatch for one run: every point's handlers run through {@link HookDispatcher.chain}, which
 * invokes each handler (bounded by its timeout), fires the onStateChange hooks its writes queued,
 * applies its error policy, lets the point interpret its return, and audits the decision. A steering
 * point supplies only its interpret step.
 */
export class HookDispatcher {
  readonly #manager: HookManager<unknown, unknown>;
  readonly #host: HookHost;
  readonly #logger: Logger;
  readonly #auditMode: AuditHooks;
  /** The scopes whose onStateChange handlers are running: their own writes queue no onStateChange. */
  readonly #inStateChangeHook = new Set<WriteScope>();

  constructor(manager: HookManager<unknown, unknown>, host: HookHost, logger: Logger, auditMode: AuditHooks) {
    this.#manager = manager;
    this.#host = host;
    this.#logger = logger;
    this.#auditMode = auditMode;
  }

  /** True when `point` has a handler (a point without one costs this one read). */
  has(point: HookPoint): boolean {
    return this.#manager.has(point);
  }

  /**
   * Whether a state write in `scope` must queue onStateChange: someone listens, and it is not one of their
   * own writes. Per scope: a parallel call's write made while another call's handler runs still queues.
   */
  wantsStateChange(scope: WriteScope): boolean {
    return this.#manager.has('onStateChange') && !this.#inStateChangeHook.has(scope);
  }

  /** A hook context for `point` whose writes are booked in `scope`. */
  context(point: HookPoint, scope: WriteScope): HookContext<unknown, unknown> {
    return new HookCallContext(this.#host, point, scope);
  }

  /**
   * Runs `point`'s handlers in order. Each sees the payload as the handlers before it left it; the first
   * verdict with `end` stops the chain. A throw or timeout follows the handler's policy: fail-open logs
   * and goes on, fail-run throws `hook_failed`, fail-closed throws `hook_blocked`, and block-tool turns
   * it into the chain's result through `onBlock` (beforeTool only).
   */
  chain<P, R>(point: HookPoint, payload: P, scope: WriteScope, interpret: (value: unknown, payload: P, entry: HookEntry) => Verdict<P, R> | Promise<Verdict<P, R>>, onBlock?: BlockOnError<R>): ChainEnd<P, R> | Promise<ChainEnd<P, R>> {
    const entries = this.#manager.entries(point);
    if (entries.length === 0) return { payload };
    const ctx = this.context(point, scope);
    // While every handler answers at once, allows or rewrites, and writes nothing that queues onStateChange,
    // the chain runs to its end in this turn: no promise, no suspended frame. Anything else goes on in
    // #chainFrom, from the handler at hand, with what was already learned of it.
    let current = payload;
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i] as HookEntry;
      if (entry.timeoutMs !== undefined) return this.#chainFrom(point, entries, i, current, ctx, scope, interpret, onBlock);
      // The handler is called here, not through #invokeNow: an answer given at once builds no Invocation.
      const started = performance.now();
      let value: unknown;
      try {
        value = (entry.handler as Handler)(current, ctx);
      } catch (error) {
        const outcome: Invocation = { ok: false, error: asHookError(entry.point, error), durationMs: performance.now() - started };
        return this.#chainFrom(point, entries, i, current, ctx, scope, interpret, onBlock, { outcome });
      }
      if (isThenable(value)) return this.#chainFrom(point, entries, i, current, ctx, scope, interpret, onBlock, { outcome: settledInvocation(entry, value, started) });
      const verdict = interpret(value, current, entry);
      if (verdict instanceof Promise || this.#mustFlush(point, scope)) {
        return this.#chainFrom(point, entries, i, current, ctx, scope, interpret, onBlock, { outcome: { ok: true, value, durationMs: performance.now() - started }, verdict: { value: verdict } });
      }
      const decision = verdict?.decision ?? 'allow';
      // The clock is read again only for a decision the audit writes (an allow is not, by default).
      if (this.#audits(decision)) this.#audit(entry, decision, performance.now() - started, scope.callId, verdict?.reason);
      if (verdict?.end !== undefined) return { payload: current, result: verdict.end };
      if (verdict?.payload !== undefined) current = verdict.payload;
    }
    return { payload: current };
  }

  /**
   * {@link chain} from handler `start` on, awaiting what must be awaited. `known` is what the caller
   * already has of handler `start`: its outcome and maybe its verdict (a handler runs once, and its
   * return is interpreted once).
   */
  async #chainFrom<P, R>(
    point: HookPoint,
    entries: readonly HookEntry[],
    start: number,
    payload: P,
    ctx: HookContext<unknown, unknown>,
    scope: WriteScope,
    interpret: (value: unknown, payload: P, entry: HookEntry) => Verdict<P, R> | Promise<Verdict<P, R>>,
    onBlock?: BlockOnError<R>,
    known?: { readonly outcome: Invocation | Promise<Invocation>; readonly verdict?: { readonly value: Verdict<P, R> | Promise<Verdict<P, R>> } },
  ): Promise<ChainEnd<P, R>> {
    let current = payload;
    for (let i = start; i < entries.length; i++) {
      const entry = entries[i] as HookEntry;
      const given = i === start ? known : undefined;
      const outcome = given ? await given.outcome : entry.timeoutMs === undefined ? await this.#invokeNow(entry, current, ctx) : await this.#invoke(entry, current, ctx);
      if (!outcome.ok) {
        const blocked = await this.#onFailed(point, entry, outcome, scope, onBlock);
        if (blocked) return { payload: current, result: blocked.result };
        continue;
      }
      // An interpret step may have to wait (a schema that validates asynchronously); most answer at once.
      const verdict = await (given?.verdict ? given.verdict.value : interpret(outcome.value, current, entry));
      this.#audit(entry, verdict?.decision ?? 'allow', outcome.durationMs, scope.callId, verdict?.reason);
      if (this.#mustFlush(point, scope)) await this.flushStateChanges(scope);
      if (verdict?.end !== undefined) return { payload: current, result: verdict.end };
      if (verdict?.payload !== undefined) current = verdict.payload;
    }
    return { payload: current };
  }

  /**
   * A handler that threw or timed out, under its policy: block-tool (beforeTool only) ends the chain with
   * `onBlock`'s result; the other policies log and go on, or throw.
   */
  async #onFailed<R>(point: HookPoint, entry: HookEntry, outcome: Extract<Invocation, { ok: false }>, scope: WriteScope, onBlock?: BlockOnError<R>): Promise<{ readonly result: R } | undefined> {
    if (onBlock && entry.policy === 'block-tool' && !passesThrough(outcome.error)) {
      this.#audit(entry, 'block', outcome.durationMs, scope.callId, outcome.error.message, outcome.error.info);
      if (this.#mustFlush(point, scope)) await this.flushStateChanges(scope);
      return { result: onBlock(outcome.error, entry, outcome.durationMs) };
    }
    // The policy first: a handler whose error ends the run announces no write (its changes are dropped).
    this.#onErrorDropping(entry, outcome, scope);
    if (this.#mustFlush(point, scope)) await this.flushStateChanges(scope);
    return undefined;
  }

  /** Runs a point whose return values are ignored, each handler under its policy; returns a promise only when it has to wait. */
  fire<P extends HookPoint>(point: P, payload: Parameters<NonNullable<AgentHooks[P]>>[0], scope: WriteScope): void | Promise<void> {
    const end = this.chain(point, payload, scope, ignore);
    return end instanceof Promise ? end.then(ignore) : undefined;
  }

  /** Runs an observe-only point: every error is logged and the next handler still runs; its writes are not kept. */
  async fireObserveOnly<P extends HookPoint>(point: P, payload: Parameters<NonNullable<AgentHooks[P]>>[0], scope: WriteScope): Promise<void> {
    const ctx = this.context(point, scope);
    for (const entry of this.#manager.entries(point)) {
      const outcome = await this.#invoke(entry, payload, ctx);
      if (!outcome.ok) this.#onError({ ...entry, policy: 'fail-open' }, outcome);
    }
    scope.changes.length = 0;
  }

  /**
   * Fires a streaming hook (onTextDelta / onThinking) with its positional arguments and the context:
   * observe-only, every throw (or rejection) is logged and the next handler still runs. No timeout,
   * no audit of allows, no onStateChange: these points observe, they do not steer.
   */
  async fireStreaming(point: 'onTextDelta' | 'onThinking', args: readonly unknown[], scope: WriteScope): Promise<void> {
    const entries = this.#manager.entries(point);
    if (entries.length === 0) return;
    const ctx = this.context(point, scope);
    for (const entry of entries) {
      const started = performance.now();
      try {
        await (entry.handler as (...a: unknown[]) => unknown)(...args, ctx);
      } catch (error) {
        const failure = asHookError(point, error);
        this.#audit(entry, 'error', performance.now() - started, scope.callId, failure.message, failure.info);
        this.#logger.warn(`hook ${point} "${entry.name}" threw (observe-only, ignored): ${failure.message}`, { sessionId: this.#host.setup.sessionId, runId: this.#host.setup.runId });
      }
    }
    scope.changes.length = 0;
  }

  /**
   * Fires a suspension-family hook (onAgentSuspended / onAgentResumed / onAgentRetry): one context
   * argument carrying the hook's fields; observe-only, a throw is logged.
   */
  async fireSignal(point: 'onAgentSuspended' | 'onAgentResumed' | 'onAgentRetry', fields: Record<string, unknown>, scope: WriteScope): Promise<void> {
    const entries = this.#manager.entries(point);
    if (entries.length === 0) return;
    const ctx = Object.assign(this.context(point, scope), fields);
    for (const entry of entries) {
      const started = performance.now();
      try {
        await (entry.handler as (ctx: unknown) => unknown)(ctx);
      } catch (error) {
        this.#onError({ ...entry, policy: 'fail-open' }, { ok: false, error: asHookError(point, error), durationMs: performance.now() - started });
      }
    }
    if (scope.changes.length > 0) await this.flushStateChanges(scope);
  }

  /** Fires onStateChange for the queued changes, in order; their own writes queue nothing more. */
  async flushStateChanges(scope: WriteScope): Promise<void> {
    const queue = scope.changes;
    while (queue.length > 0) {
      const change = queue.shift() as PendingStateChange;
      this.#inStateChangeHook.add(scope);
      try {
        await this.fire('onStateChange', change, scope);
      } finally {
        this.#inStateChangeHook.delete(scope);
      }
    }
  }

  /**
   * Whether the handler's writes queued onStateChange hooks to fire now (an onStateChange handler's own
   * writes queue none). A plain check, so that a handler that wrote nothing costs no extra promise.
   */
  #mustFlush(point: HookPoint, scope: WriteScope): boolean {
    return scope.changes.length > 0 && point !== 'onStateChange';
  }

  /** {@link #onError}; when the policy ends the run, the changes the handler queued are dropped with it. */
  #onErrorDropping(entry: HookEntry, outcome: Extract<Invocation, { ok: false }>, scope: WriteScope): void {
    try {
      this.#onError(entry, outcome, scope.callId);
    } catch (error) {
      scope.changes.length = 0;
      throw error;
    }
  }

  /** Calls a handler without a timeout; an answer that is not a promise comes back at once, without a promise of its own. */
  #invokeNow(entry: HookEntry, payload: unknown, ctx: HookContext<unknown, unknown>): Invocation | Promise<Invocation> {
    const started = performance.now();
    let value: unknown;
    try {
      value = (entry.handler as Handler)(payload, ctx);
    } catch (error) {
      return { ok: false, error: asHookError(entry.point, error), durationMs: performance.now() - started };
    }
    if (!isThenable(value)) return { ok: true, value, durationMs: performance.now() - started };
    return settledInvocation(entry, value, started);
  }

  /** Calls one handler, bounded by its timeout; a throw or a timeout comes back as a failed invocation. */
  async #invoke(entry: HookEntry, payload: unknown, ctx: HookContext<unknown, unknown>): Promise<Invocation> {
    const started = performance.now();
    try {
      const value = entry.timeoutMs === undefined ? await (entry.handler as Handler)(payload, ctx) : await this.#bounded(entry, payload, ctx, entry.timeoutMs);
      return { ok: true, value, durationMs: performance.now() - started };
    } catch (error) {
      return { ok: false, error: asHookError(entry.point, error), durationMs: performance.now() - started };
    }
  }

  /** A handler under a timeout; once it expired, its late state writes and message edits are ignored. */
  async #bounded(entry: HookEntry, payload: unknown, ctx: HookContext<unknown, unknown>, timeoutMs: number): Promise<unknown> {
    let timer: NodeJS.Timeout | undefined;
    let expired = false;
    const late = (what: string): void => {
      this.#logger.warn(`the ${entry.point} hook "${entry.name}" timed out; its late ${what} was ignored`, { runId: ctx.runId });
    };
    const bounded = Object.create(ctx, {
      updateState: { value: (updater: (draft: Draft<unknown>) => void) => (expired ? late('state write') : ctx.updateState(updater)) },
      updateMessages: { value: async (updater: (messages: Message[]) => void) => (expired ? late('message edit') : ctx.updateMessages(updater)) },
    }) as HookContext<unknown, unknown>;
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        expired = true;
        reject(new HookError('hook_timeout', `The ${entry.point} hook "${entry.name}" did not settle within ${timeoutMs} ms.`, { details: { hook: entry.point, name: entry.name, timeoutMs } }));
      }, timeoutMs);
    });
    try {
      return await Promise.race([(entry.handler as Handler)(payload, bounded), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Applies a failed invocation's policy: fail-open logs; fail-run rethrows `hook_failed`; fail-closed (and block-tool outside beforeTool) throw `hook_blocked`. */
  #onError(entry: HookEntry, outcome: Extract<Invocation, { ok: false }>, toolCallId?: string): void {
    const { error } = outcome;
    if (passesThrough(error)) throw error;
    this.#audit(entry, 'error', outcome.durationMs, toolCallId, error.message, error.info);
    if (entry.policy === 'fail-open') {
      this.#logger.warn(`hook ${entry.point} "${entry.name}" threw (fail-open, ignored): ${error.message}`, { sessionId: this.#host.setup.sessionId, runId: this.#host.setup.runId });
      return;
    }
    if (entry.policy === 'fail-closed' || entry.policy === 'block-tool') {
      throw new HookError('hook_blocked', `The ${entry.point} hook "${entry.name}" failed closed: ${error.message}`, {
        details: { hook: entry.point, name: entry.name, cause: typeof error.info.details?.['cause'] === 'string' ? error.info.details['cause'] : error.message, threw: true },
        cause: error,
      });
    }
    throw error;
  }

  /** Whether auditing covers `decision`: every invocation (`all`), every decision but an allow (`decisions`), or none (`off`). */
  #audits(decision: HookDecision): boolean {
    const mode = this.#auditMode;
    return mode === 'all' || (mode === 'decisions' && decision !== 'allow');
  }

  /** Writes a `hook_decision` chunk when auditing covers this decision. */
  #audit(entry: HookEntry, decision: HookDecision, durationMs: number, toolCallId?: string, reason?: string, errorInfo?: AgentErrorInfo): void {
    if (!this.#audits(decision)) return;
    const chunk: StreamChunkInput = {
      type: 'hook_decision',
      hookPoint: entry.point,
      hookName: entry.name,
      decision,
      durationMs,
      ...(reason === undefined ? {} : { reason }),
      ...(toolCallId === undefined ? {} : { toolCallId }),
      ...(decision === 'error' ? { policy: entry.policy } : {}),
      ...(errorInfo === undefined ? {} : { errorInfo }),
      ...this.#host.chunkBase(),
    };
    this.#host.emitNoWait(chunk);
  }
}

/** How a handler that answered with a promise (or another thenable) went, once it settled. */
function settledInvocation(entry: HookEntry, value: PromiseLike<unknown>, started: number): Promise<Invocation> {
  return Promise.resolve(value).then(
    (settled: unknown): Invocation => ({ ok: true, value: settled, durationMs: performance.now() - started }),
    (error: unknown): Invocation => ({ ok: false, error: asHookError(entry.point, error), durationMs: performance.now() - started }),
  );
}

function ignore(): undefined {
  return undefined;
}

/** True for a promise or any other object with a `then` method (what `await` would wait for). */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value !== null && (typeof value === 'object' || typeof value === 'function') && typeof (value as { then?: unknown }).then === 'function';
}
