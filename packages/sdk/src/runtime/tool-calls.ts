import { z } from 'zod';
import { FINISH_TOOL_NAME, type ToolContext, type ToolDefinition } from '../define.js';
import { AgentError, RunSupersededError, ToolError, type AgentErrorInfo } from '../errors.js';
import type { AfterToolPayload, AfterToolResult, BeforeToolResult, Draft } from '../hooks/types.js';
import type { ToolCall, ToolResultMessage } from '../messages.js';
import type { StatePatch } from '../stream.js';
import type { PendingCall } from '../store.js';
import type { RunContext, WriteScope } from './run-context.js';

/** How one call of a step ended. */
export interface ToolOutcome {
  readonly call: ToolCall;
  /** The agent output a successful finishWith or `__finish__` call produced. */
  readonly finishOutput?: { readonly value: unknown; readonly via: 'finish_tool' | 'finish_with' };
  /** The state writes booked to this call (its tool's and its hooks'). */
  readonly patches: readonly StatePatch[];
  /** True when a stop ended the call before its result was recorded: its writes are discarded. */
  readonly stopped: boolean;
  /** Set when the call waits for the caller, a human or child sessions: the run suspends. */
  readonly pending?: PendingCall;
}

/** An answer a resumed run delivers for a pending call. */
export type PendingAnswer =
  | { readonly kind: 'client'; readonly result: unknown; readonly isError?: boolean }
  | { readonly kind: 'approve'; readonly input?: unknown; readonly reason?: string }
  | { readonly kind: 'reject'; readonly reason?: string }
  | { readonly kind: 'children'; readonly outcomes: readonly { readonly sessionId: string; readonly status: string; readonly output?: unknown; readonly error?: AgentErrorInfo }[] };

/** Thrown by ToolContext.awaitChildren(): the call becomes a pending `children` call. */
class AwaitChildrenSignal {
  constructor(readonly children: readonly { readonly sessionId: string; readonly agentType: string }[]) {}
}

interface CallResultRecord {
  readonly message: ToolResultMessage;
  readonly patches: readonly StatePatch[];
  readonly success: boolean;
  readonly durationMs: number;
  readonly finishOutput?: ToolOutcome['finishOutput'];
}

function errorResult(call: ToolCall, info: AgentErrorInfo): ToolResultMessage {
  return { role: 'tool', toolCallId: call.id, toolName: call.name, content: info.message, isError: true, errorInfo: info };
}

function invalid(toolName: string, error: z.ZodError): AgentErrorInfo {
  return new ToolError('tool_invalid_input', `Invalid arguments for tool "${toolName}":\n${z.prettifyError(error)}`, {
    details: { tool: toolName, issues: error.issues.map((i) => ({ path: i.path.map(String), message: i.message })) },
  }).info;
}

function stoppedResult(call: ToolCall): ToolResultMessage {
  return errorResult(call, new ToolError('run_stopped', `The run was stopped before "${call.name}" finished.`, { details: { tool: call.name } }).info);
}

function isOwnSupersede(run: RunContext, error: unknown): error is RunSupersededError {
  return RunSupersededError.isInstance(error) && error.runId === run.setup.runId;
}

/**
 * Runs a step's tool calls in parallel; each follows D3: beforeTool → execute → onStateChange* →
 * onMessage(result) → afterTool. Unknown tools and invalid arguments go back to the model without tool
 * hooks (D5); `__finish__` is internal and fires no tool hooks (D7). A supersede raised inside a tool
 * ends the step at once (rules 56–59): siblings already started finish unpersisted, none starts later.
 * Otherwise it waits for every call and rethrows the first run-ending error.
 */
