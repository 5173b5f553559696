import { FINISH_TOOL_NAME, type ToolDefinition } from '../define.js';
import { agentErrorFromInfo, RunSupersededError, ToolError, type AgentError, type AgentErrorInfo } from '../errors.js';
import type { ToolCall, ToolResultMessage } from '../messages.js';
import type { AfterToolPayload } from '../hooks/types.js';
import type { StreamChunkInput, ToolEndChunk } from '../stream.js';
import type { PendingCall } from '../store.js';
import { isThenable, type WriteScope } from './hook-dispatch.js';
import { callResultRecord, type CallResultRecord, type FinishOutput } from './journal-records.js';
import { unserializable } from './json-value.js';
import { toolCallRefused } from './limits.js';
import { checkSchema, type SchemaCheck } from '../tool-schema.js';
import { callScope, type Run } from './run.js';
import { callsSideEffects, NOTHING_REPLAYED, pushToolUsage, replayCall, replayRecordedCalls } from './call-replay.js';
import { runSubAgent, spawnedCall, type SubAgentMode } from './sub-agent-call.js';
import { beforeToolChain, blockCall, cancelCall, recordResult, type BeforeToolEnd, type RecordedResult } from './tool-steering.js';
import { AwaitChildrenSignal } from './tool-context.js';
import { dryRunResult, isStubbed } from './tool-dry-run.js';
import { attemptDetails, attemptsOf, executeWithRetry } from './tool-retry.js';
import type { Writable } from '../writable.js';

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

