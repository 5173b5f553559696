import { AgentError, MaxStepsError, agentErrorFromInfo, toAgentErrorInfo } from '../errors.js';
import type { ExitHookResult, ExitReason } from '../hooks/types.js';
import type { LLMAdapter, StepSuccess } from '../llm.js';
import type { Message, ToolCall } from '../messages.js';
import type { PendingCall } from '../store.js';
import { crashPoint } from './crash-points.js';
import type { Verdict } from './hook-dispatch.js';
import { tooManyMessages } from './limits.js';
import { modelReply } from './model-call.js';
import type { AgentResult } from './result.js';
import { finish, fail, handOffSelf, ownSupersede, stopAfterTools, StopWithRecords, superseded, suspend, type Ending } from './run-end.js';
import { openRun, type Progress, type RunStart } from './run-start.js';
import { scopeOf, STEP_OWNER, type Run } from './run.js';
import { firstTripped } from './stop-conditions.js';
import { pendingCalls, runToolCalls, type ToolOutcome } from './tool-calls.js';
import type { ActionsCompletedChunk, ActionsRequestedChunk } from '../stream.js';
import type { Writable } from '../writable.js';

const NO_ROWS: readonly Message[] = Object.freeze([]);
const NUDGE_EMPTY = 'Your last reply was empty. Continue the task: call a tool, or answer.';
const NUDGE_FINISH = 'Reply by calling the __finish__ tool with your final output as its arguments.';

/** How one step ended: the run suspends, ends, or goes on to the next step. */
type StepEnd = { readonly suspend: readonly PendingCall[] } | { readonly ending: Ending | undefined };

/**
 * The run loop, entered after the run's entry (run-start commit, stream claim, run_started): the opening
 * (start signal, start work, deliveries), then steps until one ends the run, then the terminal work. Each
 * policy lives in its own module (model-call, tool-calls, stop-conditions, run-start, run-end); this
 * file wires them together. docs/semantics.md describes the whole flow.
 */
export async function runLoop(run: Run, adapter: LLMAdapter, start: RunStart): Promise<AgentResult> {
  const progress: Progress = { startHookFired: start.signalFired || (start.signal === 'start' && start.turnStartCommitted), keep: 'committed' };
  try {
    const opened = await openRun(run, start, progress);
    if (opened) return opened;
    const warned = new Set<string>();
    for (;;) {
      const letGo = handOffSelf(run);
      if (letGo) throw letGo;
      if (run.stepCount >= run.setup.agent.maxSteps) return await finish(run, maxStepsEnding(run), progress.startHookFired);
      // A conversation past maxMessages gets no further model call (the rows so far are committed).
      const rows = run.work.messages.length;
      if (rows > run.setup.limits.maxMessages) return await finish(run, { kind: 'fail', error: tooManyMessages(rows, run.setup.limits.maxMessages, false) }, progress.startHookFired);
      // A failed model call keeps what its attempts' hooks wrote; a failure after the reply keeps what afterLLMCall left.
      progress.keep = 'current';
      const reply = await modelReply(run, adapter, warned, scopeOf(STEP_OWNER));
      // The rest of the step runs in this turn when nothing in it has to be waited for (no promise, no frame).
      const stepped = afterReply(run, reply, progress);
      const end = stepped instanceof Promise ? await stepped : stepped;
      if ('suspend' in end) return await suspend(run, end.suspend, true);
      if (end.ending) return await finish(run, end.ending, progress.startHookFired);
    }
  } catch (error) {
    return endOnError(run, error, progress);
  } finally {
    run.markOpened();
  }
}

/** How a step that goes on to the next one ends (one object for every such step). */
const GOES_ON: StepEnd = Object.freeze({ ending: undefined });

/**
 * One step after the model's reply: its tools (in parallel) or a nudge, the guards, the exit hooks, the step
 * commit. The common step (calls that settle at once, no nudge, no stop, no onExit, a store that commits at
 * once) gives its end at once; anything that has to wait goes on in {@link stepWithWaits}.
 */
function afterReply(run: Run, reply: StepSuccess, progress: Progress): StepEnd | Promise<StepEnd> {
  progress.keep = run.work.mark();
  const empty = reply.toolCalls.length === 0 && reply.text.trim() === '';
  const called = reply.toolCalls.length > 0 ? toolStep(run, reply.toolCalls) : [];
  return called instanceof Promise ? called.then((outcomes) => stepOutcomes(run, reply, outcomes, empty, progress)) : stepOutcomes(run, reply, called, empty, progress);
}

