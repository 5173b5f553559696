import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { hostname } from 'node:os';
import type { AgentConfig } from '../define.js';
import { AgentError, ConfigError, RunInterruptedError, RunSupersededError, StateCommitError } from '../errors.js';
import { HookManager, type HookObject } from '../hooks/manager.js';
import type { AgentHooks } from '../hooks/types.js';
import type { LLMAdapter } from '../llm.js';
import type { Message } from '../messages.js';
import { GENESIS_CHECKPOINT } from '../store.js';
import type { BeginRunRequest, CheckpointInfo, PendingCall, RunLease, RunOptionsRecord, RunRecord, SessionSnapshot, StateStore } from '../store.js';
import type { StartSignalKind, StreamChunk, StreamManager, StreamReadOptions, StreamWriter } from '../stream.js';
import type { UsageRollup, UsageStore } from '../usage.js';
import { runLoop, type Delivery, type RunStart } from './agent-run.js';
import { crashPoint } from './crash-points.js';
import { consoleLogger, type Logger } from './logger.js';
import type { AgentResult } from './result.js';
import { RunContext, type AuditHooks, type RunSetup } from './run-context.js';
import type { AgentHandle, AgentRuntime, ExecuteOptions, RecoverOptions, ResumeOptions, RetryOptions, RunCallOptions } from './agent-runtime.js';

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
  /** Signs approval requests and requires valid signatures on approve() / reject() (HMAC-SHA256). */
  readonly approvalSecret?: string;
  /** Agents whose sessions resume(), retry(), send() and recover() may continue. */
  readonly agents?: readonly AgentConfig<unknown, unknown>[];
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

/** What a run began with beyond its K1 (kept on the run record, so a recovery can finish it the same way). */
type RecordedStart = Pick<RunStart, 'resumed' | 'retried' | 'deliveries' | 'stillPending' | 'extraMessage'>;

/** The start of a recovered run, from what its K1 recorded. */
function recordedStart(signal: StartSignalKind, options: RunOptionsRecord): RecordedStart & { signal: StartSignalKind } {
  return { ...((options.start ?? {}) as RecordedStart), signal };
}

/** The user's text among a turn's input rows (empty when there is none). */
function turnInput(rows: readonly Message[] | undefined): string {
  return rows?.find((m) => m.role === 'user')?.content ?? '';
}

/** Rows that cancel the calls a suspended run was waiting on (every tool call keeps a result). */
function cancelledRows(pending: readonly PendingCall[]): Message[] {
  return pending.map((p) => {
    const info = new AgentError('tool_cancelled', `The call to "${p.toolName}" was cancelled: a new message started another turn.`, { details: { tool: p.toolName } }).info;
    return { role: 'tool', toolCallId: p.toolCallId, toolName: p.toolName, content: info.message, isError: true, errorInfo: info };
  });
}

function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

const EMPTY_MANAGER = new HookManager<unknown, unknown>();

/**
 * runtime-js: runs agents in this process over any {@link StateStore}, {@link StreamManager} and
 * {@link LLMAdapter}. Runs hold a lease they renew; `recover()` continues runs whose process died.
 */
