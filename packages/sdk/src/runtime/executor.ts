import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { AgentConfig } from '../define.js';
import { AgentError, RunInterruptedError, RunSupersededError, StateCommitError } from '../errors.js';
import { HookManager, type HookObject } from '../hooks/manager.js';
import type { AgentHooks } from '../hooks/types.js';
import type { LLMAdapter } from '../llm.js';
import type { Message } from '../messages.js';
import type { RunLease, StateStore } from '../store.js';
import type { StartSignalKind, StreamChunk, StreamManager, StreamWriter } from '../stream.js';
import type { UsageRollup, UsageStore } from '../usage.js';
import { runLoop, type RunStart } from './agent-run.js';
import { crashPoint } from './crash-points.js';
import { consoleLogger, type Logger } from './logger.js';
import type { AgentResult } from './result.js';
import { RunContext, type AuditHooks, type RunSetup } from './run-context.js';

/** Per-run options of `execute()`. */
export interface ExecuteOptions<TState = unknown, TOutput = unknown> {
  /** Run in this session (a new one is created when absent); a second execute on a session starts a new turn and supersedes a run still going. */
  readonly sessionId?: string;
  readonly userId?: string;
  readonly tags?: readonly string[];
  readonly metadata?: Readonly<Record<string, string>>;
  /** Execution-level hooks; they run after the agent's own hooks (and after `hookManager`'s). */
  readonly hooks?: AgentHooks<TState, TOutput>;
  /** Execution-level hooks as a manager (e.g. from `composeHookManagers`). */
  readonly hookManager?: HookManager<TState, TOutput>;
  /** Where model and tool usage is recorded; `handle.getUsageRollup()` reads it. Pass the state store itself (durable stores are usage stores too) to record usage atomically with each commit. */
  readonly usageStore?: UsageStore;
  /** Aborting it interrupts the run, like `handle.interrupt()`. */
  readonly abortSignal?: AbortSignal;
  /** The state of a new session (validated by the agent's stateSchema; its defaults apply). Ignored for an existing session. */
  readonly initialState?: unknown;
  /** The parent's session id, for sub-agents. */
  readonly parentSessionId?: string;
}

/** A running (or finished) run. */
export interface AgentHandle<TState = unknown, TOutput = unknown> {
  readonly sessionId: string;
  readonly runId: string;
  readonly streamId: string;
  /** Resolves when the run ends, whatever the ending (never rejects). */
  result(): Promise<AgentResult<TState, TOutput>>;
  /** This run's chunks, from run_started to its terminal chunk: live, or replayed after the run ended. */
  stream(): AsyncIterable<StreamChunk>;
  /** The run's usage so far, or undefined when no usageStore was given. */
  getUsageRollup(): Promise<UsageRollup | undefined>;
  /**
   * Stops the run: no new model call or tool starts, calls that finish keep their recorded results, the
   * rest are paired `run_stopped`, the terminal commit is written and onAgentFail fires with
   * `run_interrupted` (status `interrupted`). Resolves with the result.
   */
  stop(reason?: string): Promise<AgentResult<TState, TOutput>>;
  /** The same as `stop()`: the spec's name for it. */
  interrupt(reason?: string): Promise<AgentResult<TState, TOutput>>;
}

/** Options of a {@link JSAgentExecutor}. */
export interface JSAgentExecutorOptions {
  /** Where observe-only hook errors and store trouble are reported (default: stderr). */
  readonly logger?: Logger;
  /** HOOK-RULES C5: when true, a throwing onAgentComplete fails the run (onAgentFail follows); default false. */
  readonly strictTerminalHooks?: boolean;
  /** Makes run, turn and session ids (default: random UUIDs). */
  readonly generateId?: (kind: 'run' | 'turn' | 'session') => string;
  /** This process's name on run leases (default: `<hostname>:<pid>:<random>`). */
  readonly instanceId?: string;
  /** Which hook invocations are written to the stream as `hook_decision` chunks: steering decisions and handled errors (default), every invocation, or none. */
  readonly auditHooks?: AuditHooks;
  /** How long a run's lease lasts without renewal (default 30 s); it is renewed every third of that. A process that dies is recovered once its leases expire. */
  readonly leaseMs?: number;
}

