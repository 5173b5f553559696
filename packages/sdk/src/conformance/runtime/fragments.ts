/**
 * Named fragments of hand-written expected traces: the sequences of hooks (and the stored records) that
 * many scenarios expect alike, each spelled out once. A fragment only spells values out, from the
 * arguments the scenario writes; nothing here is derived from a run. Each name says the sequence it
 * stands for, and its doc comment lists the items in order.
 */
import { at, C1, complete, fail, R1, R2, row, S1, storedRun, storedSession, toolCall } from './expect.js';
import { INITIAL } from './fixtures.js';
import type { ExpectedTrace, JsonValue, TraceEntry, TraceEntryName, TraceEvent, TraceMessage, TraceNote, TraceRun, TraceToolCall } from './trace.js';

/** What beforeLLMCall reports of a model call: the number of messages and of tools it is sent. */
export interface Prompt {
  readonly messages: number;
  readonly tools: number;
}

/** onExit's toolCallCounts. */
type CallCounts = { readonly [tool: string]: number };

// ---------------------------------------------------------------------------------------------------
// Hooks: the start of a turn

/**
 * The start work of a new turn with input `input` (step 0): onAgentStart(startSignal true), onStateChange
 * (source hook) for each of `startWrites` (the state after each write onAgentStart made), then onMessage
 * for the input row at `index`.
 */
export function newTurn(runId: string, index: number, input: string, startWrites: readonly JsonValue[] = []): TraceEvent[] {
  const s = at(runId, 0);
  return [s.start(input), ...startWrites.map((state) => s.state('hook', state)), s.message(index, row.user(input))];
}

/**
 * The start work a run owes for a turn whose start commit it does not have (a rewind or retry to before
 * it, a recovered run that died in it): onAgentStart(startSignal false), then onMessage again for the
 * turn's input row at `index` (step 0).
 */
export function owedStartWork(runId: string, index: number, input: string): TraceEvent[] {
  return [at(runId, 0).start(input, false), at(runId, 0).message(index, row.user(input))];
}

// ---------------------------------------------------------------------------------------------------
// Hooks: model calls

/**
 * A model call at `step`: beforeLLMCall(`prompt`), afterLLMCall(`plan`), then onStateChange(source hook)
 * for each of `afterWrites` (the state after each write afterLLMCall made).
 */
export function modelCall(runId: string, step: number, prompt: Prompt, plan: string, afterWrites: readonly JsonValue[] = []): TraceEvent[] {
  const s = at(runId, step);
  return [s.beforeLLM(prompt.messages, prompt.tools), s.afterLLM(plan), ...afterWrites.map((state) => s.state('hook', state))];
}

/** Attempt `attempt` of a model call at `step` that ends with `plan` (retry, fail, …) and `error`: beforeLLMCall(`prompt`, attempt), afterLLMCall(plan, error, attempt). */
export function modelAttempt(runId: string, step: number, prompt: Prompt, attempt: number, plan: string, error?: string): TraceEvent[] {
  const s = at(runId, step);
  return [s.beforeLLM(prompt.messages, prompt.tools, attempt), s.afterLLM(plan, error, attempt)];
}

/** A model call at `step` that fails the run with `error`: beforeLLMCall(`prompt`), afterLLMCall(fail, error), onAgentFail(step count `step`, error, `recoverable`). */
export function failsInModelCall(runId: string, step: number, prompt: Prompt, error: string, recoverable: boolean): TraceEvent[] {
  return [...modelAttempt(runId, step, prompt, 1, 'fail', error), fail(runId, step, error, recoverable)];
}

/** A model call at `step` that answers with tool calls: beforeLLMCall(`prompt`), afterLLMCall(tool_calls), onMessage for the assistant row (no text, `calls`) at `index`. */
export function callsTools(runId: string, step: number, prompt: Prompt, index: number, ...calls: TraceToolCall[]): TraceEvent[] {
  return [...modelCall(runId, step, prompt, 'tool_calls'), at(runId, step).message(index, row.assistant('', ...calls))];
}

