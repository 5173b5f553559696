import { DBOS } from '@dbos-inc/dbos-sdk';
import { JSAgentExecutor, type AgentHandle, type AgentResult, type JSAgentExecutorOptions, type LLMAdapter, type RecoverOptions, type StreamManager, type UsageStore } from '@helix-agents/sdk';
import type { StateStore } from '@helix-agents/sdk/store';
import { DBOSRunHost } from './host.js';

/** Options of a {@link DBOSAgentExecutor}: runtime-js's, less `host`, plus a name and a usage store. */
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

  constructor(stateStore: StateStore, streamManager: StreamManager, llmAdapter: LLMAdapter, options: DBOSAgentExecutorOptions = {}) {
    const { name = 'helix', usageStore, ...rest } = options;
    const host = new DBOSRunHost(name, usageStore ?? (isUsageStore(stateStore) ? stateStore : undefined));
    super(stateStore, streamManager, llmAdapter, { ...rest, host });
    host.attach(this);
    this.#host = host;
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
   * Stops the session's running run: here when this worker runs it (as on runtime-js), otherwise by
   * cancelling its workflow, which the worker running it sees within about a second; that worker ends the
   * run as stopped (interrupted, with its terminal hooks). Resolves with the run's result once it ended
   * (or undefined when nothing runs on the session, or it did not end within `waitMs`, 30 s by default).
   */
  override async stop(sessionId: string, reason?: string, waitMs = 30_000): Promise<AgentResult | undefined> {
    const here = await super.stop(sessionId, reason);
    if (here) return here;
    const session = await this.getSession(sessionId);
    const runId = session?.currentRunId;
    const run = runId === undefined ? undefined : await this.getRun(runId);
    if (!run || run.status !== 'running') return undefined;
    await DBOS.cancelWorkflow(run.runId);
    const deadline = Date.now() + waitMs;
    while (Date.now() < deadline) {
      const now = await this.getRun(run.runId);
      if (now && now.status !== 'running') {
        const latest = await this.getSession(sessionId);
        return {
          status: now.status,
          sessionId,
          runId: now.runId,
          state: latest?.state,
          stepCount: now.stepCount,
          durationMs: (now.endedAt ?? Date.now()) - now.startedAt,
          ...(now.error === undefined ? {} : { error: now.error }),
        };
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return undefined;
  }

  /** The same as {@link stop}. */
  override async interrupt(sessionId: string, reason?: string): Promise<AgentResult | undefined> {
    return this.stop(sessionId, reason);
  }

  /** Closes hooks (as runtime-js does) and removes this executor from the worker. */
  override async close(): Promise<void> {
    await super.close();
    await this.#host.close();
  }
}
