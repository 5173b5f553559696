import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { AgentConfig } from '../define.js';
import { AgentError, ConfigError } from '../errors.js';
import { HookManager } from '../hooks/manager.js';
import type { LLMAdapter } from '../llm.js';
import { GENESIS_CHECKPOINT } from '../store.js';
import type { CheckpointInfo, RunRecord, SessionSnapshot, StateStore } from '../store.js';
import type { StreamChunk, StreamManager, StreamReadOptions } from '../stream.js';
import type { UsageStore } from '../usage.js';
import type { AgentHandle, AgentRuntime, ExecuteOptions, RecoverOptions, ResumeOptions, RetryOptions, RunCallOptions } from './agent-runtime.js';
import { ApprovalSigner } from './approval-signature.js';
import { resolveReconcile } from './reconcile-options.js';
import { cancelledRows, checkRestorable, childRunOptions, initialStateOf, lastRestorable, type JSAgentExecutorOptions } from './executor-options.js';
import { checkInputText, checkInputValue, checkResourceLimits, resolveLimits, tooManyMessages, type ResolvedLimits, type ResourceLimits } from './limits.js';
import { consoleLogger, type Logger } from './logger.js';
import { recoverRuns } from './recovery.js';
import type { AgentResult } from './result.js';
import { resumeAnswers } from './resume-answers.js';
import { attachedHandle } from './attached-handle.js';
import { checkSessionId } from './session-id.js';
import { KnownUsageStores } from './usage-stores.js';
import { RunLauncher, type BeginSpec, type RunStartedInfo } from './run-entry.js';
import type { ChildStart } from './run-setup.js';
import { shutDown, SubAgentTree, type NestedPendingCall } from './sub-agent-tree.js';
import { normalizeTurnInput, type TurnInput } from './turn-input.js';

export type { RunStartedInfo } from './run-entry.js';

export type { JSAgentExecutorOptions, ModelReplyJournaling } from './executor-options.js';
export type { NestedPendingCall } from './sub-agent-tree.js';

/**
 * runtime-js: runs agents in this process over any {@link StateStore}, {@link StreamManager} and
 * {@link LLMAdapter}. Runs hold a lease they renew; `recover()` continues runs whose process died.
 */
export class JSAgentExecutor implements AgentRuntime {
  readonly #launcher: RunLauncher;
  readonly #logger: Logger;
  readonly #agents = new Map<string, AgentConfig<unknown, unknown>>();
  readonly #signer: ApprovalSigner | undefined;
  readonly #generateId: (kind: 'run' | 'turn' | 'session') => string;
  readonly #attachTimeoutMs: number;
  readonly #limits: ResourceLimits | undefined;
  readonly #tree: SubAgentTree;
  /** The usage stores runs here were given: deleteSession drops the session's entries there too. */
  readonly #usageStores = new KnownUsageStores();
  /** Aborted while shutdown() runs: sub-agent calls stop waiting, and runs let themselves go. */
  #shutdown = new AbortController();
  /** This process's name on leases. */
  readonly instanceId: string;
  readonly leaseMs: number;