/** {@link callsTools}, then beforeTool for each of `calls`: the calls start (and run, wait or suspend; what follows says which). */
export function startsCalls(runId: string, step: number, prompt: Prompt, index: number, ...calls: TraceToolCall[]): TraceEvent[] {
  return [...callsTools(runId, step, prompt, index, ...calls), ...calls.map((c) => at(runId, step).beforeTool(c.call, c.tool, c.args))];
}

/**
 * A model call at `step` that asks for client (or approval) calls, which suspend the run: {@link startsCalls}
 * (beforeLLMCall, afterLLMCall, the assistant row at `index`, beforeTool for each of `calls`), then
 * onAgentSuspended(client_tool, the calls pending) at step `step + 1`.
 */
export function callsAndSuspends(runId: string, step: number, prompt: Prompt, index: number, ...calls: TraceToolCall[]): TraceEvent[] {
  const pending = calls.map((c) => c.call);
  return [...startsCalls(runId, step, prompt, index, ...calls), at(runId, step + 1).suspended('client_tool', pending)];
}

// ---------------------------------------------------------------------------------------------------
// Hooks: tool calls

/**
 * The outcome of a call that ran and succeeded, from its first write on: onStateChange(source tool) for
 * each of its `writes` (the state after each write), onMessage for its result row (`result`) at `index`,
 * afterTool(success) with `call`'s arguments (the input it ran with) and `result`. Alone, it is how a
 * resumed run delivers an answered or approved call (no second beforeTool).
 */
export function callSucceeds(runId: string, step: number, call: TraceToolCall, writes: readonly JsonValue[], index: number, result: JsonValue): TraceEvent[] {
  const s = at(runId, step);
  return [...writes.map((state) => s.state('tool', state, call.tool)), s.message(index, row.tool(call.call, call.tool, result)), s.afterTool(call.call, call.tool, call.args, result)];
}

/**
 * One allowed call in the canonical order (rule 75): beforeTool, onStateChange for each of its `writes`,
 * onMessage for its result row at `index`, afterTool(success) with `result` (see {@link callSucceeds}).
 */
export function allowedCall(runId: string, step: number, call: TraceToolCall, writes: readonly JsonValue[], index: number, result: JsonValue): TraceEvent[] {
  return [at(runId, step).beforeTool(call.call, call.tool, call.args), ...callSucceeds(runId, step, call, writes, index, result)];
}

/**
 * A call that ran and failed with `error` (it was not blocked), in the canonical order: beforeTool,
 * onStateChange for each of its `writes`, onMessage for its error row at `index`, afterTool(success
 * false, `error`).
 */
export function callFails(runId: string, step: number, call: TraceToolCall, writes: readonly JsonValue[], index: number, error: string): TraceEvent[] {
  const s = at(runId, step);
  return [
    s.beforeTool(call.call, call.tool, call.args),
    ...writes.map((state) => s.state('tool', state, call.tool)),
    s.message(index, row.toolError(call.call, call.tool, error)),
    s.afterToolError(call.call, call.tool, call.args, error),
  ];
}

/**
 * An allowed call of the fixtures' `increment` tool with `args` `{ by }`, in the canonical order:
 * beforeTool, onStateChange(tool, `state` after the write), onMessage for its `{ by }` result row at
 * `index`, afterTool(success, result `{ by }`).
 */
export function incrementCall(runId: string, step: number, id: string, args: { readonly by: number }, state: JsonValue, index: number): TraceEvent[] {
  return allowedCall(runId, step, toolCall(id, 'increment', args), [state], index, args);
}

/**
 * A step whose model calls `increment` once (call `id`, `args` `{ by }`) and the call: {@link callsTools}
 * with the assistant row at `index`, then {@link incrementCall} with its result row at `index + 1`,
 * leaving `state`.
 */
export function incrementStep(runId: string, step: number, prompt: Prompt, index: number, id: string, args: { readonly by: number }, state: JsonValue): TraceEvent[] {
  return [...callsTools(runId, step, prompt, index, toolCall(id, 'increment', args)), ...incrementCall(runId, step, id, args, state, index + 1)];
}

