import { randomUUID } from 'node:crypto';
import type { AgentConfig } from '../define.js';
import { AgentError, StateCommitError } from '../errors.js';
import { HookManager } from '../hooks/manager.js';
import type { AgentHooks } from '../hooks/types.js';
import type { LLMAdapter } from '../llm.js';
import type { Message } from '../messages.js';
import type { StateStore } from '../store.js';
import type { StreamChunk, StreamManager, StreamWriter } from '../stream.js';
import type { UsageRollup, UsageStore } from '../usage.js';
import { runLoop } from './agent-run.js';
import { consoleLogger, type Logger } from './logger.js';
import type { AgentResult } from './result.js';
import { RunContext } from './run-context.js';

/** Per-run options of `execute()`. */
export interface ExecuteOptions<TState = unknown, TOutput = unknown> {
  /** Run in this session (a new one is created when absent); a second execute on a session starts a new turn. */
  readonly sessionId?: string;
  readonly userId?: string;
  readonly tags?: readonly string[];
  readonly metadata?: Readonly<Record<string, string>>;
  /** Execution-level hooks; they run after the agent's own hooks (and after `hookManager`'s). */
  readonly hooks?: AgentHooks<TState, TOutput>;
  /** Execution-level hooks as a manager (e.g. from `composeHookManagers`). */
  readonly hookManager?: HookManager<TState, TOutput>;
  /** Where model and tool usage is recorded; `handle.getUsageRollup()` reads it. */
  readonly usageStore?: UsageStore;
  /** Aborting it interrupts the run (status `interrupted`, onAgentFail with `run_interrupted`). */
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
}

/** Options of a {@link JSAgentExecutor}. */
export interface JSAgentExecutorOptions {
  /** Where observe-only hook errors and store trouble are reported (default: stderr). */
  readonly logger?: Logger;
  /** HOOK-RULES C5: when true, a throwing onAgentComplete fails the run (onAgentFail follows); default false. */
  readonly strictTerminalHooks?: boolean;
  /** Makes run, turn and session ids (default: random UUIDs). */
  readonly generateId?: (kind: 'run' | 'turn' | 'session') => string;
}

const EMPTY_MANAGER = new HookManager<unknown, unknown>();

/**
 * runtime-js: runs agents in this process over any {@link StateStore}, {@link StreamManager} and
 * {@link LLMAdapter}.
 */
export class JSAgentExecutor {
  readonly #logger: Logger;
  readonly #strictTerminalHooks: boolean;
  readonly #generateId: (kind: 'run' | 'turn' | 'session') => string;
  readonly #agentHooks = new WeakMap<object, HookManager<unknown, unknown>>();

  constructor(
    readonly stateStore: StateStore,
    readonly streamManager: StreamManager,
    readonly llmAdapter: LLMAdapter,
    options: JSAgentExecutorOptions = {},
  ) {
    this.#logger = options.logger ?? consoleLogger;
    this.#strictTerminalHooks = options.strictTerminalHooks ?? false;
    this.#generateId = options.generateId ?? (() => randomUUID());
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
    const hooks = this.#hooksFor(erased, options as ExecuteOptions<unknown, unknown>);
    const sessionId = options.sessionId ?? this.#generateId('session');
    const runId = this.#generateId('run');
    const turnId = this.#generateId('turn');
    const streamId = sessionId;
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
    });
    let writer: StreamWriter;
    try {
      writer = await this.streamManager.claim(streamId, runId);
      const ok = await writer.write({ type: 'run_started', signal: 'start', input, streamId, agentId: sessionId, agentType: agent.name, runId, timestamp: Date.now() });
      if (!ok) throw new StateCommitError(`Run ${runId} lost its stream to a newer run before it started.`);
    } catch (error) {
      await this.stateStore
        .commit({ sessionId, runId, kind: 'terminal', runStatus: 'failed', error: errorInfo(error), committedAt: Date.now() })
        .catch((e: unknown) => this.#logger.error(`could not record the failed entry of run ${runId}: ${String(e)}`));
      throw error;
    }

    const abort = new AbortController();
    if (options.abortSignal) {
      if (options.abortSignal.aborted) abort.abort(options.abortSignal.reason);
      else options.abortSignal.addEventListener('abort', () => abort.abort(options.abortSignal?.reason), { once: true });
    }
    const run = new RunContext(
      {
        agent: erased,
        hooks,
        stateStore: this.stateStore,
        writer,
        usageStore: options.usageStore,
        logger: this.#logger,
        sessionId,
        runId,
        streamId,
        turnId,
        abort,
        strictTerminalHooks: this.#strictTerminalHooks,
        ...(options.parentSessionId === undefined ? {} : { parentSessionId: options.parentSessionId }),
        ...(options.userId === undefined ? {} : { userId: options.userId }),
        ...(options.tags === undefined ? {} : { tags: options.tags }),
        ...(options.metadata === undefined ? {} : { metadata: options.metadata }),
      },
      begun.session.state,
      begun.session.messages,
      startedAt,
    );
    const done = runLoop(run, this.llmAdapter, { input, inputMessages }).catch((error: unknown): AgentResult => {
      // The loop handles every ending itself; reaching this is a bug, reported rather than lost.
      this.#logger.error(`run ${runId} crashed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      return { status: 'failed', sessionId, runId, state: run.state, stepCount: run.stepCount, durationMs: run.durationMs(), error: errorInfo(error) };
    });
    const streamManager = this.streamManager;
    const usageStore = options.usageStore;
    return {
      sessionId,
      runId,
      streamId,
      result: () => done as Promise<AgentResult<TState, TOutput>>,
      stream: () => streamManager.read(streamId, { fromSeq: writer.startSeq, untilRunEnds: runId }),
      getUsageRollup: async () => (usageStore ? usageStore.getRollup({ runId }) : undefined),
    };
  }

  /** Agent hooks first, then the execution's manager, then its hooks (rule 131); cached when there are no execution hooks. */
  #hooksFor(agent: AgentConfig<unknown, unknown>, options: ExecuteOptions<unknown, unknown>): HookManager<unknown, unknown> {
    if (!options.hooks && !options.hookManager) {
      if (!agent.hooks) return EMPTY_MANAGER;
      let cached = this.#agentHooks.get(agent);
      if (!cached) {
        cached = new HookManager<unknown, unknown>(agent.hooks);
        this.#agentHooks.set(agent, cached);
      }
      return cached;
    }
    return new HookManager<unknown, unknown>(agent.hooks, options.hookManager, options.hooks);
  }
}

function errorInfo(error: unknown): AgentError['info'] {
  return AgentError.isInstance(error) ? error.info : new StateCommitError(error instanceof Error ? error.message : String(error)).info;
}
