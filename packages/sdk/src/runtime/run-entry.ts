import type { AgentConfig } from '../define.js';
import { AgentError, RunHandedOffError, RunInterruptedError, RunSupersededError, StateCommitError } from '../errors.js';
import { HookManager } from '../hooks/manager.js';
import type { AgentHooks } from '../hooks/types.js';
import type { LLMAdapter, LanguageModel, ModelRegistry } from '../llm.js';
import type { Message } from '../messages.js';
import type { BeginRunRequest, ClaimedRun, RunLease, RunOptionsRecord, StateStore } from '../store.js';
import { continuesDryRun, executionHooks, hookContextOf, rollupWithChildren, runOptionsRecord, turnInput } from './launch-records.js';
import type { ApprovalDecisionInfo, StartSignalKind, StreamChunkInput, StreamManager, StreamWriter } from '../stream.js';
import type { AgentHandle, RunCallOptions } from './agent-runtime.js';
import { crashPoint } from './crash-points.js';
import { ExecutionManagers } from './execution-managers.js';
import type { ModelReplyJournaling } from './executor-options.js';
import type { AuditHooks } from './hook-dispatch.js';
import { keepLease } from './lease.js';
import { resolveLimits, type ResourceLimits } from './limits.js';
import { resolveModel } from './model-registry.js';
import type { Logger } from './logger.js';
import type { AgentResult } from './result.js';
import { runLoop } from './run-loop.js';
import type { ChildRunner, RunSetup } from './run-setup.js';
import type { RunStart } from './run-start.js';
import { Run, type RunOrigin } from './run.js';
import { PacedRecorder, type Pacer } from './pacer.js';
import type { ResolvedReconcileOptions } from './reconcile-options.js';
import type { RunHost } from './run-host.js';
import { JournalStepRecorder } from './step-recorder.js';
import { approvalDecisions } from './tool-answers.js';
import type { KnownUsageStores } from './usage-stores.js';
import { WarmHooks } from './warm-hooks.js';

/** A run that just passed its entry (what {@link RunLauncher.onRun} listeners receive). */
export interface RunStartedInfo {
  readonly sessionId: string;
  readonly runId: string;
  readonly streamId: string;
  /** The offset of the run's run_started chunk in its stream. */
  readonly startSeq: number;
  readonly agentType: string;
  readonly parentSessionId?: string;
  /** True for a run continued by recover(). */
  readonly recovered: boolean;
}

/** What a run began with beyond its run-start commit (kept on the run record, so a recovery can finish it the same way). */
export type RecordedStart = Pick<RunStart, 'resumed' | 'retried' | 'deliveries' | 'stillPending' | 'extraMessage'>;

/** How a new run begins (see {@link RunLauncher.begin}). */
export interface BeginSpec {
  readonly signal: StartSignalKind;
  readonly input?: string;
  readonly initialState?: unknown;
  readonly newTurn?: boolean;
  readonly parentSessionId?: string;
  /** For a child run: the parent's tool call that started it. */
  readonly parentToolCallId?: string;
  /** The depth of a child run in its tree of sub-agents (0 or absent for a root run). */
  readonly depth?: number;
  readonly restoreCheckpointId?: string;
  readonly previousRunId?: string;
  readonly leadingRows?: readonly Message[];
  /** A new turn's input rows, when its input was an array of messages (otherwise one user row of `input`). */
  readonly inputRows?: readonly Message[];
  readonly expect?: BeginRunRequest['expect'];
  readonly start: RecordedStart;
}

