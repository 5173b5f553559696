import type { AgentErrorInfo } from '../errors.js';
import type { ExitReason } from '../hooks/types.js';
import type { RunStatus, SuspensionRecord } from '../store.js';

/** How a run ended. `handle.result()` resolves with it for every ending; it never rejects. */
export interface AgentResult<TState = unknown, TOutput = unknown> {
  /** completed, failed, interrupted or superseded. */
  readonly status: RunStatus;
  readonly sessionId: string;
  readonly runId: string;
  /** The agent's output (completed runs only). */
  readonly output?: TOutput;
  /** How a completed run finished. */
  readonly exitReason?: ExitReason;
  /** Why the run did not complete. */
  readonly error?: AgentErrorInfo;
  /** The custom state as the run left it. */
  readonly state: TState;
  /** Steps this run committed. */
  readonly stepCount: number;
  readonly durationMs: number;
  /** What a suspended run waits on. */
  readonly suspension?: SuspensionRecord;
}
