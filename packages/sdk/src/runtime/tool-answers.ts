import { AgentError, ToolError, type AgentErrorInfo } from '../errors.js';
import type { ToolDefinition } from '../define.js';
import type { ToolCall, ToolResultMessage } from '../messages.js';
import type { PendingCall } from '../store.js';
import type { ApprovalDecisionInfo } from '../stream.js';
import { checkSchema } from '../tool-schema.js';
import { callScope, type Run } from './run.js';
import { errorResult, executeCall, invalidInput, type ToolOutcome } from './tool-calls.js';
import { beforeToolChain, blockCall, cancelCall, recordResult } from './tool-steering.js';

/** The step index a delivered call is recorded under: before the resumed run's first step. */
export const DELIVERY_STEP = -1;

/** An answer a resumed run delivers for a pending call. */
export type PendingAnswer =
  | { readonly kind: 'client'; readonly result: unknown; readonly isError?: boolean }
  | { readonly kind: 'approve'; readonly input?: unknown; readonly reason?: string }
  | { readonly kind: 'reject'; readonly reason?: string }
  | { readonly kind: 'children'; readonly outcomes: readonly { readonly sessionId: string; readonly status: string; readonly output?: unknown; readonly error?: AgentErrorInfo }[] };

/**
 * The decisions among a resumed run's answers (approvals and rejections), as the run announces them on
 * its `run_started` chunk and to onAgentResumed: call, tool, decision, reason (trimmed, blank left out),
 * whether the input was edited. Built field by field: nothing else of the answer (a signature) goes out.
 */
export function approvalDecisions(deliveries: readonly { readonly pending: PendingCall; readonly answer: PendingAnswer }[] | undefined): ApprovalDecisionInfo[] {
  const decisions: ApprovalDecisionInfo[] = [];
  for (const { pending, answer } of deliveries ?? []) {
    if (answer.kind !== 'approve' && answer.kind !== 'reject') continue;
    const reason = answer.reason?.trim();
    decisions.push({ toolCallId: pending.toolCallId, toolName: pending.toolName, decision: answer.kind, ...(reason ? { reason } : {}), edited: answer.kind === 'approve' && answer.input !== undefined });
  }
  return decisions;
}

/**
 * An approval with edited arguments: they are validated and go through the whole beforeTool chain again
 * (the chain saw only the original arguments before the suspension), so a guard's block or rewrite
 * applies to what actually runs. Keyed before the resumed run's first step (-1), so a call of that step
 * reusing the id is its own work.
 */
async function runEdited(run: Run, tool: ToolDefinition, call: ToolCall, edited: unknown): Promise<ToolOutcome> {
  const scope = callScope(call.id);
  const parsed = await checkSchema(tool.inputSchema, edited);
  if (!parsed.ok) {
    await run.appendMessage(errorResult(call, invalidInput(tool.name, parsed)), scope);
    return { call, stopped: false };
  }
  const steered = await beforeToolChain(run, tool, call, parsed.value, scope);
  if (run.superseded) throw run.superseded;
  const toolCall: ToolCall = { ...call, arguments: steered.input };
  if (run.aborted) return cancelCall(run, tool, toolCall, scope);
  if (steered.blocked !== undefined) return blockCall(run, tool, toolCall, steered.blocked, scope);
  return executeCall(run, tool, toolCall, scope, DELIVERY_STEP);
}

/**
 * Delivers the answer to a call a suspended run was waiting on, in the resumed run (the canonical order
 * without the beforeTool chain, which ran before the suspension): an approved call runs (edited
 * arguments go through the beforeTool chain again), a rejected one gets a `permission_denied` result, a client result or the children's outcomes
 * become the call's result; a sub-agent call re-attaches to its child and ends as it would have
 * (afterSubAgent, then the result). onMessage and afterTool fire for each.
 */
export async function deliverAnswer(run: Run, pending: PendingCall, answer: PendingAnswer): Promise<ToolOutcome> {
  const tool = run.setup.agent.toolsByName.get(pending.toolName);
  const call: ToolCall = { id: pending.toolCallId, name: pending.toolName, arguments: pending.input };
  const scope = callScope(call.id);
  if (!tool) {
    await run.appendMessage(errorResult(call, new ToolError('tool_not_found', `Tool "${call.name}" no longer exists.`).info), scope);
    return { call, stopped: false };
  }
  if (answer.kind === 'approve') return answer.input === undefined ? executeCall(run, tool, call, scope, DELIVERY_STEP) : runEdited(run, tool, call, answer.input);
  // A sub-agent call re-attaches to its child (ended, or running again in this process): afterSubAgent folds its outcome.
  if (answer.kind === 'children' && tool.subAgent) return executeCall(run, tool, call, scope, DELIVERY_STEP, 'attach');
  let row: ToolResultMessage;
  let error: AgentError | undefined;
  let result: unknown;
  if (answer.kind === 'reject') {
    const reason = answer.reason?.trim();
    error = new AgentError('permission_denied', `The user rejected the call to "${tool.name}".${reason ? ` Reason: ${reason}` : ''}`, { details: { tool: tool.name, ...(reason ? { reason } : {}) } });
    row = errorResult(call, error.info);
  } else if (answer.kind === 'client') {
    result = answer.result;
    if (answer.isError === true) error = new ToolError('tool_failed', `The client reported that "${tool.name}" failed.`);
    row = { role: 'tool', toolCallId: call.id, toolName: tool.name, content: answer.result ?? null, ...(error ? { isError: true, errorInfo: error.info } : {}) };
  } else {
    result = answer.outcomes;
    row = { role: 'tool', toolCallId: call.id, toolName: tool.name, content: answer.outcomes };
  }
  const { tooLarge } = await recordResult(run, { toolCall: call, tool, result, success: error === undefined, blocked: answer.kind === 'reject', durationMs: 0, ...(error ? { error } : {}) }, row, scope);
  const failure = error ?? tooLarge;
  await run.emit({ type: 'tool_end', toolCallId: call.id, toolName: tool.name, success: failure === undefined, durationMs: 0, ...(failure ? { error: failure.info } : { result }), ...run.chunkBase() });
  return { call, stopped: false };
}
