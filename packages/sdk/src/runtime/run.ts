import { AgentError, ConfigError, type RunSupersededError } from '../errors.js';
import type { ToolContext } from '../define.js';
import type { Draft, StateChangeSource } from '../hooks/types.js';
import type { Message } from '../messages.js';
import { commitNowOf, type Commit, type RunStatus } from '../store.js';
import { isTerminalChunk, type StreamChunkInput } from '../stream.js';
import type { UsageEntry, UsageStore } from '../usage.js';
import type { ChunkFields, HookHost } from './hook-context.js';
import { HookDispatcher, type WriteScope } from './hook-dispatch.js';
import { stateTooLarge } from './limits.js';
import type { AgentResult } from './result.js';
import { RunBooks } from './run-books.js';
import type { RunSetup } from './run-setup.js';
import type { StepRecorder } from './step-recorder.js';
import { guardsFor, type RunGuards } from './stop-conditions.js';
import type { StreamCallbacks } from './stream-hooks.js';
import { WorkingCopy } from './working-copy.js';

/** The owner of writes made by run-level hooks (start work, terminal hooks, signals). */
export const RUN_OWNER = 'run';
/** The owner of a step's writes made before any tool runs (beforeLLMCall, afterLLMCall, the reply's onMessage). */
export const STEP_OWNER = 'step';

/** A write scope for a tool call (its writes are kept on a stop only if its result is recorded). */
export function callScope(callId: string): WriteScope {
  return { owner: `call:${callId}`, changes: [], callId };
}

/** A fresh scope for `owner`. */
export function scopeOf(owner: string): WriteScope {
  return { owner, changes: [] };
}

/** Where a run starts from: the committed session and, for a recovered run, its step count and journal recorder. */
export interface RunOrigin {
  readonly state: unknown;
  readonly messages: readonly Message[];
  readonly startedAt: number;
  readonly stepCount?: number;
}

/**
 * One run, as the loop's modules see it: its setup, and the collaborators that own its working data
 * (the working copy, hook dispatch, the step recorder, the books, the guards). It wires them together
 * (a state write is booked in the working copy, streamed as a patch and queued for onStateChange) and
 * writes the run's commits; it decides nothing about the run's course.
 */