export async function runToolCalls(run: RunContext, calls: readonly ToolCall[]): Promise<ToolOutcome[]> {
  const regular = calls.filter((c) => c.name !== FINISH_TOOL_NAME);
  let raise: (error: unknown) => void = () => {};
  const supersede = new Promise<never>((_resolve, reject) => (raise = reject));
  const all = Promise.allSettled(
    regular.map((call) =>
      runToolCall(run, call).catch((error: unknown) => {
        if (isOwnSupersede(run, error)) {
          run.superseded ??= error;
          raise(error);
        }
        throw error;
      }),
    ),
  );
  const settled = await Promise.race([all, supersede]);
  const failure = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failure) throw failure.reason;
  const outcomes = settled.map((s) => (s as PromiseFulfilledResult<ToolOutcome>).value);
  for (const call of calls) {
    if (call.name === FINISH_TOOL_NAME) outcomes.push(await runFinishCall(run, call));
  }
  // The first finishing call in the model's order wins.
  const order = new Map(calls.map((c, i) => [c.id, i] as const));
  outcomes.sort((a, b) => (order.get(a.call.id) ?? 0) - (order.get(b.call.id) ?? 0));
  return outcomes;
}

async function runFinishCall(run: RunContext, call: ToolCall): Promise<ToolOutcome> {
  const schema = run.setup.agent.outputSchema;
  if (run.signal.aborted) {
    await run.appendMessage(stoppedResult(call));
    return { call, patches: [], stopped: true };
  }
  if (!schema) {
    await run.appendMessage(errorResult(call, new ToolError('tool_not_found', `Tool "${FINISH_TOOL_NAME}" is not available: this agent answers in plain text.`).info));
    return { call, patches: [], stopped: false };
  }
  const parsed = schema.safeParse(call.arguments);
  if (!parsed.success) {
    await run.appendMessage(errorResult(call, invalid(FINISH_TOOL_NAME, parsed.error)));
    return { call, patches: [], stopped: false };
  }
  await run.appendMessage({ role: 'tool', toolCallId: call.id, toolName: call.name, content: { ok: true } });
  return { call, finishOutput: { value: parsed.data, via: 'finish_tool' }, patches: [], stopped: false };
}

async function runToolCall(run: RunContext, call: ToolCall): Promise<ToolOutcome> {
  const { agent } = run.setup;
  const tool = agent.toolsByName.get(call.name);
  if (!tool) {
    const available = agent.llmTools.map((t) => t.name).join(', ') || '(none)';
    await run.appendMessage(
      errorResult(call, new ToolError('tool_not_found', `Unknown tool "${call.name}". Available tools: ${available}.`, { details: { tool: call.name } }).info),
    );
    return { call, patches: [], stopped: false };
  }
  const parsed = tool.inputSchema.safeParse(call.arguments);
  if (!parsed.success) {
    await run.appendMessage(errorResult(call, invalid(tool.name, parsed.error)));
    return { call, patches: [], stopped: false };
  }
  const journaled = await fromJournal(run, tool, call);
  if (journaled) return journaled;
  if (run.signal.aborted || run.superseded) {
    await run.appendMessage(stoppedResult(call));
    return { call, patches: [], stopped: true };
  }
  const scope: Required<Pick<WriteScope, 'patches'>> & WriteScope = { changes: [], patches: [], callId: call.id };
  const steered = await beforeToolChain(run, tool, call, parsed.data, scope);
  // No new work once the run is superseded or stopped (rule 59, D13).
  if (run.superseded) throw run.superseded;
  if (run.signal.aborted) {
    await run.appendMessage(stoppedResult(call), scope);
    return { call, patches: [], stopped: true };
  }
  const toolCall: ToolCall = { id: call.id, name: call.name, arguments: steered.input };
  if (steered.blocked !== undefined) return blockCall(run, tool, toolCall, steered.blocked, scope);
  // Suspension boundaries (D10): beforeTool ran; the frame is written; the run will suspend.
  if (!tool.execute) {
    await run.emit({ type: 'tool_start', toolCallId: call.id, toolName: tool.name, arguments: steered.input, ...run.chunkBase() });
    return { call: toolCall, patches: scope.patches, stopped: false, pending: { toolCallId: call.id, toolName: tool.name, input: steered.input, kind: 'client' } };
  }
  const needsApproval = typeof tool.needsApproval === 'function' ? tool.needsApproval(steered.input) : tool.needsApproval === true;
  if (needsApproval) {
    const signature = run.setup.signApproval?.(run.setup.sessionId, call.id, steered.input);
    await run.emit({
      type: 'tool_approval_request',
      toolCallId: call.id,
      toolName: tool.name,
      arguments: steered.input,
      ...(signature === undefined ? {} : { signature }),
      ...run.chunkBase(),
    });
    return { call: toolCall, patches: scope.patches, stopped: false, pending: { toolCallId: call.id, toolName: tool.name, input: steered.input, kind: 'approval' } };
  }
  return executeCall(run, tool, toolCall, scope);
}