/** The step once its calls settled: the afterStep guards, then the commit (at once) or {@link stepWithWaits}. */
function stepOutcomes(run: Run, reply: StepSuccess, outcomes: readonly ToolOutcome[], empty: boolean, progress: Progress): StepEnd | Promise<StepEnd> {
  const ending = replyEnding(run, reply, outcomes, empty);
  if (!run.aborted) {
    const tripped = firstTripped(run.guards.afterStep, { rows: outcomes.length > 0 ? run.work.pendingRows() : NO_ROWS, emptyReply: empty, spend: run.books.spend });
    if (tripped) throw tripped;
  }
  const nudges = reply.toolCalls.length === 0 && ending === undefined;
  if (nudges || run.aborted || runsExitHooks(run, ending)) return stepWithWaits(run, outcomes, empty, nudges, ending, progress);
  const pending = pendingCalls(outcomes);
  if (pending) return { suspend: pending };
  return commitStep(run, ending, progress);
}

/** Whether the onExit chain runs for this ending (the run completes, not at maxSteps, and someone handles onExit). */
function runsExitHooks(run: Run, ending: Ending | undefined): boolean {
  return ending?.kind === 'complete' && ending.exitReason !== 'max_steps' && run.hooks.has('onExit');
}

/** The rest of a step with something to wait for: the nudge, a stop, a suspension, the exit hooks, then the commit. */
async function stepWithWaits(run: Run, outcomes: readonly ToolOutcome[], empty: boolean, nudges: boolean, ending: Ending | undefined, progress: Progress): Promise<StepEnd> {
  if (nudges) await run.appendMessage({ role: 'user', content: empty ? NUDGE_EMPTY : NUDGE_FINISH });
  if (run.aborted) stopAfterTools(run, outcomes);
  const pending = pendingCalls(outcomes);
  if (pending) return { suspend: pending };
  // The exit hooks may keep the run going; the step is committed either way.
  let end = ending;
  if (end?.kind === 'complete' && end.exitReason !== 'max_steps' && run.hooks.has('onExit') && (await exitHooksContinue(run, end.output, end.exitReason))) end = undefined;
  return commitStep(run, end, progress);
}

/** The step commit (k3), then the step's end ({@link Run.commit} gives a native promise when it has to be waited for). */
function commitStep(run: Run, ending: Ending | undefined, progress: Progress): StepEnd | Promise<StepEnd> {
  crashPoint('before_k3');
  const committed = run.commit({ kind: 'step', stepIndex: run.stepCount, checkpoint: 'step', output: ending?.kind === 'complete' ? ending.output : undefined });
  return committed ? committed.then(() => stepCommitted(run, ending, progress)) : stepCommitted(run, ending, progress);
}

/** After the step commit landed: the next step begins (its index grows by one); the step's end. */
function stepCommitted(run: Run, ending: Ending | undefined, progress: Progress): StepEnd {
  run.stepDone();
  progress.keep = 'current';
  crashPoint('after_k3');
  return ending === undefined ? GOES_ON : { ending };
}

/**
 * The step's calls: the actions_requested envelope, the calls, then actions_completed (unless stopped).
 * Its outcomes come at once when nothing had to be waited for (the chunks queued, the calls settled at once).
 */
function toolStep(run: Run, calls: readonly ToolCall[]): ToolOutcome[] | Promise<ToolOutcome[]> {
  const stepIndex = run.stepCount;
  const f = run.chunkFields;
  const requested = run.emit({ type: 'actions_requested', stepIndex, calls: calls.map(requestedCall), streamId: f.streamId, agentId: f.agentId, agentType: f.agentType, runId: f.runId, timestamp: Date.now() });
  return requested ? requested.then(() => stepCalls(run, calls, stepIndex)) : stepCalls(run, calls, stepIndex);
}

function stepCalls(run: Run, calls: readonly ToolCall[], stepIndex: number): ToolOutcome[] | Promise<ToolOutcome[]> {
  const outcomes = runToolCalls(run, calls);
  return outcomes instanceof Promise ? outcomes.then((settled) => callsCompleted(run, calls, stepIndex, settled)) : callsCompleted(run, calls, stepIndex, outcomes);
}

/** The actions_completed chunk of a step whose calls all settled (none, once the run is stopped). */
function callsCompleted(run: Run, calls: readonly ToolCall[], stepIndex: number, outcomes: ToolOutcome[]): ToolOutcome[] | Promise<ToolOutcome[]> {
  if (run.aborted) return outcomes;
  const f = run.chunkFields;
  const results = completedResults(run.work.pendingRows(), calls);
  const completed = run.emit({ type: 'actions_completed', stepIndex, results, streamId: f.streamId, agentId: f.agentId, agentType: f.agentType, runId: f.runId, timestamp: Date.now() });
  return completed ? completed.then(() => outcomes) : outcomes;
}

/** A result as actions_completed lists it. */
type CompletedResult = ActionsCompletedChunk['results'][number];

/** A call as actions_requested lists it. */
function requestedCall(call: ToolCall): ActionsRequestedChunk['calls'][number] {
  return { callId: call.id, toolName: call.name, args: call.arguments };
}

