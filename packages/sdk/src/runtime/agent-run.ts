import { FINISH_TOOL_NAME } from '../define.js';
import { AgentError, MaxStepsError, RunInterruptedError, RunSupersededError, StateCommitError, agentErrorFromInfo, toAgentErrorInfo } from '../errors.js';
import type { ExitHookResult, ExitReason } from '../hooks/types.js';
import type { LLMAdapter, StepSuccess } from '../llm.js';
import type { AssistantMessage, Message } from '../messages.js';
import type { PendingCall, RunStatus, SuspensionReason, SuspensionRecord } from '../store.js';
import type { StartSignalKind } from '../stream.js';
import type { StatePatch } from '../stream.js';
import { crashPoint } from './crash-points.js';
import { callModel } from './model-call.js';
import type { AgentResult } from './result.js';
import type { RunContext, WriteScope } from './run-context.js';
import { deliverAnswer, runToolCalls, type PendingAnswer, type ToolOutcome } from './tool-calls.js';

const NUDGE_EMPTY = 'Your last reply was empty. Continue the task: call a tool, or answer.';
const NUDGE_FINISH = 'Reply by calling the __finish__ tool with your final output as its arguments.';

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
  /** The turn's start commit (K2) already landed: its start work never runs again (rule 23). */
  readonly turnStartCommitted: boolean;
  /** The start signal's marker is in the journal: it fired in a process that died. */
  readonly signalFired: boolean;
  /** A finishing step was committed before the process died: only the terminal work is left. */
  readonly committedOutput?: { readonly value: unknown };
}

type Ending =
  | { readonly kind: 'complete'; readonly output: unknown; readonly exitReason: ExitReason }
  | { readonly kind: 'fail'; readonly error: AgentError };

interface TerminalRecord {
  readonly output: unknown;
  readonly exitReason: ExitReason;
  readonly patches: readonly StatePatch[];
  readonly endCarriesState: boolean;
}

/**
 * The run loop of runtime-js (ARCHITECTURE.md "The data flow of one run"), entered after K1, the
 * stream claim and run_started: start signal and start work → K2 → steps (model call → tools in
 * parallel → K3) → terminal hooks → K5 → stream end. Each policy lives in its own module; this file
 * wires them together and decides the ending.
 */
