import type { ToolDefinition } from '../define.js';
import { agentErrorFromInfo, ToolError, type AgentError, type AgentErrorInfo } from '../errors.js';
import type { HookEntry } from '../hooks/manager.js';
import type { AfterToolPayload, AfterToolResult, BeforeToolResult } from '../hooks/types.js';
import type { ToolCall, ToolResultMessage } from '../messages.js';
import type { ChainEnd, Verdict, WriteScope } from './hook-dispatch.js';
import { jsonLongerThan, toolResultTooLarge } from './limits.js';
import { checkSchema, type SchemaCheck } from '../tool-schema.js';
import type { Run } from './run.js';
import { errorResult, stoppedResult, type ToolOutcome } from './tool-calls.js';

// The steering around a tool call: the beforeTool chain (block, rewrite), a blocked or cancelled call's
// result, and the afterTool chain (rewrite the result) with the row it rewrites.

/**
 * Appends a call's result row (onMessage sees it as executed), then runs the afterTool chain, whose
 * `{ result }` replaces the row for the model and the commit. A failed call stays an error row: only
 * its content changes. A row still over `maxToolResultChars` becomes a `tool_result_too_large` error row.
 */
export function recordResult(run: Run, payload: AfterToolPayload, row: ToolResultMessage, scope: WriteScope): RecordedResult | Promise<RecordedResult> {
  // C16 with rewriteBeforeOnMessage: the afterTool chain first, so onMessage sees the rewritten row.
  if (run.setup.reconcile?.rewriteBeforeOnMessage === true) return rewrittenFirst(run, payload, row, scope);
  // The common case (hooks that answer at once) settles in this turn: no promise.
  const appended = run.appendMessage(row, scope);
  if (appended instanceof Promise) return appended.then((messageIndex) => rewriteAt(run, payload, row, scope, messageIndex));
  return rewriteAt(run, payload, row, scope, appended);
}

async function rewrittenFirst(run: Run, payload: AfterToolPayload, row: ToolResultMessage, scope: WriteScope): Promise<RecordedResult> {
  const recorded = await rewrittenRow(run, payload, row, scope);
  await run.appendMessage(recorded.message, scope);
  return recorded;
}

/** The afterTool rewrite of the row appended at `messageIndex`, put in its place. */
function rewriteAt(run: Run, payload: AfterToolPayload, row: ToolResultMessage, scope: WriteScope, messageIndex: number): RecordedResult | Promise<RecordedResult> {
  const put = (recorded: RecordedResult): RecordedResult => {
    if (recorded.message !== row) run.work.replace(messageIndex, recorded.message);
    return recorded;
  };
  const recorded = rewrittenRow(run, payload, row, scope);
  return recorded instanceof Promise ? recorded.then(put) : put(recorded);
}

/**
 * The afterTool chain's rewrite of `row`, then the size limit, which applies to the row as it is about to be
 * stored (so an afterTool hook that offloads can shrink it first): the row as rewritten, or the size error.
 */
function rewrittenRow(run: Run, payload: AfterToolPayload, row: ToolResultMessage, scope: WriteScope): RecordedResult | Promise<RecordedResult> {
  const chained = afterToolChain(run, payload, scope);
  return chained instanceof Promise ? chained.then((rewritten) => sizedRow(run, payload, row, rewritten)) : sizedRow(run, payload, row, chained);
}

function sizedRow(run: Run, payload: AfterToolPayload, row: ToolResultMessage, rewritten: AfterToolResult | undefined): RecordedResult {
  let message = rewritten ? { ...row, content: rewritten.result ?? null } : row;
  const max = run.setup.limits.maxToolResultChars;
  const size = jsonLongerThan(message.content, max);
  const tooLarge = size === undefined ? undefined : toolResultTooLarge(payload.tool.name, size, max);
  if (tooLarge) message = errorResult(payload.toolCall, tooLarge.info);
  if (rewritten === undefined && tooLarge === undefined) return { message };
  return { message, ...(rewritten ? { rewritten } : {}), ...(tooLarge ? { tooLarge } : {}) };
}

/** The row a call's result was stored as, the afterTool rewrite, and the error that replaced a result over `maxToolResultChars`. */
export interface RecordedResult {
  readonly message: ToolResultMessage;
  readonly rewritten?: AfterToolResult;
  readonly tooLarge?: AgentError;
}

type BeforeToolCall = { readonly toolCall: ToolCall; readonly tool: ToolDefinition };

