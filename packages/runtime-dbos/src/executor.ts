import { DBOS } from '@dbos-inc/dbos-sdk';
import { JSAgentExecutor, type AgentHandle, type AgentResult, type JSAgentExecutorOptions, type LLMAdapter, type RecoverOptions, type StreamManager, type UsageStore } from '@helix-agents/sdk';
import type { StateStore } from '@helix-agents/sdk/store';
import { DBOSRunHost } from './host.js';

/**
 * Options of a {@link DBOSAgentExecutor}: runtime-js's, less `host`, plus a name and a usage store.
 * `journalModelReplies` defaults to `always` here (runtime-js: `side-effects`).
 */
export interface DBOSAgentExecutorOptions extends Omit<JSAgentExecutorOptions, 'host'> {
  /**
   * The executor's name, the same on every worker (default `helix`). A run's workflow carries it, so the
   * worker that recovers the workflow finds the executor (its agents, hooks and stores) to continue it with.
   */
  readonly name?: string;
  /**
   * Where every run's usage goes (default: the state store when it is also a usage store, as the Postgres
   * store is, so usage lands in the same commit as the step). Per-call usage stores are refused: a run may
   * continue on a worker that does not have one.
   */
  readonly usageStore?: UsageStore;
}

function isUsageStore(value: unknown): value is UsageStore {
  const candidate = value as Partial<UsageStore> | undefined;
  return typeof candidate?.record === 'function' && typeof candidate.getRollup === 'function';
}

/**
 * runtime-dbos: the same agents, hooks and loop as {@link JSAgentExecutor}, with every run a DBOS
 * workflow (workflow id = run id) whose steps are the run's entry and its committed loop steps. Entries
 * (execute, send, resume, approve, reject, submitToolResult, retry) work from any worker; a worker that
 * dies is replaced by another, which continues its runs from their last commits (see `launchDBOSWorker`).
 *
 * Make it after `launchDBOSWorker` (or `DBOS.launch()`) on every worker, with the same `name`, the same
 * agents and the same stores. Hooks belong on agents (or a hook manager given to the agents): per-call
 * `hooks` and `hookManager` are refused, because another worker could not run them.
 */
export class DBOSAgentExecutor extends JSAgentExecutor {
  readonly #host: DBOSRunHost;
  readonly #usageStore: UsageStore | undefined;

  constructor(stateStore: StateStore, streamManager: StreamManager, llmAdapter: LLMAdapter, options: DBOSAgentExecutorOptions = {}) {
    const { name = 'helix', usageStore, ...rest } = options;
    const host = new DBOSRunHost(name, usageStore ?? (isUsageStore(stateStore) ? stateStore : undefined));
    // Every model reply is journaled: a step a dead worker left uncommitted replays its reply on the worker
    // that recovers it instead of calling the model again (docs/runtime-dbos.md).
    super(stateStore, streamManager, llmAdapter, { ...rest, journalModelReplies: rest.journalModelReplies ?? 'always', host });
    host.attach(this);
    this.#host = host;
    this.#usageStore = usageStore;
  }

  /** Runs whose loop this worker holds right now. */
  get localRuns(): number {
    return this.#host.localRuns;
  }

  /**
   * Registers `options.agents` (so this worker can continue their runs). Recovery itself is DBOS's:
   * a restarted worker recovers its own workflows at launch, and `launchDBOSWorker`'s sweep hands the
   * workflows of dead workers to the survivors. Returns no handles: recovered runs are continued by
   * whichever worker dequeues their workflow.
   */
  override async recover(options: RecoverOptions): Promise<AgentHandle[]> {
    const agents = options.agents instanceof Map ? [...options.agents.values()] : options.agents;
    for (const agent of agents) this.registerAgent(agent);
    return [];
  }

  /**
   * Stops the session's running run, as runtime-js does: here when this worker runs it, otherwise through
   * a stop request in the store. For a run another worker holds, it also cancels the run's workflow, which
   * DBOS tells the step running the loop within about a second, so the holder stops the run without waiting
   * for its next lease renewal. Resolves with the run's result once it ended.
   */
  override async stop(sessionId: string, reason?: string): Promise<AgentResult | undefined> {
    const elsewhere = await this.#runningElsewhere(sessionId);
    if (elsewhere !== undefined) await DBOS.cancelWorkflow(elsewhere);
    return super.stop(sessionId, reason);
  }

  /** The running run of the session, when this worker does not hold its loop. */
  async #runningElsewhere(sessionId: string): Promise<string | undefined> {
    const runId = (await this.getSession(sessionId))?.currentRunId;
    if (runId === undefined || this.#host.holds(runId)) return undefined;
    return (await this.getRun(runId))?.status === 'running' ? runId : undefined;
  }

  /**
   * Deletes a session as runtime-js does, and its entries in this executor's `usageStore` too (when it is a
   * separate store with `deleteSession`), whichever worker ran the session's runs.
   */
  override async deleteSession(sessionId: string, options: { readonly usageStore?: UsageStore } = {}): Promise<boolean> {
    const deleted = await super.deleteSession(sessionId, options);
    if (this.#usageStore !== undefined && this.#usageStore !== options.usageStore && (this.#usageStore as unknown) !== this.stateStore) await this.#usageStore.deleteSession?.(sessionId);
    return deleted;
  }

  /** The same as {@link stop}. */
  override async interrupt(sessionId: string, reason?: string): Promise<AgentResult | undefined> {
    return this.stop(sessionId, reason);
  }

  /**
   * On DBOS nothing is handed off: runtime-js's shutdown lets its runs go for `recover()` elsewhere, which
   * DBOS does itself. Runs whose loop this worker holds go on while the process lives; once the worker's
   * heartbeat stops (`worker.shutdown()` or its death), a survivor resumes their workflows.
   */
  override async shutdown(): Promise<void> {
    // Deliberately empty: see above.
  }

  /** Closes hooks (as runtime-js does) and removes this executor from the worker. */
  override async close(): Promise<void> {
    await super.close();
    await this.#host.close();
  }
}