/**
 * A side-effecting call the journal already knows (a recovered run): its recorded result is replayed
 * (no hook fires, the tool does not run); a call that started but recorded no result is not run again
 * (at most once) and gets `tool_interrupted`. Undefined when the call has to run.
 */
async function fromJournal(run: RunContext, tool: ToolDefinition, call: ToolCall): Promise<ToolOutcome | undefined> {
  if (!tool.sideEffects) return undefined;
  const recorded = run.journal.get(`call_result:${run.stepCount}:${call.id}`);
  if (recorded) return replayCall(run, call, tool, recorded.data as CallResultRecord);
  if (!run.journal.has(`call_started:${run.stepCount}:${call.id}`)) return undefined;
  const message = errorResult(call, new ToolError('tool_interrupted', `Tool "${tool.name}" was interrupted: its outcome is unknown and it was not run again.`, { details: { tool: tool.name } }).info);
  await run.appendMessage(message, run.hookScope, false);
  return { call, patches: [], stopped: false };
}

/**
 * Runs an allowed call: journal (side effects), tool_start, execute, onStateChange*, onMessage(result),
 * the afterTool chain, the result journal, tool_end. Shared by a step's calls and an approved call that
 * a resumed run delivers.
 */
async function executeCall(run: RunContext, tool: ToolDefinition, toolCall: ToolCall, scope: Required<Pick<WriteScope, 'patches'>> & WriteScope): Promise<ToolOutcome> {
  const { agent } = run.setup;
  const call = toolCall;
  const stepIndex = run.stepCount;
  const resultKey = `call_result:${stepIndex}:${call.id}`;
  const startedKey = `call_started:${stepIndex}:${call.id}`;
  const steered = { input: toolCall.arguments };
  const execute = tool.execute;
  if (!execute) throw new Error(`Tool ${tool.name} has no execute function.`);
  // An approved call delivered by a recovered run meets its journal here.
  const journaled = await fromJournal(run, tool, call);
  if (journaled) return journaled;
  if (tool.sideEffects) await run.record('call_started', startedKey, { toolName: tool.name });
  await run.emit({ type: 'tool_start', toolCallId: call.id, toolName: tool.name, arguments: steered.input, ...run.chunkBase() });

  const startedAt = performance.now();
  let result: unknown;
  let error: AgentError | undefined;
  run.toolCallCounts[tool.name] = (run.toolCallCounts[tool.name] ?? 0) + 1;
  try {
    result = await execute(steered.input, toolContext(run, tool, call.id, scope));
    if (tool.outputSchema) {
      const out = tool.outputSchema.safeParse(result);
      if (!out.success) {
        error = new ToolError('tool_invalid_output', `Tool "${tool.name}" returned an invalid result:\n${z.prettifyError(out.error)}`, { details: { tool: tool.name } });
        result = undefined;
      } else {
        result = out.data;
      }
    }
  } catch (thrown) {
    if (isOwnSupersede(run, thrown)) throw thrown;
    if (thrown instanceof AwaitChildrenSignal) {
      const children = thrown.children;
      return { call, patches: scope.patches, stopped: false, pending: { toolCallId: call.id, toolName: tool.name, input: steered.input, kind: 'children', children } };
    }
    if (run.signal.aborted) {
      // The stop ended this call: its result is not recorded and its writes are discarded.
      await run.appendMessage(stoppedResult(call), scope);
      return { call, patches: [], stopped: true };
    }
    const message = thrown instanceof Error ? thrown.message : String(thrown);
    error = new ToolError('tool_failed', `Tool "${tool.name}" failed: ${message}`, { details: { tool: tool.name }, cause: thrown });
  }
  const durationMs = performance.now() - startedAt;

  let finishOutput: ToolOutcome['finishOutput'];
  if (!error && tool.finishWith) {
    const schema = agent.outputSchema;
    const out = schema ? schema.safeParse(result) : { success: true as const, data: result };
    if (out.success) finishOutput = { value: out.data, via: 'finish_with' };
    else error = new ToolError('tool_invalid_output', `Tool "${tool.name}" finishes the run, but its result does not match the agent's outputSchema:\n${z.prettifyError(out.error)}`, { details: { tool: tool.name } });
  }

  await run.flushStateChanges(scope);
  let message: ToolResultMessage = error ? errorResult(call, error.info) : { role: 'tool', toolCallId: call.id, toolName: tool.name, content: result ?? null };
  const messageIndex = await run.appendMessage(message, scope);
  const success = error === undefined;
  const rewritten = await afterToolChain(run, { toolCall, tool, result, success, blocked: false, durationMs, ...(error ? { error } : {}) }, scope);
  if (rewritten) {
    // C16: onMessage saw the row as executed; the model and the step commit see the rewrite.
    // A failed call stays an error row: only its content changes.
    message = { ...message, content: rewritten.result ?? null };
    run.replaceMessage(messageIndex, message);
  }
  if (tool.sideEffects) {
    const record: CallResultRecord = { message, patches: scope.patches, success, durationMs, ...(finishOutput ? { finishOutput } : {}) };
    await run.record('call_result', resultKey, record);
  }
  await run.emit({
    type: 'tool_end',
    toolCallId: call.id,
    toolName: tool.name,
    success,
    durationMs,
    ...(error ? { error: error.info } : { result: rewritten ? rewritten.result : result }),
    ...run.chunkBase(),
  });
  pushToolUsage(run, tool, call.id, success, durationMs);
  return { call, patches: scope.patches, stopped: false, ...(finishOutput ? { finishOutput } : {}) };
}

