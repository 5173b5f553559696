// Replaying what a process that died recorded about a step's calls: their result rows, their usage and
// their writes, the writes of parallel calls in the order they were made.
import type { ToolDefinition } from '../define.js';
import type { ToolCall } from '../messages.js';
import { callResultRecord, type CallResultRecord } from './journal-records.js';
import { callScope, type Run } from './run.js';
import type { ToolOutcome } from './tool-calls.js';

/** What {@link replayRecordedCalls} gives when no call of a step can have been recorded. */
export const NOTHING_REPLAYED: ReadonlyMap<string, Promise<ToolOutcome>> = new Map();

/** Whether any of `calls` is side-effecting: only those are recorded, so only then can a call be replayed. */
export function callsSideEffects(run: Run, calls: readonly ToolCall[]): boolean {
  return calls.some((c) => run.setup.agent.toolsByName.get(c.name)?.sideEffects === true);
}

/**
 * The calls among `calls` (at `step`) whose results a process that died recorded come back before the
 * others run: their writes (a fold of a sub-agent's outcome, a counter) were made one after another on
 * the live state, and their patches hold the values they wrote, so they are applied in the order they
 * were made (their recorded places), and their rows in the order they were recorded. The others run as usual.
 */
export async function replayRecordedCalls(run: Run, calls: readonly ToolCall[], step: number): Promise<ReadonlyMap<string, Promise<ToolOutcome>>> {
  // The common case (no side-effecting call, so nothing can have been recorded) allocates nothing.
  if (!callsSideEffects(run, calls)) return NOTHING_REPLAYED;
  const replayed = new Map<string, Promise<ToolOutcome>>();
  const tools = new Map(
    calls.flatMap((c) => {
      const tool = run.setup.agent.toolsByName.get(c.name);
      return tool?.sideEffects ? [[c.id, { call: c, tool }] as const] : [];
    }),
  );
  if (tools.size === 0) return replayed;
  const recorded: { call: ToolCall; tool: ToolDefinition; record: CallResultRecord }[] = [];
  for (const key of run.recorder.recordedOrder([...tools.keys()].map((callId) => ({ kind: 'tool_call' as const, step, callId })))) {
    const entry = key.kind === 'tool_call' ? tools.get(key.callId) : undefined;
    const prior = entry ? await run.recorder.replay(key, callResultRecord) : undefined;
    if (entry && prior?.status === 'replayed') recorded.push({ ...entry, record: prior.value });
  }
  applyRecordedWrites(run, recorded);
  for (const r of recorded) replayed.set(r.call.id, Promise.resolve(await replayCall(run, r.call, r.tool, r.record, false)));
  return replayed;
}

/** The recorded writes of several calls, interleaved in the order they were made (a record without places keeps its own order, after the others). */
function applyRecordedWrites(run: Run, recorded: readonly { call: ToolCall; record: CallResultRecord }[]): void {
  const writes = recorded.flatMap(({ call, record }, r) =>
    record.patches.map((patch, i) => ({ owner: callScope(call.id).owner, patch, seq: record.seqs?.length === record.patches.length ? (record.seqs[i] as number) : Number.MAX_SAFE_INTEGER, r, i })),
  );
  writes.sort((a, b) => a.seq - b.seq || a.r - b.r || a.i - b.i);
  for (let i = 0; i < writes.length; ) {
    const first = writes[i] as (typeof writes)[number];
    let j = i;
    while (j < writes.length && (writes[j] as (typeof writes)[number]).r === first.r && (writes[j] as (typeof writes)[number]).seq === first.seq) j++;
    run.work.applyRecorded(writes.slice(i, j).map((w) => w.patch), first.owner, first.seq === Number.MAX_SAFE_INTEGER ? undefined : first.seq);
    i = j;
  }
}

/** A recorded call result: its row and writes come back (the writes unless already applied), no hook fires and the tool does not run. */
export async function replayCall(run: Run, call: ToolCall, tool: ToolDefinition, record: CallResultRecord, applyWrites = true): Promise<ToolOutcome> {
  const scope = callScope(call.id);
  if (applyWrites) run.work.applyRecorded(record.patches, scope.owner);
  await run.appendMessage(record.message, run.runScope, false);
  pushToolUsage(run, tool, call.id, record.success, record.durationMs);
  return { call, stopped: false, ...(record.finishOutput ? { finishOutput: record.finishOutput } : {}) };
}

export function pushToolUsage(run: Run, tool: ToolDefinition, toolCallId: string, success: boolean, durationMs: number): void {
  if (run.keepsUsage) run.books.addUsage({ kind: 'tool', sessionId: run.setup.sessionId, runId: run.setup.runId, stepIndex: run.stepCount, toolName: tool.name, toolCallId, success, durationMs, at: Date.now() });
}
