import type { Message } from '../messages.js';
import type { PendingCall } from '../store.js';
import type { StartSignalKind } from '../stream.js';
import { crashPoint } from './crash-points.js';
import { startSignalRecord } from './journal-records.js';
import type { AgentResult } from './result.js';
import { finish, stopAfterTools, suspend } from './run-end.js';
import type { Run } from './run.js';
import { approvalDecisions, DELIVERY_STEP, deliverAnswer, type PendingAnswer } from './tool-answers.js';
import { pendingCalls } from './tool-calls.js';
import { replayRecordedCalls } from './call-replay.js';
import type { WorkingMark } from './working-copy.js';

/** An answer a resumed run delivers, with the call it answers. */
export interface Delivery {
  readonly pending: PendingCall;
  readonly answer: PendingAnswer;
}

/** How a run begins: a new turn, a resume, a retry, or a recovery of a run whose process died. */
export interface RunStart {
  /** The run's start signal: onAgentStart (start), onAgentResumed (resumed) or onAgentRetry (retry). */
  readonly signal: StartSignalKind;
  /** onAgentResumed's fields. */
  readonly resumed?: { readonly previousRunId: string; readonly resumedFromCheckpointId?: string };
  /** onAgentRetry's fields. */
  readonly retried?: { readonly retriedRunId: string; readonly checkpointId?: string; readonly hasMessage: boolean };
  /** Answers to deliver before the first model call (a continue / with_confirmation resume). */
  readonly deliveries?: readonly Delivery[];
  /** Calls the resumed run still waits on after its deliveries: it suspends again at once. */
  readonly stillPending?: readonly PendingCall[];
  /** A message retry() carries, appended after the start work. */
  readonly extraMessage?: string;
  /** The turn's input text. */
  readonly input: string;
  /** The turn's input rows (onMessage fires for them as part of the start work). */
  readonly inputMessages: readonly Message[];
  /** The turn's start commit (K2) already landed: its start work never runs again. */
  readonly turnStartCommitted: boolean;
  /** The run committed a step before its process died: its start signal fired. */
  readonly signalFired: boolean;
  /** A finishing step was committed before the process died: only the terminal work is left. */
  readonly committedOutput?: { readonly value: unknown };
}

/** What the loop knows about a run's progress when something ends it. */
export interface Progress {
  /** The run's start hook fired (so a failure pairs it with onAgentFail). */
  startHookFired: boolean;
  /** What a failure keeps of the state: the committed state, the state as it is now, or the state at a mark (after the model's reply). */
  keep: 'committed' | 'current' | WorkingMark;
}

/**
 * The run's opening: its start signal (staged in the step recorder before the hook, so a recovery never
 * fires it twice), the turn's start work when owed, the answers a resume delivers, the message a retry
 * carries. Returns the result when the run already ended here.
 */
export async function openRun(run: Run, start: RunStart, progress: Progress): Promise<AgentResult | undefined> {
  let signalFiredBefore = start.signalFired;
  if (!start.signalFired && (start.signal !== 'start' || !start.turnStartCommitted)) {
    const marker = await run.recorder.replayOrRun({ kind: 'start_signal', step: run.stepCount }, startSignalRecord, async () => ({ signal: start.signal }));
    progress.startHookFired = true;
    crashPoint('after_start_signal');
    if (marker.status === 'ran') await fireStartSignal(run, start);
    else signalFiredBefore = true;
  }
  run.markOpened();
  // The turn's start work runs once per turn: onAgentStart is the start signal of a new turn, and owed
  // start work (startSignal false) for a resume, retry, rewind or recovery that discarded it.
  if (!start.turnStartCommitted) await startWork(run, start, start.signal === 'start' && !signalFiredBefore);
  progress.keep = 'committed';
  if (start.deliveries?.length || start.stillPending?.length) {
    const ended = await deliver(run, start);
    if (ended) return ended;
  }
  // A retry's message lands with the first step; a recovered run past it does not append it again.
  if (start.extraMessage !== undefined && run.stepCount === 0) await run.appendMessage({ role: 'user', content: start.extraMessage });
  if (start.committedOutput) {
    return finish(run, { kind: 'complete', output: start.committedOutput.value, exitReason: run.setup.agent.outputSchema ? 'finish_tool' : 'text' }, progress.startHookFired);
  }
  return undefined;
}

/** onAgentResumed or onAgentRetry, the observe-only signals (onAgentStart fires with the start work). */
async function fireStartSignal(run: Run, start: RunStart): Promise<void> {
  if (start.signal === 'resumed' && start.resumed) {
    const { previousRunId, resumedFromCheckpointId } = start.resumed;
    const decisions = approvalDecisions(start.deliveries);
    await run.hooks.fireSignal('onAgentResumed', { previousRunId, ...(resumedFromCheckpointId === undefined ? {} : { resumedFromCheckpointId }), decisions }, run.runScope);
  } else if (start.signal === 'retry' && start.retried) {
    const { retriedRunId, hasMessage, checkpointId } = start.retried;
    await run.hooks.fireSignal('onAgentRetry', { retriedRunId, hasMessage, ...(checkpointId === undefined ? {} : { checkpointId }) }, run.runScope);
  }
}

/** The turn's start work: onAgentStart (startSignal true for a new turn, false when owed), then onMessage for the input, then the turn-start commit. */
async function startWork(run: Run, start: RunStart, startSignal: boolean): Promise<void> {
  if (run.hooks.has('onAgentStart')) {
    await run.hooks.fire('onAgentStart', { agent: run.setup.agent, input: start.input, initialState: run.state, startSignal }, run.runScope);
  }
  for (const message of start.inputMessages) await run.appendMessage(message);
  await run.commit({ kind: 'turn_start', checkpoint: 'turn_start' });
  crashPoint('after_k2');
}

/**
 * A resumed run delivers the answers it was started with (before its first model call), commits them
 * (`resume`), and suspends again at once if calls are still pending. Returns the result when the run
 * ended here (suspended again, or a delivered finishWith call completed it).
 */
async function deliver(run: Run, start: RunStart): Promise<AgentResult | undefined> {
  // Answers whose rows a recovered process already committed are not delivered twice.
  const answered = new Set(run.work.messages.flatMap((m) => (m.role === 'tool' ? [m.toolCallId] : [])));
  const due = (start.deliveries ?? []).filter((d) => !answered.has(d.pending.toolCallId));
  // Results a process that died recorded come back first, in the order they were recorded.
  const replayed = await replayRecordedCalls(run, due.map((d) => ({ id: d.pending.toolCallId, name: d.pending.toolName, arguments: d.pending.input })), DELIVERY_STEP);
  const outcomes = await Promise.all(due.map((d) => replayed.get(d.pending.toolCallId) ?? deliverAnswer(run, d.pending, d.answer)));
  if (run.aborted) stopAfterTools(run, outcomes);
  const pending = [...(start.stillPending ?? []), ...(pendingCalls(outcomes) ?? [])];
  if (pending.length > 0) return suspend(run, pending, false);
  const finisher = outcomes.find((o) => o.finishOutput !== undefined)?.finishOutput;
  // The output rides in the commit, so a recovery finishes the run instead of calling the model again.
  await run.commit({ kind: 'resume', checkpoint: 'step', ...(finisher ? { output: finisher.value } : {}) });
  if (finisher) return finish(run, { kind: 'complete', output: finisher.value, exitReason: finisher.via }, true);
  return undefined;
}