function isOwnSupersede(run: Run, error: unknown): error is RunSupersededError {
  return RunSupersededError.isInstance(error) && error.runId === run.setup.runId;
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
  const outcome = runToolCall(run, only);
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
  let outcomes: ToolOutcome[];
  if (regular.length === 1 && replayed.size === 0) {
    // One regular call: as runParallel with one call, without its promises and closures.
    try {
      outcomes = [await runToolCall(run, regular[0] as ToolCall)];
    } catch (error) {
      throw noteOwnSupersede(run, error);
    }
  } else outcomes = await runParallel(run, regular, replayed);
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

/** A call that ran to its result: the record, and the tool_end chunk that announces it. */
interface CallRun {
  readonly record: CallResultRecord;
  readonly end: StreamChunkInput;
}

function isOutcome(value: CallRun | ToolOutcome): value is ToolOutcome {
  return 'stopped' in value;
}

/** The result is recorded (or needs no record): tool_end and the call's usage; a promise only when the chunk has to be waited for. */
function announce(run: Run, tool: ToolDefinition, call: ToolCall, end: StreamChunkInput, success: boolean, durationMs: number, finishOutput: FinishOutput | undefined): ToolOutcome | Promise<ToolOutcome> {
  const ended = run.emit(end);
  if (ended) return ended.then(() => announced(run, tool, call, success, durationMs, finishOutput));
  return announced(run, tool, call, success, durationMs, finishOutput);
}

function announced(run: Run, tool: ToolDefinition, call: ToolCall, success: boolean, durationMs: number, finishOutput: FinishOutput | undefined): ToolOutcome {
  pushToolUsage(run, tool, call.id, success, durationMs);
  return finishOutput ? { call, stopped: false, finishOutput } : { call, stopped: false };
}

/** How a call's body ended: a result or an error for the model (`stubbed` by a dry run), or an outcome that ends the call here (suspension, stop). */
type BodyEnd = { readonly result: unknown; readonly error?: AgentError; readonly stubbed?: boolean } | ToolOutcome;

/**
 * The call's body: the tool's execute (or a sub-agent's child run), its output checked against the tool's
 * outputSchema. A tool that answers at once (with a result its outputSchema checks at once) is not awaited.
 */
function callBody(run: Run, tool: ToolDefinition, call: ToolCall, scope: WriteScope, mode: SubAgentMode): BodyEnd | Promise<BodyEnd> {
  if (!tool.execute) throw new Error(`Tool ${tool.name} has no execute function.`);
  if (tool.subAgent || isStubbed(run, tool)) return delegatedBody(run, tool, call, scope, mode);
  let checked: CheckedResult | Promise<CheckedResult>;
  try {
    const raw = executeWithRetry(run, tool, call, scope);
    if (isThenable(raw)) {
      return Promise.resolve(raw)
        .then((value) => checkedResult(tool, value))
        .catch((thrown: unknown) => bodyThrew(run, tool, call, scope, thrown));
    }
    checked = checkedResult(tool, raw);
  } catch (thrown) {
    return bodyThrew(run, tool, call, scope, thrown);
  }
  return checked instanceof Promise ? checked.catch((thrown: unknown) => bodyThrew(run, tool, call, scope, thrown)) : checked;
}

/** The body of a sub-agent call (the child's run) or of a dry run's stubbed call. */
async function delegatedBody(run: Run, tool: ToolDefinition, call: ToolCall, scope: WriteScope, mode: SubAgentMode): Promise<BodyEnd> {
  try {
    if (tool.subAgent) {
      const child = await runSubAgent(run, tool, call, scope, mode);
      // The child waits (suspended, or let go at shutdown): so does the call, and the run suspends on it.
      if ('waiting' in child) return { call, stopped: false, pending: { toolCallId: call.id, toolName: tool.name, input: call.arguments, kind: 'children', children: child.waiting } };
      // A child the parent's stop ended is a call the stop cancelled.
      if (!child.ok && run.aborted) return await cancelCall(run, tool, call, scope);
      return child.ok ? await checkedResult(tool, child.result) : { result: undefined, error: child.error };
    }
    const stub = await dryRunResult(run, tool, call, scope);
    return { ...(stub.checked ? await checkedResult(tool, stub.result) : { result: stub.result }), stubbed: true };
  } catch (thrown) {
    return bodyThrew(run, tool, call, scope, thrown);
  }
}

/** A body that threw: the run's own supersede is rethrown; else the call waits for children, is cancelled by a stop, or gets an error result. */
function bodyThrew(run: Run, tool: ToolDefinition, call: ToolCall, scope: WriteScope, thrown: unknown): BodyEnd | Promise<BodyEnd> {
  if (isOwnSupersede(run, thrown)) throw thrown;
  if (thrown instanceof AwaitChildrenSignal) {
    return { call, stopped: false, pending: { toolCallId: call.id, toolName: tool.name, input: call.arguments, kind: 'children', children: thrown.children } };
  }
  // The stop ended this call: its result is not recorded and its writes are discarded.
  if (run.aborted) return cancelCall(run, tool, call, scope);
  // A tool that throws a tool-layer error (an MCP tool's mcp_timeout, say) keeps its code and message.
  if (ToolError.isInstance(thrown)) return { result: undefined, error: agentErrorFromInfo({ ...thrown.info, details: { tool: tool.name, ...thrown.info.details, ...attemptDetails(thrown) } }, thrown) };
  const message = thrown instanceof Error ? thrown.message : String(thrown);
  return { result: undefined, error: new ToolError('tool_failed', `Tool "${tool.name}" failed: ${message}`, { details: { tool: tool.name, ...attemptDetails(thrown) }, cause: thrown }) };
}

/**
 * A call going through {@link runCall}'s stages: what an async function's frame would hold, in one object,
 * so that a call whose stages all settle at once needs neither a frame nor a promise.
 */
interface CallInFlight {
  readonly run: Run;
  readonly tool: ToolDefinition;
  readonly call: ToolCall;
  readonly scope: WriteScope;
  readonly mode: SubAgentMode;
  readonly announceNow: boolean;
  startedAt: number;
  durationMs: number;
  stubbed: boolean;
  result: unknown;
  error: AgentError | undefined;
  finishOutput: FinishOutput | undefined;
}

/**
 * tool_start, the body, onStateChange*, onMessage(result), the afterTool chain. With `announceNow` (a call
 * with nothing to record) its tool_end chunk and usage follow at once; else the record and the tool_end
 * chunk to write once the result is recorded. Each stage returns a promise only when it has to wait.
 */
function runCall(run: Run, tool: ToolDefinition, call: ToolCall, scope: WriteScope, mode: SubAgentMode, announceNow: true): ToolOutcome | Promise<ToolOutcome>;
function runCall(run: Run, tool: ToolDefinition, call: ToolCall, scope: WriteScope, mode: SubAgentMode, announceNow: false): CallRun | ToolOutcome | Promise<CallRun | ToolOutcome>;
function runCall(run: Run, tool: ToolDefinition, call: ToolCall, scope: WriteScope, mode: SubAgentMode, announceNow: boolean): CallRun | ToolOutcome | Promise<CallRun | ToolOutcome> {
  const c: CallInFlight = { run, tool, call, scope, mode, announceNow, startedAt: 0, durationMs: 0, stubbed: false, result: undefined, error: undefined, finishOutput: undefined };
  const f = run.chunkFields;
  const started = run.emit({ type: 'tool_start', toolCallId: call.id, toolName: tool.name, arguments: call.arguments, streamId: f.streamId, agentId: f.agentId, agentType: f.agentType, runId: f.runId, timestamp: Date.now() });
  return started ? started.then(() => runBody(c)) : runBody(c);
}

/** The call's body, timed. */
function runBody(c: CallInFlight): CallRun | ToolOutcome | Promise<CallRun | ToolOutcome> {
  c.startedAt = performance.now();
  c.run.books.countToolCall(c.tool.name);
  const body = callBody(c.run, c.tool, c.call, c.scope, c.mode);
  return body instanceof Promise ? body.then((ended) => bodyEnded(c, ended)) : bodyEnded(c, body);
}

/** After the body: its state writes checked; a finishWith tool's output checked and queued onStateChange handlers flushed (these wait); then the result recorded. */
function bodyEnded(c: CallInFlight, body: BodyEnd): CallRun | ToolOutcome | Promise<CallRun | ToolOutcome> {
  if ('stopped' in body) return body;
  c.durationMs = performance.now() - c.startedAt;
  c.stubbed = body.stubbed === true;
  c.result = body.result;
  c.error = body.error;
  const badState = invalidStateWrite(c.run, c.tool, c.scope);
  if (badState) {
    c.result = undefined;
    c.error = badState;
  }
  if ((c.error === undefined && c.tool.finishWith) || c.scope.changes.length > 0) return finishedAndFlushed(c);
  return recordCall(c);
}

/** A finishWith tool's output checked against the agent's outputSchema, and the call's onStateChange handlers flushed. */
async function finishedAndFlushed(c: CallInFlight): Promise<CallRun | ToolOutcome> {
  const { run, tool } = c;
  if (c.error === undefined && tool.finishWith) {
    const schema = run.setup.agent.outputSchema;
    const out = schema ? await checkSchema(schema, c.result) : { ok: true as const, value: c.result };
    if (out.ok) c.finishOutput = { value: out.value, via: 'finish_with' };
    else c.error = new ToolError('tool_invalid_output', `Tool "${tool.name}" finishes the run, but its result does not match the agent's outputSchema:\n${out.message}`, { details: { tool: tool.name } });
  }
  if (c.scope.changes.length > 0) await run.hooks.flushStateChanges(c.scope);
  return recordCall(c);
}

/** The result row appended (onMessage) and passed through the afterTool chain. */
function recordCall(c: CallInFlight): CallRun | ToolOutcome | Promise<CallRun | ToolOutcome> {
  const { call, tool, error } = c;
  const row: Writable<ToolResultMessage> = error ? errorResult(call, error.info) : { role: 'tool', toolCallId: call.id, toolName: tool.name, content: c.result ?? null };
  if (c.stubbed) row.stubbed = true;
  const payload: Writable<AfterToolPayload> = { toolCall: call, tool, result: c.result, success: error === undefined, blocked: false, durationMs: c.durationMs };
  if (error) payload.error = error;
  const recording = recordResult(c.run, payload, row, c.scope);
  return recording instanceof Promise ? recording.then((recorded) => callRecorded(c, recorded)) : callRecorded(c, recording);
}

/** The call as recorded: its tool_end chunk, announced now (nothing to record) or returned with the record. */
function callRecorded(c: CallInFlight, { message, rewritten, tooLarge }: RecordedResult): CallRun | ToolOutcome | Promise<ToolOutcome> {
  const { run, tool, call, scope } = c;
  // A result too large to store is an error for the model; the call's writes stay (the tool did its work).
  const failure = c.error ?? tooLarge;
  const stored = failure === undefined;
  const end = toolEnd(run, call, tool, c.durationMs, failure, rewritten ? rewritten.result : c.result);
  finishEnd(end, c.stubbed, attemptsOf(tool, scope));
  const kept = stored ? c.finishOutput : undefined;
  if (c.announceNow) return announce(run, tool, call, end, stored, c.durationMs, kept);
  const record: Writable<CallResultRecord> = { message, patches: run.work.patchesOf(scope.owner), seqs: run.work.seqsOf(scope.owner), success: stored, durationMs: c.durationMs };
  if (kept) record.finishOutput = kept;
  return { record, end };
}

/** A tool_end chunk's optional fields: a dry run's `stubbed`, and the tries of a tool with a retry policy. */
function finishEnd(end: Writable<Omit<ToolEndChunk, 'seq'>>, stubbed: boolean, attempts: number | undefined): void {
  if (stubbed) end.stubbed = true;
  if (attempts !== undefined) end.attempts = attempts;
}

/** A call's tool_end chunk: its result, or the error that replaced it ({@link finishEnd} adds the optional fields). */
function toolEnd(run: Run, call: ToolCall, tool: ToolDefinition, durationMs: number, failure: AgentError | undefined, result: unknown): Writable<Omit<ToolEndChunk, 'seq'>> {
  const f = run.chunkFields;
  if (failure) return { type: 'tool_end', toolCallId: call.id, toolName: tool.name, success: false, durationMs, error: failure.info, streamId: f.streamId, agentId: f.agentId, agentType: f.agentType, runId: f.runId, timestamp: Date.now() };
  return { type: 'tool_end', toolCallId: call.id, toolName: tool.name, success: true, durationMs, result, streamId: f.streamId, agentId: f.agentId, agentType: f.agentType, runId: f.runId, timestamp: Date.now() };
}

/**
 * A call whose state writes leave the state violating the agent's stateSchema: its writes are dropped
 * (and its queued onStateChange with them) and it gets a `state_invalid` error result; the run goes on.
 */
function invalidStateWrite(run: Run, tool: ToolDefinition, scope: WriteScope): AgentError | undefined {
  if (run.work.patchesOf(scope.owner).length === 0) return undefined;
  const issues = run.stateIssues();
  if (!issues) return undefined;
  const dropped = new Set([scope.owner]);
  for (let more = run.work.keepWrites((o) => !dropped.has(o)); more.size > 0; more = run.work.keepWrites((o) => !dropped.has(o))) for (const o of more) dropped.add(o);
  scope.changes.length = 0;
  return new ToolError('state_invalid', `Tool "${tool.name}" wrote a state that does not match the agent's stateSchema; its writes were dropped.`, { layer: 'tool', details: { tool: tool.name, issues } });
}

/** The tool's result checked against its outputSchema and for JSON: an invalid one becomes `tool_invalid_output` (and no result). */
function checkedResult(tool: ToolDefinition, raw: unknown): CheckedResult | Promise<CheckedResult> {
  if (!tool.outputSchema) return storableResult(tool, raw);
  const toolName = tool.name;
  const checked = checkSchema(tool.outputSchema, raw);
  const outcome = (out: SchemaCheck): CheckedResult =>
    out.ok ? storableResult(tool, out.value) : { result: undefined, error: new ToolError('tool_invalid_output', `Tool "${toolName}" returned an invalid result:\n${out.message}`, { details: { tool: toolName } }) };
  return checked instanceof Promise ? checked.then(outcome) : outcome(checked);
}

/** A tool's checked result, or the error that replaced it. */
interface CheckedResult {
  readonly result: unknown;
  readonly error?: AgentError;
}

function storableResult(tool: ToolDefinition, result: unknown): CheckedResult {
  const unstorable = unstorableResult(tool, result);
  return unstorable ? { result: undefined, error: unstorable } : { result };
}

/** A `tool_invalid_output` error when a result cannot be stored or streamed as JSON (BigInt, function, symbol, cycle): nothing unserializable reaches a store or a stream. */
function unstorableResult(tool: ToolDefinition, result: unknown): AgentError | undefined {
  const problem = unserializable(result);
  if (problem === undefined) return undefined;
  return new ToolError('tool_invalid_output', `Tool "${tool.name}" returned a result that cannot be serialized as JSON (${problem}).`, {
    hint: 'Return JSON values only: no BigInt, functions, symbols or circular objects.',
    details: { tool: tool.name, problem },
  });
}
