import type { ToolContext, ToolDefinition } from '../define.js';
import type { Draft } from '../hooks/types.js';
import type { WriteScope } from './hook-dispatch.js';
import type { Run } from './run.js';
import type { Writable } from '../writable.js';

/** Thrown by ToolContext.awaitChildren(): the call becomes a pending `children` call. */
export class AwaitChildrenSignal {
  constructor(readonly children: readonly { readonly sessionId: string; readonly agentType: string }[]) {}
}

function awaitChildren(children: readonly { readonly sessionId: string; readonly agentType: string }[]): never {
  throw new AwaitChildrenSignal(children.map((c) => ({ sessionId: c.sessionId, agentType: c.agentType })));
}

/** The context a tool's execute() gets: who runs it, the state (its writes are booked to its call), the stream. */
export function toolContext(run: Run, tool: ToolDefinition, toolCallId: string, scope: WriteScope): ToolContext {
  const s = run.setup;
  const { getState, emitCustom } = run.toolFunctions;
  const ctx: Writable<ToolContext> = {
    sessionId: s.sessionId,
    runId: s.runId,
    agentType: s.agent.name,
    toolCallId,
    stepCount: run.stepCount,
    abortSignal: run.signal,
    idempotencyKey: `${s.runId}:${run.stepCount}:${toolCallId}:${tool.name}`,
    attempt: s.epoch,
    hookContext: s.hookContext,
    getState,
    // Only the state write depends on the call (its writes are booked to the call's scope).
    updateState: <TState>(updater: (draft: Draft<TState>) => void) => {
      run.updateState(updater as (draft: Draft<unknown>) => void, 'tool', scope, tool.name);
    },
    emitCustom,
    awaitChildren,
  };
  // Set only when the run has them (field by field: a conditional spread allocates an object of its own).
  if (s.userId !== undefined) ctx.userId = s.userId;
  if (s.tags !== undefined) ctx.tags = s.tags;
  if (s.metadata !== undefined) ctx.metadata = s.metadata;
  return ctx;
}
