import { AgentError, RunHandedOffError, RunInterruptedError, RunSupersededError, StateCommitError } from '../errors.js';
import type { ExitReason } from '../hooks/types.js';
import type { PendingCall, RunStatus, SuspensionReason, SuspensionRecord } from '../store.js';
import { crashPoint } from './crash-points.js';
import { asHookError } from './hook-dispatch.js';
import { terminalRecord } from './journal-records.js';
import type { AgentResult } from './result.js';
import { callScope, RUN_OWNER, scopeOf, type Run } from './run.js';
import { stoppedResult, type ToolOutcome } from './tool-calls.js';
import type { ToolCall } from '../messages.js';
import type { WorkingMark } from './working-copy.js';

/** How a run ends: complete with an output, or fail with an error. */
export type Ending = { readonly kind: 'complete'; readonly output: unknown; readonly exitReason: ExitReason } | { readonly kind: 'fail'; readonly error: AgentError };

/** A stop after tools ran: the recorded calls' rows and writes are kept with the terminal commit. */
export class StopWithRecords extends RunInterruptedError {}

/**
 * A stop that arrived while tools ran. A state write persists iff the row recording its work does: the
 * writes of calls whose result is recorded are kept (as if their updaters ran one after another), the
 * step's own writes (afterLLMCall) and stopped calls' writes are discarded.
 */
export function stopAfterTools(run: Run, outcomes: readonly ToolOutcome[]): never {
  const reason: unknown = run.signal.reason;
  if (RunSupersededError.isInstance(reason)) throw reason;
  if (outcomes.length === 0) throw new RunInterruptedError();
  const kept = new Map(outcomes.filter((o) => !o.stopped).map((o) => [callScope(o.call.id).owner, o.call] as const));
  // A kept call whose writes no longer apply once the dropped ones are gone is dropped too: its row
  // becomes a stopped result, so that a write persists only with the row recording its work.
  for (let failed = run.work.keepWrites((owner) => kept.has(owner)); failed.size > 0; failed = run.work.keepWrites((owner) => kept.has(owner))) {
    for (const owner of failed) {
      const call = kept.get(owner);
      kept.delete(owner);
      if (call) replaceResultRow(run, call);
    }
  }
  throw new StopWithRecords('The run was stopped; the results of the calls that finished are kept.');
}

function replaceResultRow(run: Run, call: ToolCall): void {
  const rows = run.work.messages;
  for (let i = run.work.committedRows; i < rows.length; i++) {
    const row = rows[i];
    if (row?.role === 'tool' && row.toolCallId === call.id) run.work.replace(i, stoppedResult(call));
  }
}

/** The executor is shutting down: the run lets itself go between two steps (the error to end it with). */
export function handOffSelf(run: Run): RunSupersededError | undefined {
  // A run already stopped (or superseded) ends that way instead.
  if (run.setup.children?.shutdown?.aborted !== true || run.aborted) return undefined;
  const letGo = new RunHandedOffError(run.setup.sessionId, run.setup.runId);
  run.setup.abort.abort(letGo);
  return letGo;
}

/** The run's own supersede, whether thrown by a fenced write or signalled by a lost lease. */
export function ownSupersede(run: Run, error: unknown): RunSupersededError | undefined {
  if (RunSupersededError.isInstance(error) && error.runId === run.setup.runId) return error;
  const reason: unknown = run.signal.reason;
  if (run.aborted && RunSupersededError.isInstance(reason)) return reason;
  return run.superseded;
}

/** Ends the run as `ending` says. */
export async function finish(run: Run, ending: Ending, startHookFired: boolean): Promise<AgentResult> {
  return ending.kind === 'complete' ? complete(run, ending.output, ending.exitReason, startHookFired) : fail(run, ending.error, startHookFired);
}

/**
 * What ends a completing run instead: its own supersede (onAgentSuperseded reports the state as the run
 * had it, the complete hook's writes included), or a failure after onAgentComplete fired, which never
 * persists that hook's writes.
 */
async function completionFailed(run: Run, error: unknown, before: WorkingMark, startHookFired: boolean, what: string): Promise<AgentResult> {
  const supersede = ownSupersede(run, error);
  if (supersede) return superseded(run, supersede);
  run.work.rollbackTo(before);
  const message = error instanceof Error ? error.message : String(error);
  return fail(run, AgentError.isInstance(error) ? error : new StateCommitError(`${what}: ${message}`, { cause: error }), startHookFired);
}

/**
 * onAgentComplete → its outcome recorded → the terminal commit (its writes land there) → end chunk. A
 * failed terminal commit fails the run after the hook. A recovered run replays a recorded outcome
 * instead of calling the hook again.
 */