/** What a launcher is configured with (the executor's options, resolved). */
export interface LauncherConfig {
  readonly stateStore: StateStore;
  readonly streamManager: StreamManager;
  readonly llmAdapter: LLMAdapter;
  readonly logger: Logger;
  readonly strictTerminalHooks: boolean;
  /** Which model replies are journaled before K3 (absent: `side-effects`). */
  readonly journalModelReplies?: ModelReplyJournaling;
  readonly auditHooks: AuditHooks;
  readonly generateId: (kind: 'run' | 'turn' | 'session') => string;
  readonly instanceId: string;
  readonly leaseMs: number;
  /** Starts the child runs of sub-agent calls. */
  readonly children?: ChildRunner;
  /** The executor's size limits (an agent's own win). */
  readonly limits?: ResourceLimits;
  /** Resolves agents' model ids. */
  readonly providers?: ModelRegistry;
  /** Where loops run (absent: in this process, right after the entry). */
  readonly host?: RunHost;
  /** Told when a run of this launcher has ended here (before its handle's result resolves). */
  readonly onEnded?: (ended: RunEndedInfo) => Promise<void>;
  /** The §2 reconciliation variants (C2, C6, C16) for every run. */
  readonly reconcile?: ResolvedReconcileOptions;
  /** Told of every usage store a run is given (so deleting a session can clean them). */
  readonly usageStores?: KnownUsageStores;
}

/** A run that ended in this process, as {@link LauncherConfig.onEnded} hears of it. */
export interface RunEndedInfo {
  readonly sessionId: string;
  readonly parentSessionId?: string;
  readonly result: AgentResult;
}

/** A run live in this process, as the executor's shutdown sees it. */
export interface LiveRun {
  readonly handle: AgentHandle;
  /** How many of its sub-agent calls wait for their children right now. */
  childWaits(): number;
  /** Lets the run go: it stops without a terminal hook, its lease is released, and recover() elsewhere continues it. */
  handOff(): Promise<AgentResult>;
  /** True once another process took the run over (its lease was lost): nothing of it is this process's to hand off. */
  lost(): boolean;
  /** Resolves once the run's start signal has fired (or the run ended). */
  readonly opened: Promise<void>;
  /** A newer run (`newerRunId`) of the session began here: the run's sub-agent calls stop the children they wait for. */
  supersededBy(newerRunId: string): void;
}

const EMPTY_MANAGER = new HookManager<unknown, unknown>();

/**
 * Starts runs: the entry (run-start commit, stream claim, run_started chunk; a failure there rejects
 * and fires no hook), then the loop in the background, holding the run's lease. Also keeps what the
 * runs of one executor share: hook managers per agent, warmed class-based hooks, run listeners and the
 * runs live in this process.
 */
export class RunLauncher {
  readonly #config: LauncherConfig;
  readonly #warm = new WarmHooks();
  readonly #listeners = new Set<(info: RunStartedInfo) => void>();
  readonly #agentHooks = new WeakMap<object, HookManager<unknown, unknown>>();
  readonly #executionManagers = new ExecutionManagers();
  readonly #live = new Map<string, LiveRun>();

  constructor(config: LauncherConfig) {
    this.#config = config;
    config.host?.bind(this);
  }

  /** The run this process is running on `sessionId`, if any. */
  live(sessionId: string): AgentHandle | undefined {
    return this.#live.get(sessionId)?.handle;
  }

  /** Resolves once the start signal of the run live here on `sessionId` has fired (at once when none is live). */
  async opened(sessionId: string): Promise<void> {
    await this.#live.get(sessionId)?.opened;
  }

