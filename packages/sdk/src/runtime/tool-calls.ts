import { FINISH_TOOL_NAME, type ToolDefinition } from '../define.js';
import { ToolError, type AgentErrorInfo } from '../errors.js';
import type { ToolCall, ToolResultMessage } from '../messages.js';
import type { PendingCall } from '../store.js';
import type { WriteScope } from './hook-dispatch.js';
import { callResultRecord, type FinishOutput } from './journal-records.js';
import { toolCallRefused } from './limits.js';
import { checkSchema, type SchemaCheck } from '../tool-schema.js';
import { callScope, type Run } from './run.js';
import { callsSideEffects, NOTHING_REPLAYED, replayCall, replayRecordedCalls } from './call-replay.js';
import { announce, isOutcome, isOwnSupersede, runCall, type CallRun } from './call-run.js';
import { spawnedCall, type SubAgentMode } from './sub-agent-call.js';
import { beforeToolChain, blockCall, cancelCall, type BeforeToolEnd } from './tool-steering.js';

/** How one call of a step ended. */
export interface ToolOutcome {
  readonly call: ToolCall;
  /** The agent output a successful finishWith or `__finish__` call produced. */
  readonly finishOutput?: FinishOutput;
  /** True when a stop ended the call before its result was recorded: its writes are discarded. */
  readonly stopped: boolean;
  /** Set when the call waits for the caller, a human or child sessions: the run suspends. */
  readonly pending?: PendingCall;
}

/** The calls of these outcomes that wait (an approval, a client tool, children), or undefined when none does. */
export function pendingCalls(outcomes: readonly ToolOutcome[]): PendingCall[] | undefined {
  let pending: PendingCall[] | undefined;
  for (const outcome of outcomes) if (outcome.pending) (pending ??= []).push(outcome.pending);
  return pending;
}

/** An error tool result for `call`. */
export function errorResult(call: ToolCall, info: AgentErrorInfo): ToolResultMessage {
  return { role: 'tool', toolCallId: call.id, toolName: call.name, content: info.message, isError: true, errorInfo: info };
}

/** The `tool_invalid_input` error for arguments that do not match a schema. */
export function invalidInput(toolName: string, failure: Extract<SchemaCheck, { ok: false }>): AgentErrorInfo {
  return new ToolError('tool_invalid_input', `Invalid arguments for tool "${toolName}":\n${failure.message}`, {
    details: { tool: toolName, issues: failure.issues },
  }).info;
}

/** The result row of a call a stop ended before its result was recorded. */
export function stoppedResult(call: ToolCall): ToolResultMessage {
  return errorResult(call, new ToolError('run_stopped', `The run was stopped before "${call.name}" finished.`, { details: { tool: call.name } }).info);
}

/**
 * Runs a step's tool calls in parallel; each follows the canonical order beforeTool → execute →
 * onStateChange* → onMessage(result) → afterTool. Unknown tools and invalid arguments go back to the
 * model without tool hooks; `__finish__` is internal and fires no tool hooks. A supersede raised inside a
 * tool ends the step at once: siblings already started finish unpersisted, none starts later.
 * Otherwise it waits for every call and rethrows the first run-ending error. Calls past the first
 * `maxToolCallsPerStep` of the reply get a `tool_calls_exceeded` error result and do not run.
 * The common step (one call of a tool without side effects) returns its outcomes at once when the call
 * settles at once; a promise only when something has to be waited for.
 */
export function runToolCalls(run: Run, requested: readonly ToolCall[]): ToolOutcome[] | Promise<ToolOutcome[]> {
  const only = requested.length === 1 ? (requested[0] as ToolCall) : undefined;
  // One regular call, and (no side effects) nothing a process that died could have recorded for it.
  if (only === undefined || only.name === FINISH_TOOL_NAME || run.setup.limits.maxToolCallsPerStep < 1 || callsSideEffects(run, requested)) return everyToolCall(run, requested);
  return soleCall(run, only);
}

/** A step's one regular call, as runParallel with one call but without its promises and closures (none when the call settles at once). */
function soleCall(run: Run, call: ToolCall): ToolOutcome[] | Promise<ToolOutcome[]> {
  const outcome = runToolCall(run, call);
  return outcome instanceof Promise ? outcome.then(oneOutcome, (error: unknown) => Promise.reject(noteOwnSupersede(run, error))) : [outcome];
}

function oneOutcome(outcome: ToolOutcome): ToolOutcome[] {
  return [outcome];
}

