import { applyPatches, enablePatches, freeze, produceWithPatches, type Patch } from 'immer';
import type { AgentConfig } from '../define.js';
import { AgentError, ConfigError, HookError, RunSupersededError, type AgentErrorInfo } from '../errors.js';
import type { HookEntry, HookManager } from '../hooks/manager.js';
import type { AgentHooks, Draft, EmittableChunk, HookContext, HookPoint, StateChangeSource } from '../hooks/types.js';
import type { Message } from '../messages.js';
import type { Commit, JournalEntry, JournalKind, StateStore } from '../store.js';
import type { HookDecision, RunUsageSummary, StatePatch, StreamChunkInput, StreamWriter } from '../stream.js';
import type { UsageEntry, UsageStore } from '../usage.js';
import type { Logger } from './logger.js';

enablePatches();

/** A state change waiting for its onStateChange hooks (fired at the canonical point, not inside updateState). */
export interface PendingStateChange {
  readonly previousState: unknown;
  readonly newState: unknown;
  readonly source: StateChangeSource;
  readonly toolName?: string;
  readonly patches: readonly StatePatch[];
}

/**
 * Where state writes are booked: the onStateChange queue and, for a tool call, the call's own patches
 * (so a stop can keep the writes of a call whose result is recorded and drop the rest).
 */
export interface WriteScope {
  readonly changes: PendingStateChange[];
  readonly patches?: StatePatch[];
  /** The call this scope belongs to (part of hook idempotency keys). */
  readonly callId?: string;
}

/** Everything a run needs that does not change while it runs. */
export interface RunSetup {
  readonly agent: AgentConfig<unknown, unknown>;
  readonly hooks: HookManager<unknown, unknown>;
  readonly stateStore: StateStore;
  readonly writer: StreamWriter;
  readonly usageStore: UsageStore | undefined;
  readonly logger: Logger;
  readonly sessionId: string;
  readonly runId: string;
  readonly streamId: string;
  readonly turnId: string;
  /** The run's lease generation: commits are fenced by it. */
  readonly epoch: number;
  readonly parentSessionId?: string;
  readonly userId?: string;
  readonly tags?: readonly string[];
  readonly metadata?: Readonly<Record<string, string>>;
  readonly abort: AbortController;
  readonly strictTerminalHooks: boolean;
  /** Which hook invocations write a `hook_decision` chunk. */
  readonly auditHooks: AuditHooks;
  /** Signs an approval request (HMAC over session, call id and arguments) when the executor has a secret. */
  readonly signApproval?: (sessionId: string, toolCallId: string, input: unknown) => string;
}

/** Which hook invocations are written to the stream as `hook_decision` chunks. */
export type AuditHooks = 'decisions' | 'all' | 'off';

/** How one handler invocation went. */
export type Invocation = { readonly ok: true; readonly value: unknown; readonly durationMs: number } | { readonly ok: false; readonly error: AgentError; readonly durationMs: number };

type Handler = (payload: unknown, ctx: HookContext<unknown, unknown>) => unknown;

/**
 * The mutable heart of one run: working state and conversation, hook dispatch, commits, the journal
 * and chunk writing. The loop (agent-run.ts) decides what happens; this keeps the books.
 */
export class RunContext {
  readonly setup: RunSetup;
  /** Working custom state (immutable values; replaced on every write). */
  state: unknown;
  /** The state as of the last commit. */
  committedState: unknown;
  /** The working conversation: committed rows followed by this step's rows. */
  readonly messages: Message[];
  /** Rows appended since the last commit. */
  readonly pending: Message[] = [];
  /** Steps this run has committed: the 0-based index of the current step. */
  stepCount: number;
  readonly startedAt: number;
  /** Usage not yet committed. */
  readonly usage: UsageEntry[] = [];
  /** Writes made by run-level hooks. */
  readonly hookScope: WriteScope = { changes: [] };
  /** Journal entries of uncommitted work, by key (a recovered run replays them). */
  readonly journal: Map<string, JournalEntry>;
  /** Executed calls per tool (for onExit's toolCallCounts). */
  readonly toolCallCounts: Record<string, number> = {};
  /** How often each tool error (code and message) came back, for the repeated-error guard. */
  readonly errorCounts = new Map<string, number>();
  /** Consecutive empty model replies, for the empty-responses guard. */
  emptyReplies = 0;
  /** Tokens and cost of this run's model calls, for the hard budgets and the terminal chunk. */
  readonly spent = { tokens: 0, costUsd: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0, model: undefined as string | undefined };
  /** Set when a tool raised this run's own supersede: no further tool may start. */
  superseded: RunSupersededError | undefined;
  #inStateChangeHook = false;