/** A call that beforeTool blocks (or a guard policy blocks): beforeTool, onMessage for its hook_blocked error row at `index`, afterTool(blocked, hook_blocked). */
export function blockedCall(runId: string, step: number, call: TraceToolCall, index: number): TraceEvent[] {
  const s = at(runId, step);
  return [s.beforeTool(call.call, call.tool, call.args), s.message(index, row.toolError(call.call, call.tool, 'hook_blocked')), s.afterToolError(call.call, call.tool, call.args, 'hook_blocked', true)];
}

// ---------------------------------------------------------------------------------------------------
// Hooks: resumed runs

/**
 * A run resumed from `previousRun` (onAgentResumed, no checkpoint) that first delivers the answered or
 * approved `call` at step 0: onStateChange for each of its `writes`, onMessage for its result row at
 * `index`, afterTool(success, `result`) ({@link callSucceeds}).
 */
export function resumesWithResult(runId: string, previousRun: string, call: TraceToolCall, writes: readonly JsonValue[], index: number, result: JsonValue): TraceEvent[] {
  return [at(runId, 0).resumed(previousRun), ...callSucceeds(runId, 0, call, writes, index, result)];
}

/**
 * A run resumed from `previousRun` (onAgentResumed, no checkpoint) that first delivers `call` ending with
 * `error` at step 0 (rejected, `blocked`; or answered with an error, with `result`): onMessage for its
 * error row at `index`, afterTool(success false, error, blocked, result).
 */
export function resumesWithError(runId: string, previousRun: string, call: TraceToolCall, index: number, error: string, blocked: boolean, result?: JsonValue): TraceEvent[] {
  const s = at(runId, 0);
  return [s.resumed(previousRun), s.message(index, row.toolError(call.call, call.tool, error)), s.afterToolError(call.call, call.tool, call.args, error, blocked, result)];
}

// ---------------------------------------------------------------------------------------------------
// Hooks: how a step exits

/** A model reply at `step` with the text `reply` that exits: afterLLMCall(text), onMessage for the reply at `index`, onExit(text, step count `step + 1`, `counts`). */
export function textExit(runId: string, step: number, index: number, reply: string, counts: CallCounts = {}): TraceEvent[] {
  const s = at(runId, step);
  return [s.afterLLM('text'), s.message(index, row.assistant(reply)), s.exit('text', step + 1, counts)];
}

/**
 * The last step of a run, up to onAgentComplete, when it ends with the text `reply`: beforeLLMCall(`prompt`),
 * afterLLMCall(text), onMessage for the reply at `index`, onExit(text) and onAgentComplete(exitReason
 * text, output `reply`), both with step count `step + 1`; `counts` is onExit's toolCallCounts.
 */
export function completesWithText(runId: string, step: number, prompt: Prompt, index: number, reply: string, counts: CallCounts = {}): TraceEvent[] {
  return [at(runId, step).beforeLLM(prompt.messages, prompt.tools), ...textExit(runId, step, index, reply, counts), complete(runId, step + 1, 'text', reply)];
}

/**
 * A model reply at `step` that calls `__finish__` with `{ answer }` and exits: afterLLMCall(finish),
 * onMessage for the assistant row with the call `id` at `index`, onMessage for its `{ ok: true }` row at
 * `index + 1`, onExit(finish_tool, step count `step + 1`, `counts`).
 */
export function finishExit(runId: string, step: number, index: number, id: string, answer: string, counts: CallCounts = {}): TraceEvent[] {
  const s = at(runId, step);
  const finishCall = toolCall(id, '__finish__', { answer });
  return [s.afterLLM('finish'), s.message(index, row.assistant('', finishCall)), s.message(index + 1, row.tool(id, '__finish__', { ok: true })), s.exit('finish_tool', step + 1, counts)];
}

/**
 * The last step of a run, up to onAgentComplete, when it finishes through `__finish__` with `{ answer }`:
 * beforeLLMCall(`prompt`), then {@link finishExit} (the call `id`, its rows at `index` and `index + 1`),
 * then onAgentComplete(exitReason finish_tool, output `{ answer }`, step count `step + 1`).
 */