/** {@link runToolCalls} of any step: finish calls, calls past the limit, side-effecting calls replayed, several calls in parallel. */
async function everyToolCall(run: Run, requested: readonly ToolCall[]): Promise<ToolOutcome[]> {
  // Past maxToolCallsPerStep, calls do not run: each gets an error result (no tool hooks), the first ones run.
  const max = run.setup.limits.maxToolCallsPerStep;
  const calls = requested.length > max ? requested.slice(0, max) : requested;
  const finishing = calls.some((c) => c.name === FINISH_TOOL_NAME);
  const regular = finishing ? calls.filter((c) => c.name !== FINISH_TOOL_NAME) : calls;
  const replayed = callsSideEffects(run, regular) ? await replayRecordedCalls(run, regular, run.stepCount) : NOTHING_REPLAYED;
  const outcomes = regular.length === 1 && replayed.size === 0 ? await soleCall(run, regular[0] as ToolCall) : await runParallel(run, regular, replayed);
  if (finishing) for (const call of calls) if (call.name === FINISH_TOOL_NAME) outcomes.push(await runFinishCall(run, call));
  for (let i = max; i < requested.length; i++) {
    const call = requested[i] as ToolCall;
    await run.appendMessage(errorResult(call, toolCallRefused(call, i + 1, requested.length, max).info));
    outcomes.push({ call, stopped: false });
  }
  // Without finish calls the outcomes are in the model's order already (the refused calls come last in it too).
  if (!finishing) return outcomes;
  // The first finishing call in the model's order wins.
  const order = new Map(requested.map((c, i) => [c.id, i] as const));
  outcomes.sort((a, b) => (order.get(a.call.id) ?? 0) - (order.get(b.call.id) ?? 0));
  return outcomes;
}

/** Notes the run's own supersede (a tool raised it) and gives the error back to rethrow. */
function noteOwnSupersede(run: Run, error: unknown): unknown {
  if (isOwnSupersede(run, error)) run.noteSuperseded(error);
  return error;
}

/** The regular calls in parallel (recorded ones replayed); a supersede ends the wait at once, else the first failure is rethrown once all settled. */
async function runParallel(run: Run, regular: readonly ToolCall[], replayed: ReadonlyMap<string, Promise<ToolOutcome>>): Promise<ToolOutcome[]> {
  let raise: (error: unknown) => void = () => {};
  const supersede = new Promise<never>((_resolve, reject) => (raise = reject));
  const all = Promise.allSettled(
    regular.map((call) =>
      Promise.resolve(replayed.get(call.id) ?? runToolCall(run, call)).catch((error: unknown) => {
        if (isOwnSupersede(run, error)) {
          run.noteSuperseded(error);
          raise(error);
        }
        throw error;
      }),
    ),
  );
  const settled = await Promise.race([all, supersede]);
  const failure = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failure) throw failure.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<ToolOutcome>).value);
}

async function runFinishCall(run: Run, call: ToolCall): Promise<ToolOutcome> {
  const schema = run.setup.agent.outputSchema;
  if (run.aborted) {
    await run.appendMessage(stoppedResult(call));
    return { call, stopped: true };
  }
  if (!schema) {
    await run.appendMessage(errorResult(call, new ToolError('tool_not_found', `Tool "${FINISH_TOOL_NAME}" is not available: this agent answers in plain text.`).info));
    return { call, stopped: false };
  }
  const parsed = await checkSchema(schema, call.arguments);
  if (!parsed.ok) {
    await run.appendMessage(errorResult(call, invalidInput(FINISH_TOOL_NAME, parsed)));
    return { call, stopped: false };
  }
  await run.appendMessage({ role: 'tool', toolCallId: call.id, toolName: call.name, content: { ok: true } });
  return { call, finishOutput: { value: parsed.value, via: 'finish_tool' }, stopped: false };
}

/**
 * One regular call: its tool looked up, its arguments checked, the recorder asked (side-effecting tools), the
 * beforeTool chain, then its body. Every step of the common path (a known tool, valid arguments, no side
 * effects, hooks that answer at once) runs in this turn: a tool that answers at once gives its outcome
 * at once, else the call's promise is its body's.
 */