/** A run that just passed its entry (what {@link JSAgentExecutor.onRun} listeners receive). */
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

/** Options of {@link JSAgentExecutor.recover}. */
export interface RecoverOptions {
  /** The agents that may be recovered, by name (a run of an agent not listed is left alone). */
  readonly agents: readonly AgentConfig<unknown, unknown>[] | ReadonlyMap<string, AgentConfig<unknown, unknown>>;
  /** Hooks for the recovered runs (after each agent's own hooks); hooks passed to the original execute() are not stored. */
  readonly hooks?: AgentHooks;
  readonly hookManager?: HookManager;
  readonly usageStore?: UsageStore;
  /** At most this many runs (default 100). */
  readonly limit?: number;
}

const EMPTY_MANAGER = new HookManager<unknown, unknown>();

/**
 * runtime-js: runs agents in this process over any {@link StateStore}, {@link StreamManager} and
 * {@link LLMAdapter}. Runs hold a lease they renew; `recover()` continues runs whose process died.
 */
export class JSAgentExecutor {
  readonly #logger: Logger;
  readonly #strictTerminalHooks: boolean;
  readonly #auditHooks: AuditHooks;
  readonly #warmed = new Set<HookObject>();
  readonly #runListeners = new Set<(info: RunStartedInfo) => void>();
  readonly #generateId: (kind: 'run' | 'turn' | 'session') => string;
  readonly #agentHooks = new WeakMap<object, HookManager<unknown, unknown>>();
  /** This process's name on leases. */
  readonly instanceId: string;
  readonly leaseMs: number;

  constructor(
    readonly stateStore: StateStore,
    readonly streamManager: StreamManager,
    readonly llmAdapter: LLMAdapter,
    options: JSAgentExecutorOptions = {},
  ) {
    this.#logger = options.logger ?? consoleLogger;
    this.#strictTerminalHooks = options.strictTerminalHooks ?? false;
    this.#auditHooks = options.auditHooks ?? 'decisions';
    this.#generateId = options.generateId ?? (() => randomUUID());
    this.instanceId = options.instanceId ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    this.leaseMs = options.leaseMs ?? 30_000;
  }