export function completesWithFinish(runId: string, step: number, prompt: Prompt, index: number, id: string, answer: string, counts: CallCounts = {}): TraceEvent[] {
  return [at(runId, step).beforeLLM(prompt.messages, prompt.tools), ...finishExit(runId, step, index, id, answer, counts), complete(runId, step + 1, 'finish_tool', { answer })];
}

// ---------------------------------------------------------------------------------------------------
// Entries

/** An entry call that began run `runId` on session `sessionId`. */
export function entered(entry: TraceEntryName, sessionId: string, runId: string): TraceEntry {
  return { entry, session: sessionId, run: runId };
}

/** An entry call refused with the error code `code`. */
export function refused(entry: TraceEntryName, code: string): TraceEntry {
  return { entry, rejected: code };
}

// ---------------------------------------------------------------------------------------------------
// Stored runs (with what handle.result() resolved with)

/** What a completed run's result holds besides its status. */
export interface Completion {
  readonly exitReason: string;
  readonly output: JsonValue;
  readonly steps: number;
  readonly state: JsonValue;
}

/** A stored run that completed with `output`, and its result: status completed, exitReason, output, steps, state. */
export function completedRun(runId: string, sessionId: string, signal: string, c: Completion): TraceRun {
  return storedRun(runId, sessionId, signal, 'completed', { output: c.output, result: { status: 'completed', exitReason: c.exitReason, output: c.output, steps: c.steps, state: c.state } });
}

/** A stored run that failed with `error`, and its result: status failed, error, steps, state. */
export function failedRun(runId: string, sessionId: string, signal: string, error: string, steps: number, state: JsonValue): TraceRun {
  return storedRun(runId, sessionId, signal, 'failed', { error, result: { status: 'failed', error, steps, state } });
}

/** A stored run that a stop interrupted (error run_interrupted), and its result: status interrupted, run_interrupted, steps, state. */
export function interruptedRun(runId: string, sessionId: string, signal: string, steps: number, state: JsonValue): TraceRun {
  return storedRun(runId, sessionId, signal, 'interrupted', { error: 'run_interrupted', result: { status: 'interrupted', error: 'run_interrupted', steps, state } });
}

/** A stored run that suspended, and its result: status suspended, steps, state. */
export function suspendedRun(runId: string, sessionId: string, signal: string, steps: number, state: JsonValue): TraceRun {
  return storedRun(runId, sessionId, signal, 'suspended', { result: { status: 'suspended', steps, state } });
}

/** A run that began with signal start and was superseded: stored with `status` (default superseded), its result superseded with state_run_superseded. */
export function supersededRun(runId: string, sessionId: string, status = 'superseded'): TraceRun {
  return storedRun(runId, sessionId, 'start', status, { result: { status: 'superseded', error: 'state_run_superseded' } });
}

// ---------------------------------------------------------------------------------------------------
// How a scenario ends: its entries, notes, stored runs and session

/** The end of a scenario: its entries, notes, stored runs and sessions. */
export type ScenarioEnd = Pick<ExpectedTrace, 'entries' | 'notes' | 'runs' | 'sessions'>;

function soleRun(stored: TraceRun, state: JsonValue, transcript: readonly TraceMessage[], notes?: readonly TraceNote[]): ScenarioEnd {
  return { entries: [entered('execute', S1, R1)], ...(notes === undefined ? {} : { notes }), runs: [stored], sessions: [storedSession(S1, R1, state, transcript)] };
}

/** The end of a scenario whose only run, R1 (execute on S1), completed with `c`: the session holds `c.state` and `transcript`; `notes` are the scenario's notes. */
export function soleRunCompleted(c: Completion, transcript: readonly TraceMessage[], notes?: readonly TraceNote[]): ScenarioEnd {
  return soleRun(completedRun(R1, S1, 'start', c), c.state, transcript, notes);
}