  constructor(
    readonly stateStore: StateStore,
    readonly streamManager: StreamManager,
    readonly llmAdapter: LLMAdapter,
    options: JSAgentExecutorOptions = {},
  ) {
    checkResourceLimits(options.limits, 'JSAgentExecutor');
    this.#limits = options.limits;
    this.#logger = options.logger ?? consoleLogger;
    this.#generateId = options.generateId ?? (() => randomUUID());
    this.instanceId = options.instanceId ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    this.leaseMs = options.leaseMs ?? 30_000;
    this.#attachTimeoutMs = options.attachedSubAgentTimeoutMs ?? 30 * 60_000;
    this.#signer = options.approvalSecret === undefined ? undefined : new ApprovalSigner(options.approvalSecret);
    const maxDepth = options.maxSubAgentDepth ?? 5;
    const shutdownSignal = (): AbortSignal => this.#shutdown.signal;
    this.#launcher = new RunLauncher({
      stateStore,
      streamManager,
      llmAdapter,
      logger: this.#logger,
      strictTerminalHooks: options.strictTerminalHooks ?? false,
      journalModelReplies: options.journalModelReplies ?? 'side-effects',
      auditHooks: options.auditHooks ?? 'decisions',
      generateId: this.#generateId,
      instanceId: this.instanceId,
      leaseMs: this.leaseMs,
      ...(options.limits === undefined ? {} : { limits: options.limits }),
      ...(options.providers === undefined ? {} : { providers: options.providers }),
      ...(options.host === undefined ? {} : { host: options.host }),
      children: {
        maxDepth,
        maxPerStep: options.maxSubAgentsPerStep ?? 16,
        start: (agent, input, child) => this.#startChild(agent, input, child),
        get shutdown() {
          return shutdownSignal();
        },
      },
      onEnded: (ended) => this.#tree.runEnded(ended),
      reconcile: resolveReconcile(options),
      usageStores: this.#usageStores,
    });
    this.#tree = new SubAgentTree({
      stateStore,
      logger: this.#logger,
      maxDepth,
      agent: (agentType) => this.#agents.get(agentType),
      isLive: (sessionId) => this.#launcher.live(sessionId) !== undefined,
      shuttingDown: () => this.#shutdown.signal.aborted,
      resumeContinue: (sessionId) => this.resume(sessionId, { mode: 'continue' }),
    });
    for (const agent of options.agents ?? []) this.registerAgent(agent);
  }

  /**
   * Starts a run and resolves once its entry (K1 run-start commit, stream claim, run_started chunk)
   * is done. An entry failure rejects with a typed error and fires no hook at all (docs/rules.md, rule 10).
   */
  async execute<TState, TOutput, THookContext = unknown>(
    agent: AgentConfig<TState, TOutput>,
    input: TurnInput,
    options: ExecuteOptions<NoInfer<TState>, NoInfer<TOutput>, THookContext> = {},
  ): Promise<AgentHandle<TState, TOutput>> {
    return (await this.#newTurn(agent as unknown as AgentConfig<unknown, unknown>, input, options as ExecuteOptions)) as AgentHandle<TState, TOutput>;
  }

  /** A new turn on a new or existing session; a child's `lineage` places it in its tree of sub-agents. */
  async #newTurn(agent: AgentConfig<unknown, unknown>, input: TurnInput, options: ExecuteOptions, lineage: Pick<BeginSpec, 'depth' | 'parentToolCallId'> = {}): Promise<AgentHandle> {
    const erased = agent;
    const limits = this.#limitsOf(agent);
    // A string, ModelMessages or UIMessages, checked and converted before anything is written.
    const turn = await normalizeTurnInput(input, limits);
    this.registerAgent(erased);
    const sessionId = checkSessionId(options.sessionId ?? this.#generateId('session'));
    if (options.parentSessionId !== undefined) checkSessionId(options.parentSessionId, 'parent session id');
    const existing = await this.stateStore.loadSession(sessionId);
    const initialState: unknown = existing ? existing.state : initialStateWithin(agent, options.initialState, limits);
    // A new turn on a session suspended at a boundary cancels the calls it was waiting on (their rows
    // keep the transcript valid: every tool call has a result).
    const suspendedRun = existing?.currentRunId === undefined ? undefined : await this.stateStore.getRun(existing.currentRunId);
    const leadingRows = suspendedRun?.status === 'suspended' ? cancelledRows(suspendedRun.suspension?.pending ?? []) : [];
    const rows = (existing?.messages.length ?? 0) + leadingRows.length + (turn.rows?.length ?? 1);
    if (rows > limits.maxMessages) throw tooManyMessages(rows, limits.maxMessages, true);
    return this.#launcher.begin(erased, sessionId, options as RunCallOptions, {
      signal: 'start',
      input: turn.text,
      ...(turn.rows === undefined ? {} : { inputRows: turn.rows }),
      initialState,
      newTurn: true,
      // The cancelled rows are part of the turn's input, so owed start work appends them again too.
      leadingRows,
      // The session must still be suspended at K1 when this turn cancels its pending calls.
      ...(leadingRows.length > 0 && suspendedRun ? { expect: { currentRunId: suspendedRun.runId, status: 'suspended' as const } } : {}),
      ...(options.parentSessionId === undefined ? {} : { parentSessionId: options.parentSessionId }),
      ...lineage,
      start: {},
    });
  }

  /**
   * A sub-agent call's child: a new turn in the child's derived session, or, when a recovered parent
   * finds the child already spawned, the child's run as it stands (ended, live here, or continued
   * elsewhere: then its end is awaited).
   */
  async #startChild(agent: AgentConfig<unknown, unknown>, input: string, child: ChildStart): Promise<AgentHandle> {
    this.registerAgent(agent);
    const existing = child.attach ? await this.stateStore.loadSession(child.sessionId) : undefined;
    if (existing?.currentRunId !== undefined) {
      const live = this.#launcher.live(child.sessionId);
      if (live) return live;
      // Its process sees a stop request at its next lease renewal, so a stop lands within a lease.
      const wait = { timeoutMs: this.#attachTimeoutMs, stopWaitMs: this.leaseMs, logger: this.#logger, ...(child.usageStore ? { usageStore: child.usageStore } : {}) };
      return attachedHandle(this.stateStore, this.streamManager, existing.sessionId, existing.currentRunId, wait);
    }
    const options: ExecuteOptions = { sessionId: child.sessionId, parentSessionId: child.parentSessionId, ...child.attribution, ...(child.usageStore ? { usageStore: child.usageStore } : {}), ...(child.executionHooks ? { hookManager: child.executionHooks } : {}), ...childRunOptions(child) };
    return this.#newTurn(agent, input, options, { depth: child.depth, parentToolCallId: child.parentToolCallId });
  }

  /** The size limits of `agent`'s runs on this executor. */
  #limitsOf(agent: AgentConfig<unknown, unknown>): ResolvedLimits {
    return resolveLimits(this.#limits, agent.limits);
  }

  /** Adds an agent to the registry that resume(), retry(), send() and recover() look sessions' agents up in. execute() registers its agent. */
  registerAgent(agent: AgentConfig<unknown, unknown>): this {
    this.#agents.set(agent.name, agent);
    return this;
  }

  /** The registered agent named `agentType`, or undefined. */
  registeredAgent(agentType: string): AgentConfig<unknown, unknown> | undefined {
    return this.#agents.get(agentType);
  }

  /** A chat send: a new turn on an existing session, with the session's (registered) agent; `message` is a {@link TurnInput}. */
  async send(sessionId: string, message: TurnInput, options: RunCallOptions = {}): Promise<AgentHandle> {
    const session = await this.#session(sessionId);
    return this.execute(this.#agentFor(session.agentType), message, { ...options, sessionId });
  }

  /**
   * Resumes a session (v7: a fresh run). `continue` / `with_confirmation` deliver answers to the calls
   * the suspended run waits on (client results, approvals, rejections; finished children) and fire
   * onAgentResumed; calls left unanswered suspend the new run again at once. `with_message` starts a new
   * turn (onAgentStart), cancelling pending calls. `from_checkpoint` rewinds to a listed checkpoint and
   * fires onAgentResumed (with resumedFromCheckpointId). A refused resume changes nothing. Answers for
   * calls a sub-agent descendant waits on go to that descendant's session (see {@link pendingCalls}):
   * it resumes, then so do its ancestors, which re-attach to it; the handle is then this session's new run.
   */
  async resume(sessionId: string, options: ResumeOptions): Promise<AgentHandle> {
    const session = await this.#session(sessionId);
    const agent = this.#agentFor(session.agentType);
    if (options.mode === 'with_message') return this.send(sessionId, options.message, options);
    checkAnswers(options, this.#limitsOf(agent));
    const previousRunId = session.currentRunId;
    if (options.mode === 'from_checkpoint') {
      await checkRestorable(this.stateStore, sessionId, options.checkpointId);
      return this.#launcher.begin(agent, sessionId, options, {
        signal: 'resumed',
        restoreCheckpointId: options.checkpointId,
        previousRunId: previousRunId ?? '',
        start: { resumed: { previousRunId: previousRunId ?? '', resumedFromCheckpointId: options.checkpointId } },
      });
    }
    const run = previousRunId === undefined ? undefined : await this.stateStore.getRun(previousRunId);
    if (!run || run.status !== 'suspended' || !run.suspension) {
      throw new AgentError('session_not_suspended', `Session ${sessionId} is not suspended${run ? ` (its run is ${run.status})` : ''}.`, { details: { sessionId } });
    }
    const target = await this.#tree.route(sessionId, run.suspension.pending, options);
    if (target !== undefined) {
      const handle = await this.resume(target, options);
      return this.#launcher.live(sessionId) ?? handle;
    }
    const deliveries = await resumeAnswers(this.stateStore, sessionId, run.runId, run.suspension.pending, options, this.#signer, (p) => this.#tree.reattachable(agent, p));
    const answered = new Set(deliveries.map((d) => d.pending.toolCallId));
    const stillPending = run.suspension.pending.filter((p) => !answered.has(p.toolCallId));
    const handle = await this.#launcher.begin(agent, sessionId, options, {
      signal: 'resumed',
      previousRunId: run.runId,
      // Checked inside K1: of two concurrent resumes, only the first delivers its answers.
      expect: { currentRunId: run.runId, status: 'suspended' },
      start: { resumed: { previousRunId: run.runId }, deliveries, stillPending },
    });
    // A child running again: once its onAgentResumed fired, the parent waiting on it resumes too and
    // re-attaches (its ancestors in turn).
    if (session.parentSessionId !== undefined) {
      await this.#launcher.opened(sessionId);
      await this.#tree.wake(session.parentSessionId, { kind: 'resumed', childSessionId: sessionId });
    }
    return handle;
  }

  /**
   * The client-tool and approval calls that `sessionId` and its suspended sub-agent descendants wait on,
   * nearest first, each with the session and run that asked (what a signature binds). Any of them can
   * be answered through `sessionId` (approve(), reject(), submitToolResult() with the call's id).
   */
  async pendingCalls(sessionId: string): Promise<NestedPendingCall[]> {
    return this.#tree.pendingCalls(checkSessionId(sessionId));
  }

  /** The handle of the run this executor runs on the session (one it started, recovered or resumed by itself), if any. */
  current(sessionId: string): AgentHandle | undefined {
    return this.#launcher.live(checkSessionId(sessionId));
  }

  /**
   * Lets go of every run here, because this process must stop. A run waiting on sub-agent children
   * suspends (reason `awaiting_children`) and resumes by itself once they have ended, wherever that
   * happens; every other run is handed off: it stops without a terminal hook (its handle resolves with
   * status `running` and `run_handed_off`), its lease is released, and recover() in any process on the
   * same store continues it from its last commit (runs started while it runs are let go too). Resolves
   * once nothing runs here; runs started afterwards run as usual. close() calls it.
   */
  async shutdown(): Promise<void> {
    await shutDown(() => this.#launcher.liveRuns(), this.#shutdown, this.#tree);
    // Runs started afterwards run as usual (an executor may be used again after close()).
    this.#shutdown = new AbortController();
  }

  /** Answers one pending client tool call; the session resumes (continue) with it. */
  async submitToolResult(sessionId: string, toolCallId: string, result: unknown, options: RunCallOptions & { readonly isError?: boolean } = {}): Promise<AgentHandle> {
    return this.resume(sessionId, { ...options, mode: 'continue', toolResults: [{ toolCallId, result, ...(options.isError === undefined ? {} : { isError: options.isError }) }] });
  }

  /** Approves one pending call (optionally with edited arguments); the session resumes (with_confirmation). */
  async approve(sessionId: string, toolCallId: string, options: RunCallOptions & { readonly input?: unknown; readonly reason?: string; readonly signature?: string } = {}): Promise<AgentHandle> {
    const { input, reason, signature, ...rest } = options;
    return this.resume(sessionId, {
      ...rest,
      mode: 'with_confirmation',
      decisions: [{ toolCallId, decision: 'approve', ...(input === undefined ? {} : { input }), ...(reason === undefined ? {} : { reason }), ...(signature === undefined ? {} : { signature }) }],
    });
  }

  /** Rejects one pending call; the reason goes back to the model (`permission_denied`); the session resumes. */
  async reject(sessionId: string, toolCallId: string, options: RunCallOptions & { readonly reason?: string; readonly signature?: string } = {}): Promise<AgentHandle> {
    const { reason, signature, ...rest } = options;
    return this.resume(sessionId, {
      ...rest,
      mode: 'with_confirmation',
      decisions: [{ toolCallId, decision: 'reject', ...(reason === undefined ? {} : { reason }), ...(signature === undefined ? {} : { signature }) }],
    });
  }

  /**
   * Re-runs a failed or interrupted run as a new run: restores its last step (or turn-start) checkpoint
   * (or `checkpointId`; genesis when there is none), fires onAgentRetry, runs owed start work, appends
   * `message` when given, and goes on.
   */
  async retry(sessionId: string, options: RetryOptions = {}): Promise<AgentHandle> {
    const session = await this.#session(sessionId);
    const agent = this.#agentFor(session.agentType);
    if (options.message !== undefined) checkInputText(options.message, this.#limitsOf(agent), 'retry message');
    const failed = session.currentRunId === undefined ? undefined : await this.stateStore.getRun(session.currentRunId);
    if (!failed || (failed.status !== 'failed' && failed.status !== 'interrupted')) {
      throw new AgentError('session_not_retryable', `Session ${sessionId} has no failed or interrupted run to retry${failed ? ` (its run is ${failed.status})` : ''}.`, { details: { sessionId } });
    }
    const checkpointId = options.checkpointId ?? (await lastRestorable(this.stateStore, sessionId));
    const hasMessage = options.message !== undefined;
    return this.#launcher.begin(agent, sessionId, options, {
      signal: 'retry',
      restoreCheckpointId: checkpointId,
      previousRunId: failed.runId,
      expect: { currentRunId: failed.runId, status: failed.status },
      start: {
        retried: { retriedRunId: failed.runId, hasMessage, ...(checkpointId === GENESIS_CHECKPOINT ? {} : { checkpointId }) },
        ...(options.message === undefined ? {} : { extraMessage: options.message }),
      },
    });
  }

  /**
   * Stops the session's current run (see {@link AgentHandle.stop}). When another process runs it, a stop
   * request is recorded in the store; the process holding the run's lease stops the run at its next renewal
   * (within a third of its lease), and this resolves once the run ended (or `interrupted` after one lease
   * length). Undefined when nothing runs on the session.
   */
  async stop(sessionId: string, reason?: string): Promise<AgentResult | undefined> {
    const id = checkSessionId(sessionId);
    const handle = this.#launcher.live(id);
    if (handle) return handle.stop(reason);
    // Another process runs it: a stop request in the store, which that process acts on at its next lease renewal.
    const session = await this.stateStore.loadSession(id);
    const run = session?.currentRunId === undefined ? undefined : await this.stateStore.getRun(session.currentRunId);
    if (run?.status !== 'running') return undefined;
    return attachedHandle(this.stateStore, this.streamManager, id, run.runId, { timeoutMs: this.#attachTimeoutMs, stopWaitMs: this.leaseMs, logger: this.#logger }).stop(reason);
  }

  /** The same as {@link stop}. */
  async interrupt(sessionId: string, reason?: string): Promise<AgentResult | undefined> {
    return this.stop(sessionId, reason);
  }

  /** A session's stream: every run's chunks in order, from `options.fromSeq` (live unless `follow: false`). */
  readStream(sessionId: string, options?: StreamReadOptions): AsyncIterable<StreamChunk> {
    return this.streamManager.read(checkSessionId(sessionId), options);
  }

  /** The committed session, or undefined. */
  async getSession(sessionId: string): Promise<SessionSnapshot | undefined> {
    return this.stateStore.loadSession(checkSessionId(sessionId));
  }

  /** A run as stored, or undefined. */
  async getRun(runId: string): Promise<RunRecord | undefined> {
    return this.stateStore.getRun(runId);
  }

  /** The session's checkpoints, oldest first. */
  async listCheckpoints(sessionId: string): Promise<readonly CheckpointInfo[]> {
    return this.stateStore.listCheckpoints(checkSessionId(sessionId));
  }

  /**
   * Deletes a session: its records in the state store (runs, journals, checkpoints, messages, usage),
   * its stream, and its entries in every usage store this executor's runs were given (and
   * `options.usageStore`, for a store this process never ran with) that has `deleteSession`. Refuses
   * with an AgentError `session_running` (deleting nothing) while a run of the session is running; stop
   * it first. Resolves true when the session existed in the state store; the stream and usage stores
   * are cleaned either way, so calling it again finishes a deletion that failed half-way. Sub-agent
   * sessions are sessions of their own: delete them by their ids.
   */
  async deleteSession(sessionId: string, options: { readonly usageStore?: UsageStore } = {}): Promise<boolean> {
    const id = checkSessionId(sessionId);
    const deleted = await this.stateStore.deleteSession(id);
    await this.streamManager.deleteStream(id);
    await this.#usageStores.deleteSession(id, this.stateStore, options.usageStore);
    return deleted;
  }

  /**
   * Signs a decision on a pending call (HMAC-SHA256 over session, run, call, decision and, for an approval,
   * the final input: the edited input, or the request's arguments); needs `approvalSecret`. `runId` is the
   * suspended run that asked (the request chunk's `runId`). The stream never carries a signature: call this
   * on the server that decides, and pass the result to approve() / reject() as `signature`.
   */
  signApproval(sessionId: string, toolCallId: string, decision: { readonly runId: string; readonly decision: 'approve'; readonly input: unknown } | { readonly runId: string; readonly decision: 'reject' }): string {
    if (this.#signer === undefined) throw new ConfigError('signApproval() needs the executor option approvalSecret.');
    checkSessionId(sessionId);
    return this.#signer.sign({ ...decision, sessionId, toolCallId });
  }

  async #session(sessionId: string): Promise<SessionSnapshot> {
    const session = await this.stateStore.loadSession(checkSessionId(sessionId));
    if (!session) throw new AgentError('state_not_found', `Session ${sessionId} does not exist.`, { details: { sessionId } });
    return session;
  }

  #agentFor(agentType: string): AgentConfig<unknown, unknown> {
    const agent = this.#agents.get(agentType);
    if (!agent) throw new AgentError('agent_not_registered', `No agent named "${agentType}" is registered with this executor.`, { details: { agentType } });
    return agent;
  }


  /**
   * Continues the runs whose process died (their lease expired): each is claimed (its epoch goes up,
   * fencing out the old process), continues from its last committed step, replays recorded work
   * instead of redoing it, and pairs its hooks as docs/semantics.md says. Call it at start-up and periodically.
   */
  async recover(options: RecoverOptions): Promise<AgentHandle[]> {
    // Their sessions resume here too (a parent whose child ends here).
    for (const agent of options.agents instanceof Map ? options.agents.values() : (options.agents as readonly AgentConfig<unknown, unknown>[])) this.registerAgent(agent);
    return recoverRuns(this.stateStore, this.#launcher, this.instanceId, this.leaseMs, this.#logger, options);
  }

  /**
   * Calls `listener` for every run this executor starts or recovers, right after its entry (event
   * subscribers use it to follow sessions). Returns a function that removes the listener.
   */
  onRun(listener: (info: RunStartedInfo) => void): () => void {
    return this.#launcher.onRun(listener);
  }

  /**
   * Calls `warmUp()` on every class-based hook of these managers and agents that this executor has not
   * warmed yet (once per object, however many points it is registered at). execute() does it too.
   */
  async warmUp(...sources: (AgentConfig<unknown, unknown> | HookManager)[]): Promise<void> {
    for (const source of sources) await this.#launcher.warmUp(source instanceof HookManager ? source : this.#launcher.hooksFor(source, undefined, undefined));
  }

  /**
   * Shuts down (see {@link shutdown}), then calls `close()` once on every class-based hook this executor
   * warmed that still exists, newest first. An agent's hooks and those given to warmUp() are kept alive until
   * then; one that only an execution brought is held by its runs only, so once nothing else refers to it, it
   * is collected without a close().
   */
  async close(): Promise<void> {
    await this.shutdown();
    await this.#launcher.close();
  }
}

/** Refuses a resume whose client results or edited approval inputs are over the size limits (nothing is written). */
function checkAnswers(options: ResumeOptions, limits: ResolvedLimits): void {
  if (options.mode !== 'continue' && options.mode !== 'with_confirmation') return;
  for (const r of options.toolResults ?? []) checkInputValue(r.result, limits, `result submitted for call ${r.toolCallId}`, 'maxToolResultChars');
  for (const d of options.decisions ?? []) if (d.input !== undefined) checkInputValue(d.input, limits, `edited input of call ${d.toolCallId}`, 'maxInputChars');
}

/** A new session's initial state (see {@link initialStateOf}), refused over `maxStateChars` (`run_input_too_large`). */
function initialStateWithin(agent: AgentConfig<unknown, unknown>, given: unknown, limits: ResolvedLimits): unknown {
  const state = initialStateOf(agent, given);
  checkInputValue(state, limits, 'initial state', 'maxStateChars');
  return state;
}