/**
 * The beforeTool chain (C3): each handler sees the arguments as rewritten by the ones before it; the
 * first block wins; `{ input }` replaces the whole input and is validated again. A throw follows the
 * handler's policy; under `block-tool` it blocks the call with the error as the reason (C15).
 */
async function beforeToolChain(
  run: RunContext,
  tool: ToolDefinition,
  call: ToolCall,
  validated: unknown,
  scope: WriteScope,
): Promise<{ readonly input: unknown; readonly blocked?: AgentError }> {
  let input = validated;
  if (!run.hooks.has('beforeTool')) return { input };
  const ctx = run.contextFor('beforeTool', scope);
  for (const entry of run.hooks.entries('beforeTool')) {
    const outcome = await run.invoke(entry, { toolCall: { id: call.id, name: call.name, arguments: input }, tool }, ctx);
    if (scope.changes.length > 0) await run.flushStateChanges(scope);
    if (!outcome.ok) {
      if (entry.policy === 'block-tool' && outcome.error.code !== 'run_interrupted' && !RunSupersededError.isInstance(outcome.error)) {
        run.audit(entry, 'block', outcome.durationMs, call.id, outcome.error.message, outcome.error.info);
        return { input, blocked: blockedError(tool, entry.name, outcome.error.message, true) };
      }
      run.onHookError(entry, outcome, call.id);
      continue;
    }
    const value = outcome.value as BeforeToolResult | undefined;
    if (value && typeof value === 'object' && value.block === true) {
      const reason = value.reason?.trim() || 'Blocked by beforeTool.';
      run.audit(entry, 'block', outcome.durationMs, call.id, reason);
      return { input, blocked: blockedError(tool, entry.name, reason, false) };
    }
    if (value && typeof value === 'object' && 'input' in value) {
      const reparsed = tool.inputSchema.safeParse(value.input);
      if (!reparsed.success) {
        const reason = `beforeTool hook "${entry.name}" rewrote the arguments into an invalid input:\n${z.prettifyError(reparsed.error)}`;
        run.audit(entry, 'block', outcome.durationMs, call.id, reason);
        return { input, blocked: blockedError(tool, entry.name, reason, false) };
      }
      input = reparsed.data;
      run.audit(entry, 'rewrite', outcome.durationMs, call.id);
      continue;
    }
    run.audit(entry, 'allow', outcome.durationMs, call.id);
  }
  return { input };
}