/** The end of a scenario whose only run, R1 (execute on S1), failed with `error` after `steps` steps: the session holds `state` and `transcript`. */
export function soleRunFailed(error: string, steps: number, state: JsonValue, transcript: readonly TraceMessage[], notes?: readonly TraceNote[]): ScenarioEnd {
  return soleRun(failedRun(R1, S1, 'start', error, steps, state), state, transcript, notes);
}

/** The end of a scenario whose only run, R1 (execute on S1), a stop interrupted after `steps` steps: the session holds `state` and `transcript`. */
export function soleRunInterrupted(steps: number, state: JsonValue, transcript: readonly TraceMessage[], notes?: readonly TraceNote[]): ScenarioEnd {
  return soleRun(interruptedRun(R1, S1, 'start', steps, state), state, transcript, notes);
}

/** The end of a scenario whose only run, R1 (execute on S1), suspended after its first step: the session holds `state` and `transcript`. */
export function soleRunSuspended(state: JsonValue, transcript: readonly TraceMessage[], notes?: readonly TraceNote[]): ScenarioEnd {
  return soleRun(suspendedRun(R1, S1, 'start', 1, state), state, transcript, notes);
}

/**
 * The end of a scenario in which R1 (execute on S1) was superseded by R2, a newer execute on S1 that
 * finished through `__finish__` with `{ answer }` in one step and left the initial state: both entries,
 * R1 superseded, R2 completed, and S1 (current run R2) with `transcript`.
 */
export function supersededByFinishingRun(answer: string, transcript: readonly TraceMessage[]): ScenarioEnd {
  return {
    entries: [entered('execute', S1, R1), entered('execute', S1, R2)],
    runs: [supersededRun(R1, S1), completedRun(R2, S1, 'start', { exitReason: 'finish_tool', output: { answer }, steps: 1, state: INITIAL })],
    sessions: [storedSession(S1, R2, INITIAL, transcript)],
  };
}

/**
 * The end of a scenario in which R2, a retry (entry retry, signal retry) of R1 (execute on S1, stored as
 * `retried`), completed with the text `reply` in one step, leaving `state`: both entries, both runs, and
 * S1 (current run R2) with `state` and `transcript`.
 */
export function retryCompletedWithText(retried: TraceRun, reply: string, state: JsonValue, transcript: readonly TraceMessage[]): ScenarioEnd {
  return {
    entries: [entered('execute', S1, R1), entered('retry', S1, R2)],
    runs: [retried, completedRun(R2, S1, 'retry', { exitReason: 'text', output: reply, steps: 1, state })],
    sessions: [storedSession(S1, R2, state, transcript)],
  };
}

// ---------------------------------------------------------------------------------------------------
// Transcript rows

/** The rows of a call that succeeded: the assistant row (no text) asking for `call`, then its result row with `content`. */
export function callRows(call: TraceToolCall, content: JsonValue): TraceMessage[] {
  return [row.assistant('', call), row.tool(call.call, call.tool, content)];
}

/** The rows of a call that ended with an error: the assistant row (no text) asking for `call`, then its error row with the code `error`. */
export function callErrorRows(call: TraceToolCall, error: string): TraceMessage[] {
  return [row.assistant('', call), row.toolError(call.call, call.tool, error)];
}

/** The rows of a `__finish__` call `id` with `{ answer }`: the assistant row asking for it, then its `{ ok: true }` result row. */
export function finishRows(id: string, answer: string): TraceMessage[] {
  return callRows(toolCall(id, '__finish__', { answer }), { ok: true });
}

// ---------------------------------------------------------------------------------------------------
// Whole traces that several scenarios expect alike

/** What {@link approvedRemoveTrace} is about. */
export interface ApprovedRemove {
  /** The turn's input. */
  readonly input: string;
  /** The path the model asks to remove (the fixtures' `remove` tool, which needs approval). */
  readonly path: string;
  /** The path the approved call runs with (an approval may edit the input); default `path`. */
  readonly ranWith?: string;
  /** The model's text reply after the call, which completes the run. */
  readonly reply: string;
}