  /** Every run live in this process. */
  liveRuns(): LiveRun[] {
    return [...this.#live.values()];
  }

  /** Begins a run: K1 (which may open a turn or restore a checkpoint), the stream claim and run_started, then the loop (on the host, when there is one). */
  async begin(agent: AgentConfig<unknown, unknown>, sessionId: string, options: RunCallOptions, spec: BeginSpec): Promise<AgentHandle> {
    // Before anything is written, here or on a host: a model id the registry does not know refuses the entry.
    this.modelFor(agent);
    const runId = this.#config.generateId('run');
    const host = this.#config.host;
    if (host) return host.begin({ runId, sessionId, agent, options, spec, enter: (pacer) => this.beginHere(agent, sessionId, options, spec, runId, pacer) });
    return this.beginHere(agent, sessionId, options, spec, runId, undefined);
  }

  /** The entry of run `runId` in this process, then its loop: at once, or held by `pacer` (for a host). */
  async beginHere(agent: AgentConfig<unknown, unknown>, sessionId: string, options: RunCallOptions, spec: BeginSpec, runId: string, pacer: Pacer | undefined): Promise<AgentHandle> {
    const c = this.#config;
    const model = this.modelFor(agent);
    const hooks = this.hooksFor(agent, options.hooks, options.hookManager);
    await this.#warmRun(agent, hooks);
    const turnId = c.generateId('turn');
    const startedAt = Date.now();
    const input = spec.input ?? '';
    const inputMessages: readonly Message[] = spec.newTurn ? [...(spec.leadingRows ?? []), ...(spec.inputRows ?? [{ role: 'user', content: input }])] : [];
    const record = runOptionsRecord(spec, options, options.dryRun === true || (await continuesDryRun(c.stateStore, spec.previousRunId)));
    const begun = await c.stateStore.beginRun({
      sessionId,
      runId,
      agentType: agent.name,
      signal: spec.signal,
      initialState: spec.initialState,
      ...(spec.parentSessionId === undefined ? {} : { parentSessionId: spec.parentSessionId }),
      ...(spec.newTurn ? { newTurn: { turnId, input: inputMessages } } : {}),
      ...(spec.restoreCheckpointId === undefined ? {} : { restoreCheckpointId: spec.restoreCheckpointId }),
      ...(spec.expect === undefined ? {} : { expect: spec.expect }),
      startedAt,
      leaseOwner: c.instanceId,
      leaseMs: c.leaseMs,
      options: record,
    });
    crashPoint('after_k1');
    this.#supersedeLive(sessionId, runId);
    const writer = await this.#enter(sessionId, runId, begun.lease, agent.name, spec.signal, input, approvalDecisions(spec.start.deliveries));
    const turn = begun.session.turn;
    const setup = this.#setup({ agent, model, hooks, writer, usageStore: options.usageStore, sessionId, runId, turnId: turn?.turnId ?? turnId, epoch: begun.lease.epoch, ...executionHooks(options, this.#executionManagers), ...hookContextOf(options) }, record);
    return this.#launch(setup, begun.lease, { state: begun.session.state, messages: begun.session.messages, startedAt }, undefined, {
      ...spec.start,
      signal: spec.signal,
      input: spec.newTurn ? input : turnInput(turn?.input),
      inputMessages: spec.newTurn ? inputMessages : (turn?.input ?? []),
      turnStartCommitted: spec.newTurn ? false : turn?.startCommitted === true,
      signalFired: false,
    }, options.abortSignal, pacer);
  }

  /** Run `runId` took the session: the session's run still going here is superseded now, so its children do not run on for nothing. */
  #supersedeLive(sessionId: string, runId: string): void {
    const older = this.#live.get(sessionId);
    if (older && older.handle.runId !== runId) older.supersededBy(runId);
  }

  /** Continues a run this process claimed for recovery, from its last commit, replaying its journal (held by `pacer`, for a host). */
  async continueClaimed(agent: AgentConfig<unknown, unknown>, claimed: ClaimedRun, hookSources: Pick<RunCallOptions, 'hooks' | 'hookManager' | 'usageStore' | 'hookContext'>, pacer?: Pacer): Promise<AgentHandle> {
    const { session, run, lease, journal } = claimed;
    const model = this.modelFor(agent);
    const hooks = this.hooksFor(agent, hookSources.hooks, hookSources.hookManager);
    await this.#warmRun(agent, hooks);
    const turn = session.turn;
    const input = turnInput(turn?.input) || (run.options.input ?? '');
    const writer = await this.#enter(session.sessionId, run.runId, lease, agent.name, run.signal, input, approvalDecisions((run.options.start as RecordedStart | undefined)?.deliveries));
    const setup = this.#setup({ agent, model, hooks, writer, usageStore: hookSources.usageStore, sessionId: session.sessionId, runId: run.runId, turnId: run.turnId, epoch: lease.epoch, ...executionHooks(hookSources, this.#executionManagers), ...hookContextOf(hookSources) }, run.options);
    // Another process asked for this run to stop while nobody ran it: it stops at once.
    if (run.stopRequest !== undefined) setup.abort.abort(new RunInterruptedError(run.stopRequest.reason));
    return this.#launch(setup, lease, { state: session.state, messages: session.messages, startedAt: run.startedAt, stepCount: run.stepCount }, journal, {
      ...((run.options.start ?? {}) as RecordedStart),
      signal: run.signal,
      input,
      inputMessages: turn?.input ?? [],
      turnStartCommitted: turn?.startCommitted === true,
      // A committed step means the signal fired; a marker in the journal says the same (the recorder knows).
      signalFired: run.stepCount > 0,
      ...(run.output === undefined ? {} : { committedOutput: { value: run.output } }),
    }, undefined, pacer);
  }

  /** The model `agent`'s runs call (its model id resolved through the providers registry); a ConfigError when it cannot be resolved. */
  modelFor(agent: AgentConfig<unknown, unknown>): LanguageModel {
    return resolveModel(agent, this.#config.providers);
  }

  /** Calls `listener` for every run started or recovered here, right after its entry; returns the function that removes it. */
  onRun(listener: (info: RunStartedInfo) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Agent hooks first, then the execution's manager, then its hooks; cached per agent when there are no
   * execution hooks, and per `hooks` object (see {@link ExecutionManagers}) when there are. An execution-level handler the agent already registers at the same point (the same
   * function, or the same class-based hook) is not run a second time: a child that inherits its parent's
   * execution-level hooks and has them on its own agent too runs them once.
   */
  hooksFor(agent: AgentConfig<unknown, unknown>, hooks: AgentHooks | undefined, hookManager: HookManager | undefined): HookManager<unknown, unknown> {
    const own = this.#agentManager(agent);
    if (!hooks && !hookManager) return own;
    return this.#executionManagers.managerFor(own, hooks, hookManager);
  }

  #agentManager(agent: AgentConfig<unknown, unknown>): HookManager<unknown, unknown> {
    if (!agent.hooks) return EMPTY_MANAGER;
    let cached = this.#agentHooks.get(agent);
    if (!cached) {
      cached = new HookManager<unknown, unknown>(agent.hooks);
      this.#agentHooks.set(agent, cached);
    }
    return cached;
  }

  /** Calls `warmUp()` once on every class-based hook of `hooks` not warmed yet; close() closes them. */
  async warmUp(hooks: HookManager<unknown, unknown>): Promise<void> {
    await this.#warm.warm(hooks.hookObjects(), 'hold');
  }

  /**
   * Warms up a run's class-based hooks not warmed yet: the agent's own are held until close(); those only
   * the execution brought are remembered weakly, so that a fresh object per execute is not kept alive
   * by this executor once its runs ended (see {@link WarmHooks}).
   */
  async #warmRun(agent: AgentConfig<unknown, unknown>, hooks: HookManager<unknown, unknown>): Promise<void> {
    const own = this.#agentManager(agent).hookObjects();
    await this.#warm.warm(own, 'hold');
    if (hooks.hookObjects().length > own.length) await this.#warm.warm(hooks.hookObjects(), 'weak');
  }

  /** Calls `close()` once on every class-based hook warmed here that still exists, newest first. */
  async close(): Promise<void> {
    await this.#warm.close();
  }

  #setup(
    own: Pick<RunSetup, 'agent' | 'model' | 'hooks' | 'writer' | 'usageStore' | 'sessionId' | 'runId' | 'turnId' | 'epoch' | 'executionHooks' | 'hookContext'>,
    who: Pick<RunOptionsRecord, 'userId' | 'tags' | 'metadata' | 'parentSessionId' | 'parentToolCallId' | 'depth' | 'dryRun'>,
  ): RunSetup {
    const c = this.#config;
    c.usageStores?.remember(own.usageStore);
    // One literal with every field, absent ones undefined: every run's setup has the same shape, and no
    // conditional spread copies an object of its own (readers test each optional field against undefined).
    return {
      agent: own.agent,
      model: own.model,
      hooks: own.hooks,
      writer: own.writer,
      usageStore: own.usageStore,
      sessionId: own.sessionId,
      runId: own.runId,
      turnId: own.turnId,
      epoch: own.epoch,
      executionHooks: own.executionHooks,
      hookContext: own.hookContext,
      stateStore: c.stateStore,
      logger: c.logger,
      streamId: own.sessionId,
      abort: new AbortController(),
      strictTerminalHooks: c.strictTerminalHooks,
      journalModelReplies: c.journalModelReplies === 'always' ? 'always' : undefined,
      auditHooks: c.auditHooks,
      depth: who.depth ?? 0,
      limits: resolveLimits(c.limits, own.agent.limits),
      children: c.children,
      parentSessionId: who.parentSessionId,
      parentToolCallId: who.parentToolCallId,
      userId: who.userId,
      tags: who.tags,
      metadata: who.metadata,
      dryRun: who.dryRun === true ? true : undefined,
      reconcile: c.reconcile,
    };
  }

  /** The stream claim and run_started chunk (with the approval decisions a resumed run delivers); a failure records the run failed (best effort) and rethrows. */
  async #enter(sessionId: string, runId: string, lease: RunLease, agentType: string, signal: StartSignalKind, input: string, decisions: readonly ApprovalDecisionInfo[]): Promise<StreamWriter> {
    const c = this.#config;
    try {
      return await this.#claim(sessionId, runId, { type: 'run_started', signal, input, ...(decisions.length > 0 ? { decisions } : {}), streamId: sessionId, agentId: sessionId, agentType, runId, timestamp: Date.now() });
    } catch (error) {
      const info = AgentError.isInstance(error) ? error.info : new StateCommitError(error instanceof Error ? error.message : String(error)).info;
      await c.stateStore
        .commit({ sessionId, runId, epoch: lease.epoch, kind: 'terminal', runStatus: 'failed', error: info, committedAt: Date.now() })
        .catch((e: unknown) => c.logger.error(`could not record the failed entry of run ${runId}: ${String(e)}`));
      throw error;
    }
  }

  /**
   * Claims the stream and writes run_started. Two entries racing on one session both pass their K1 (the
   * later one supersedes the earlier); the stream then goes to whichever claims last. The entry that is
   * no longer the session's current run loses with a non-retryable `state_run_superseded` naming the run
   * that won (retrying would supersede the winner); the current run whose claim an older entry took
   * claims again.
   */
  async #claim(sessionId: string, runId: string, started: StreamChunkInput): Promise<StreamWriter> {
    const c = this.#config;
    for (let attempt = 0; ; attempt++) {
      const writer = await c.streamManager.claim(sessionId, runId);
      if (await writer.write(started)) return writer;
      const current = (await c.stateStore.loadSession(sessionId))?.currentRunId;
      if (current !== runId) throw new RunSupersededError(sessionId, runId, current);
      if (attempt > 0) throw new StateCommitError(`Run ${runId} lost its stream to another run before it started.`);
    }
  }

  #launch(setup: RunSetup, lease: RunLease, origin: RunOrigin, journal: ClaimedRun['journal'] | undefined, start: RunStart, abortSignal: AbortSignal | undefined, pacer: Pacer | undefined): AgentHandle {
    const c = this.#config;
    const { abort, runId, sessionId } = setup;
    // The caller's signal may outlive the run (one signal for many runs): its listener goes when the run ends.
    const onCallerAbort = (): void => abort.abort(new RunInterruptedError());
    if (abortSignal?.aborted) onCallerAbort();
    else abortSignal?.addEventListener('abort', onCallerAbort, { once: true });
    const journaled = new JournalStepRecorder(c.stateStore, { runId, epoch: setup.epoch }, journal ?? []);
    const run = new Run(setup, origin, pacer ? new PacedRecorder(journaled, pacer) : journaled);
    this.#announce({ sessionId, runId, streamId: setup.streamId, startSeq: setup.writer.startSeq, agentType: setup.agent.name, recovered: journal !== undefined, ...(setup.parentSessionId === undefined ? {} : { parentSessionId: setup.parentSessionId }) });
    const stopLease = keepLease(c.stateStore, lease, c.leaseMs, abort, c.logger);
    const looped = pacer ? pacer.started().then(() => runLoop(run, c.llmAdapter, start)) : runLoop(run, c.llmAdapter, start);
    const done = looped
      .catch((error: unknown): AgentResult => {
        // The loop handles every ending itself; reaching this is a bug, reported rather than lost.
        c.logger.error(`run ${runId} crashed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
        return run.result('failed', { error: AgentError.isInstance(error) ? error.info : new AgentError('run_internal_error', String(error)).info });
      })
      .finally(() => {
        stopLease();
        pacer?.end();
        abortSignal?.removeEventListener('abort', onCallerAbort);
      })
      .then((result) => this.#ended(setup, result));
    const stop = async (reason?: string): Promise<AgentResult> => {
      if (!abort.signal.aborted) abort.abort(new RunInterruptedError(reason ?? 'The run was interrupted.'));
      return done;
    };
    const usageStore = setup.usageStore;
    const handle: AgentHandle = {
      sessionId,
      runId,
      streamId: setup.streamId,
      result: () => done,
      stream: (options) => c.streamManager.read(setup.streamId, { fromSeq: setup.writer.startSeq, untilRunEnds: runId, ...(options?.signal ? { signal: options.signal } : {}) }),
      getUsageRollup: async () => (usageStore ? rollupWithChildren(await usageStore.getRollup({ runId }), run.books.children()) : undefined),
      stop,
      interrupt: stop,
    };
    const live: LiveRun = {
      handle,
      childWaits: () => run.books.childWaits,
      handOff: async () => {
        if (!abort.signal.aborted) abort.abort(new RunHandedOffError(sessionId, runId));
        return done;
      },
      opened: run.opened,
      supersededBy: (newerRunId) => run.supersededBy(new RunSupersededError(sessionId, runId, newerRunId)),
      lost: () => stopLease.lost || (abort.signal.aborted && RunSupersededError.isInstance(abort.signal.reason) && !RunHandedOffError.isHandOff(abort.signal.reason)),
    };
    this.#live.set(sessionId, live);
    void done.then(() => {
      if (this.#live.get(sessionId) === live) this.#live.delete(sessionId);
    });
    return handle;
  }

  /**
   * After the loop: a run let go at shutdown releases its lease (so any process may recover it at
   * once), then the executor hears of the ending (a parent may resume), then the handle resolves.
   */
  async #ended(setup: RunSetup, result: AgentResult): Promise<AgentResult> {
    const c = this.#config;
    if (result.status === 'running') {
      await c.stateStore.renewLease(setup.runId, setup.epoch, 0, Date.now()).catch((error: unknown) => c.logger.warn(`releasing the lease of run ${setup.runId} failed: ${String(error)}`));
    }
    await c.onEnded?.({ sessionId: setup.sessionId, ...(setup.parentSessionId === undefined ? {} : { parentSessionId: setup.parentSessionId }), result }).catch((error: unknown) => {
      c.logger.error(`after the end of run ${setup.runId}: ${error instanceof Error ? error.message : String(error)}`);
    });
    return result;
  }

  #announce(info: RunStartedInfo): void {
    for (const listener of this.#listeners) {
      try {
        listener(info);
      } catch (error) {
        this.#config.logger.warn(`an onRun listener threw: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  }
}
