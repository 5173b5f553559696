import { AsyncLocalStorage } from 'node:async_hooks';
import { DBOS } from '@dbos-inc/dbos-sdk';
import { AgentError, ConfigError, type AgentConfig, type AgentErrorInfo, type AgentHandle, type AgentResult, type RunCallOptions, type UsageStore } from '@helix-agents/sdk';
import { Pacer, resultOf, type BeginSpec, type HostedBegin, type RunHost, type RunLauncher } from '@helix-agents/sdk/host';
import type { StateStore } from '@helix-agents/sdk/store';

/** What a run's workflow is started with: plain data, so any worker can run or re-run it. */
export interface RunWorkflowInput {
  /** The name of the executor (the same on every worker) whose host runs the workflow. */
  readonly executor: string;
  readonly runId: string;
  readonly sessionId: string;
  readonly agentType: string;
  readonly options: Pick<RunCallOptions, 'userId' | 'tags' | 'metadata' | 'dryRun'>;
  readonly spec: BeginSpec;
}

/** What a run's workflow returns: the run's result, or the typed error of an entry that was refused. */
export type RunWorkflowOutput = { readonly status: 'ended'; readonly result: AgentResult } | { readonly status: 'refused'; readonly error: AgentErrorInfo };

type EntryOutcome = { readonly ok: true } | { readonly ok: false; readonly error: AgentErrorInfo };
type AdvanceOutcome = { readonly ended: false } | { readonly ended: true; readonly result: AgentResult };

/** What the host needs of its executor. */
export interface HostedExecutor {
  readonly stateStore: StateStore;
  readonly instanceId: string;
  readonly leaseMs: number;
  registeredAgent(agentType: string): AgentConfig<unknown, unknown> | undefined;
}

/** A run whose loop this process holds, driven by the workflow's steps. */
interface LocalRun {
  readonly pacer: Pacer;
  readonly handle: AgentHandle;
}

/** An entry started in this process, waiting for the workflow's entry step. */
interface PendingEntry {
  readonly request: HostedBegin;
  resolve(handle: AgentHandle): void;
  reject(error: unknown): void;
}

/** The hosts of this process by executor name (the workflow function is one per process; DBOS registers it once). */
const hosts = new Map<string, DBOSRunHost>();
/**
 * Runs a function outside every DBOS context. A run can begin inside another run's hook or tool (a
 * sub-agent, a supersede), whose code runs in that run's workflow step; its workflow must be a workflow
 * of its own, not part of that step.
 */
const outsideDBOS = AsyncLocalStorage.snapshot();
const HOST_WAIT_MS = 30_000;