function runToolCall(run: Run, call: ToolCall): ToolOutcome | Promise<ToolOutcome> {
  try {
    const tool = run.setup.agent.toolsByName.get(call.name);
    if (!tool) return unknownTool(run, call);
    const checked = checkSchema(tool.inputSchema, call.arguments);
    return checked instanceof Promise ? checked.then((parsed) => checkedCall(run, tool, call, parsed)) : checkedCall(run, tool, call, checked);
  } catch (error) {
    // What throws in this turn (a hook's interpret step, a needsApproval function) rejects, as from an async function.
    return Promise.reject(error);
  }
}

async function unknownTool(run: Run, call: ToolCall): Promise<ToolOutcome> {
  const available = run.setup.agent.llmTools.map((t) => t.name).join(', ') || '(none)';
  await run.appendMessage(errorResult(call, new ToolError('tool_not_found', `Unknown tool "${call.name}". Available tools: ${available}.`, { details: { tool: call.name } }).info));
  return { call, stopped: false };
}

/** A call whose arguments were checked: an invalid one goes back to the model; a side-effecting one asks the recorder first. */
function checkedCall(run: Run, tool: ToolDefinition, call: ToolCall, parsed: SchemaCheck): ToolOutcome | Promise<ToolOutcome> {
  if (!parsed.ok) return invalidCall(run, tool, call, parsed);
  if (tool.sideEffects) return journaledCall(run, tool, call, parsed.value);
  return steeredCall(run, tool, call, parsed.value);
}

async function invalidCall(run: Run, tool: ToolDefinition, call: ToolCall, parsed: Extract<SchemaCheck, { ok: false }>): Promise<ToolOutcome> {
  await run.appendMessage(errorResult(call, invalidInput(tool.name, parsed)));
  return { call, stopped: false };
}

/** A side-effecting call: replayed when a process that died recorded it, else it runs like every other call. */
async function journaledCall(run: Run, tool: ToolDefinition, call: ToolCall, input: unknown): Promise<ToolOutcome> {
  const journaled = await fromRecorder(run, tool, call);
  return journaled ?? steeredCall(run, tool, call, input);
}

/** A call about to start: no new work once the run is stopped or superseded; a sub-agent call a process that died spawned re-attaches; else the beforeTool chain. */
function steeredCall(run: Run, tool: ToolDefinition, call: ToolCall, input: unknown): ToolOutcome | Promise<ToolOutcome> {
  if (run.aborted || run.superseded) return stoppedCall(run, call);
  const scope = callScope(call.id);
  return tool.subAgent ? subAgentCall(run, tool, call, input, scope) : chainedCall(run, tool, call, input, scope);
}

/** The beforeTool chain, then the call as the chain left it. */
function chainedCall(run: Run, tool: ToolDefinition, call: ToolCall, input: unknown, scope: WriteScope): ToolOutcome | Promise<ToolOutcome> {
  const chained = beforeToolChain(run, tool, call, input, scope);
  return chained instanceof Promise ? chained.then((steered) => allowedCall(run, tool, call, steered, scope)) : allowedCall(run, tool, call, chained, scope);
}

async function stoppedCall(run: Run, call: ToolCall): Promise<ToolOutcome> {
  await run.appendMessage(stoppedResult(call));
  return { call, stopped: true };
}

/** A sub-agent call a process that died spawned already passed beforeTool: it re-attaches to its child. */
async function subAgentCall(run: Run, tool: ToolDefinition, call: ToolCall, input: unknown, scope: WriteScope): Promise<ToolOutcome> {
  const spawned = await spawnedCall(run, { ...call, arguments: input }, scope);
  return spawned ? executeCall(run, tool, spawned, scope) : chainedCall(run, tool, call, input, scope);
}

/** After beforeTool: a stop or supersede, a block, a client tool or an approval suspends, else the call runs. */
function allowedCall(run: Run, tool: ToolDefinition, call: ToolCall, steered: BeforeToolEnd, scope: WriteScope): ToolOutcome | Promise<ToolOutcome> {
  // No new work once the run is superseded or stopped.
  if (run.superseded) return Promise.reject(run.superseded);
  if (run.aborted) return cancelCall(run, tool, { ...call, arguments: steered.input }, scope);
  const toolCall: ToolCall = { id: call.id, name: call.name, arguments: steered.input };
  if (steered.blocked !== undefined) return blockCall(run, tool, toolCall, steered.blocked, scope);
  // Suspension boundaries: beforeTool ran; the frame is written; the run will suspend.
  if (!tool.execute) return suspendedCall(run, tool, toolCall, 'tool_start', 'client');
  const needsApproval = typeof tool.needsApproval === 'function' ? tool.needsApproval(steered.input) : tool.needsApproval === true;
  // No signature on the stream: a reader of the stream must not be able to approve anything.
  if (needsApproval) return suspendedCall(run, tool, toolCall, 'tool_approval_request', 'approval');
  return executeCall(run, tool, toolCall, scope);
}

