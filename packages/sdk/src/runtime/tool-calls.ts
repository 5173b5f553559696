import { z } from 'zod';
import type { Draft } from '../hooks/types.js';
import { FINISH_TOOL_NAME, type ToolContext, type ToolDefinition } from '../define.js';
import { AgentError, RunInterruptedError, ToolError, type AgentErrorInfo } from '../errors.js';
import type { ToolCall, ToolResultMessage } from '../messages.js';
import type { PendingStateChange, RunContext } from './run-context.js';

/** How one call of a step ended, for the loop's finish decision. */
export interface ToolOutcome {
  readonly call: ToolCall;
  /** The agent output a successful finishWith or `__finish__` call produced. */
  readonly finishOutput?: { readonly value: unknown; readonly via: 'finish_tool' | 'finish_with' };
}

function errorResult(call: ToolCall, info: AgentErrorInfo): ToolResultMessage {
  return { role: 'tool', toolCallId: call.id, toolName: call.name, content: info.message, isError: true, errorInfo: info };
}

function invalid(toolName: string, error: z.ZodError): AgentErrorInfo {
  return new ToolError('tool_invalid_input', `Invalid arguments for tool "${toolName}":\n${z.prettifyError(error)}`, {
    details: { tool: toolName, issues: error.issues.map((i) => ({ path: i.path.map(String), message: i.message })) },
  }).info;
}

/**
 * Runs a step's tool calls in parallel; each follows D3: beforeTool → execute → onStateChange* →
 * onMessage(result) → afterTool. Unknown tools and invalid arguments go back to the model without
 * tool hooks (D5); `__finish__` is internal and fires no tool hooks (D7). Waits for every call, then
 * rethrows the first run-ending error.
 */
export async function runToolCalls(run: RunContext, calls: readonly ToolCall[]): Promise<ToolOutcome[]> {
  const regular = calls.filter((c) => c.name !== FINISH_TOOL_NAME);
  const settled = await Promise.allSettled(regular.map((call) => runToolCall(run, call)));
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
  if (!schema) {
    await run.appendMessage(errorResult(call, new ToolError('tool_not_found', `Tool "${FINISH_TOOL_NAME}" is not available: this agent answers in plain text.`).info));
    return { call };
  }
  const parsed = schema.safeParse(call.arguments);
  if (!parsed.success) {
    await run.appendMessage(errorResult(call, invalid(FINISH_TOOL_NAME, parsed.error)));
    return { call };
  }
  await run.appendMessage({ role: 'tool', toolCallId: call.id, toolName: call.name, content: { ok: true } });
  return { call, finishOutput: { value: parsed.data, via: 'finish_tool' } };
}

async function runToolCall(run: RunContext, call: ToolCall): Promise<ToolOutcome> {
  const { agent } = run.setup;
  const tool = agent.toolsByName.get(call.name);
  if (!tool) {
    const available = agent.llmTools.map((t) => t.name).join(', ') || '(none)';
    await run.appendMessage(
      errorResult(call, new ToolError('tool_not_found', `Unknown tool "${call.name}". Available tools: ${available}.`, { details: { tool: call.name } }).info),
    );
    return { call };
  }
  const parsed = tool.inputSchema.safeParse(call.arguments);
  if (!parsed.success) {
    await run.appendMessage(errorResult(call, invalid(tool.name, parsed.error)));
    return { call };
  }
  if (run.signal.aborted) throw new RunInterruptedError();
  const toolCall: ToolCall = { id: call.id, name: call.name, arguments: parsed.data };
  if (run.hooks.has('beforeTool')) await run.fire('beforeTool', { toolCall, tool });
  await run.emit({ type: 'tool_start', toolCallId: call.id, toolName: tool.name, arguments: parsed.data, ...run.chunkBase() });

  const changes: PendingStateChange[] = [];
  const startedAt = performance.now();
  let result: unknown;
  let error: AgentError | undefined;
  try {
    result = await tool.execute(parsed.data, toolContext(run, tool, call.id, changes));
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
    if (AgentError.isInstance(thrown) && (thrown.code === 'state_run_superseded' || thrown.code === 'run_interrupted')) throw thrown;
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

  await run.flushStateChanges(changes);
  await run.appendMessage(error ? errorResult(call, error.info) : { role: 'tool', toolCallId: call.id, toolName: tool.name, content: result ?? null });
  const success = error === undefined;
  if (run.hooks.has('afterTool')) {
    await run.fire('afterTool', { toolCall, tool, result, success, durationMs, ...(error ? { error } : {}) });
  }
  await run.emit({
    type: 'tool_end',
    toolCallId: call.id,
    toolName: tool.name,
    success,
    durationMs,
    ...(error ? { error: error.info } : { result }),
    ...run.chunkBase(),
  });
  run.usage.push({
    kind: 'tool',
    sessionId: run.setup.sessionId,
    runId: run.setup.runId,
    stepIndex: run.stepCount,
    toolName: tool.name,
    toolCallId: call.id,
    success,
    durationMs,
    at: Date.now(),
  });
  return finishOutput ? { call, finishOutput } : { call };
}

function toolContext(run: RunContext, tool: ToolDefinition, toolCallId: string, changes: PendingStateChange[]): ToolContext {
  const s = run.setup;
  return {
    sessionId: s.sessionId,
    runId: s.runId,
    agentType: s.agent.name,
    toolCallId,
    stepCount: run.stepCount,
    abortSignal: run.signal,
    ...(s.userId === undefined ? {} : { userId: s.userId }),
    ...(s.tags === undefined ? {} : { tags: s.tags }),
    ...(s.metadata === undefined ? {} : { metadata: s.metadata }),
    getState: <TState>() => run.state as TState,
    updateState: <TState>(updater: (draft: Draft<TState>) => void) => {
      run.updateState(updater as (draft: Draft<unknown>) => void, 'tool', changes, tool.name);
    },
    emitCustom: async (eventName: string, data: unknown) => {
      await run.emit({ type: 'custom', eventName, data, ...run.chunkBase() });
    },
  };
}