/** Every result of the step, in the model's order (the rows are the step's tool rows). */
function completedResults(rows: readonly Message[], calls: readonly ToolCall[]): CompletedResult[] {
  const results: CompletedResult[] = [];
  for (const call of calls) {
    const row = rows.find((r) => r.role === 'tool' && r.toolCallId === call.id);
    if (row?.role !== 'tool') continue;
    const result: Writable<CompletedResult> = { callId: row.toolCallId, toolName: row.toolName, output: row.content, isError: row.isError === true };
    if (row.stubbed === true) result.stubbed = true;
    results.push(result);
  }
  return results;
}

/** How the reply ends the run, if it does: a finishing call, or a plain-text answer of an agent without outputSchema. */
function replyEnding(run: Run, reply: StepSuccess, outcomes: readonly ToolOutcome[], empty: boolean): Ending | undefined {
  if (reply.toolCalls.length > 0) {
    const finisher = outcomes.find((o) => o.finishOutput !== undefined)?.finishOutput;
    return finisher ? { kind: 'complete', output: finisher.value, exitReason: finisher.via } : undefined;
  }
  return !empty && run.setup.agent.outputSchema === undefined ? { kind: 'complete', output: reply.text, exitReason: 'text' } : undefined;
}

function interpretExit(value: unknown): Verdict<unknown, { message?: string }> {
  const v = value as ExitHookResult | undefined;
  if (v && typeof v === 'object' && v.continue === true) return { decision: 'continue', ...(v.message === undefined ? {} : { reason: v.message }), end: v.message === undefined ? {} : { message: v.message } };
  return undefined;
}

/** The onExit chain: the first `{ continue: true }` keeps the run going, with its message appended. */
async function exitHooksContinue(run: Run, output: unknown, reason: Exclude<ExitReason, 'max_steps'>): Promise<boolean> {
  const payload = { reason, output, stepCount: run.stepCount + 1, toolCallCounts: run.books.toolCallCounts() };
  const end = await run.hooks.chain('onExit', payload, run.runScope, interpretExit);
  if (end.result === undefined) return false;
  const message = end.result.message;
  if (message !== undefined && message.trim() !== '') await run.appendMessage({ role: 'user', content: message });
  return true;
}

/** Reaching maxSteps: an agent with an outputSchema fails `run_max_steps`; one without completes with its last text. */
function maxStepsEnding(run: Run): Ending {
  const { agent } = run.setup;
  if (agent.outputSchema) return { kind: 'fail', error: new MaxStepsError(agent.maxSteps) };
  const messages = run.work.messages;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as Message;
    if (m.role === 'assistant' && m.content.trim() !== '') return { kind: 'complete', output: m.content, exitReason: 'max_steps' };
  }
  return { kind: 'complete', output: '', exitReason: 'max_steps' };
}

/** A throw that ends the run: its own supersede, a stop, or a failure (which keeps what `progress.keep` says). */
async function endOnError(run: Run, error: unknown, progress: Progress): Promise<AgentResult> {
  const supersede = ownSupersede(run, error);
  if (supersede) return superseded(run, supersede);
  const agentError = AgentError.isInstance(error) ? error : agentErrorFromInfo(toAgentErrorInfo(error), error);
  if (agentError.code === 'run_interrupted') {
    // A stopped step's writes are discarded, afterLLMCall's included, unless calls recorded results.
    if (!(error instanceof StopWithRecords)) run.work.discardStep();
  } else {
    const keep = progress.keep;
    run.work.discardStep(keep === 'committed' ? undefined : keep === 'current' ? run.work.mark() : keep);
    // A blocked model call (a block, or a throw under fail-closed) leaves a system note with the reason
    // in the conversation; it is a row like any other, so onMessage fires for it (errors logged: the run is failing already).
    const note = blockNote(agentError);
    if (note !== undefined) {
      await (async () => run.appendMessage({ role: 'system', content: note }, run.runScope))().catch((hookError: unknown) => {
        run.setup.logger.warn(`onMessage for the block note threw: ${hookError instanceof Error ? hookError.message : String(hookError)}`, { runId: run.setup.runId });
      });
    }
  }
  return fail(run, agentError, progress.startHookFired);
}

/** The system note a blocked model call leaves: the block's own, or one built from a fail-closed throw. */
function blockNote(error: AgentError): string | undefined {
  if (error.code !== 'hook_blocked') return undefined;
  const details = error.info.details;
  if (typeof details?.['note'] === 'string') return details['note'];
  if (details?.['hook'] === 'beforeLLMCall' && details['threw'] === true) return `Run blocked by an agent hook: ${typeof details['cause'] === 'string' ? details['cause'] : error.message}`;
  return undefined;
}
