import type { AgentErrorInfo, CheckpointInfo, HookDecision, RunStatus, StatePatch, StreamChunk } from '@helix-agents/sdk';
import type { HelixServerContext } from './server-context.js';

/** A run on the devtools timeline: from its `run_started` chunk to its terminal chunk. */
export interface TimelineRun {
  readonly runId: string;
  readonly signal: string;
  readonly input?: string;
  readonly startedAt: number;
  readonly endedAt?: number;
  /** From the run's terminal chunk (`running` while it has none). */
  readonly status: RunStatus | 'running';
}

/** One model step (its last attempt): from its `step_start` chunk to the next step or the run's end. */
export interface TimelineStep {
  readonly runId: string;
  readonly stepIndex: number;
  readonly attempt: number;
  readonly startedAt: number;
  readonly endedAt?: number;
}

/** One tool call: asked for, then executed (`tool_start` to `tool_end`). */
export interface TimelineToolCall {
  readonly runId: string;
  readonly toolCallId: string;
  readonly toolName: string;
  readonly args: unknown;
  readonly startedAt: number;
  readonly endedAt?: number;
  readonly durationMs?: number;
  readonly success?: boolean;
  readonly result?: unknown;
  readonly error?: AgentErrorInfo;
  /** True when the call waited for an approval. */
  readonly approval?: boolean;
}

/** The commit names of docs/semantics.md. */
export type CommitLabel = 'K1' | 'K2' | 'K3' | 'K4' | 'K5';

/** One atomic commit of a run, with the state changes it made durable. */
export interface TimelineCommit {
  readonly runId: string;
  readonly label: CommitLabel;
  /** `run_start`, or the checkpoint kind of K2 to K5 (`turn_start`, `step`, `state`). */
  readonly kind: 'run_start' | CheckpointInfo['kind'];
  readonly at: number;
  readonly checkpointId?: string;
  readonly stepCount?: number;
  readonly messageCount?: number;
  /** The state patches the run streamed since its previous commit (the state diff of this commit). */
  readonly patches: readonly StatePatch[];
  /** True when more patches were made than `patches` holds. */
  readonly patchesTruncated?: boolean;
}

/** One hook firing, from its `hook_decision` chunk. */
export interface TimelineHook {
  readonly runId: string;
  readonly hookPoint: string;
  readonly hookName: string;
  readonly decision: HookDecision;
  readonly reason?: string;
  readonly durationMs: number;
  /** When it ended (the chunk's time); it started `durationMs` earlier. */
  readonly at: number;
  readonly toolCallId?: string;
  readonly policy?: string;
}

/** GET /api/sessions/:id/timeline: what the devtools page draws. */
export interface SessionTimeline {
  readonly sessionId: string;
  readonly startedAt: number | undefined;
  readonly endedAt: number | undefined;
  /** The stream's next offset (a live tail reads from here). */
  readonly nextSeq: number;
  readonly runs: readonly TimelineRun[];
  readonly steps: readonly TimelineStep[];
  readonly tools: readonly TimelineToolCall[];
  readonly commits: readonly TimelineCommit[];
  readonly hooks: readonly TimelineHook[];
  /** The number of text and reasoning deltas, per run (their text is in the messages). */
  readonly deltas: Readonly<Record<string, number>>;
}

const MAX_PATCHES_PER_COMMIT = 200;
const MAX_ITEMS = 5000;

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * Builds a session's timeline from its stream (runs, steps, tool calls, hook firings, state patches)
 * and its checkpoints (the commits K2 to K5; K1 is the `run_started` chunk). Each commit carries the
 * state patches of its run streamed after the run's previous commit and no later than it. Lists stop
 * at 5000 entries each, the earliest kept.
 */
export async function sessionTimeline(ctx: HelixServerContext, sessionId: string): Promise<SessionTimeline> {
  const chunks: StreamChunk[] = [];
  for await (const chunk of ctx.runtime.readStream(sessionId, { follow: false })) chunks.push(chunk);
  const checkpoints = await ctx.runtime.listCheckpoints(sessionId);
  const statuses = new Map<string, RunStatus>();
  for (const chunk of chunks) {
    if (chunk.type === 'run_started' && !statuses.has(chunk.runId)) {
      const run = await ctx.runtime.getRun(chunk.runId);
      if (run) statuses.set(chunk.runId, run.status);
    }
  }
  return buildTimeline(sessionId, chunks, checkpoints, statuses);
}