export async function runLoop(run: RunContext, adapter: LLMAdapter, start: RunStart): Promise<AgentResult> {
  let startHookFired = start.signalFired || (start.signal === 'start' && start.turnStartCommitted);
  // What a failure keeps: before the first step, the committed state (start work and deliveries that
  // never committed leave no writes); in a step, the state its afterLLMCall left (rule 129).
  let failState: unknown = run.committedState;
  try {
    if (!start.signalFired && (start.signal !== 'start' || !start.turnStartCommitted)) {
      // Staged before the hook, so a recovery knows the signal fired even if the hook never returned.
      await run.record('start_signal', 'start_signal', { signal: start.signal });
      startHookFired = true;
      if (start.signal === 'resumed' && start.resumed) {
        await run.fireSignal('onAgentResumed', {
          previousRunId: start.resumed.previousRunId,
          ...(start.resumed.resumedFromCheckpointId === undefined ? {} : { resumedFromCheckpointId: start.resumed.resumedFromCheckpointId }),
        });
      } else if (start.signal === 'retry' && start.retried) {
        await run.fireSignal('onAgentRetry', {
          retriedRunId: start.retried.retriedRunId,
          hasMessage: start.retried.hasMessage,
          ...(start.retried.checkpointId === undefined ? {} : { checkpointId: start.retried.checkpointId }),
        });
      }
    }
    // The turn's start work runs once per turn: onAgentStart is the start signal of a new turn, and
    // owed start work (startSignal false) for a resume, retry, rewind or recovery that discarded it.
    if (!start.turnStartCommitted) await startWork(run, start, start.signal === 'start' && !start.signalFired);
    failState = run.committedState;
    if (start.deliveries?.length || start.stillPending?.length) {
      const ended = await deliver(run, start);
      if (ended) return ended;
      failState = run.committedState;
    }
    // A retry's message lands with the first step; a recovered run past it does not append it again.
    if (start.extraMessage !== undefined && run.stepCount === 0) await run.appendMessage({ role: 'user', content: start.extraMessage });
    if (start.committedOutput) {
      const agent = run.setup.agent;
      return await finish(run, { kind: 'complete', output: start.committedOutput.value, exitReason: agent.outputSchema ? 'finish_tool' : 'text' }, startHookFired);
    }
    const warned = new Set<string>();
    for (;;) {
      if (run.stepCount >= run.setup.agent.maxSteps) return await finish(run, maxStepsEnding(run), startHookFired);
      failState = undefined;
      const stepScope: WriteScope = { changes: [], patches: [] };
      const reply = await modelReply(run, adapter, warned, stepScope);
      failState = run.state;
      let ending: Ending | undefined;
      let outcomes: ToolOutcome[] = [];
      const empty = reply.toolCalls.length === 0 && reply.text.trim() === '';
      run.emptyReplies = empty ? run.emptyReplies + 1 : 0;
      if (reply.toolCalls.length > 0) {
        const stepIndex = run.stepCount;
        await run.emit({ type: 'actions_requested', stepIndex, calls: reply.toolCalls.map((c) => ({ callId: c.id, toolName: c.name, args: c.arguments })), ...run.chunkBase() });
        outcomes = await runToolCalls(run, reply.toolCalls);
        if (!run.signal.aborted) await emitActionsCompleted(run, stepIndex, reply.toolCalls);
        const finisher = outcomes.find((o) => o.finishOutput !== undefined)?.finishOutput;
        if (finisher) ending = { kind: 'complete', output: finisher.value, exitReason: finisher.via };
        if (!run.signal.aborted) checkRepeatedErrors(run);
      } else if (!empty && run.setup.agent.outputSchema === undefined) {
        ending = { kind: 'complete', output: reply.text, exitReason: 'text' };
      } else {
        checkEmptyReplies(run);
        await run.appendMessage({ role: 'user', content: empty ? NUDGE_EMPTY : NUDGE_FINISH });
      }
      if (run.signal.aborted) stopAfterTools(run, outcomes);
      const pending = outcomes.flatMap((o) => (o.pending ? [o.pending] : []));
      if (pending.length > 0) return await suspend(run, pending, true);
      if (ending?.kind === 'complete' && ending.exitReason !== 'max_steps' && run.hooks.has('onExit')) {
        // D6: the exit hook may keep the run going; the step is committed either way.
        if (await exitHooksContinue(run, ending.output, ending.exitReason)) ending = undefined;
      }
      crashPoint('before_k3');
      await run.commit({ kind: 'step', stepIndex: run.stepCount, checkpoint: 'step', ...(ending?.kind === 'complete' ? { output: ending.output } : {}) });
      run.stepCount++;
      crashPoint('after_k3');
      failState = undefined;
      if (ending) return await finish(run, ending, startHookFired);
    }
  } catch (error) {
    const supersede = ownSupersede(run, error);
    if (supersede) return await superseded(run, supersede);
    const agentError = AgentError.isInstance(error) ? error : agentErrorFromInfo(toAgentErrorInfo(error), error);
    if (agentError.code === 'run_interrupted') {
      if (!(error instanceof StopWithRecords)) {
        // A stopped step's writes are discarded, afterLLMCall's included (rule 126).
        run.discardPending();
        run.state = run.committedState;
      }
    } else {
      run.discardPending();
      if (failState !== undefined) run.state = failState;
      // D11: a blocked model call leaves a system note with the reason in the conversation.
      const note = agentError.code === 'hook_blocked' ? agentError.info.details?.['note'] : undefined;
      if (typeof note === 'string') await run.appendMessage({ role: 'system', content: note }, run.hookScope, false);
    }
    return await finish(run, { kind: 'fail', error: agentError }, startHookFired);
  }
}