  /**
   * Starts a run and resolves once its entry (K1 run-start commit, stream claim, run_started chunk)
   * is done. An entry failure rejects with a typed error and fires no hook at all (rule 10).
   */
  async execute<TState, TOutput>(
    agent: AgentConfig<TState, TOutput>,
    input: string,
    options: ExecuteOptions<NoInfer<TState>, NoInfer<TOutput>> = {},
  ): Promise<AgentHandle<TState, TOutput>> {
    if (typeof input !== 'string') {
      throw new AgentError('run_invalid_input', `execute() takes the user's input as a string, got ${typeof input}.`);
    }
    const erased = agent as unknown as AgentConfig<unknown, unknown>;
    const hooks = this.#hooksFor(erased, options.hooks as AgentHooks | undefined, options.hookManager as HookManager | undefined);
    await this.#warmUp(hooks);
    const sessionId = options.sessionId ?? this.#generateId('session');
    const runId = this.#generateId('run');
    const turnId = this.#generateId('turn');
    const startedAt = Date.now();
    const inputMessages: readonly Message[] = [{ role: 'user', content: input }];

    const existing = await this.stateStore.loadSession(sessionId);
    let initialState: unknown = existing?.state;
    if (!existing) {
      const parsed = agent.stateSchema ? agent.stateSchema.safeParse(options.initialState ?? {}) : { success: true as const, data: options.initialState ?? {} };
      if (!parsed.success) {
        throw new AgentError('run_invalid_input', `The initial state does not match ${agent.name}'s stateSchema: ${parsed.error.message}`, {
          details: { issues: parsed.error.issues.map((i) => ({ path: i.path.map(String), message: i.message })) },
        });
      }
      initialState = parsed.data;
    }

    // The entry: K1, the stream claim, run_started. A failure here fires no hook.
    const begun = await this.stateStore.beginRun({
      sessionId,
      runId,
      agentType: agent.name,
      signal: 'start',
      initialState,
      ...(options.parentSessionId === undefined ? {} : { parentSessionId: options.parentSessionId }),
      newTurn: { turnId, input: inputMessages },
      startedAt,
      leaseOwner: this.instanceId,
      leaseMs: this.leaseMs,
      options: {
        input,
        ...(options.userId === undefined ? {} : { userId: options.userId }),
        ...(options.tags === undefined ? {} : { tags: options.tags }),
        ...(options.metadata === undefined ? {} : { metadata: options.metadata }),
        ...(options.parentSessionId === undefined ? {} : { parentSessionId: options.parentSessionId }),
      },
    });
    crashPoint('after_k1');
    const writer = await this.#enter(sessionId, runId, begun.lease, agent.name, 'start', input);

    return this.#launch(
      {
        agent: erased,
        hooks,
        stateStore: this.stateStore,
        writer,
        usageStore: options.usageStore,
        logger: this.#logger,
        sessionId,
        runId,
        streamId: sessionId,
        turnId,
        epoch: begun.lease.epoch,
        abort: new AbortController(),
        strictTerminalHooks: this.#strictTerminalHooks,
        auditHooks: this.#auditHooks,
        ...(options.parentSessionId === undefined ? {} : { parentSessionId: options.parentSessionId }),
        ...(options.userId === undefined ? {} : { userId: options.userId }),
        ...(options.tags === undefined ? {} : { tags: options.tags }),
        ...(options.metadata === undefined ? {} : { metadata: options.metadata }),
      },
      begun.lease,
      { state: begun.session.state, messages: begun.session.messages, startedAt },
      { input, inputMessages, turnStartCommitted: false, signalFired: false },
      options.abortSignal,
    ) as AgentHandle<TState, TOutput>;
  }

  /**
   * Continues the runs whose process died (their lease expired): each is claimed (its epoch goes up,
   * fencing out the old process), continues from its last committed step, replays journaled work
   * instead of redoing it, and pairs its hooks as the spec says. Call it at start-up and periodically.
   */
  async recover(options: RecoverOptions): Promise<AgentHandle[]> {
    const agents = new Map<string, AgentConfig<unknown, unknown>>();
    const list = options.agents instanceof Map ? [...options.agents.values()] : (options.agents as readonly AgentConfig<unknown, unknown>[]);
    for (const agent of list) agents.set(agent.name, agent as unknown as AgentConfig<unknown, unknown>);
    const handles: AgentHandle[] = [];
    for (const candidate of await this.stateStore.listRecoverable(Date.now(), options.limit ?? 100)) {
      const agent = agents.get(candidate.agentType);
      if (!agent) {
        this.#logger.warn(`run ${candidate.runId} of agent "${candidate.agentType}" is recoverable, but no such agent was given to recover()`);
        continue;
      }
      let claimed;
      try {
        claimed = await this.stateStore.claimRun(candidate.runId, this.instanceId, this.leaseMs, Date.now());
      } catch (error) {
        // Another process claimed it first, or it ended meanwhile.
        if (AgentError.isInstance(error) && error.code === 'state_run_not_recoverable') continue;
        throw error;
      }
      const { session, run, lease, journal } = claimed;
      const hooks = this.#hooksFor(agent, options.hooks, options.hookManager);
      await this.#warmUp(hooks);
      const turn = session.turn;
      const input = run.options.input ?? '';
      const writer = await this.#enter(session.sessionId, run.runId, lease, agent.name, 'start', input);
      handles.push(
        this.#launch(
          {
            agent,
            hooks,
            stateStore: this.stateStore,
            writer,
            usageStore: options.usageStore,
            logger: this.#logger,
            sessionId: session.sessionId,
            runId: run.runId,
            streamId: session.sessionId,
            turnId: run.turnId,
            epoch: lease.epoch,
            abort: new AbortController(),
            strictTerminalHooks: this.#strictTerminalHooks,
            auditHooks: this.#auditHooks,
            ...(run.options.parentSessionId === undefined ? {} : { parentSessionId: run.options.parentSessionId }),
            ...(run.options.userId === undefined ? {} : { userId: run.options.userId }),
            ...(run.options.tags === undefined ? {} : { tags: run.options.tags }),
            ...(run.options.metadata === undefined ? {} : { metadata: run.options.metadata }),
          },
          lease,
          { state: session.state, messages: session.messages, startedAt: run.startedAt, stepCount: run.stepCount, journal },
          {
            input,
            inputMessages: turn?.input ?? [],
            turnStartCommitted: turn?.startCommitted === true,
            signalFired: journal.some((e) => e.kind === 'start_signal'),
            ...(run.output === undefined ? {} : { committedOutput: { value: run.output } }),
          },
          undefined,
        ),
      );
    }
    return handles;
  }

  /**
   * Calls `listener` for every run this executor starts or recovers, right after its entry (event
   * subscribers use it to follow sessions). Returns a function that removes the listener.
   */
  onRun(listener: (info: RunStartedInfo) => void): () => void {
    this.#runListeners.add(listener);
    return () => this.#runListeners.delete(listener);
  }

  /**
   * Calls `warmUp()` on every class-based hook of these managers and agents that this executor has not
   * warmed yet (once per object, however many points it is registered at). execute() does it too.
   */
  async warmUp(...sources: (AgentConfig<unknown, unknown> | HookManager)[]): Promise<void> {
    for (const source of sources) {
      await this.#warmUp(source instanceof HookManager ? source : this.#hooksFor(source, undefined, undefined));
    }
  }

  /** Calls `close()` once on every class-based hook this executor warmed, newest first. */
  async close(): Promise<void> {
    const objects = [...this.#warmed].reverse();
    this.#warmed.clear();
    for (const object of objects) await object.close?.();
  }

  async #warmUp(hooks: HookManager<unknown, unknown>): Promise<void> {
    for (const object of hooks.hookObjects()) {
      if (this.#warmed.has(object)) continue;
      this.#warmed.add(object);
      await object.warmUp?.();
    }
  }

  /** The stream claim and run_started chunk; a failure records the run failed (best effort) and rethrows. */
  async #enter(sessionId: string, runId: string, lease: RunLease, agentType: string, signal: StartSignalKind, input: string): Promise<StreamWriter> {
    try {
      const writer = await this.streamManager.claim(sessionId, runId);
      const ok = await writer.write({ type: 'run_started', signal, input, streamId: sessionId, agentId: sessionId, agentType, runId, timestamp: Date.now() });
      if (!ok) throw new StateCommitError(`Run ${runId} lost its stream to a newer run before it started.`);
      return writer;
    } catch (error) {
      const info = AgentError.isInstance(error) ? error.info : new StateCommitError(error instanceof Error ? error.message : String(error)).info;
      await this.stateStore
        .commit({ sessionId, runId, epoch: lease.epoch, kind: 'terminal', runStatus: 'failed', error: info, committedAt: Date.now() })
        .catch((e: unknown) => this.#logger.error(`could not record the failed entry of run ${runId}: ${String(e)}`));
      throw error;
    }
  }

  #launch(
    setup: RunSetup,
    lease: RunLease,
    from: { state: unknown; messages: readonly Message[]; startedAt: number; stepCount?: number; journal?: RunContext['journal'] extends Map<string, infer E> ? readonly E[] : never },
    start: RunStart,
    abortSignal: AbortSignal | undefined,
  ): AgentHandle {
    const { abort, runId, sessionId } = setup;
    if (abortSignal) {
      if (abortSignal.aborted) abort.abort(new RunInterruptedError());
      else abortSignal.addEventListener('abort', () => abort.abort(new RunInterruptedError()), { once: true });
    }
    const run = new RunContext(setup, from.state, from.messages, from.startedAt, from.stepCount ?? 0, from.journal ?? []);
    const info: RunStartedInfo = {
      sessionId,
      runId,
      streamId: setup.streamId,
      startSeq: setup.writer.startSeq,
      agentType: setup.agent.name,
      recovered: from.journal !== undefined,
      ...(setup.parentSessionId === undefined ? {} : { parentSessionId: setup.parentSessionId }),
    };
    for (const listener of this.#runListeners) {
      try {
        listener(info);
      } catch (error) {
        this.#logger.warn(`an onRun listener threw: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    const stopLease = this.#keepLease(lease, abort);
    const done = runLoop(run, this.llmAdapter, start)
      .catch((error: unknown): AgentResult => {
        // The loop handles every ending itself; reaching this is a bug, reported rather than lost.
        this.#logger.error(`run ${runId} crashed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
        const info = AgentError.isInstance(error) ? error.info : new AgentError('run_internal_error', String(error)).info;
        return { status: 'failed', sessionId, runId, state: run.state, stepCount: run.stepCount, durationMs: run.durationMs(), error: info };
      })
      .finally(stopLease);
    const streamManager = this.streamManager;
    const usageStore = setup.usageStore;
    const stop = async (reason?: string): Promise<AgentResult> => {
      if (!abort.signal.aborted) abort.abort(new RunInterruptedError(reason ?? 'The run was interrupted.'));
      return done;
    };
    return {
      sessionId,
      runId,
      streamId: setup.streamId,
      result: () => done,
      stream: () => streamManager.read(setup.streamId, { fromSeq: setup.writer.startSeq, untilRunEnds: runId }),
      getUsageRollup: async () => (usageStore ? usageStore.getRollup({ runId }) : undefined),
      stop,
      interrupt: stop,
    };
  }

  /** Renews the run's lease every third of its length; a refused renewal means another process took over (rule 46). */
  #keepLease(lease: RunLease, abort: AbortController): () => void {
    let epoch = lease.epoch;
    const timer = setInterval(() => {
      this.stateStore.renewLease(lease.runId, epoch, this.leaseMs, Date.now()).then(
        (renewed) => {
          epoch = renewed.epoch;
        },
        (error: unknown) => {
          if (RunSupersededError.isInstance(error)) {
            clearInterval(timer);
            if (!abort.signal.aborted) abort.abort(error);
          } else {
            this.#logger.warn(`lease renewal of run ${lease.runId} failed: ${error instanceof Error ? error.message : String(error)}`);
          }
        },
      );
    }, Math.max(10, Math.floor(this.leaseMs / 3)));
    timer.unref();
    return () => clearInterval(timer);
  }

  /** Agent hooks first, then the execution's manager, then its hooks (rule 131); cached when there are no execution hooks. */
  #hooksFor(agent: AgentConfig<unknown, unknown>, hooks: AgentHooks | undefined, hookManager: HookManager | undefined): HookManager<unknown, unknown> {
    if (!hooks && !hookManager) {
      if (!agent.hooks) return EMPTY_MANAGER;
      let cached = this.#agentHooks.get(agent);
      if (!cached) {
        cached = new HookManager<unknown, unknown>(agent.hooks);
        this.#agentHooks.set(agent, cached);
      }
      return cached;
    }
    return new HookManager<unknown, unknown>(agent.hooks, hookManager, hooks);
  }
}
