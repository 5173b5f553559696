import { AgentError, RunSupersededError, StateCommitError, MaxStepsError, RunInterruptedError, toAgentErrorInfo, agentErrorFromInfo } from '../errors.js';
import type { ExitReason } from '../hooks/types.js';
import type { LLMAdapter } from '../llm.js';
import type { Message } from '../messages.js';
import type { Commit, RunStatus } from '../store.js';
import type { AgentResult } from './result.js';
import { callModel } from './model-call.js';
import type { RunContext } from './run-context.js';
import { runToolCalls } from './tool-calls.js';

const NUDGE_EMPTY = 'Your last reply was empty. Continue the task: call a tool, or answer.';
const NUDGE_FINISH = 'Reply by calling the __finish__ tool with your final output as its arguments.';

/** What a run needs to know about how it began. */
export interface RunStart {
  /** The user input of a new turn (fires onAgentStart with startSignal true and onMessage for the input). */
  readonly input: string;
  readonly inputMessages: readonly Message[];
}

type Ending =
  | { readonly kind: 'complete'; readonly output: unknown; readonly exitReason: ExitReason }
  | { readonly kind: 'fail'; readonly error: AgentError };

/**
 * The run loop of runtime-js (ARCHITECTURE.md "The data flow of one run"), entered after K1, the
 * stream claim and run_started: start signal and start work → K2 → steps (model call → tools in
 * parallel → K3) → terminal hooks → K5 → stream end. Each policy lives in its own module; this file
 * only wires them together and decides the ending.
 */
export async function runLoop(run: RunContext, adapter: LLMAdapter, start: RunStart): Promise<AgentResult> {
  let startHookFired = false;
  // A step's failure keeps the state its afterLLMCall left (rule 129); its tools' writes are dropped.
  let failState: unknown;
  try {
    startHookFired = true;
    await startTurn(run, start);
    const warned = new Set<string>();
    for (;;) {
      if (run.stepCount >= run.setup.agent.maxSteps) return await finish(run, maxStepsEnding(run), startHookFired);
      failState = undefined;
      const reply = await callModel(run, adapter, warned);
      failState = run.state;
      await run.appendMessage({
        role: 'assistant',
        content: reply.text,
        ...(reply.toolCalls.length > 0 ? { toolCalls: reply.toolCalls } : {}),
        ...(reply.reasoning === undefined ? {} : { reasoning: reply.reasoning }),
      });
      let ending: Ending | undefined;
      if (reply.toolCalls.length > 0) {
        const outcomes = await runToolCalls(run, reply.toolCalls);
        const finisher = outcomes.find((o) => o.finishOutput !== undefined)?.finishOutput;
        if (finisher) ending = { kind: 'complete', output: finisher.value, exitReason: finisher.via };
      } else if (reply.text.trim() !== '' && run.setup.agent.outputSchema === undefined) {
        ending = { kind: 'complete', output: reply.text, exitReason: 'text' };
      } else {
        await run.appendMessage({ role: 'user', content: reply.text.trim() === '' ? NUDGE_EMPTY : NUDGE_FINISH });
      }
      if (run.signal.aborted) throw new RunInterruptedError();
      await commitStep(run);
      failState = undefined;
      if (ending) return await finish(run, ending, startHookFired);
    }
  } catch (error) {
    if (isOwnSupersede(run, error)) return await superseded(run, error);
    run.discardPending();
    if (AgentError.isInstance(error) && error.code === 'run_interrupted') {
      // A stopped step's writes are discarded, afterLLMCall's included (rule 126).
      run.state = run.committedState;
    } else if (failState !== undefined) {
      run.state = failState;
    }
    const agentError = AgentError.isInstance(error) ? error : agentErrorFromInfo(toAgentErrorInfo(error), error);
    return await finish(run, { kind: 'fail', error: agentError }, startHookFired);
  }
}

/** The turn's start work: onAgentStart(startSignal true), then onMessage for the input (D1), then K2. */
async function startTurn(run: RunContext, start: RunStart): Promise<void> {
  if (run.hooks.has('onAgentStart')) {
    await run.fire('onAgentStart', { agent: run.setup.agent, input: start.input, initialState: run.state, startSignal: true });
  }
  for (const message of start.inputMessages) await run.appendMessage(message);
  await commit(run, { kind: 'turn_start', checkpoint: 'turn_start' });
}

async function commitStep(run: RunContext): Promise<void> {
  await commit(run, { kind: 'step', stepIndex: run.stepCount, checkpoint: 'step' });
  run.stepCount++;
  await run.flushUsage();
}