function blockedError(tool: ToolDefinition, hookName: string, reason: string, threw: boolean): AgentError {
  return new ToolError('hook_blocked', `Tool "${tool.name}" was blocked by an agent hook: ${reason}`, {
    layer: 'tool',
    severity: 'warning',
    retryable: false,
    details: { hook: 'beforeTool', name: hookName, reason, tool: tool.name, ...(threw ? { threw: true } : {}) },
  });
}

/** D4: a blocked call never runs; its error result goes to the model (onMessage), then afterTool fires with `blocked: true`. */
async function blockCall(run: RunContext, tool: ToolDefinition, toolCall: ToolCall, error: AgentError, scope: WriteScope): Promise<ToolOutcome> {
  await run.emit({ type: 'tool_start', toolCallId: toolCall.id, toolName: tool.name, arguments: toolCall.arguments, ...run.chunkBase() });
  let message: ToolResultMessage = errorResult(toolCall, error.info);
  const messageIndex = await run.appendMessage(message, scope);
  const rewritten = await afterToolChain(run, { toolCall, tool, result: undefined, success: false, blocked: true, error, durationMs: 0 }, scope);
  if (rewritten) {
    message = { ...message, content: rewritten.result ?? null };
    run.replaceMessage(messageIndex, message);
  }
  await run.emit({ type: 'tool_end', toolCallId: toolCall.id, toolName: tool.name, success: false, durationMs: 0, error: error.info, ...run.chunkBase() });
  return { call: toolCall, patches: (scope as { patches?: StatePatch[] }).patches ?? [], stopped: false };
}

/** The afterTool chain: `{ result }` replaces the result for later handlers, the model and the commit. */
async function afterToolChain(run: RunContext, payload: AfterToolPayload, scope: WriteScope): Promise<AfterToolResult | undefined> {
  if (!run.hooks.has('afterTool')) return undefined;
  const ctx = run.contextFor('afterTool', scope);
  let current = payload;
  let rewrite: AfterToolResult | undefined;
  for (const entry of run.hooks.entries('afterTool')) {
    const outcome = await run.invoke(entry, current, ctx);
    if (scope.changes.length > 0) await run.flushStateChanges(scope);
    if (!outcome.ok) {
      run.onHookError(entry, outcome, payload.toolCall.id);
      continue;
    }
    const value = outcome.value as AfterToolResult | undefined;
    if (value && typeof value === 'object' && 'result' in value) {
      rewrite = { result: value.result };
      current = { ...current, result: value.result };
      run.audit(entry, 'rewrite', outcome.durationMs, payload.toolCall.id);
    } else {
      run.audit(entry, 'allow', outcome.durationMs, payload.toolCall.id);
    }
  }
  return rewrite;
}

/** A recorded call result from the journal: its row and writes come back, no hook fires and the tool does not run. */
async function replayCall(run: RunContext, call: ToolCall, tool: ToolDefinition, record: CallResultRecord): Promise<ToolOutcome> {
  run.applyRecordedPatches(record.patches);
  await run.appendMessage(record.message, run.hookScope, false);
  pushToolUsage(run, tool, call.id, record.success, record.durationMs);
  return { call, patches: record.patches, stopped: false, ...(record.finishOutput ? { finishOutput: record.finishOutput } : {}) };
}

function pushToolUsage(run: RunContext, tool: ToolDefinition, toolCallId: string, success: boolean, durationMs: number): void {
  run.usage.push({
    kind: 'tool',
    sessionId: run.setup.sessionId,
    runId: run.setup.runId,
    stepIndex: run.stepCount,
    toolName: tool.name,
    toolCallId,
    success,
    durationMs,
    at: Date.now(),
  });
}