/** A call that suspends the run: its chunk is written, then the call waits for the caller (a client tool) or a human (an approval). */
async function suspendedCall(run: Run, tool: ToolDefinition, call: ToolCall, type: 'tool_start' | 'tool_approval_request', kind: 'client' | 'approval'): Promise<ToolOutcome> {
  await run.emit({ type, toolCallId: call.id, toolName: tool.name, arguments: call.arguments, ...run.chunkBase() });
  return { call, stopped: false, pending: { toolCallId: call.id, toolName: tool.name, input: call.arguments, kind } };
}

/**
 * A side-effecting call a process that died already recorded: its recorded result is replayed (no hook
 * fires, the tool does not run); a call that started but recorded no result is not run again (at most
 * once) and gets `tool_interrupted`. Undefined when the call has to run.
 */
async function fromRecorder(run: Run, tool: ToolDefinition, call: ToolCall, step = run.stepCount): Promise<ToolOutcome | undefined> {
  if (!tool.sideEffects) return undefined;
  const prior = await run.recorder.replay({ kind: 'tool_call', step, callId: call.id }, callResultRecord);
  if (!prior) return undefined;
  if (prior.status === 'replayed') return replayCall(run, call, tool, prior.value);
  await run.appendMessage(errorResult(call, new ToolError('tool_interrupted', `Tool "${tool.name}" was interrupted: its outcome is unknown and it was not run again.`, { details: { tool: tool.name } }).info), run.runScope, false);
  return { call, stopped: false };
}

/**
 * Runs an allowed call. A side-effecting call goes through the step recorder (a start marker, then its
 * result, so it runs at most once); a pure one just runs. Its tool_end chunk and usage follow the
 * record, so nothing announces a result a crash could still lose. Shared by a step's calls and an
 * approved call that a resumed run delivers (`step` -1: before the resumed run's first step, so its key
 * never meets a call of that step with the same id). A sub-agent call records its result but no start
 * marker: its child is a session of its own, so a recovered call re-attaches to it instead of being
 * given up (`mode` says whether the call spawns its child or re-attaches to it).
 */
export function executeCall(run: Run, tool: ToolDefinition, call: ToolCall, scope: WriteScope, step = run.stepCount, mode: SubAgentMode = 'spawn'): ToolOutcome | Promise<ToolOutcome> {
  // A pure call has nothing to record: its body announces its result itself.
  if (!tool.sideEffects) return runCall(run, tool, call, scope, mode, true);
  return journaledExecute(run, tool, call, scope, step, mode);
}

/** {@link executeCall} of a side-effecting call, through the step recorder. */
async function journaledExecute(run: Run, tool: ToolDefinition, call: ToolCall, scope: WriteScope, step: number, mode: SubAgentMode): Promise<ToolOutcome> {
  let ranNow: CallRun | undefined;
  try {
    const outcome = await run.recorder.replayOrRun(
      { kind: 'tool_call', step, callId: call.id },
      callResultRecord,
      async () => {
        const ran = await runCall(run, tool, call, scope, mode, false);
        if (isOutcome(ran)) throw new EndedWithoutResult(ran);
        ranNow = ran;
        return ran.record;
      },
      // A sub-agent call is not at-most-once: its child is keyed by the call (a derived session, an
      // idempotency key), so a recovered parent runs the call again and re-attaches to the same child.
      { atMostOnce: tool.subAgent === undefined },
    );
    if (outcome.status === 'interrupted') return (await fromRecorder(run, tool, call, step)) ?? { call, stopped: false };
    if (outcome.status === 'replayed') return replayCall(run, call, tool, outcome.value);
    const { record, end } = ranNow as CallRun;
    return await announce(run, tool, call, end, record.success, record.durationMs, record.finishOutput);
  } catch (error) {
    // A stop or a suspension: no result to record; the start marker keeps the call from running twice.
    if (error instanceof EndedWithoutResult) return error.outcome;
    throw error;
  }
}

/** A call that ended without a result (stopped, suspended): nothing to record. */
class EndedWithoutResult {
  constructor(readonly outcome: ToolOutcome) {}
}