/** The host named `name`, waiting a little for it: a worker may recover workflows before its executor is made. */
async function hostNamed(name: string): Promise<DBOSRunHost> {
  const deadline = Date.now() + HOST_WAIT_MS;
  for (;;) {
    const host = hosts.get(name);
    if (host) return host;
    if (Date.now() > deadline) throw new ConfigError(`No DBOSAgentExecutor named "${name}" exists in this worker; make it before DBOS.launch() on every worker.`, { executor: name });
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * A run as a DBOS workflow (workflow id = run id): one step for the entry (K1, the stream claim,
 * run_started), then one step per committed loop step until the run ends or suspends. A step that a dead
 * worker left unfinished runs again on the worker that recovers the workflow: it claims the run
 * (fencing out the old worker) and continues it from its last commit, replaying its journal.
 */
async function helixRunWorkflow(input: RunWorkflowInput): Promise<RunWorkflowOutput> {
  const entry = await DBOS.runStep(async () => (await hostNamed(input.executor)).entryStep(input), { name: 'helix.entry' });
  if (!entry.ok) return { status: 'refused', error: entry.error };
  try {
    for (;;) {
      const step = await DBOS.runStep(async () => (await hostNamed(input.executor)).advanceStep(input), { name: 'helix.step' });
      if (step.ended) return { status: 'ended', result: step.result };
    }
  } catch (error) {
    // Cancelled between two steps (a stop from another process): the loop held here ends as stopped.
    await hosts.get(input.executor)?.stopHeld(input.runId, STOPPED_ELSEWHERE);
    throw error;
  }
}

/** The reason of a run stopped from a process other than the one running it. */
const STOPPED_ELSEWHERE = 'The run was stopped from another process.';

/** The registered workflow (registered when this module loads, which is before DBOS.launch() in any program that imports it). */
export const runWorkflow = DBOS.registerWorkflow(helixRunWorkflow, { name: 'helix.run' });

/** The call options a workflow can carry to another worker; anything else is refused, named. */
function portableOptions(options: RunCallOptions, usageStore: UsageStore | undefined): RunWorkflowInput['options'] {
  // A child run carries its parent's usage store, which is the executor's: every worker has that one.
  // A hookContext (rule 202) is a live object of this process: another worker could not have it either.
  const local = (['hooks', 'hookManager', 'usageStore', 'hookContext'] as const).filter((key) => options[key] !== undefined && !(key === 'usageStore' && options.usageStore === usageStore));
  if (local.length > 0) {
    throw new ConfigError(
      `DBOSAgentExecutor cannot take ${local.join(', ')} per call: a run may continue on another worker, which would not have them. Put hooks on the agent and the usage store on the executor.`,
      { options: local },
    );
  }
  return {
    ...(options.userId === undefined ? {} : { userId: options.userId }),
    ...(options.tags === undefined ? {} : { tags: options.tags }),
    ...(options.metadata === undefined ? {} : { metadata: options.metadata }),
    ...(options.dryRun === true ? { dryRun: true } : {}),
  };
}

/** A result as a workflow output (plain data). */
function plain(result: AgentResult): AgentResult {
  return JSON.parse(JSON.stringify(result)) as AgentResult;
}

/**
 * The {@link RunHost} of runtime-dbos: starts each run as a DBOS workflow and drives its loop with a
 * {@link Pacer}, one workflow step per committed loop step.
 */
export class DBOSRunHost implements RunHost {
  readonly #name: string;
  #hosted: HostedExecutor | undefined;
  readonly #usageStore: UsageStore | undefined;
  #launcher: RunLauncher | undefined;
  readonly #pending = new Map<string, PendingEntry>();
  readonly #local = new Map<string, LocalRun>();
  /** Workflows started here, until they finish (close() waits for them). */
  readonly #workflows = new Set<Promise<void>>();

  constructor(name: string, usageStore: UsageStore | undefined) {
    if (hosts.has(name)) throw new ConfigError(`A DBOSAgentExecutor named "${name}" already exists in this process; give each its own name.`, { executor: name });
    this.#name = name;
    this.#usageStore = usageStore;
    hosts.set(name, this);
  }

  /** The executor whose stores, agents and lease this host uses (set once it is constructed). */
  attach(executor: HostedExecutor): void {
    this.#hosted = executor;
  }

  #executor(): HostedExecutor {
    if (!this.#hosted) throw new ConfigError('The DBOS run host has no executor attached.');
    return this.#hosted;
  }

  bind(launcher: RunLauncher): void {
    this.#launcher = launcher;
  }

  /** Whether this process holds the loop of run `runId`. */
  holds(runId: string): boolean {
    return this.#local.has(runId);
  }

  /** Runs of this host whose loop this process holds now. */
  get localRuns(): number {
    return this.#local.size;
  }

  async begin(request: HostedBegin): Promise<AgentHandle> {
    const input: RunWorkflowInput = {
      executor: this.#name,
      runId: request.runId,
      sessionId: request.sessionId,
      agentType: request.agent.name,
      options: portableOptions(request.options, this.#usageStore),
      spec: request.spec,
    };
    const entered = new Promise<AgentHandle>((resolve, reject) => this.#pending.set(request.runId, { request, resolve, reject }));
    try {
      const workflow = await outsideDBOS(() => DBOS.startWorkflow(runWorkflow, { workflowID: request.runId })(input));
      const finished = workflow.getResult().then(
        () => undefined,
        () => undefined,
      );
      this.#workflows.add(finished);
      void finished.then(() => this.#workflows.delete(finished));
      // A workflow that fails before its entry step answers (a DBOS error) must not leave the caller waiting.
      return await Promise.race([entered, workflow.getResult().then((): never => {
        throw new AgentError('run_internal_error', `The workflow of run ${request.runId} ended before its entry answered.`);
      })]);
    } finally {
      this.#pending.delete(request.runId);
    }
  }

  /** The workflow's entry step: the entry here (for a caller in this process, or a re-run of it). */
  async entryStep(input: RunWorkflowInput): Promise<EntryOutcome> {
    const pending = this.#pending.get(input.runId);
    const pacer = new Pacer();
    try {
      let handle: AgentHandle;
      if (pending) {
        const { abortSignal } = pending.request.options;
        handle = await this.#launcherOf().beginHere(pending.request.agent, input.sessionId, { ...this.#withUsage(input.options), ...(abortSignal ? { abortSignal } : {}) }, input.spec, input.runId, pacer);
      } else {
        // The caller's worker died between its start and its entry, or re-runs this step after a crash.
        if (await this.#executor().stateStore.getRun(input.runId)) return { ok: true };
        handle = await this.#launcherOf().beginHere(this.#agent(input.agentType), input.sessionId, this.#withUsage(input.options), input.spec, input.runId, pacer);
      }
      this.#local.set(input.runId, { pacer, handle });
      pending?.resolve(handle);
      return { ok: true };
    } catch (error) {
      pending?.reject(error);
      return { ok: false, error: AgentError.isInstance(error) ? error.info : new AgentError('run_internal_error', error instanceof Error ? error.message : String(error)).info };
    }
  }

  /** A workflow step: lets the run's loop go on to its next commit; claims and continues the run first when this process does not hold it. */
  async advanceStep(input: RunWorkflowInput): Promise<AdvanceOutcome> {
    const local = this.#local.get(input.runId) ?? (await this.#continueHere(input));
    if (!local) return { ended: true, result: await this.#storedResult(input) };
    // A stop from another process cancels the workflow; DBOS tells the running step, which stops the loop.
    const cancelled = DBOS.stepStatus?.cancelSignal;
    const stop = () => void local.handle.stop(STOPPED_ELSEWHERE);
    if (cancelled?.aborted) stop();
    cancelled?.addEventListener('abort', stop, { once: true });
    let ended: boolean;
    try {
      ended = await local.pacer.advance();
    } finally {
      cancelled?.removeEventListener('abort', stop);
    }
    if (!ended) return { ended: false };
    this.#local.delete(input.runId);
    return { ended: true, result: plain(await local.handle.result()) };
  }

  /** Stops a run whose loop is held here between two workflow steps and lets it run to its end. */
  async stopHeld(runId: string, reason: string): Promise<void> {
    const local = this.#local.get(runId);
    if (!local) return;
    const done = local.handle.stop(reason);
    while (!(await local.pacer.advance()));
    await done;
    this.#local.delete(runId);
  }

  /** Claims the run (it may still hold a dead worker's lease) and continues it here, from its last commit; undefined when it already ended. */
  async #continueHere(input: RunWorkflowInput): Promise<LocalRun | undefined> {
    const executor = this.#executor();
    let claimed;
    try {
      claimed = await executor.stateStore.claimRun(input.runId, executor.instanceId, executor.leaseMs, Date.now(), { takeover: true });
    } catch (error) {
      if (AgentError.isInstance(error) && error.code === 'state_run_not_recoverable') return undefined;
      throw error;
    }
    const pacer = new Pacer();
    const handle = await this.#launcherOf().continueClaimed(this.#agent(claimed.run.agentType), claimed, this.#withUsage({}), pacer);
    const local = { pacer, handle };
    this.#local.set(input.runId, local);
    return local;
  }

  /** The result of a run that ended before this step could drive it (read from the store). */
  async #storedResult(input: RunWorkflowInput): Promise<AgentResult> {
    const store = this.#executor().stateStore;
    const run = await store.getRun(input.runId);
    if (!run) throw new AgentError('state_not_found', `Run ${input.runId} does not exist.`, { details: { runId: input.runId } });
    return plain(resultOf(run, run.sessionId, await store.loadSession(run.sessionId)));
  }

  #withUsage(options: RunWorkflowInput['options']): RunCallOptions {
    return this.#usageStore === undefined ? options : { ...options, usageStore: this.#usageStore };
  }

  #agent(agentType: string): AgentConfig<unknown, unknown> {
    const agent = this.#executor().registeredAgent(agentType);
    if (!agent) throw new AgentError('agent_not_registered', `No agent named "${agentType}" is registered with the DBOSAgentExecutor "${this.#name}" of this worker.`, { details: { agentType } });
    return agent;
  }

  #launcherOf(): RunLauncher {
    if (!this.#launcher) throw new ConfigError('The DBOS run host is not bound to an executor.');
    return this.#launcher;
  }

  /**
   * Waits (up to `waitMs`, 2 s by default) for the workflows started here to finish, then forgets this host. Runs still
   * going are abandoned here; their workflows continue on whichever worker recovers them.
   */
  async close(waitMs = 2_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, waitMs);
      timer.unref();
    });
    await Promise.race([Promise.all([...this.#workflows]), timeout]);
    clearTimeout(timer);
    if (hosts.get(this.#name) === this) hosts.delete(this.#name);
  }
}
