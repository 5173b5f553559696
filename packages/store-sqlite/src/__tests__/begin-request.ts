import type { BeginRunRequest } from '@helix-agents/sdk/store';

/**
 * A run-start (K1) request that opens a new, empty turn; `fields` replaces any of its defaults. The
 * clock and the lease are fixed (started at 1 by owner `p`), so a test that cares about them says so.
 */
export function beginRequest(sessionId: string, runId: string, fields: Partial<BeginRunRequest> = {}): BeginRunRequest {
  return {
    sessionId,
    runId,
    agentType: 'agent',
    signal: 'start',
    initialState: {},
    newTurn: { turnId: `turn-${runId}`, input: [] },
    startedAt: 1,
    leaseOwner: 'p',
    leaseMs: 60_000,
    options: {},
    ...fields,
  };
}