export class Run implements HookHost {
  readonly setup: RunSetup;
  readonly work: WorkingCopy;
  readonly hooks: HookDispatcher;
  readonly recorder: StepRecorder;
  readonly books = new RunBooks();
  /**
   * Whether the run's usage entries go anywhere (it has a usage store). Without one they would be dropped
   * at the commit, so the loop does not build them.
   */
  readonly keepsUsage: boolean;
  readonly guards: RunGuards;
  readonly startedAt: number;
  /**
   * The fields every chunk of this run carries besides its timestamp, mapped from the setup once. The step's
   * hot chunk literals copy them field by field (a spread of {@link chunkBase} costs more than the rest of the
   * literal); every other chunk spreads `chunkBase()`.
   */
  readonly chunkFields: Omit<ChunkFields, 'timestamp'>;
  /** The run's abort signal (its setup's controller's, read once: the loop checks it many times a step). */
  readonly signal: AbortSignal;
  /**
   * Set by the signal's first listener (added when the run is built, before any other code of the run
   * listens), so that code running after the abort, listeners included, sees it. The listener holds this
   * object only, not the run: a signal that outlives its run does not keep the run (and its hooks) alive.
   */
  readonly #abortSeen: { aborted: boolean };
  /** Writes of run-level hooks. */
  readonly runScope: WriteScope = scopeOf(RUN_OWNER);
  /** The tool context functions that depend only on the run: made once, shared by every call's context (they go with the run). */
  readonly toolFunctions: Pick<ToolContext, 'getState' | 'emitCustom'> = {
    getState: <TState>() => this.state as TState,
    emitCustom: async (eventName: string, data: unknown) => {
      await this.emit({ type: 'custom', eventName, data, ...this.chunkBase() });
    },
  };
  /**
   * The stream callbacks the run's model attempts share while no onTextDelta / onThinking handler listens
   * (stream-hooks.ts): made at the first such attempt, not one set per attempt.
   */
  plainStreamCallbacks: StreamCallbacks | undefined;
  #stepCount: number;
  #superseded: RunSupersededError | undefined;
  /** Made when first asked for (only sub-agent calls and a supersede do): most runs never need it. */
  #newerRun: AbortController | undefined;
  #markOpened: () => void = () => {};
  /** Resolves once the run's start signal has fired (or the run ended without one). */
  readonly opened: Promise<void> = new Promise((resolve) => (this.#markOpened = resolve));

  constructor(setup: RunSetup, origin: RunOrigin, recorder: StepRecorder) {
    this.setup = setup;
    this.work = new WorkingCopy(origin.state, origin.messages);
    this.hooks = new HookDispatcher(setup.hooks, this, setup.logger, setup.auditHooks);
    this.recorder = recorder;
    this.guards = guardsFor(setup.agent.limits);
    this.startedAt = origin.startedAt;
    this.signal = setup.abort.signal;
    this.keepsUsage = setup.usageStore !== undefined;
    this.chunkFields = { streamId: setup.streamId, agentId: setup.sessionId, agentType: setup.agent.name, runId: setup.runId };
    const seen = { aborted: this.signal.aborted };
    this.#abortSeen = seen;
    if (!seen.aborted) this.signal.addEventListener('abort', () => (seen.aborted = true), { once: true });
    this.#stepCount = origin.stepCount ?? 0;
  }

  /** The run's start signal fired (or it will not fire): what waits for {@link opened} goes on. */
  markOpened(): void {
    this.#markOpened();
  }

  /** Whether {@link signal} has fired: the loop checks it several times a step, and this reads a field, not the signal's getter. */
  get aborted(): boolean {
    return this.#abortSeen.aborted;
  }

  /** Steps this run has committed: the 0-based index of the current step. */
  get stepCount(): number {
    return this.#stepCount;
  }

  /** The step's commit landed (or a suspension closed it): the next step begins. */
  stepDone(): void {
    this.#stepCount++;
  }

  get state(): unknown {
    return this.work.state;
  }

  /** The supersede a tool of this run raised: no further tool may start. */
  get superseded(): RunSupersededError | undefined {
    return this.#superseded;
  }

  /**
   * Aborted, with this run's supersede as its reason, once a newer run of the session began in this
   * process (its run-start commit landed). The run is not stopped by it (its next commit is refused by
   * the fence); only its sub-agent calls act on it, stopping the children they wait for.
   */
  get newerRun(): AbortSignal {
    return (this.#newerRun ??= new AbortController()).signal;
  }

  /** A newer run took this run's session: see {@link newerRun} (the first notice wins). */
  supersededBy(error: RunSupersededError): void {
    const newerRun = (this.#newerRun ??= new AbortController());
    if (!newerRun.signal.aborted) newerRun.abort(error);
  }

  /** Notes this run's own supersede (the first one wins). */
  noteSuperseded(error: RunSupersededError): void {
    this.#superseded ??= error;
  }

  /** Applies an Immer update in `scope`: streamed as a `state_patch` chunk and, when someone listens, queued for onStateChange. */
  updateState(updater: (draft: Draft<unknown>) => void, source: StateChangeSource, scope: WriteScope, toolName?: string): void {
    const previousState = this.work.state;
    const before = this.work.mark();
    const patches = this.work.update(updater, scope.owner);
    if (!patches) return;
    // A hook's write is checked at once, so a violation is that hook's error (its error policy applies); a tool's when its call ends.
    if (source === 'hook') {
      const issues = this.stateIssues();
      if (issues) {
        this.work.rollbackTo(before);
        throw new AgentError('state_invalid', `A hook's state write does not match ${this.setup.agent.name}'s stateSchema; it was dropped.`, { details: { source, issues } });
      }
    }
    // A write that takes the state past maxStateChars can never be committed (the commit fails the run): it is not streamed either.
    if (this.work.stateOver(this.setup.limits.maxStateChars) === undefined) {
      this.emitNoWait({ type: 'state_patch', patches, source, ...(toolName === undefined ? {} : { toolName }), ...this.chunkBase() });
    }
    if (!this.hooks.wantsStateChange(scope)) return;
    scope.changes.push({ previousState, newState: this.work.state, source, patches, ...(toolName === undefined ? {} : { toolName }) });
  }

  /** The stateSchema issues of the working state, or undefined when it is valid (or the agent has no schema). */
  stateIssues(): { path: string[]; message: string }[] | undefined {
    const schema = this.setup.agent.stateSchema;
    if (!schema) return undefined;
    const parsed = schema.safeParse(this.work.state);
    return parsed.success ? undefined : parsed.error.issues.map((i) => ({ path: i.path.map(String), message: i.message }));
  }

  /** ctx.updateMessages: rows of the current step may be replaced and rows appended (they fire onMessage); committed rows never change. */
  async updateMessages(updater: (messages: Message[]) => void, scope: WriteScope): Promise<void> {
    const current = this.work.messages;
    const before = current.length;
    const committed = this.work.committedRows;
    const draft = current.slice();
    updater(draft);
    if (draft.length < before || draft.slice(0, committed).some((m, i) => m !== current[i])) {
      throw new ConfigError(
        `updateMessages() may replace rows of the current step and append rows, not change or remove committed rows (${committed} are committed); return { messages } from beforeLLMCall to rewrite earlier rows for one call.`,
      );
    }
    for (let i = committed; i < before; i++) if (draft[i] !== current[i]) this.work.replace(i, draft[i] as Message);
    for (let i = before; i < draft.length; i++) await this.appendMessage(draft[i] as Message, scope);
  }

  /**
   * Appends a row and (unless replaying) fires onMessage for it; returns its index, or a promise of it when
   * an onMessage handler has to be waited for.
   */
  appendMessage(message: Message, scope: WriteScope = this.runScope, fireHooks = true): number | Promise<number> {
    const messageIndex = this.work.append(message);
    if (fireHooks && this.hooks.has('onMessage')) {
      const fired = this.hooks.fire('onMessage', { message, messageIndex }, scope);
      if (fired) return fired.then(() => messageIndex);
    }
    return messageIndex;
  }

  /**
   * One fenced commit of the pending rows, the state when it changed, and the buffered usage. It returns
   * at once (or throws) when the store's commit has a synchronous form (`offerCommitNow`) and nothing else has to be
   * waited for; a native promise otherwise (whatever thenable the store answers with). A throw reaches the caller at once: callers run it where the run's error handling catches it.
   */
  commit(fields: Pick<Commit, 'kind' | 'stepIndex' | 'checkpoint' | 'runStatus' | 'output' | 'error' | 'suspension'>): void | Promise<void> {
    const s = this.setup;
    this.#checkStateSize(fields.kind === 'terminal' && fields.runStatus !== 'completed');
    // Usage rides in the commit when the state store is also the run's usage store, so both land atomically.
    const usage = this.books.pendingUsage;
    const atomicUsage = usage.length > 0 && (s.usageStore as unknown) === s.stateStore;
    const commit = this.#commitOf(fields, atomicUsage ? usage.slice() : undefined);
    const now = commitNowOf(s.stateStore);
    // Through Promise.resolve: a store may answer with any thenable, and the loop waits only for a native promise.
    if (now === undefined) return Promise.resolve(s.stateStore.commit(commit)).then(() => this.#committed(fields, atomicUsage));
    now.call(s.stateStore, commit);
    return this.#committed(fields, atomicUsage);
  }

  /** The commit of `fields` and the pending work. */
  #commitOf(fields: Pick<Commit, 'kind' | 'stepIndex' | 'checkpoint' | 'runStatus' | 'output' | 'error' | 'suspension'>, usage: readonly UsageEntry[] | undefined): Commit {
    const s = this.setup;
    // Field by field, absent ones as undefined (which every store reads as absent): one shape for every
    // commit, and no spread copies on each step.
    return {
      sessionId: s.sessionId,
      runId: s.runId,
      epoch: s.epoch,
      kind: fields.kind,
      stepIndex: fields.stepIndex,
      checkpoint: fields.checkpoint,
      runStatus: fields.runStatus,
      output: fields.output,
      error: fields.error,
      suspension: fields.suspension,
      appendMessages: this.work.pendingMessages(),
      state: this.work.changedState(),
      usage,
      committedAt: Date.now(),
    };
  }

  /** After the store accepted the commit: the working copy and the books move on, the recorder hears of the step. */
  #committed(fields: Pick<Commit, 'kind' | 'stepIndex'>, atomicUsage: boolean): void | Promise<void> {
    this.work.committed();
    if (atomicUsage) this.books.takeUsage();
    else {
      const flushed = this.flushUsage();
      if (flushed) return flushed.then(() => this.#stepCommitted(fields));
    }
    return this.#stepCommitted(fields);
  }

  #stepCommitted(fields: Pick<Commit, 'kind' | 'stepIndex'>): void | Promise<void> {
    if (fields.kind === 'step' && fields.stepIndex !== undefined) return this.recorder.stepCommitted(fields.stepIndex);
    return undefined;
  }

  /**
   * A commit never writes a state over `maxStateChars`: it throws `run_state_too_large`, and the failing
   * run's terminal commit (`ending`) goes back to the committed state instead.
   */
  #checkStateSize(ending: boolean): void {
    if (this.work.state === this.work.committedState) return;
    const max = this.setup.limits.maxStateChars;
    const size = this.work.stateOver(max);
    if (size === undefined) return;
    if (!ending) throw stateTooLarge(size, max);
    this.setup.logger.warn(`the state of failing run ${this.setup.runId} is ${size} characters long, over limits.maxStateChars (${max}); its uncommitted writes are dropped`, { runId: this.setup.runId });
    this.work.revertState();
  }

  /**
   * Hands buffered usage to the usage store (after the commit of the work it belongs to); a promise only
   * when there is a store to write to (without one the entries are dropped). A failed write is logged.
   */
  flushUsage(): void | Promise<void> {
    if (this.books.pendingUsage.length === 0) return undefined;
    const entries = this.books.takeUsage();
    const store = this.setup.usageStore;
    return store ? this.#recordUsage(store, entries) : undefined;
  }

  async #recordUsage(store: UsageStore, entries: readonly UsageEntry[]): Promise<void> {
    try {
      await store.record(entries);
    } catch (error) {
      this.setup.logger.error(`usage store write failed: ${error instanceof Error ? error.message : String(error)}`, { runId: this.setup.runId });
    }
  }

  /** The fields every chunk of this run carries. */
  chunkBase(): ChunkFields {
    const f = this.chunkFields;
    return { streamId: f.streamId, agentId: f.agentId, agentType: f.agentType, runId: f.runId, timestamp: Date.now() };
  }

  /**
   * Writes a chunk. A terminal chunk is written and waited for; any other is queued when the writer can
   * queue (a durable store then writes it with the step's commit), else written and waited for. Returns a
   * promise only when there is something to wait for (a queued chunk returns at once).
   */
  emit(chunk: StreamChunkInput): void | Promise<unknown> {
    const writer = this.setup.writer;
    if (writer.queue !== undefined && !isTerminalChunk(chunk)) {
      writer.queue(chunk);
      return undefined;
    }
    return writer.write(chunk);
  }

  /** Writes a chunk without waiting (writers apply writes in call order); a failure is logged. */
  emitNoWait(chunk: StreamChunkInput): void {
    const writer = this.setup.writer;
    if (writer.queue !== undefined) {
      try {
        writer.queue(chunk);
      } catch (error) {
        this.#logWriteFailure(error);
      }
      return;
    }
    writer.write(chunk).catch((error: unknown) => this.#logWriteFailure(error));
  }

  #logWriteFailure(error: unknown): void {
    this.setup.logger.error(`stream write failed: ${error instanceof Error ? error.message : String(error)}`, { runId: this.setup.runId });
  }

  durationMs(): number {
    return Date.now() - this.startedAt;
  }

  /** The run's token totals for its terminal chunk. */
  usageSummary(): ReturnType<RunBooks['summary']> {
    return this.books.summary(this.setup.agent.limits?.pricing !== undefined);
  }

  /** The run's result with `status`. */
  result(status: RunStatus, extra: Partial<AgentResult> = {}): AgentResult {
    return { status, sessionId: this.setup.sessionId, runId: this.setup.runId, state: this.work.state, stepCount: this.#stepCount, durationMs: this.durationMs(), ...extra };
  }
}
