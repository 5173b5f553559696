import { RunInterruptedError, RunSupersededError } from '../errors.js';
import type { RunLease, StateStore } from '../store.js';
import type { Logger } from './logger.js';

/** A lease being kept: stop renewing it, and whether another process took the run over. */
export interface KeptLease {
  (): void;
  /** True once a renewal was refused: the run is no longer this process's. */
  readonly lost: boolean;
}

/**
 * Renews a run's lease every third of its length. A refused renewal means another process took over the
 * run: the run is aborted with that supersede (it fires onAgentSuperseded and writes nothing more). A
 * renewal that carries a stop request (another process asked through the store) stops the run as
 * `handle.stop()` does. Returns the function that stops renewing.
 */
export function keepLease(store: StateStore, lease: RunLease, leaseMs: number, abort: AbortController, logger: Logger): KeptLease {
  let epoch = lease.epoch;
  const timer = setInterval(() => {
    store.renewLease(lease.runId, epoch, leaseMs, Date.now()).then(
      (renewed) => {
        epoch = renewed.epoch;
        if (renewed.stopRequest !== undefined && !abort.signal.aborted) abort.abort(new RunInterruptedError(renewed.stopRequest.reason));
      },
      (error: unknown) => {
        if (RunSupersededError.isInstance(error)) {
          clearInterval(timer);
          kept.lost = true;
          if (!abort.signal.aborted) abort.abort(error);
        } else {
          logger.warn(`lease renewal of run ${lease.runId} failed: ${error instanceof Error ? error.message : String(error)}`);
        }
      },
    );
  }, Math.max(10, Math.floor(leaseMs / 3)));
  timer.unref();
  // A plain property set on the function, not a getter defined on it (one lease a run; defineProperty costs more).
  const kept = Object.assign(() => clearInterval(timer), { lost: false });
  return kept;
}
