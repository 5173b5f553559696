import type { AgentConfig } from '../define.js';
import { AgentError } from '../errors.js';
import type { StateStore } from '../store.js';
import type { AgentHandle, RecoverOptions } from './agent-runtime.js';
import type { Logger } from './logger.js';
import type { RunLauncher } from './run-entry.js';

/**
 * Continues the runs whose lease expired (their process is presumed dead): each candidate of an agent
 * in `options.agents` is claimed (its epoch goes up, fencing out the old process) and continued from
 * its last commit. One candidate's trouble never strands the others; a run another process claimed
 * first is skipped.
 */
export async function recoverRuns(store: StateStore, launcher: RunLauncher, owner: string, leaseMs: number, logger: Logger, options: RecoverOptions): Promise<AgentHandle[]> {
  const agents = new Map<string, AgentConfig<unknown, unknown>>();
  const list = options.agents instanceof Map ? [...options.agents.values()] : (options.agents as readonly AgentConfig<unknown, unknown>[]);
  for (const agent of list) agents.set(agent.name, agent);
  const handles: AgentHandle[] = [];
  for (const candidate of await store.listRecoverable(Date.now(), options.limit ?? 100)) {
    const agent = agents.get(candidate.agentType);
    if (!agent) {
      logger.warn(`run ${candidate.runId} of agent "${candidate.agentType}" is recoverable, but no such agent was given to recover()`);
      continue;
    }
    try {
      // A model id that no longer resolves leaves the run unclaimed (and logged) for a process that can run it.
      launcher.modelFor(agent);
      const claimed = await store.claimRun(candidate.runId, owner, leaseMs, Date.now());
      handles.push(await launcher.continueClaimed(agent, claimed, options));
    } catch (error) {
      // Another process claimed it first, or it ended meanwhile.
      if (AgentError.isInstance(error) && error.code === 'state_run_not_recoverable') continue;
      logger.error(`recovering run ${candidate.runId} failed: ${error instanceof Error ? error.message : String(error)}`, { runId: candidate.runId });
    }
  }
  return handles;
}