/** beforeTool's interpret step: the first `{ block }` ends the chain; `{ input }` replaces the arguments, validated again (an invalid rewrite blocks). */
function interpretBeforeTool(value: unknown, payload: BeforeToolCall, entry: HookEntry): Verdict<BeforeToolCall, AgentError> | Promise<Verdict<BeforeToolCall, AgentError>> {
  const v = value as BeforeToolResult | undefined;
  if (!v || typeof v !== 'object') return undefined;
  const { tool } = payload;
  if (v.block === true) {
    const reason = v.reason?.trim() || 'Blocked by beforeTool.';
    return { decision: 'block', reason, end: blockedError(tool, entry.name, reason, false) };
  }
  if (!('input' in v)) return undefined;
  const rewritten = (reparsed: SchemaCheck): Verdict<BeforeToolCall, AgentError> => {
    if (reparsed.ok) return { decision: 'rewrite', payload: { tool, toolCall: { ...payload.toolCall, arguments: reparsed.value } } };
    const reason = `beforeTool hook "${entry.name}" rewrote the arguments into an invalid input:\n${reparsed.message}`;
    return { decision: 'block', reason, end: blockedError(tool, entry.name, reason, false) };
  };
  const checked = checkSchema(tool.inputSchema, v.input);
  return checked instanceof Promise ? checked.then(rewritten) : rewritten(checked);
}

/**
 * The beforeTool chain: each handler sees the arguments as rewritten by the ones before it; the first
 * block wins; `{ input }` replaces the whole input and is validated again. A throw follows the
 * handler's policy; under `block-tool` it blocks the call with the error as the reason.
 */
export function beforeToolChain(run: Run, tool: ToolDefinition, call: ToolCall, validated: unknown, scope: WriteScope): BeforeToolEnd | Promise<BeforeToolEnd> {
  if (!run.hooks.has('beforeTool')) return { input: validated };
  const payload: BeforeToolCall = { toolCall: { id: call.id, name: call.name, arguments: validated }, tool };
  const end = run.hooks.chain('beforeTool', payload, scope, interpretBeforeTool, (error, entry) => blockedError(tool, entry.name, error.message, true));
  return end instanceof Promise ? end.then(beforeToolEnd) : beforeToolEnd(end);
}

/** What the beforeTool chain leaves: the input to run the tool with, or the error that blocks the call. */
export interface BeforeToolEnd {
  readonly input: unknown;
  readonly blocked?: AgentError;
}

function beforeToolEnd(end: ChainEnd<BeforeToolCall, AgentError>): BeforeToolEnd {
  return end.result === undefined ? { input: end.payload.toolCall.arguments } : { input: end.payload.toolCall.arguments, blocked: end.result };
}

function blockedError(tool: ToolDefinition, hookName: string, reason: string, threw: boolean): AgentError {
  return new ToolError('hook_blocked', `Tool "${tool.name}" was blocked by an agent hook: ${reason}`, {
    layer: 'tool',
    severity: 'warning',
    retryable: false,
    details: { hook: 'beforeTool', name: hookName, reason, tool: tool.name, ...(threw ? { threw: true } : {}) },
  });
}

/**
 * A call whose beforeTool chain completed and that a stop ended before its result: its queued
 * onStateChange hooks fire, then onMessage for its `run_stopped` row, then afterTool (`success: false`).
 * Its writes are discarded with the step.
 */
export async function cancelCall(run: Run, tool: ToolDefinition, call: ToolCall, scope: WriteScope): Promise<ToolOutcome> {
  await run.hooks.flushStateChanges(scope);
  const row = stoppedResult(call);
  const error = agentErrorFromInfo(row.errorInfo as AgentErrorInfo);
  await recordResult(run, { toolCall: call, tool, result: undefined, success: false, blocked: false, error, durationMs: 0 }, row, scope);
  return { call, stopped: true };
}

/** A blocked call never runs; its error result goes to the model (onMessage), then afterTool fires with `blocked: true`. */
export async function blockCall(run: Run, tool: ToolDefinition, toolCall: ToolCall, error: AgentError, scope: WriteScope): Promise<ToolOutcome> {
  await run.emit({ type: 'tool_start', toolCallId: toolCall.id, toolName: tool.name, arguments: toolCall.arguments, ...run.chunkBase() });
  await recordResult(run, { toolCall, tool, result: undefined, success: false, blocked: true, error, durationMs: 0 }, errorResult(toolCall, error.info), scope);
  await run.emit({ type: 'tool_end', toolCallId: toolCall.id, toolName: tool.name, success: false, durationMs: 0, error: error.info, ...run.chunkBase() });
  return { call: toolCall, stopped: false };
}

function interpretAfterTool(value: unknown, payload: AfterToolPayload): Verdict<AfterToolPayload, never> {
  const v = value as AfterToolResult | undefined;
  if (v && typeof v === 'object' && 'result' in v) return { decision: 'rewrite', payload: { ...payload, result: v.result } };
  return undefined;
}

/** The afterTool chain: `{ result }` replaces the result for later handlers, the model and the commit. */
function afterToolChain(run: Run, payload: AfterToolPayload, scope: WriteScope): AfterToolResult | undefined | Promise<AfterToolResult | undefined> {
  if (!run.hooks.has('afterTool')) return undefined;
  const end = run.hooks.chain('afterTool', payload, scope, interpretAfterTool);
  const rewrite = (settled: ChainEnd<AfterToolPayload, unknown>): AfterToolResult | undefined => (settled.payload === payload ? undefined : { result: settled.payload.result });
  return end instanceof Promise ? end.then(rewrite) : rewrite(end);
}

