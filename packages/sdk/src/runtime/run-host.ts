import type { AgentConfig } from '../define.js';
import type { AgentHandle, RunCallOptions } from './agent-runtime.js';
import type { Pacer } from './pacer.js';
import type { BeginSpec, RunLauncher } from './run-entry.js';

/** A run about to begin, as a {@link RunHost} receives it. */
export interface HostedBegin {
  /** The new run's id (a durable engine uses it as its workflow id). */
  readonly runId: string;
  readonly sessionId: string;
  readonly agent: AgentConfig<unknown, unknown>;
  readonly options: RunCallOptions;
  /** How the run begins: plain data (signal, input, deliveries, ...), so it can travel to another process. */
  readonly spec: BeginSpec;
  /**
   * Runs the entry here (the run-start commit, the stream claim, run_started) and prepares the loop,
   * held by `pacer` until its first advance. Rejects with the entry's typed error; a refused entry
   * changes nothing.
   */
  enter(pacer: Pacer): Promise<AgentHandle>;
}

/**
 * Where the loops of runs run. Without a host (runtime-js), a run's loop starts in this process right
 * after its entry. A durable-execution engine supplies a host: it starts a workflow for the run, whose
 * steps do the entry and then advance the loop one committed step at a time, so that a worker that
 * dies is replaced by another that continues the run from its last commit.
 */
export interface RunHost {
  /** Called once by the launcher that uses this host, before any run begins. */
  bind(launcher: RunLauncher): void;
  /** Begins `request`'s run and resolves with its handle once its entry passed. */
  begin(request: HostedBegin): Promise<AgentHandle>;
}