/** One envelope with every result of the step, in the model's order (the rows are the step's tool rows). */
async function emitActionsCompleted(run: RunContext, stepIndex: number, calls: readonly { readonly id: string }[]): Promise<void> {
  const rows = new Map<string, Message>();
  for (const row of run.pending) if (row.role === 'tool') rows.set(row.toolCallId, row);
  const results = calls.flatMap((call) => {
    const row = rows.get(call.id);
    return row?.role === 'tool' ? [{ callId: row.toolCallId, toolName: row.toolName, output: row.content, isError: row.isError === true }] : [];
  });
  await run.emit({ type: 'actions_completed', stepIndex, results, ...run.chunkBase() });
}

/** The repeated-error guard: the same tool error (code and message) too many times fails the run. */
function checkRepeatedErrors(run: RunContext): void {
  const limit = run.setup.agent.limits?.maxRepeatedErrors ?? 3;
  if (limit <= 0) return;
  for (const row of run.pending) {
    if (row.role !== 'tool' || row.isError !== true || !row.errorInfo || row.errorInfo.code === 'run_stopped') continue;
    const key = `${row.errorInfo.code}:${row.errorInfo.message}`;
    const seen = (run.errorCounts.get(key) ?? 0) + 1;
    run.errorCounts.set(key, seen);
    if (seen >= limit) {
      throw new AgentError('run_repeated_error', `The same error came back ${seen} times: ${row.errorInfo.message}`, {
        hint: 'The agent kept repeating a failing action; check the tool or the instructions, then retry.',
        details: { code: row.errorInfo.code, tool: row.toolName, times: seen },
      });
    }
  }
}

/** The empty-responses guard: too many consecutive empty replies fail the run. */
function checkEmptyReplies(run: RunContext): void {
  const limit = run.setup.agent.limits?.maxEmptyResponses ?? 3;
  if (limit > 0 && run.emptyReplies >= limit) {
    throw new AgentError('run_empty_responses', `The model returned ${run.emptyReplies} empty replies in a row.`, { details: { times: run.emptyReplies } });
  }
}

/** The onExit chain: the first `{ continue: true }` keeps the run going, with its message appended. */
async function exitHooksContinue(run: RunContext, output: unknown, reason: Exclude<ExitReason, 'max_steps'>): Promise<boolean> {
  const ctx = run.contextFor('onExit');
  const payload = { reason, output, stepCount: run.stepCount + 1, toolCallCounts: { ...run.toolCallCounts } };
  for (const entry of run.hooks.entries('onExit')) {
    const outcome = await run.invoke(entry, payload, ctx);
    if (run.hookScope.changes.length > 0) await run.flushStateChanges(run.hookScope);
    if (!outcome.ok) {
      run.onHookError(entry, outcome);
      continue;
    }
    const value = outcome.value as ExitHookResult | undefined;
    if (value && typeof value === 'object' && value.continue === true) {
      run.audit(entry, 'continue', outcome.durationMs, undefined, value.message);
      if (value.message !== undefined && value.message.trim() !== '') await run.appendMessage({ role: 'user', content: value.message });
      return true;
    }
    run.audit(entry, 'allow', outcome.durationMs);
  }
  return false;
}

/** A stop after tools ran: the recorded calls' rows and writes are kept with the terminal commit (rule 127). */
class StopWithRecords extends RunInterruptedError {}

function stopAfterTools(run: RunContext, outcomes: readonly ToolOutcome[]): never {
  const reason: unknown = run.signal.reason;
  if (RunSupersededError.isInstance(reason)) throw reason;
  if (outcomes.length === 0) throw new RunInterruptedError();
  // Rebuild the state from the last commit plus the writes of each call whose result is recorded:
  // afterLLMCall's writes and stopped calls' writes are discarded (rules 125–127).
  run.state = run.committedState;
  for (const outcome of outcomes) if (!outcome.stopped) run.applyRecordedPatches(outcome.patches);
  throw new StopWithRecords('The run was stopped; the results of the calls that finished are kept.');
}