export class JSAgentExecutor implements AgentRuntime {
  readonly #logger: Logger;
  readonly #strictTerminalHooks: boolean;
  readonly #auditHooks: AuditHooks;
  readonly #warmed = new Set<HookObject>();
  readonly #runListeners = new Set<(info: RunStartedInfo) => void>();
  /** The runs this executor is running now, by session (stop(sessionId) finds them here). */
  readonly #live = new Map<string, AgentHandle>();
  readonly #agents = new Map<string, AgentConfig<unknown, unknown>>();
  readonly #approvalSecret: string | undefined;
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
    this.#approvalSecret = options.approvalSecret;
    for (const agent of options.agents ?? []) this.registerAgent(agent);
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
    this.registerAgent(erased);
    const sessionId = options.sessionId ?? this.#generateId('session');
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
    // A new turn on a session suspended at a boundary cancels the calls it was waiting on (their rows
    // keep the transcript valid: every tool call has a result).
    const suspendedRun = existing?.currentRunId === undefined ? undefined : await this.stateStore.getRun(existing.currentRunId);
    const leadingRows = suspendedRun?.status === 'suspended' ? cancelledRows(suspendedRun.suspension?.pending ?? []) : [];
    return (await this.#begin(erased, sessionId, options as RunCallOptions, {
      signal: 'start',
      input,
      initialState,
      newTurn: true,
      // The cancelled rows are part of the turn's input, so owed start work appends them again too.
      leadingRows,
      // The session must still be suspended at K1 when this turn cancels its pending calls.
      ...(leadingRows.length > 0 && suspendedRun ? { expect: { currentRunId: suspendedRun.runId, status: 'suspended' as const } } : {}),
      ...(options.parentSessionId === undefined ? {} : { parentSessionId: options.parentSessionId }),
      start: {},
    })) as AgentHandle<TState, TOutput>;
  }

  /** Adds an agent to the registry that resume(), retry(), send() and recover() look sessions' agents up in. execute() registers its agent. */
  registerAgent(agent: AgentConfig<unknown, unknown>): this {
    this.#agents.set(agent.name, agent);
    return this;
  }

  /** A chat send: a new turn on an existing session, with the session's (registered) agent. */
  async send(sessionId: string, message: string, options: RunCallOptions = {}): Promise<AgentHandle> {
    const session = await this.#session(sessionId);
    return this.execute(this.#agentFor(session.agentType), message, { ...options, sessionId });
  }

  /**
   * Resumes a session (v7: a fresh run). `continue` / `with_confirmation` deliver answers to the calls
   * the suspended run waits on (client results, approvals, rejections; finished children) and fire
   * onAgentResumed; calls left unanswered suspend the new run again at once. `with_message` starts a new
   * turn (onAgentStart), cancelling pending calls. `from_checkpoint` rewinds to a listed checkpoint and
   * fires onAgentResumed (with resumedFromCheckpointId). A refused resume changes nothing.
   */
  async resume(sessionId: string, options: ResumeOptions): Promise<AgentHandle> {
    const session = await this.#session(sessionId);
    const agent = this.#agentFor(session.agentType);
    if (options.mode === 'with_message') return this.send(sessionId, options.message, options);
    const previousRunId = session.currentRunId;
    if (options.mode === 'from_checkpoint') {
      const checkpoints = await this.stateStore.listCheckpoints(sessionId);
      if (options.checkpointId !== GENESIS_CHECKPOINT && !checkpoints.some((c) => c.checkpointId === options.checkpointId)) {
        throw new AgentError('state_not_found', `Session ${sessionId} has no checkpoint ${options.checkpointId}.`, { details: { checkpointId: options.checkpointId } });
      }
      return this.#begin(agent, sessionId, options, {
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
    const deliveries = await this.#answers(sessionId, run.suspension.pending, options);
    const answered = new Set(deliveries.map((d) => d.pending.toolCallId));
    const stillPending = run.suspension.pending.filter((p) => !answered.has(p.toolCallId));
    return this.#begin(agent, sessionId, options, {
      signal: 'resumed',
      previousRunId: run.runId,
      // Checked inside K1: of two concurrent resumes, only the first delivers its answers.
      expect: { currentRunId: run.runId, status: 'suspended' },
      start: { resumed: { previousRunId: run.runId }, deliveries, stillPending },
    });
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
    const failed = session.currentRunId === undefined ? undefined : await this.stateStore.getRun(session.currentRunId);
    if (!failed || (failed.status !== 'failed' && failed.status !== 'interrupted')) {
      throw new AgentError('session_not_retryable', `Session ${sessionId} has no failed or interrupted run to retry${failed ? ` (its run is ${failed.status})` : ''}.`, { details: { sessionId } });
    }
    let checkpointId = options.checkpointId;
    if (checkpointId === undefined) {
      const checkpoints = await this.stateStore.listCheckpoints(sessionId);
      checkpointId = [...checkpoints].reverse().find((c) => c.kind !== 'state')?.checkpointId ?? GENESIS_CHECKPOINT;
    }
    const hasMessage = options.message !== undefined;
    return this.#begin(agent, sessionId, options, {
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

  /** Stops the session's current run if this executor runs it (see {@link AgentHandle.stop}); undefined when it runs nothing there. */
  async stop(sessionId: string, reason?: string): Promise<AgentResult | undefined> {
    const handle = this.#live.get(sessionId);
    return handle ? handle.stop(reason) : undefined;
  }

  /** The same as {@link stop}. */
  async interrupt(sessionId: string, reason?: string): Promise<AgentResult | undefined> {
    return this.stop(sessionId, reason);
  }

  /** A session's stream: every run's chunks in order, from `options.fromSeq` (live unless `follow: false`). */
  readStream(sessionId: string, options?: StreamReadOptions): AsyncIterable<StreamChunk> {
    return this.streamManager.read(sessionId, options);
  }

  /** The committed session, or undefined. */
  async getSession(sessionId: string): Promise<SessionSnapshot | undefined> {
    return this.stateStore.loadSession(sessionId);
  }

  /** A run as stored, or undefined. */
  async getRun(runId: string): Promise<RunRecord | undefined> {
    return this.stateStore.getRun(runId);
  }

  /** The session's checkpoints, oldest first. */
  async listCheckpoints(sessionId: string): Promise<readonly CheckpointInfo[]> {
    return this.stateStore.listCheckpoints(sessionId);
  }

  /** Signs an approval for a call (HMAC-SHA256 over session, call id and arguments); needs `approvalSecret`. */
  signApproval(sessionId: string, toolCallId: string, input: unknown): string {
    if (this.#approvalSecret === undefined) throw new ConfigError('signApproval() needs the executor option approvalSecret.');
    return createHmac('sha256', this.#approvalSecret).update(`${sessionId}\n${toolCallId}\n${stableJson(input)}`).digest('base64url');
  }

  async #session(sessionId: string): Promise<SessionSnapshot> {
    const session = await this.stateStore.loadSession(sessionId);
    if (!session) throw new AgentError('state_not_found', `Session ${sessionId} does not exist.`, { details: { sessionId } });
    return session;
  }

  #agentFor(agentType: string): AgentConfig<unknown, unknown> {
    const agent = this.#agents.get(agentType);
    if (!agent) throw new AgentError('agent_not_registered', `No agent named "${agentType}" is registered with this executor.`, { details: { agentType } });
    return agent;
  }


  /** Validates a resume's answers against the pending calls; an invalid one throws before anything is written. */
  async #answers(sessionId: string, pending: readonly PendingCall[], options: ResumeOptions): Promise<Delivery[]> {
    const byId = new Map(pending.map((p) => [p.toolCallId, p] as const));
    const seen = new Set<string>();
    const deliveries: Delivery[] = [];
    const take = (toolCallId: string, kind: PendingCall['kind']): PendingCall => {
      const call = byId.get(toolCallId);
      if (!call || seen.has(toolCallId) || call.kind !== kind) {
        throw new AgentError('tool_call_not_pending', `Call ${toolCallId} is not waiting for ${kind === 'client' ? 'a client result' : 'a decision'} in session ${sessionId}${seen.has(toolCallId) ? ' (it was answered twice)' : ''}.`, {
          details: { sessionId, toolCallId, pending: pending.map((p) => ({ toolCallId: p.toolCallId, kind: p.kind })) },
        });
      }
      seen.add(toolCallId);
      return call;
    };
    const toolResults = options.mode === 'continue' || options.mode === 'with_confirmation' ? (options.toolResults ?? []) : [];
    const decisions = options.mode === 'continue' || options.mode === 'with_confirmation' ? (options.decisions ?? []) : [];
    for (const r of toolResults) deliveries.push({ pending: take(r.toolCallId, 'client'), answer: { kind: 'client', result: r.result, ...(r.isError === undefined ? {} : { isError: r.isError }) } });
    for (const d of decisions) {
      const call = take(d.toolCallId, 'approval');
      if (this.#approvalSecret !== undefined) {
        const expected = this.signApproval(sessionId, d.toolCallId, call.input);
        if (d.signature === undefined || !safeEqual(d.signature, expected)) {
          throw new AgentError('approval_invalid_signature', `The ${d.decision === 'approve' ? 'approval' : 'rejection'} of call ${d.toolCallId} is not signed for this session, call and arguments.`, { details: { sessionId, toolCallId: d.toolCallId } });
        }
      }
      deliveries.push({
        pending: call,
        answer: d.decision === 'approve' ? { kind: 'approve', ...(d.input === undefined ? {} : { input: d.input }), ...(d.reason === undefined ? {} : { reason: d.reason }) } : { kind: 'reject', ...(d.reason === undefined ? {} : { reason: d.reason }) },
      });
    }
    // Children's outcomes are delivered once every awaited child session has ended.
    for (const call of pending) {
      if (call.kind !== 'children' || seen.has(call.toolCallId)) continue;
      const outcomes = [];
      for (const child of call.children ?? []) {
        const session = await this.stateStore.loadSession(child.sessionId);
        const run = session?.currentRunId === undefined ? undefined : await this.stateStore.getRun(session.currentRunId);
        if (!run || run.status === 'running' || run.status === 'suspended') {
          outcomes.length = 0;
          break;
        }
        outcomes.push({ sessionId: child.sessionId, status: run.status, ...(run.output === undefined ? {} : { output: run.output }), ...(run.error === undefined ? {} : { error: run.error }) });
      }
      if (outcomes.length === (call.children ?? []).length && outcomes.length > 0) deliveries.push({ pending: call, answer: { kind: 'children', outcomes } });
    }
    return deliveries;
  }

  /**
   * Starts a run of any kind: K1 (which may open a turn or restore a checkpoint), the stream claim and
   * run_started; then the loop, in the background. An entry failure rejects and fires no hook.
   */
  async #begin(
    agent: AgentConfig<unknown, unknown>,
    sessionId: string,
    options: RunCallOptions,
    spec: {
      readonly signal: StartSignalKind;
      readonly input?: string;
      readonly initialState?: unknown;
      readonly newTurn?: boolean;
      readonly parentSessionId?: string;
      readonly restoreCheckpointId?: string;
      readonly previousRunId?: string;
      readonly leadingRows?: readonly Message[];
      readonly expect?: BeginRunRequest['expect'];
      readonly start: RecordedStart;
    },
  ): Promise<AgentHandle> {
    const hooks = this.#hooksFor(agent, options.hooks, options.hookManager);
    await this.#warmUp(hooks);
    const runId = this.#generateId('run');
    const turnId = this.#generateId('turn');
    const startedAt = Date.now();
    const input = spec.input ?? '';
    const inputMessages: readonly Message[] = spec.newTurn ? [...(spec.leadingRows ?? []), { role: 'user', content: input }] : [];
    const record: RunOptionsRecord = {
      ...(spec.input === undefined ? {} : { input: spec.input }),
      ...(options.userId === undefined ? {} : { userId: options.userId }),
      ...(options.tags === undefined ? {} : { tags: options.tags }),
      ...(options.metadata === undefined ? {} : { metadata: options.metadata }),
      ...(spec.parentSessionId === undefined ? {} : { parentSessionId: spec.parentSessionId }),
      ...(spec.previousRunId === undefined ? {} : { previousRunId: spec.previousRunId }),
      ...(spec.restoreCheckpointId === undefined ? {} : { restoredCheckpointId: spec.restoreCheckpointId }),
      start: spec.start,
    };
    // The entry: K1, the stream claim, run_started. A failure here fires no hook.
    const begun = await this.stateStore.beginRun({
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
      leaseOwner: this.instanceId,
      leaseMs: this.leaseMs,
      options: record,
    });
    crashPoint('after_k1');
    const writer = await this.#enter(sessionId, runId, begun.lease, agent.name, spec.signal, input);
    const turn = begun.session.turn;
    return this.#launch(
      this.#setup(
        { agent, hooks, writer, usageStore: options.usageStore, sessionId, runId, turnId: turn?.turnId ?? turnId, epoch: begun.lease.epoch },
        { ...options, ...(spec.parentSessionId === undefined ? {} : { parentSessionId: spec.parentSessionId }) },
      ),
      begun.lease,
      { state: begun.session.state, messages: begun.session.messages, startedAt },
      {
        ...spec.start,
        signal: spec.signal,
        input: spec.newTurn ? input : turnInput(turn?.input),
        inputMessages: spec.newTurn ? inputMessages : (turn?.input ?? []),
        turnStartCommitted: spec.newTurn ? false : turn?.startCommitted === true,
        signalFired: false,
      },
      options.abortSignal,
    );
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
      // One candidate's trouble must not strand the others (or a run this process already claimed).
      try {
        const handle = await this.#recoverOne(agent, candidate.runId, options);
        if (handle) handles.push(handle);
      } catch (error) {
        this.#logger.error(`recovering run ${candidate.runId} failed: ${error instanceof Error ? error.message : String(error)}`, { runId: candidate.runId });
      }
    }
    return handles;
  }

  /** A run's setup: its own fields, this executor's, and who the run is for (user, tags, metadata, parent). */
  #setup(
    own: Pick<RunSetup, 'agent' | 'hooks' | 'writer' | 'usageStore' | 'sessionId' | 'runId' | 'turnId' | 'epoch'>,
    attribution: Pick<RunOptionsRecord, 'userId' | 'tags' | 'metadata' | 'parentSessionId'>,
  ): RunSetup {
    return {
      ...own,
      stateStore: this.stateStore,
      logger: this.#logger,
      streamId: own.sessionId,
      abort: new AbortController(),
      strictTerminalHooks: this.#strictTerminalHooks,
      auditHooks: this.#auditHooks,
      ...(this.#approvalSecret === undefined ? {} : { signApproval: (s: string, c: string, i: unknown) => this.signApproval(s, c, i) }),
      ...(attribution.parentSessionId === undefined ? {} : { parentSessionId: attribution.parentSessionId }),
      ...(attribution.userId === undefined ? {} : { userId: attribution.userId }),
      ...(attribution.tags === undefined ? {} : { tags: attribution.tags }),
      ...(attribution.metadata === undefined ? {} : { metadata: attribution.metadata }),
    };
  }

  /** Claims one expired run and continues it; undefined when another process claimed it first. */
  async #recoverOne(agent: AgentConfig<unknown, unknown>, runId: string, options: RecoverOptions): Promise<AgentHandle | undefined> {
    let claimed;
    try {
      claimed = await this.stateStore.claimRun(runId, this.instanceId, this.leaseMs, Date.now());
    } catch (error) {
      // Another process claimed it first, or it ended meanwhile.
      if (AgentError.isInstance(error) && error.code === 'state_run_not_recoverable') return undefined;
      throw error;
    }
    const { session, run, lease, journal } = claimed;
    const hooks = this.#hooksFor(agent, options.hooks, options.hookManager);
    await this.#warmUp(hooks);
    const turn = session.turn;
    const input = turnInput(turn?.input) || (run.options.input ?? '');
    const writer = await this.#enter(session.sessionId, run.runId, lease, agent.name, run.signal, input);
    return this.#launch(
      this.#setup({ agent, hooks, writer, usageStore: options.usageStore, sessionId: session.sessionId, runId: run.runId, turnId: run.turnId, epoch: lease.epoch }, run.options),
      lease,
      { state: session.state, messages: session.messages, startedAt: run.startedAt, stepCount: run.stepCount, journal },
      {
        ...recordedStart(run.signal, run.options),
        input,
        inputMessages: turn?.input ?? [],
        turnStartCommitted: turn?.startCommitted === true,
        // The marker is dropped with the first step commit; a committed step means the signal fired.
        signalFired: run.stepCount > 0 || journal.some((e) => e.kind === 'start_signal'),
        ...(run.output === undefined ? {} : { committedOutput: { value: run.output } }),
      },
      undefined,
    );
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
    const handle: AgentHandle = {
      sessionId,
      runId,
      streamId: setup.streamId,
      result: () => done,
      stream: () => streamManager.read(setup.streamId, { fromSeq: setup.writer.startSeq, untilRunEnds: runId }),
      getUsageRollup: async () => (usageStore ? usageStore.getRollup({ runId }) : undefined),
      stop,
      interrupt: stop,
    };
    this.#live.set(sessionId, handle);
    void done.then(() => {
      if (this.#live.get(sessionId) === handle) this.#live.delete(sessionId);
    });
    return handle;
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