function toolContext(run: RunContext, tool: ToolDefinition, toolCallId: string, scope: WriteScope): ToolContext {
  const s = run.setup;
  return {
    sessionId: s.sessionId,
    runId: s.runId,
    agentType: s.agent.name,
    toolCallId,
    stepCount: run.stepCount,
    abortSignal: run.signal,
    idempotencyKey: `${s.runId}:${run.stepCount}:${toolCallId}:${tool.name}`,
    attempt: s.epoch,
    ...(s.userId === undefined ? {} : { userId: s.userId }),
    ...(s.tags === undefined ? {} : { tags: s.tags }),
    ...(s.metadata === undefined ? {} : { metadata: s.metadata }),
    getState: <TState>() => run.state as TState,
    updateState: <TState>(updater: (draft: Draft<TState>) => void) => {
      run.updateState(updater as (draft: Draft<unknown>) => void, 'tool', scope, tool.name);
    },
    emitCustom: async (eventName: string, data: unknown) => {
      await run.emit({ type: 'custom', eventName, data, ...run.chunkBase() });
    },
    awaitChildren: (children) => {
      throw new AwaitChildrenSignal(children.map((c) => ({ sessionId: c.sessionId, agentType: c.agentType })));
    },
  };
}

/**
 * Delivers the answer to a call a suspended run was waiting on, in the resumed run (D3 without the
 * beforeTool chain, which ran before the suspension): an approved call runs (with its edited input),
 * a rejected one gets a `permission_denied` result, a client result or the children's outcomes become
 * the call's result. onMessage and afterTool fire for each.
 */
export async function deliverAnswer(run: RunContext, pending: PendingCall, answer: PendingAnswer): Promise<ToolOutcome> {
  const tool = run.setup.agent.toolsByName.get(pending.toolName);
  const call: ToolCall = { id: pending.toolCallId, name: pending.toolName, arguments: pending.input };
  const scope: Required<Pick<WriteScope, 'patches'>> & WriteScope = { changes: [], patches: [], callId: call.id };
  if (!tool) {
    await run.appendMessage(errorResult(call, new ToolError('tool_not_found', `Tool "${call.name}" no longer exists.`).info), scope);
    return { call, patches: [], stopped: false };
  }
  if (answer.kind === 'approve') {
    let input = pending.input;
    if (answer.input !== undefined) {
      const parsed = tool.inputSchema.safeParse(answer.input);
      if (!parsed.success) {
        await run.appendMessage(errorResult(call, invalid(tool.name, parsed.error)), scope);
        return { call, patches: [], stopped: false };
      }
      input = parsed.data;
    }
    return executeCall(run, tool, { ...call, arguments: input }, scope);
  }
  let message: ToolResultMessage;
  let error: AgentError | undefined;
  let result: unknown;
  if (answer.kind === 'reject') {
    const reason = answer.reason?.trim();
    error = new AgentError('permission_denied', `The user rejected the call to "${tool.name}".${reason ? ` Reason: ${reason}` : ''}`, { details: { tool: tool.name, ...(reason ? { reason } : {}) } });
    message = errorResult(call, error.info);
  } else if (answer.kind === 'client') {
    result = answer.result;
    message = answer.isError === true
      ? { role: 'tool', toolCallId: call.id, toolName: tool.name, content: answer.result ?? null, isError: true, errorInfo: new ToolError('tool_failed', `The client reported that "${tool.name}" failed.`).info }
      : { role: 'tool', toolCallId: call.id, toolName: tool.name, content: answer.result ?? null };
    if (answer.isError === true) error = new ToolError('tool_failed', `The client reported that "${tool.name}" failed.`);
  } else {
    result = answer.outcomes;
    message = { role: 'tool', toolCallId: call.id, toolName: tool.name, content: answer.outcomes };
  }
  const messageIndex = await run.appendMessage(message, scope);
  const rewritten = await afterToolChain(run, { toolCall: call, tool, result, success: error === undefined, blocked: answer.kind === 'reject', durationMs: 0, ...(error ? { error } : {}) }, scope);
  if (rewritten) run.replaceMessage(messageIndex, { ...message, content: rewritten.result ?? null });
  await run.emit({ type: 'tool_end', toolCallId: call.id, toolName: tool.name, success: error === undefined, durationMs: 0, ...(error ? { error: error.info } : { result }), ...run.chunkBase() });
  return { call, patches: scope.patches, stopped: false };
}
