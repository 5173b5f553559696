import { z } from 'zod';
import type { LocalSubAgentSpec, ToolDefinition } from '../define.js';
import { AgentError, ToolError, type AgentErrorInfo } from '../errors.js';
import type { SubAgentCall } from '../hooks/types.js';
import type { ToolCall } from '../messages.js';
import { childSessionId } from '../sub-agent-tool.js';
import type { AgentHandle } from './agent-runtime.js';
import type { WriteScope } from './hook-dispatch.js';
import { remoteChildHandle, startRemoteChild, type SpawnRecord } from './remote-child.js';
import type { Run } from './run.js';
import type { ChildRunner } from './run-setup.js';

/** What a sub-agent call comes back with: the call's result for the parent's model, or the error it gets. */
export type SubAgentOutcome = { readonly ok: true; readonly result: unknown } | { readonly ok: false; readonly error: AgentError };

const spawnRecord: z.ZodType<SpawnRecord> = z.object({ subSessionId: z.string(), runId: z.string().optional() });

/**
 * Runs a sub-agent call: beforeSubAgent, the child's whole run in its own session (its chunks forwarded
 * into the parent's stream, tagged), afterSubAgent. The spawn goes through the step recorder, so a
 * recovered parent re-attaches to the child (same derived session id) without firing beforeSubAgent
 * again. afterSubAgent's writes belong to the call: parallel children's folds run one after another on
 * the live state, in the order their outcomes arrive, so disjoint edits all survive and the same path
 * goes to the last writer. Stopping the parent stops the child.
 */
export async function runSubAgent(run: Run, tool: ToolDefinition, call: ToolCall, scope: WriteScope): Promise<SubAgentOutcome> {
  const spec = tool.subAgent;
  const children = run.setup.children;
  if (!spec || !children) return refused('subagent_unavailable', `The sub-agent tool "${tool.name}" needs a runtime that starts child runs.`);
  const depth = run.setup.depth + 1;
  if (depth > children.maxDepth) return refused('subagent_depth_exceeded', `The sub-agent "${spec.agentType}" would run at depth ${depth}, deeper than ${children.maxDepth}.`, { depth, maxDepth: children.maxDepth });
  if (run.books.countChild(run.stepCount) > children.maxPerStep) return refused('subagent_fanout_exceeded', `Step ${run.stepCount} called more than ${children.maxPerStep} sub-agents.`, { maxPerStep: children.maxPerStep });
  const parentSessionId = run.setup.sessionId;
  const subCall: SubAgentCall = { id: call.id, toolName: tool.name, input: call.arguments, agentType: spec.agentType };
  const agentConfig = spec.kind === 'local' ? spec.agent : undefined;
  const derivedId = childSessionId(parentSessionId, call.id);
  // A remote start that failed is not recorded: a recovered parent tries again (with the same idempotency key).
  const spawn = await run.recorder.replayOrRun({ kind: 'child_spawn', step: run.stepCount, callId: call.id }, spawnRecord, async (): Promise<SpawnRecord> => {
    if (run.hooks.has('beforeSubAgent')) await run.hooks.fire('beforeSubAgent', { call: subCall, agentConfig, parentSessionId }, scope);
    return spec.kind === 'remote' ? startRemoteChild(run, spec, call, depth) : { subSessionId: derivedId };
  }, { persist: (spawned) => spawned.error === undefined });
  const startedAt = performance.now();
  const handle = spec.kind === 'remote' ? remoteChildHandle(spec, spawn.status === 'interrupted' ? { subSessionId: derivedId } : spawn.value, run.setup.logger) : await startLocalChild(run, children, spec, call, depth);
  const stopChild = (): void => void handle.stop('The parent run was stopped.');
  run.signal.addEventListener('abort', stopChild, { once: true });
  if (run.signal.aborted) stopChild();
  const forwarding = forward(run, handle, call.id, depth);
  const result = await handle.result();
  run.signal.removeEventListener('abort', stopChild);
  await forwarding;
  run.books.addChild(handle);
  const success = result.status === 'completed';
  const error: AgentErrorInfo | undefined = success ? undefined : (result.error ?? new AgentError('subagent_failed', `The sub-agent "${spec.agentType}" ended ${result.status}.`).info);
  const subSessionId = handle.sessionId;
  const durationMs = performance.now() - startedAt;
  if (run.hooks.has('afterSubAgent')) {
    await run.hooks.fire('afterSubAgent', { call: subCall, agentConfig, result: success ? result.output : undefined, success, ...(error ? { error } : {}), durationMs, subSessionId }, scope);
  }
  if (success) return { ok: true, result: spec.output(result.output) };
  return refused('subagent_failed', `The sub-agent "${spec.agentType}" ended ${result.status}: ${error?.message ?? 'no reason given'}`, { subSessionId, status: result.status, ...(error ? { cause: error.code } : {}) });
}

/** Starts (or re-attaches to) a local child in its derived session, with the parent's attribution, usage store and execution-level hooks. */
function startLocalChild(run: Run, children: ChildRunner, spec: LocalSubAgentSpec, call: ToolCall, depth: number): Promise<AgentHandle> {
  const s = run.setup;
  const attribution = { ...(s.userId === undefined ? {} : { userId: s.userId }), ...(s.tags === undefined ? {} : { tags: s.tags }), ...(s.metadata === undefined ? {} : { metadata: s.metadata }) };
  return children.start(spec.agent, spec.input(call.arguments), {
    sessionId: childSessionId(s.sessionId, call.id),
    parentSessionId: s.sessionId,
    parentToolCallId: call.id,
    depth,
    attribution,
    ...(s.usageStore ? { usageStore: s.usageStore } : {}),
    ...(s.executionHooks ? { executionHooks: s.executionHooks } : {}),
  });
}

function refused(code: string, message: string, details: Record<string, unknown> = {}): SubAgentOutcome {
  return { ok: false, error: new ToolError(code, message, { details }) };
}

/** Copies the child's chunks into the parent's stream as they come, tagged with the child, the call and the depth. */
async function forward(run: Run, handle: AgentHandle, parentToolCallId: string, depth: number): Promise<void> {
  try {
    for await (const chunk of handle.stream()) {
      run.emitNoWait({ type: 'subagent_chunk', childSessionId: handle.sessionId, parentToolCallId, depth, chunk, ...run.chunkBase() });
    }
  } catch (error) {
    run.setup.logger.warn(`forwarding the chunks of child session ${handle.sessionId} failed: ${error instanceof Error ? error.message : String(error)}`, { runId: run.setup.runId });
  }
}
