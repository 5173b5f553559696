import type { AgentErrorInfo, PendingCall, RunRecord, RunStatus, RunUsageSummary, SessionSnapshot, SuspensionRecord, UsageRollup } from '@helix-agents/sdk';
import type { HelixServerContext } from './server-context.js';

/** Token totals over a session's runs, summed from their terminal chunks. */
export interface UsageTotals {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cacheReadTokens: number;
  readonly cacheWriteTokens: number;
  readonly reasoningTokens: number;
  readonly costUsd: number;
}

/** GET /api/sessions/:id: the committed session, its runs, what it waits on, and its usage. */
export interface SessionDetails extends Omit<SessionSnapshot, 'version'> {
  /** The current run's status (undefined before the first run). */
  readonly status: RunStatus | undefined;
  /** The latest runs, oldest first (at most `limits.listRuns`). */
  readonly runs: readonly RunRecord[];
  /** The calls the suspended current run waits on (empty unless suspended). */
  readonly pendingCalls: readonly PendingCall[];
  /** Summed from the runs' terminal chunks (a suspended run's usage counts once it ends). */
  readonly usage: UsageTotals;
  /** The usage store's rollup, when the server was given one. */
  readonly usageRollup?: UsageRollup;
}

/** What GET .../runs/:runId/result answers: the run's outcome, or `running` when it did not end in time. */
export interface RunResultView {
  readonly status: RunStatus;
  readonly sessionId: string;
  readonly runId: string;
  readonly output?: unknown;
  readonly error?: AgentErrorInfo;
  readonly state?: unknown;
  readonly stepCount: number;
  readonly suspension?: SuspensionRecord;
  /** The run's usage, when the server has a usage store. */
  readonly usage?: UsageRollup;
}

/** Reads a session for GET /api/sessions/:id (its stream once, for the runs and usage). */
export async function sessionDetails(ctx: HelixServerContext, sessionId: string): Promise<SessionDetails> {
  const session = await ctx.runtime.getSession(sessionId);
  if (!session) throw new Error(`session ${sessionId} vanished`);
  const runIds: string[] = [];
  const totals = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0, costUsd: 0 };
  for await (const chunk of ctx.runtime.readStream(sessionId, { follow: false })) {
    if (chunk.type === 'run_started') {
      ctx.noteRunStart(chunk.runId, chunk.seq);
      runIds.push(chunk.runId);
    } else if ((chunk.type === 'end' || chunk.type === 'error') && chunk.usage) add(totals, chunk.usage);
  }
  const runs: RunRecord[] = [];
  for (const runId of runIds.slice(-ctx.limits.listRuns)) {
    const run = await ctx.runtime.getRun(runId);
    if (run) runs.push(run);
  }
  const current = session.currentRunId === undefined ? undefined : (runs.find((r) => r.runId === session.currentRunId) ?? (await ctx.runtime.getRun(session.currentRunId)));
  const usageRollup = ctx.usageStore ? await ctx.usageStore.getRollup({ sessionId }) : undefined;
  return {
    sessionId,
    agentType: session.agentType,
    ...(session.parentSessionId === undefined ? {} : { parentSessionId: session.parentSessionId }),
    state: session.state,
    messages: session.messages,
    currentRunId: session.currentRunId,
    status: current?.status,
    turn: session.turn,
    stepCount: session.stepCount,
    resumeCount: session.resumeCount,
    runs,
    pendingCalls: current?.status === 'suspended' ? (current.suspension?.pending ?? []) : [],
    usage: totals,
    ...(usageRollup === undefined ? {} : { usageRollup }),
  };
}

function add(totals: { -readonly [K in keyof UsageTotals]: number }, usage: RunUsageSummary): void {
  totals.inputTokens += usage.inputTokens;
  totals.outputTokens += usage.outputTokens;
  totals.cacheReadTokens += usage.cacheReadTokens;
  totals.cacheWriteTokens += usage.cacheWriteTokens;
  totals.reasoningTokens += usage.reasoningTokens;
  totals.costUsd += usage.costUsd ?? 0;
}

/**
 * A run's outcome, waiting up to `waitMs` for a running run to end (by following its chunks, so it
 * works for runs of any process). The state is the one the run ended with when its `end` chunk has it,
 * else the session's committed state.
 */
export async function runResult(ctx: HelixServerContext, run: RunRecord, waitMs: number, signal: AbortSignal): Promise<RunResultView> {
  let endState: { value: unknown } | undefined;
  if (run.status === 'running' && waitMs > 0) {
    const fromSeq = (await ctx.runStartSeq(run.sessionId, run.runId)) ?? 0;
    const wait = AbortSignal.any([signal, AbortSignal.timeout(waitMs)]);
    try {
      for await (const chunk of ctx.runtime.readStream(run.sessionId, { fromSeq, untilRunEnds: run.runId, signal: wait })) {
        if (chunk.type === 'end' && 'state' in chunk) endState = { value: chunk.state };
      }
    } catch (error) {
      if (!wait.aborted) throw error;
    }
  }
  const latest = (await ctx.runtime.getRun(run.runId)) ?? run;
  if (latest.status === 'running') return { status: 'running', sessionId: latest.sessionId, runId: latest.runId, stepCount: latest.stepCount };
  const state = endState ? endState.value : (await ctx.runtime.getSession(latest.sessionId))?.state;
  const usage = ctx.usageStore ? await ctx.usageStore.getRollup({ runId: latest.runId }) : undefined;
  return {
    status: latest.status,
    sessionId: latest.sessionId,
    runId: latest.runId,
    ...(latest.output === undefined ? {} : { output: latest.output }),
    ...(latest.error === undefined ? {} : { error: latest.error }),
    state,
    stepCount: latest.stepCount,
    ...(latest.suspension === undefined ? {} : { suspension: latest.suspension }),
    ...(usage === undefined ? {} : { usage }),
  };
}
