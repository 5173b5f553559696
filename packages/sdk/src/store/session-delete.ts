import { AgentError } from '../errors.js';
import type { RunStatus } from '../store.js';

/** What {@link planDeleteSession} reads: the session's current run, if it has one. */
export interface DeleteSessionInput {
  readonly sessionId: string;
  /** The session's current run (undefined when the session has none, or does not exist). */
  readonly currentRun: { readonly runId: string; readonly status: RunStatus } | undefined;
}

/**
 * The rule of a session's deletion: a session whose current run is running cannot be deleted (an
 * AgentError `session_running`; stop the run and let it end first). Any other session is deleted with
 * everything it holds: its runs, their journals and committed steps, checkpoints, messages, usage and
 * its stream. Returns undefined when the deletion may go ahead.
 */
export function planDeleteSession(input: DeleteSessionInput): AgentError | undefined {
  const run = input.currentRun;
  if (run === undefined || run.status !== 'running') return undefined;
  return new AgentError('session_running', `Session ${input.sessionId} has a running run (${run.runId}); stop it and let it end before deleting the session.`, {
    details: { sessionId: input.sessionId, runId: run.runId },
  });
}