  constructor(setup: RunSetup, state: unknown, messages: readonly Message[], startedAt: number, stepCount = 0, journal: readonly JournalEntry[] = []) {
    this.setup = setup;
    this.state = freeze(state, true);
    this.committedState = this.state;
    this.messages = messages.slice();
    this.startedAt = startedAt;
    this.stepCount = stepCount;
    this.journal = new Map(journal.map((e) => [e.key, e]));
  }

  get hooks(): HookManager<unknown, unknown> {
    return this.setup.hooks;
  }

  get signal(): AbortSignal {
    return this.setup.abort.signal;
  }

  /** Applies an Immer update; books it in `scope` and, when anyone listens, queues onStateChange. */
  updateState(updater: (draft: Draft<unknown>) => void, source: StateChangeSource, scope: WriteScope, toolName?: string): void {
    const previousState = this.state;
    const [newState, patches] = produceWithPatches(previousState, updater);
    if (newState === previousState) return;
    this.state = newState;
    const statePatches = patches as unknown as readonly StatePatch[];
    if (scope.patches) for (const p of statePatches) scope.patches.push(p);
    this.emitNoWait({
      type: 'state_patch',
      patches: statePatches,
      source,
      ...(toolName === undefined ? {} : { toolName }),
      ...this.chunkBase(),
    });
    // D9: writes made by an onStateChange handler do not fire onStateChange again.
    if (this.#inStateChangeHook || !this.hooks.has('onStateChange')) return;
    scope.changes.push({ previousState, newState, source, patches: statePatches, ...(toolName === undefined ? {} : { toolName }) });
  }

  /** Applies recorded patches (a replayed journal entry) without firing hooks. */
  applyRecordedPatches(patches: readonly StatePatch[]): void {
    if (patches.length === 0) return;
    this.state = freeze(applyPatches(this.state as object, patches as unknown as Patch[]), true);
  }

  /** Fires onStateChange for queued changes, in order, then empties the queue. */
  async flushStateChanges(scope: WriteScope): Promise<void> {
    const queue = scope.changes;
    while (queue.length > 0) {
      const change = queue.shift() as PendingStateChange;
      this.#inStateChangeHook = true;
      try {
        await this.fire('onStateChange', change, scope);
      } finally {
        this.#inStateChangeHook = false;
      }
    }
  }

  /**
   * Runs a point's handlers in order, each under its error policy (fail-run by default: a throw fails the
   * run as `hook_failed`). Return values are ignored: steering points use {@link invoke} themselves.
   */
  async fire<P extends HookPoint>(point: P, payload: Parameters<NonNullable<AgentHooks[P]>>[0], scope: WriteScope = this.hookScope): Promise<void> {
    const entries = this.hooks.entries(point);
    const ctx = new HookCallContext(this, point, scope);
    for (const entry of entries) {
      const outcome = await this.invoke(entry, payload, ctx);
      if (!outcome.ok) this.onHookError(entry, outcome, scope.callId);
      else if (this.setup.auditHooks === 'all') this.audit(entry, 'allow', outcome.durationMs, scope.callId);
      if (scope.changes.length > 0 && point !== 'onStateChange') await this.flushStateChanges(scope);
    }
  }

  /** Runs an observe-only point: every error is logged and the next handler still runs. */
  async fireObserveOnly<P extends HookPoint>(point: P, payload: Parameters<NonNullable<AgentHooks[P]>>[0]): Promise<void> {
    const ctx = new HookCallContext(this, point, this.hookScope);
    for (const entry of this.hooks.entries(point)) {
      const outcome = await this.invoke(entry, payload, ctx);
      if (!outcome.ok) this.onHookError({ ...entry, policy: 'fail-open' }, outcome);
    }
    this.hookScope.changes.length = 0;
  }

  /**
   * Fires a suspension-family hook (onAgentSuspended / onAgentResumed / onAgentRetry): one context
   * argument carrying the hook's fields (rule 2); observe-only, a throw is logged (rules 99, 104, 112).
   */
  async fireSignal(point: 'onAgentSuspended' | 'onAgentResumed' | 'onAgentRetry', fields: Record<string, unknown>): Promise<void> {
    const entries = this.hooks.entries(point);
    if (entries.length === 0) return;
    const ctx = Object.assign(new HookCallContext(this, point, this.hookScope), fields);
    for (const entry of entries) {
      const started = performance.now();
      try {
        await (entry.handler as (ctx: unknown) => unknown)(ctx);
      } catch (error) {
        const failure = this.hookError(point, error);
        this.onHookError({ ...entry, policy: 'fail-open' }, { ok: false, error: failure, durationMs: performance.now() - started });
      }
    }
    if (this.hookScope.changes.length > 0) await this.flushStateChanges(this.hookScope);
  }

  /** A context for a steering point's handlers (which call {@link invoke} one by one). */
  contextFor(point: HookPoint, scope: WriteScope = this.hookScope): HookContext<unknown, unknown> {
    return new HookCallContext(this, point, scope);
  }

  /** Calls one handler, bounded by its timeout; a throw or a timeout comes back as a failed invocation. */
  async invoke(entry: HookEntry, payload: unknown, ctx: HookContext<unknown, unknown>): Promise<Invocation> {
    const started = performance.now();
    try {
      let value: unknown;
      if (entry.timeoutMs === undefined) {
        value = await (entry.handler as Handler)(payload, ctx);
      } else {
        let timer: NodeJS.Timeout | undefined;
        // A handler that timed out may still be running: its late writes must not land in a later commit.
        let expired = false;
        const late = (what: string) => () => {
          this.setup.logger.warn(`the ${entry.point} hook "${entry.name}" timed out; its late ${what} was ignored`, { runId: this.setup.runId });
        };
        const bounded: HookContext<unknown, unknown> = Object.create(ctx, {
          updateState: { value: (updater: (draft: Draft<unknown>) => void) => (expired ? late('state write')() : ctx.updateState(updater)) },
          updateMessages: { value: async (updater: (messages: Message[]) => void) => (expired ? late('message edit')() : ctx.updateMessages(updater)) },
        }) as HookContext<unknown, unknown>;
        const timeout = new Promise<never>((_resolve, reject) => {
          timer = setTimeout(() => {
            expired = true;
            reject(new HookError('hook_timeout', `The ${entry.point} hook "${entry.name}" did not settle within ${entry.timeoutMs} ms.`, { details: { hook: entry.point, name: entry.name, timeoutMs: entry.timeoutMs } }));
          }, entry.timeoutMs);
        });
        try {
          value = await Promise.race([(entry.handler as Handler)(payload, bounded), timeout]);
        } finally {
          clearTimeout(timer);
        }
      }
      return { ok: true, value, durationMs: performance.now() - started };
    } catch (error) {
      return { ok: false, error: this.hookError(entry.point, error), durationMs: performance.now() - started };
    }
  }

  /**
   * Applies a failed invocation's policy (C1, C15): fail-open logs and carries on; fail-run throws
   * `hook_failed`; fail-closed throws `hook_blocked`. block-tool is the beforeTool caller's to apply.
   */
  onHookError(entry: HookEntry, outcome: Extract<Invocation, { ok: false }>, toolCallId?: string): void {
    const { error } = outcome;
    const passThrough = error.code === 'run_interrupted' || RunSupersededError.isInstance(error);
    if (!passThrough) this.audit(entry, 'error', outcome.durationMs, toolCallId, error.message, error.info);
    if (passThrough) throw error;
    if (entry.policy === 'fail-open') {
      this.setup.logger.warn(`hook ${entry.point} "${entry.name}" threw (fail-open, ignored): ${error.message}`, { sessionId: this.setup.sessionId, runId: this.setup.runId });
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

  /** Writes a `hook_decision` chunk when auditing covers this decision. */
  audit(entry: HookEntry, decision: HookDecision, durationMs: number, toolCallId?: string, reason?: string, errorInfo?: AgentErrorInfo): void {
    const mode = this.setup.auditHooks;
    if (mode === 'off' || (mode === 'decisions' && decision === 'allow')) return;
    this.emitNoWait({
      type: 'hook_decision',
      hookPoint: entry.point,
      hookName: entry.name,
      decision,
      durationMs,
      ...(reason === undefined ? {} : { reason }),
      ...(toolCallId === undefined ? {} : { toolCallId }),
      ...(decision === 'error' ? { policy: entry.policy } : {}),
      ...(errorInfo === undefined ? {} : { errorInfo }),
      ...this.chunkBase(),
    });
  }

  hookError(point: HookPoint, error: unknown): AgentError {
    if (AgentError.isInstance(error) && (error.code === 'run_interrupted' || RunSupersededError.isInstance(error) || HookError.isInstance(error))) {
      return error;
    }
    const message = error instanceof Error ? error.message : String(error);
    return new HookError('hook_failed', `The ${point} hook threw: ${message}`, { details: { hook: point, cause: message }, cause: error });
  }

  /** Appends a row to the working conversation and (unless replaying) fires onMessage for it; returns its index. */
  async appendMessage(message: Message, scope: WriteScope = this.hookScope, fireHooks = true): Promise<number> {
    const messageIndex = this.messages.length;
    this.messages.push(message);
    this.pending.push(message);
    if (fireHooks && this.hooks.has('onMessage')) await this.fire('onMessage', { message, messageIndex }, scope);
    return messageIndex;
  }

  /** Replaces an uncommitted row (afterTool's `{ result }` rewrite, C16). */
  replaceMessage(messageIndex: number, message: Message): void {
    const pendingIndex = messageIndex - (this.messages.length - this.pending.length);
    if (pendingIndex < 0 || pendingIndex >= this.pending.length) throw new Error(`Row ${messageIndex} is already committed and cannot be replaced.`);
    this.messages[messageIndex] = message;
    this.pending[pendingIndex] = message;
  }

  /** Drops the rows appended since the last commit (a step that is stopped or failed). */
  discardPending(): void {
    this.messages.length -= this.pending.length;
    this.pending.length = 0;
  }

  /** One fenced commit of the pending rows, the state when it changed, and the buffered usage. */
  async commit(fields: Pick<Commit, 'kind' | 'stepIndex' | 'checkpoint' | 'runStatus' | 'output' | 'error' | 'suspension'>): Promise<void> {
    const s = this.setup;
    const stateChanged = this.state !== this.committedState;
    // Usage rides in the commit when the state store is also the run's usage store, so both land atomically.
    const atomicUsage = this.usage.length > 0 && (s.usageStore as unknown) === s.stateStore;
    await s.stateStore.commit({
      sessionId: s.sessionId,
      runId: s.runId,
      epoch: s.epoch,
      ...fields,
      ...(this.pending.length > 0 ? { appendMessages: this.pending.slice() } : {}),
      ...(stateChanged ? { state: this.state } : {}),
      ...(atomicUsage ? { usage: this.usage.slice() } : {}),
      committedAt: Date.now(),
    });
    this.pending.length = 0;
    this.committedState = this.state;
    if (atomicUsage) this.usage.length = 0;
    else await this.flushUsage();
    for (const key of [...this.journal.keys()]) {
      const entry = this.journal.get(key) as JournalEntry;
      if (fields.kind === 'terminal' || (fields.kind === 'step' && entry.stepIndex <= (fields.stepIndex ?? -1))) this.journal.delete(key);
    }
  }

  /** Records (or finds, when replaying) a journal entry of the current step. */
  async record(kind: JournalKind, key: string, data: unknown): Promise<JournalEntry> {
    const entry = await this.setup.stateStore.appendJournal({
      runId: this.setup.runId,
      epoch: this.setup.epoch,
      stepIndex: this.stepCount,
      kind,
      key,
      data,
      at: Date.now(),
    });
    this.journal.set(key, entry);
    return entry;
  }

  /** The fields every chunk of this run carries. */
  chunkBase(): { streamId: string; agentId: string; agentType: string; runId: string; timestamp: number } {
    const s = this.setup;
    return { streamId: s.streamId, agentId: s.sessionId, agentType: s.agent.name, runId: s.runId, timestamp: Date.now() };
  }

  /** Writes a chunk and waits for it. */
  async emit(chunk: StreamChunkInput): Promise<void> {
    await this.setup.writer.write(chunk);
  }

  /** Writes a chunk without waiting (writers apply writes in call order); a failure is logged. */
  emitNoWait(chunk: StreamChunkInput): void {
    this.setup.writer.write(chunk).catch((error: unknown) => {
      this.setup.logger.error(`stream write failed: ${error instanceof Error ? error.message : String(error)}`, { runId: this.setup.runId });
    });
  }

  /** Hands buffered usage to the usage store (after the commit of the work it belongs to). */
  async flushUsage(): Promise<void> {
    if (this.usage.length === 0) return;
    const entries = this.usage.splice(0, this.usage.length);
    if (!this.setup.usageStore) return;
    try {
      await this.setup.usageStore.record(entries);
    } catch (error) {
      this.setup.logger.error(`usage store write failed: ${error instanceof Error ? error.message : String(error)}`, { runId: this.setup.runId });
    }
  }

  durationMs(): number {
    return Date.now() - this.startedAt;
  }

  /** The run's token totals for the terminal chunk. */
  usageSummary(): RunUsageSummary {
    const s = this.spent;
    return {
      inputTokens: s.input,
      outputTokens: s.output,
      cacheReadTokens: s.cacheRead,
      cacheWriteTokens: s.cacheWrite,
      reasoningTokens: s.reasoning,
      ...(this.setup.agent.limits?.pricing ? { costUsd: s.costUsd } : {}),
      ...(s.model === undefined ? {} : { model: s.model }),
    };
  }
}

/** The HookContext of one hook point invocation; stepCount and state read the live run. */
class HookCallContext implements HookContext<unknown, unknown> {
  readonly sessionId: string;
  readonly runId: string;
  readonly agentType: string;
  readonly streamId: string;
  readonly parentSessionId?: string;
  readonly userId?: string;
  readonly tags?: readonly string[];
  readonly metadata?: Readonly<Record<string, string>>;
  readonly idempotencyKey: string;
  readonly attempt: number;
  readonly hookPoint: HookPoint;
  // Not #private: keeps the object cheap to build on every invocation.
  private readonly run: RunContext;
  private readonly scope: WriteScope;

  constructor(run: RunContext, point: HookPoint, scope: WriteScope) {
    const s = run.setup;
    this.run = run;
    this.scope = scope;
    this.sessionId = s.sessionId;
    this.runId = s.runId;
    this.agentType = s.agent.name;
    this.streamId = s.streamId;
    this.hookPoint = point;
    this.attempt = s.epoch;
    this.idempotencyKey = `${s.runId}:${run.stepCount}:${scope.callId ?? '-'}:${point}`;
    if (s.parentSessionId !== undefined) this.parentSessionId = s.parentSessionId;
    if (s.userId !== undefined) this.userId = s.userId;
    if (s.tags !== undefined) this.tags = s.tags;
    if (s.metadata !== undefined) this.metadata = s.metadata;
  }

  get stepCount(): number {
    return this.run.stepCount;
  }

  get abortSignal(): AbortSignal {
    return this.run.signal;
  }

  getState(): unknown {
    return this.run.state;
  }

  updateState(updater: (draft: Draft<unknown>) => void): void {
    this.run.updateState(updater, 'hook', this.scope);
  }

  async updateMessages(updater: (messages: Message[]) => void): Promise<void> {
    const run = this.run;
    const before = run.messages.length;
    const committed = before - run.pending.length;
    const draft = run.messages.slice();
    updater(draft);
    const touchesCommitted = draft.length < before || draft.slice(0, committed).some((m, i) => m !== run.messages[i]);
    if (touchesCommitted) {
      throw new ConfigError(
        `updateMessages() may replace rows of the current step and append rows, not change or remove committed rows (${committed} are committed); return { messages } from beforeLLMCall to rewrite earlier rows for one call.`,
      );
    }
    for (let i = committed; i < before; i++) if (draft[i] !== run.messages[i]) run.replaceMessage(i, draft[i] as Message);
    for (let i = before; i < draft.length; i++) await run.appendMessage(draft[i] as Message, this.scope);
  }

  async emit(chunk: EmittableChunk): Promise<void> {
    const base = this.run.chunkBase();
    await this.run.emit({ ...base, ...chunk, streamId: base.streamId, runId: base.runId } as StreamChunkInput);
  }

  async emitCustom(eventName: string, data: unknown): Promise<void> {
    await this.run.emit({ type: 'custom', eventName, data, ...this.run.chunkBase() });
  }
}