async function complete(run: Run, output: unknown, exitReason: ExitReason, startHookFired: boolean): Promise<AgentResult> {
  const before = run.work.mark();
  let outcome;
  try {
    outcome = await run.recorder.replayOrRun({ kind: 'terminal_hook', step: run.stepCount }, terminalRecord, async () => {
      let endCarriesState = true;
      const scope = scopeOf(RUN_OWNER);
      if (run.hooks.has('onAgentComplete')) {
        try {
          await run.hooks.fire('onAgentComplete', { output, finalState: run.state, stepCount: run.stepCount, durationMs: run.durationMs(), exitReason }, scope);
        } catch (error) {
          if (ownSupersede(run, error)) throw error;
          run.work.rollbackTo(before);
          const hookError = asHookError('onAgentComplete', error);
          if (run.setup.strictTerminalHooks) throw hookError;
          // The run stays completed; the hook's writes are dropped and the end frame carries no state (docs/rules.md, C5).
          run.setup.logger.error(`onAgentComplete threw; the run completes without its writes: ${hookError.message}`, { runId: run.setup.runId });
          endCarriesState = false;
        }
      }
      return { output, exitReason, patches: run.work.patchesSince(before, RUN_OWNER), endCarriesState };
    });
  } catch (error) {
    return completionFailed(run, error, before, startHookFired, "The terminal hook's outcome could not be recorded");
  }
  if (outcome.status === 'replayed') run.work.applyRecorded(outcome.value.patches, RUN_OWNER);
  const endCarriesState = outcome.status === 'interrupted' || outcome.value.endCarriesState;
  crashPoint('before_k5');
  try {
    await run.commit({ kind: 'terminal', runStatus: 'completed', output, checkpoint: 'state' });
  } catch (error) {
    return completionFailed(run, error, before, startHookFired, 'The terminal commit failed');
  }
  crashPoint('after_k5');
  await afterCommit(run, () => run.emit({ type: 'end', output, ...(endCarriesState ? { state: run.state } : {}), usage: run.usageSummary(), ...run.chunkBase() }));
  return run.result('completed', { output, exitReason });
}

/** onAgentFail (observe-only, its writes and rows dropped) → the terminal commit → error chunk. */
export async function fail(run: Run, error: AgentError, startHookFired: boolean): Promise<AgentResult> {
  const status: RunStatus = error.code === 'run_interrupted' ? 'interrupted' : 'failed';
  // C6: `interruptFiresOnAgentFail: false` ends an interrupted run without the hook.
  const fires = status !== 'interrupted' || run.setup.reconcile?.interruptFiresOnAgentFail !== false;
  if (startHookFired && fires && run.hooks.has('onAgentFail')) {
    const before = run.work.mark();
    await run.hooks.fireObserveOnly('onAgentFail', { error, finalState: run.state, stepCount: run.stepCount, durationMs: run.durationMs(), recoverable: error.retryable }, scopeOf(RUN_OWNER));
    run.work.rollbackTo(before);
  }
  try {
    await run.commit({ kind: 'terminal', runStatus: status, error: error.info, checkpoint: 'state' });
  } catch (commitError) {
    const supersede = ownSupersede(run, commitError);
    if (supersede) return superseded(run, supersede);
    run.setup.logger.error(`The terminal commit of a ${status} run failed: ${commitError instanceof Error ? commitError.message : String(commitError)}`, { runId: run.setup.runId });
  }
  await afterCommit(run, () => run.emit({ type: 'error', status, errorInfo: error.info, usage: run.usageSummary(), ...run.chunkBase() }));
  return run.result(status, { error: error.info });
}

/**
 * onAgentSuperseded (observe-only); the run writes nothing more, not even to the stream. A run this
 * process let go at shutdown ends the same way without the hook: its status stays `running`, and
 * recover() in another process continues it from its last commit.
 */
export async function superseded(run: Run, error: RunSupersededError): Promise<AgentResult> {
  run.noteSuperseded(error);
  // Its uncommitted rows go; the payload reports the state as the run had it.
  run.work.discardStep(run.work.mark());
  if (RunHandedOffError.isHandOff(run.signal.reason)) {
    return run.result('running', { error: new AgentError('run_handed_off', `Run ${run.setup.runId} was let go by its process; recover() continues it.`, { details: { sessionId: run.setup.sessionId } }).info });
  }
  if (run.hooks.has('onAgentSuperseded')) {
    await run.hooks.fireObserveOnly('onAgentSuperseded', { error, finalState: run.state, stepCount: run.stepCount, durationMs: run.durationMs() }, scopeOf(RUN_OWNER));
  }
  return run.result('superseded', { error: error.info });
}

/**
 * The suspension boundary: beforeTool and the frames ran; now the suspension commit (K4, with the
 * step's rows and the pending calls), onAgentSuspended (observe-only), and the stream pause.
 */
export async function suspend(run: Run, pending: readonly PendingCall[], countsStep: boolean): Promise<AgentResult> {
  const reason: SuspensionReason = pending.every((p) => p.kind === 'children') ? 'awaiting_children' : 'client_tool';
  const suspension: SuspensionRecord = { reason, pending, stepIndex: run.stepCount, suspendedAt: Date.now() };
  await run.commit({ kind: 'suspension', stepIndex: run.stepCount, runStatus: 'suspended', suspension, checkpoint: 'step' });
  if (countsStep) run.stepDone();
  const waiting = pending.filter((p) => p.kind !== 'children').map((p) => p.toolCallId);
  const awaitingChildren = pending.flatMap((p) => (p.children ?? []).map((c) => ({ sessionId: c.sessionId, agentType: c.agentType, toolCallId: p.toolCallId })));
  await afterCommit(run, () =>
    run.hooks.fireSignal('onAgentSuspended', { reason, pendingToolCallIds: reason === 'client_tool' ? waiting : [], awaitingChildren: reason === 'awaiting_children' ? awaitingChildren : [] }, run.runScope),
  );
  await afterCommit(run, () => run.emit({ type: 'suspended', reason, pendingToolCallIds: pending.map((p) => p.toolCallId), ...run.chunkBase() }));
  return run.result('suspended', { suspension });
}

/**
 * Work after a run's terminal or suspension commit: it can no longer change the outcome, so a failure
 * (a stream write, a hook's write flushed through onStateChange) is logged, never turned into a second
 * terminal hook.
 */
async function afterCommit(run: Run, work: () => unknown): Promise<void> {
  try {
    await work();
  } catch (error) {
    run.setup.logger.error(`after the commit of run ${run.setup.runId}: ${error instanceof Error ? error.message : String(error)}`, { runId: run.setup.runId });
  }
}