/** The turn's start work: onAgentStart (startSignal true for a new turn, false when owed), then onMessage for the input (D1), then K2. */
async function startWork(run: RunContext, start: RunStart, startSignal: boolean): Promise<void> {
  if (run.hooks.has('onAgentStart')) {
    await run.fire('onAgentStart', { agent: run.setup.agent, input: start.input, initialState: run.state, startSignal });
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
async function deliver(run: RunContext, start: RunStart): Promise<AgentResult | undefined> {
  // Answers whose rows a recovered process already committed are not delivered twice.
  const answered = new Set(run.messages.flatMap((m) => (m.role === 'tool' ? [m.toolCallId] : [])));
  const outcomes = await Promise.all((start.deliveries ?? []).filter((d) => !answered.has(d.pending.toolCallId)).map((d) => deliverAnswer(run, d.pending, d.answer)));
  if (run.signal.aborted) stopAfterTools(run, outcomes);
  const pending = [...(start.stillPending ?? []), ...outcomes.flatMap((o) => (o.pending ? [o.pending] : []))];
  if (pending.length > 0) return suspend(run, pending, false);
  const finisher = outcomes.find((o) => o.finishOutput !== undefined)?.finishOutput;
  // The output rides in the commit, so a recovery finishes the run instead of calling the model again.
  await run.commit({ kind: 'resume', checkpoint: 'step', ...(finisher ? { output: finisher.value } : {}) });
  if (finisher) return complete(run, finisher.value, finisher.via, true);
  return undefined;
}

/**
 * The suspension boundary (D10): beforeTool and the frames ran; now the suspension commit (K4, with the
 * step's rows and the pending calls), onAgentSuspended (observe-only), and the stream pause.
 */
async function suspend(run: RunContext, pending: readonly PendingCall[], countsStep: boolean): Promise<AgentResult> {
  const reason: SuspensionReason = pending.every((p) => p.kind === 'children') ? 'awaiting_children' : 'client_tool';
  const suspension: SuspensionRecord = { reason, pending, stepIndex: run.stepCount, suspendedAt: Date.now() };
  await run.commit({ kind: 'suspension', stepIndex: run.stepCount, runStatus: 'suspended', suspension, checkpoint: 'step' });
  if (countsStep) run.stepCount++;
  const waiting = pending.filter((p) => p.kind !== 'children').map((p) => p.toolCallId);
  const awaitingChildren = pending.flatMap((p) => (p.children ?? []).map((c) => ({ sessionId: c.sessionId, agentType: c.agentType, toolCallId: p.toolCallId })));
  await afterCommit(run, () =>
    run.fireSignal('onAgentSuspended', { reason, pendingToolCallIds: reason === 'client_tool' ? waiting : [], awaitingChildren: reason === 'awaiting_children' ? awaitingChildren : [] }),
  );
  await afterCommit(run, () => run.emit({ type: 'suspended', reason, pendingToolCallIds: pending.map((p) => p.toolCallId), ...run.chunkBase() }));
  return result(run, 'suspended', { suspension });
}

/** The step's model reply: replayed from the journal when a dead process recorded it, else a model call (with retries). */
async function modelReply(run: RunContext, adapter: LLMAdapter, warned: Set<string>, scope: WriteScope): Promise<StepSuccess> {
  const key = `model_reply:${run.stepCount}`;
  const recorded = run.journal.get(key)?.data as { reply: StepSuccess; patches: readonly StatePatch[] } | undefined;
  if (recorded) {
    run.applyRecordedPatches(recorded.patches);
    await run.appendMessage(assistantMessage(recorded.reply), run.hookScope, false);
    return recorded.reply;
  }
  const reply = await callModel(run, adapter, warned, scope);
  await run.appendMessage(assistantMessage(reply), scope);
  // Journal the reply when a side-effecting tool is called, so a recovery replays the same calls.
  const toolsByName = run.setup.agent.toolsByName;
  if (reply.toolCalls.some((c) => c.name !== FINISH_TOOL_NAME && toolsByName.get(c.name)?.sideEffects === true)) {
    const { text, toolCalls, finishReason, model, usage, reasoning } = reply;
    await run.record('model_reply', key, {
      reply: { ok: true, text, toolCalls, finishReason, model, ...(usage ? { usage } : {}), ...(reasoning === undefined ? {} : { reasoning }) },
      patches: scope.patches ?? [],
    });
  }
  return reply;
}

function assistantMessage(reply: StepSuccess): AssistantMessage {
  return {
    role: 'assistant',
    content: reply.text,
    ...(reply.toolCalls.length > 0 ? { toolCalls: reply.toolCalls } : {}),
    ...(reply.reasoning === undefined ? {} : { reasoning: reply.reasoning }),
  };
}

function maxStepsEnding(run: RunContext): Ending {
  const { agent } = run.setup;
  if (agent.outputSchema) return { kind: 'fail', error: new MaxStepsError(agent.maxSteps) };
  // HOOK-RULES C10: without an outputSchema the run completes with its last text.
  let text = '';
  for (let i = run.messages.length - 1; i >= 0; i--) {
    const m = run.messages[i] as Message;
    if (m.role === 'assistant' && m.content.trim() !== '') {
      text = m.content;
      break;
    }
  }
  return { kind: 'complete', output: text, exitReason: 'max_steps' };
}

/** The run's own supersede, whether thrown by a fenced write or signalled by a lost lease. */
function ownSupersede(run: RunContext, error: unknown): RunSupersededError | undefined {
  if (RunSupersededError.isInstance(error) && error.runId === run.setup.runId) return error;
  const reason: unknown = run.signal.reason;
  if (run.signal.aborted && RunSupersededError.isInstance(reason)) return reason;
  return run.superseded;
}

async function finish(run: RunContext, ending: Ending, startHookFired: boolean): Promise<AgentResult> {
  return ending.kind === 'complete' ? complete(run, ending.output, ending.exitReason, startHookFired) : fail(run, ending.error, startHookFired);
}

/**
 * onAgentComplete → its outcome journaled → K5 (its writes land there) → end chunk. A failed K5 fails
 * the run after the hook (rule 43). A recovered run replays a journaled outcome instead of calling the
 * hook again.
 */
async function complete(run: RunContext, output: unknown, exitReason: ExitReason, startHookFired: boolean): Promise<AgentResult> {
  const before = run.state;
  const recorded = run.journal.get('terminal_hook')?.data as TerminalRecord | undefined;
  let endCarriesState = recorded?.endCarriesState ?? true;
  if (recorded) {
    run.applyRecordedPatches(recorded.patches);
  } else {
    const scope: WriteScope = { changes: [], patches: [] };
    if (run.hooks.has('onAgentComplete')) {
      try {
        await run.fire('onAgentComplete', { output, finalState: run.state, stepCount: run.stepCount, durationMs: run.durationMs(), exitReason }, scope);
      } catch (error) {
        const supersede = ownSupersede(run, error);
        if (supersede) return superseded(run, supersede);
        run.state = before;
        scope.patches?.splice(0);
        const hookError = AgentError.isInstance(error) ? error : run.hookError('onAgentComplete', error);
        if (run.setup.strictTerminalHooks) return fail(run, hookError, startHookFired);
        // HOOK-RULES C5: the run stays completed; the hook's writes are dropped and the end frame carries no state.
        run.setup.logger.error(`onAgentComplete threw; the run completes without its writes: ${hookError.message}`, { runId: run.setup.runId });
        endCarriesState = false;
      }
    }
    try {
      const record: TerminalRecord = { output, exitReason, patches: scope.patches ?? [], endCarriesState };
      await run.record('terminal_hook', 'terminal_hook', record);
    } catch (error) {
      const supersede = ownSupersede(run, error);
      if (supersede) return superseded(run, supersede);
      // Rule 44: the complete hook's writes never persist when the run cannot reach its terminal commit.
      run.state = before;
      const message = error instanceof Error ? error.message : String(error);
      return fail(run, AgentError.isInstance(error) ? error : new StateCommitError(`The terminal hook's outcome could not be recorded: ${message}`, { cause: error }), startHookFired);
    }
  }
  crashPoint('before_k5');
  try {
    await run.commit({ kind: 'terminal', runStatus: 'completed', output, checkpoint: 'state' });
  } catch (error) {
    const supersede = ownSupersede(run, error);
    if (supersede) return superseded(run, supersede);
    run.state = before;
    const message = error instanceof Error ? error.message : String(error);
    const commitError = AgentError.isInstance(error) ? error : new StateCommitError(`The terminal commit failed: ${message}`, { cause: error });
    return fail(run, commitError, startHookFired);
  }
  crashPoint('after_k5');
  await afterCommit(run, () => run.emit({ type: 'end', output, ...(endCarriesState ? { state: run.state } : {}), usage: run.usageSummary(), ...run.chunkBase() }));
  return result(run, 'completed', { output, exitReason });
}

/** onAgentFail (observe-only, writes dropped: rule 39) → K5 → error chunk. */
async function fail(run: RunContext, error: AgentError, startHookFired: boolean): Promise<AgentResult> {
  const status: RunStatus = error.code === 'run_interrupted' ? 'interrupted' : 'failed';
  const finalState = run.state;
  const keptRows = run.pending.length;
  if (startHookFired && run.hooks.has('onAgentFail')) {
    await run.fireObserveOnly('onAgentFail', {
      error,
      finalState,
      stepCount: run.stepCount,
      durationMs: run.durationMs(),
      recoverable: error.retryable,
    });
    run.state = finalState;
    // Rows the fail hook appended are dropped with its writes.
    run.messages.length -= run.pending.length - keptRows;
    run.pending.length = keptRows;
  }
  try {
    await run.commit({ kind: 'terminal', runStatus: status, error: error.info, checkpoint: 'state' });
  } catch (commitError) {
    const supersede = ownSupersede(run, commitError);
    if (supersede) return superseded(run, supersede);
    run.setup.logger.error(`The terminal commit of a ${status} run failed: ${commitError instanceof Error ? commitError.message : String(commitError)}`, {
      runId: run.setup.runId,
    });
  }
  await afterCommit(run, () => run.emit({ type: 'error', status, errorInfo: error.info, usage: run.usageSummary(), ...run.chunkBase() }));
  return result(run, status, { error: error.info });
}

/** onAgentSuperseded (observe-only); the run writes nothing more, not even to the stream (rule 47). */
async function superseded(run: RunContext, error: RunSupersededError): Promise<AgentResult> {
  run.superseded ??= error;
  run.discardPending();
  if (run.hooks.has('onAgentSuperseded')) {
    await run.fireObserveOnly('onAgentSuperseded', { error, finalState: run.state, stepCount: run.stepCount, durationMs: run.durationMs() });
  }
  return result(run, 'superseded', { error: error.info });
}

/**
 * Work after a run's terminal or suspension commit: it can no longer change the outcome, so a failure
 * (a stream write, a hook's write flushed through onStateChange) is logged, never turned into a second
 * terminal hook.
 */
async function afterCommit(run: RunContext, work: () => Promise<unknown>): Promise<void> {
  try {
    await work();
  } catch (error) {
    run.setup.logger.error(`after the commit of run ${run.setup.runId}: ${error instanceof Error ? error.message : String(error)}`, { runId: run.setup.runId });
  }
}

function result(run: RunContext, status: RunStatus, extra: Partial<AgentResult>): AgentResult {
  return {
    status,
    sessionId: run.setup.sessionId,
    runId: run.setup.runId,
    state: run.state,
    stepCount: run.stepCount,
    durationMs: run.durationMs(),
    ...extra,
  };
}