/** The pure part of {@link sessionTimeline}: the timeline of these chunks and checkpoints (exported for tests). */
export function buildTimeline(sessionId: string, chunks: readonly StreamChunk[], checkpoints: readonly CheckpointInfo[], runStatuses: ReadonlyMap<string, RunStatus> = new Map()): SessionTimeline {
  const runs = new Map<string, Mutable<TimelineRun>>();
  const steps: Mutable<TimelineStep>[] = [];
  const openStep = new Map<string, Mutable<TimelineStep>>();
  const tools = new Map<string, Mutable<TimelineToolCall>>();
  const hooks: TimelineHook[] = [];
  const patches: { runId: string; at: number; patches: readonly StatePatch[] }[] = [];
  const deltas: Record<string, number> = {};
  const push = <T>(list: T[], item: T): void => {
    if (list.length < MAX_ITEMS) list.push(item);
  };
  for (const chunk of chunks) {
    const at = chunk.timestamp;
    switch (chunk.type) {
      case 'run_started':
        if (!runs.has(chunk.runId) && runs.size < MAX_ITEMS) runs.set(chunk.runId, { runId: chunk.runId, signal: chunk.signal, ...(chunk.input === undefined ? {} : { input: chunk.input }), startedAt: at, status: 'running' });
        break;
      case 'step_start': {
        const previous = openStep.get(chunk.runId);
        if (previous) previous.endedAt = at;
        const step = { runId: chunk.runId, stepIndex: chunk.stepIndex, attempt: chunk.attempt, startedAt: at };
        openStep.set(chunk.runId, step);
        push(steps, step);
        break;
      }
      case 'text_delta':
      case 'reasoning_delta':
        deltas[chunk.runId] = (deltas[chunk.runId] ?? 0) + 1;
        break;
      case 'actions_requested':
        for (const call of chunk.calls) if (!tools.has(call.callId) && tools.size < MAX_ITEMS) tools.set(call.callId, { runId: chunk.runId, toolCallId: call.callId, toolName: call.toolName, args: call.args, startedAt: at });
        break;
      case 'tool_approval_request': {
        const call = tools.get(chunk.toolCallId);
        if (call) call.approval = true;
        break;
      }
      case 'tool_start': {
        const call = tools.get(chunk.toolCallId);
        if (call) call.startedAt = at;
        else if (tools.size < MAX_ITEMS) tools.set(chunk.toolCallId, { runId: chunk.runId, toolCallId: chunk.toolCallId, toolName: chunk.toolName, args: chunk.arguments, startedAt: at });
        break;
      }
      case 'tool_end': {
        const call = tools.get(chunk.toolCallId);
        if (!call) break;
        Object.assign(call, { endedAt: at, durationMs: chunk.durationMs, success: chunk.success, ...(chunk.result === undefined ? {} : { result: chunk.result }), ...(chunk.error === undefined ? {} : { error: chunk.error }) });
        break;
      }
      case 'hook_decision':
        push(hooks, {
          runId: chunk.runId,
          hookPoint: chunk.hookPoint,
          hookName: chunk.hookName,
          decision: chunk.decision,
          durationMs: chunk.durationMs,
          at,
          ...(chunk.reason === undefined ? {} : { reason: chunk.reason }),
          ...(chunk.toolCallId === undefined ? {} : { toolCallId: chunk.toolCallId }),
          ...(chunk.policy === undefined ? {} : { policy: chunk.policy }),
        });
        break;
      case 'state_patch':
        patches.push({ runId: chunk.runId, at, patches: chunk.patches });
        break;
      case 'suspended':
      case 'end':
      case 'error': {
        const run = runs.get(chunk.runId);
        if (run) {
          run.endedAt = at;
          run.status = chunk.type === 'suspended' ? 'suspended' : chunk.type === 'end' ? 'completed' : chunk.status;
        }
        const step = openStep.get(chunk.runId);
        if (step) step.endedAt = at;
        openStep.delete(chunk.runId);
        break;
      }
      default:
        break;
    }
  }
  for (const [runId, status] of runStatuses) {
    const run = runs.get(runId);
    // The run's record knows an ending its stream may not show (a superseded run writes no terminal chunk).
    if (run && run.status === 'running' && status !== 'running') run.status = status;
  }
  const commits = commitsOf([...runs.values()], checkpoints, patches);
  const times = [...runs.values()].flatMap((r) => [r.startedAt, r.endedAt ?? r.startedAt]);
  const last = chunks[chunks.length - 1];
  return {
    sessionId,
    startedAt: times.length === 0 ? undefined : Math.min(...times),
    endedAt: times.length === 0 ? undefined : Math.max(...times, ...hooks.map((h) => h.at), ...commits.map((c) => c.at)),
    nextSeq: last === undefined ? 0 : last.seq + 1,
    runs: [...runs.values()],
    steps,
    tools: [...tools.values()],
    commits,
    hooks,
    deltas,
  };
}

/** K1 per run, then K2..K5 from the checkpoints; each gets the run's patches since its previous commit. */
function commitsOf(runs: readonly TimelineRun[], checkpoints: readonly CheckpointInfo[], patches: readonly { runId: string; at: number; patches: readonly StatePatch[] }[]): TimelineCommit[] {
  const byRun = new Map<string, Mutable<TimelineCommit>[]>();
  for (const run of runs) byRun.set(run.runId, [{ runId: run.runId, label: 'K1', kind: 'run_start', at: run.startedAt, patches: [] }]);
  for (const cp of [...checkpoints].sort((a, b) => a.createdAt - b.createdAt)) {
    const list = byRun.get(cp.runId);
    if (!list) continue;
    list.push({ runId: cp.runId, label: cp.kind === 'turn_start' ? 'K2' : cp.kind === 'state' ? 'K5' : 'K3', kind: cp.kind, at: cp.createdAt, checkpointId: cp.checkpointId, stepCount: cp.stepCount, messageCount: cp.messageCount, patches: [] });
  }
  for (const run of runs) {
    const list = byRun.get(run.runId) ?? [];
    // A suspended run's last step commit is its suspension commit.
    const lastStep = list[list.length - 1];
    if (run.status === 'suspended' && lastStep && lastStep.kind === 'step') lastStep.label = 'K4';
  }
  for (const patch of patches) {
    const list = byRun.get(patch.runId);
    const commit = list?.find((c) => c.label !== 'K1' && c.at >= patch.at) ?? undefined;
    if (!commit) continue;
    const room = MAX_PATCHES_PER_COMMIT - commit.patches.length;
    if (room <= 0) {
      commit.patchesTruncated = true;
      continue;
    }
    commit.patches = [...commit.patches, ...patch.patches.slice(0, room)];
    if (patch.patches.length > room) commit.patchesTruncated = true;
  }
  return [...byRun.values()].flat().sort((a, b) => a.at - b.at);
}