/** One fenced commit of the pending rows and, when it changed, the state. */
async function commit(
  run: RunContext,
  fields: Pick<Commit, 'kind' | 'stepIndex' | 'checkpoint' | 'runStatus' | 'output' | 'error'>,
): Promise<void> {
  const stateChanged = run.state !== run.committedState;
  await run.setup.stateStore.commit({
    sessionId: run.setup.sessionId,
    runId: run.setup.runId,
    ...fields,
    ...(run.pending.length > 0 ? { appendMessages: run.pending.slice() } : {}),
    ...(stateChanged ? { state: run.state } : {}),
    committedAt: Date.now(),
  });
  run.pending.length = 0;
  run.committedState = run.state;
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

function isOwnSupersede(run: RunContext, error: unknown): error is RunSupersededError {
  return RunSupersededError.isInstance(error) && error.runId === run.setup.runId;
}

async function finish(run: RunContext, ending: Ending, startHookFired: boolean): Promise<AgentResult> {
  return ending.kind === 'complete' ? complete(run, ending.output, ending.exitReason, startHookFired) : fail(run, ending.error, startHookFired);
}

/** onAgentComplete → K5 (its writes land there) → end chunk. A failed K5 fails the run after the hook (rule 43). */
async function complete(run: RunContext, output: unknown, exitReason: ExitReason, startHookFired: boolean): Promise<AgentResult> {
  const before = run.state;
  let endCarriesState = true;
  if (run.hooks.has('onAgentComplete')) {
    try {
      await run.fire('onAgentComplete', { output, finalState: run.state, stepCount: run.stepCount, durationMs: run.durationMs(), exitReason });
    } catch (error) {
      if (isOwnSupersede(run, error)) return superseded(run, error);
      run.state = before;
      const hookError = AgentError.isInstance(error) ? error : run.hookError('onAgentComplete', error);
      if (run.setup.strictTerminalHooks) return fail(run, hookError, startHookFired);
      // HOOK-RULES C5: the run stays completed; the hook's writes are dropped and the end frame carries no state.
      run.setup.logger.error(`onAgentComplete threw; the run completes without its writes: ${hookError.message}`, { runId: run.setup.runId });
      endCarriesState = false;
    }
  }
  try {
    await commit(run, { kind: 'terminal', runStatus: 'completed', output, checkpoint: 'state' });
  } catch (error) {
    if (isOwnSupersede(run, error)) return superseded(run, error);
    run.state = before;
    const message = error instanceof Error ? error.message : String(error);
    const commitError = AgentError.isInstance(error) ? error : new StateCommitError(`The terminal commit failed: ${message}`, { cause: error });
    return fail(run, commitError, startHookFired);
  }
  await run.flushUsage();
  await run.emit({ type: 'end', output, ...(endCarriesState ? { state: run.state } : {}), ...run.chunkBase() });
  return result(run, 'completed', { output, exitReason });
}

/** onAgentFail (observe-only, writes dropped: rule 39) → K5 → error chunk. */
async function fail(run: RunContext, error: AgentError, startHookFired: boolean): Promise<AgentResult> {
  const status: RunStatus = error.code === 'run_interrupted' ? 'interrupted' : 'failed';
  run.discardPending();
  const finalState = run.state;
  if (startHookFired && run.hooks.has('onAgentFail')) {
    await run.fireObserveOnly('onAgentFail', {
      error,
      finalState,
      stepCount: run.stepCount,
      durationMs: run.durationMs(),
      recoverable: error.retryable,
    });
    run.state = finalState;
    run.discardPending();
  }
  try {
    await commit(run, { kind: 'terminal', runStatus: status, error: error.info, checkpoint: 'state' });
  } catch (commitError) {
    if (isOwnSupersede(run, commitError)) return superseded(run, commitError);
    run.setup.logger.error(`The terminal commit of a ${status} run failed: ${commitError instanceof Error ? commitError.message : String(commitError)}`, {
      runId: run.setup.runId,
    });
  }
  await run.flushUsage();
  await run.emit({ type: 'error', status, errorInfo: error.info, ...run.chunkBase() });
  return result(run, status, { error: error.info });
}

/** onAgentSuperseded (observe-only); the run writes nothing more, not even to the stream (rule 47). */
async function superseded(run: RunContext, error: RunSupersededError): Promise<AgentResult> {
  run.discardPending();
  if (run.hooks.has('onAgentSuperseded')) {
    await run.fireObserveOnly('onAgentSuperseded', { error, finalState: run.state, stepCount: run.stepCount, durationMs: run.durationMs() });
  }
  run.setup.abort.abort(error);
  return result(run, 'superseded', { error: error.info });
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