/**
 * The trace of a turn whose model asks for `remove(path)`, which suspends the run for approval; one
 * approval resumes it and the call runs with `ranWith`; then the model replies and the run completes:
 * - R1: {@link newTurn}(input), {@link callsAndSuspends} (prompt 2 messages, 1 tool; the call C1 at row 1);
 * - R2: {@link resumesWithResult} from R1 (writes the log entry `deleted <ranWith>`, result `{ removed }` at
 *   row 2), then {@link completesWithText} (prompt 4 messages, 1 tool; the reply at row 3; one remove call);
 * - entries execute (R1) and approve (R2); R1 stored suspended after one step; R2 resumed and completed;
 *   the session with the log entry and the four rows.
 */
export function approvedRemoveTrace(a: ApprovedRemove): ExpectedTrace {
  const ranWith = a.ranWith ?? a.path;
  const state = { count: 0, log: [`deleted ${ranWith}`] };
  return {
    hooks: [
      ...newTurn(R1, 0, a.input),
      ...callsAndSuspends(R1, 0, { messages: 2, tools: 1 }, 1, toolCall(C1, 'remove', { path: a.path })),
      ...resumesWithResult(R2, R1, toolCall(C1, 'remove', { path: ranWith }), [state], 2, { removed: ranWith }),
      ...completesWithText(R2, 0, { messages: 4, tools: 1 }, 3, a.reply, { remove: 1 }),
    ],
    entries: [entered('execute', S1, R1), entered('approve', S1, R2)],
    runs: [suspendedRun(R1, S1, 'start', 1, INITIAL), completedRun(R2, S1, 'resumed', { exitReason: 'text', output: a.reply, steps: 1, state })],
    sessions: [storedSession(S1, R2, state, [row.user(a.input), ...callRows(toolCall(C1, 'remove', { path: a.path }), { removed: ranWith }), row.assistant(a.reply)])],
  };
}

// ---------------------------------------------------------------------------------------------------
// Hooks: sub-agent calls

/** A sub-agent call starting at `step`: beforeTool of `call`, then beforeSubAgent(`call`, `agentType`); the child's run follows. */
export function spawnsChild(runId: string, step: number, call: TraceToolCall, agentType: string): TraceEvent[] {
  const s = at(runId, step);
  return [s.beforeTool(call.call, call.tool, call.args), { point: 'beforeSubAgent', run: runId, step, call: call.call, agentType }];
}

/** What a parent's sub-agent call ends with: the child's success (its output the call's `result`), or its failure (the child's `error`; the call's row `subagent_failed`). */
export type ChildOutcome = { readonly success: true; readonly result: JsonValue } | { readonly success: false; readonly error: string };

/**
 * A sub-agent call's end in the parent at `step`, once its child ended: afterSubAgent(`call`,
 * `agentType`, success, the child's error), onStateChange(source hook, `state`) for the fold
 * afterSubAgent wrote, onMessage for the call's row at `index` (the child's output, or
 * `subagent_failed`), afterTool.
 */
export function foldsChild(runId: string, step: number, call: TraceToolCall, agentType: string, outcome: ChildOutcome, state: JsonValue, index: number): TraceEvent[] {
  const s = at(runId, step);
  const after: TraceEvent = { point: 'afterSubAgent', run: runId, step, call: call.call, agentType, success: outcome.success, ...(outcome.success ? {} : { error: outcome.error }) };
  const end = outcome.success
    ? [s.message(index, row.tool(call.call, call.tool, outcome.result)), s.afterTool(call.call, call.tool, call.args, outcome.result)]
    : [s.message(index, row.toolError(call.call, call.tool, 'subagent_failed')), s.afterToolError(call.call, call.tool, call.args, 'subagent_failed')];
  return [after, s.state('hook', state), ...end];
}

/**
 * A child's whole run when it answers its input `input` with the text `reply` in one step: {@link newTurn}
 * (onAgentStart true, onMessage for the input at row 0), then {@link completesWithText} (prompt: the
 * input alone, no tools; the reply at row 1).
 */
export function childAnswers(runId: string, input: string, reply: string): TraceEvent[] {
  return [...newTurn(runId, 0, input), ...completesWithText(runId, 0, { messages: 1, tools: 0 }, 1, reply)];
}
