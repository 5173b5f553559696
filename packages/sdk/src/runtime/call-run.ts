import type { ToolDefinition } from '../define.js';
import { agentErrorFromInfo, RunSupersededError, ToolError, type AgentError } from '../errors.js';
import type { AfterToolPayload } from '../hooks/types.js';
import type { ToolCall, ToolResultMessage } from '../messages.js';
import type { StreamChunkInput, ToolEndChunk } from '../stream.js';
import { checkSchema, type SchemaCheck } from '../tool-schema.js';
import type { Writable } from '../writable.js';
import { pushToolUsage } from './call-replay.js';
import { isThenable, type WriteScope } from './hook-dispatch.js';
import type { CallResultRecord, FinishOutput } from './journal-records.js';
import { unserializable } from './json-value.js';
import type { Run } from './run.js';
import { runSubAgent, type SubAgentMode } from './sub-agent-call.js';
import { errorResult, type ToolOutcome } from './tool-calls.js';
import { AwaitChildrenSignal } from './tool-context.js';
import { dryRunResult, isStubbed } from './tool-dry-run.js';
import { attemptDetails, attemptsOf, executeWithRetry } from './tool-retry.js';
import { cancelCall, recordResult, type RecordedResult } from './tool-steering.js';

// One tool call's run, from its tool_start chunk to its tool_end chunk: the body (the tool's execute or a
// sub-agent's child run), the checks of its result, onStateChange, onMessage and afterTool. tool-calls.ts
// decides which calls run and how (steered, journaled, in parallel); this file runs one.

/** Whether `error` is this run's own supersede (a tool raised it): it ends the step, not the call. */
export function isOwnSupersede(run: Run, error: unknown): error is RunSupersededError {
  return RunSupersededError.isInstance(error) && error.runId === run.setup.runId;
}

/** A call that ran to its result: the record, and the tool_end chunk that announces it. */
export interface CallRun {
  readonly record: CallResultRecord;
  readonly end: StreamChunkInput;
}

export function isOutcome(value: CallRun | ToolOutcome): value is ToolOutcome {
  return 'stopped' in value;
}

/** The result is recorded (or needs no record): tool_end and the call's usage; a promise only when the chunk has to be waited for. */
export function announce(run: Run, tool: ToolDefinition, call: ToolCall, end: StreamChunkInput, success: boolean, durationMs: number, finishOutput: FinishOutput | undefined): ToolOutcome | Promise<ToolOutcome> {
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
export function runCall(run: Run, tool: ToolDefinition, call: ToolCall, scope: WriteScope, mode: SubAgentMode, announceNow: true): ToolOutcome | Promise<ToolOutcome>;
export function runCall(run: Run, tool: ToolDefinition, call: ToolCall, scope: WriteScope, mode: SubAgentMode, announceNow: false): CallRun | ToolOutcome | Promise<CallRun | ToolOutcome>;
export function runCall(run: Run, tool: ToolDefinition, call: ToolCall, scope: WriteScope, mode: SubAgentMode, announceNow: boolean): CallRun | ToolOutcome | Promise<CallRun | ToolOutcome> {
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
