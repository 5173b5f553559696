import type { ToolContext, ToolDefinition } from '../define.js';
import type { Draft } from '../hooks/types.js';
import type { WriteScope } from './hook-dispatch.js';
import type { Run } from './run.js';

/** Thrown by ToolContext.awaitChildren(): the call becomes a pending `children` call. */
export class AwaitChildrenSignal {
  constructor(readonly children: readonly { readonly sessionId: string; readonly agentType: string }[]) {}
}

/** The functions of a tool context that depend only on the run: made once per run, shared by its calls' contexts. */
interface RunToolFunctions {
  readonly getState: ToolContext['getState'];
  readonly emitCustom: ToolContext['emitCustom'];
}

const runFunctions = new WeakMap<Run, RunToolFunctions>();

function runToolFunctions(run: Run): RunToolFunctions {
  let fns = runFunctions.get(run);
  if (fns === undefined) {
    fns = {
      getState: <TState>() => run.state as TState,
      emitCustom: async (eventName: string, data: unknown) => {
        await run.emit({ type: 'custom', eventName, data, ...run.chunkBase() });
      },
    };
    runFunctions.set(run, fns);
  }
  return fns;
}

/**
 * Forgets a run's shared tool functions once the run ended. The WeakMap would drop them with the run
 * anyway, but only at V8's next full collection, and its table keeps the size it grew to meanwhile
 * (V8 shrinks it only on delete): with deletes, it holds only the runs that are running.
 */
export function releaseToolFunctions(run: Run): void {
  runFunctions.delete(run);
}

function awaitChildren(children: readonly { readonly sessionId: string; readonly agentType: string }[]): never {
  throw new AwaitChildrenSignal(children.map((c) => ({ sessionId: c.sessionId, agentType: c.agentType })));
}

/** The context a tool's execute() gets: who runs it, the state (its writes are booked to its call), the stream. */
export function toolContext(run: Run, tool: ToolDefinition, toolCallId: string, scope: WriteScope): ToolContext {
  const s = run.setup;
  const { getState, emitCustom } = runToolFunctions(run);
  return {
    sessionId: s.sessionId,
    runId: s.runId,
    agentType: s.agent.name,
    toolCallId,
    stepCount: run.stepCount,
    abortSignal: run.signal,
    idempotencyKey: `${s.runId}:${run.stepCount}:${toolCallId}:${tool.name}`,
    attempt: s.epoch,
    hookContext: s.hookContext,
    ...(s.userId === undefined ? {} : { userId: s.userId }),
    ...(s.tags === undefined ? {} : { tags: s.tags }),
    ...(s.metadata === undefined ? {} : { metadata: s.metadata }),
    getState,
    // Only the state write depends on the call (its writes are booked to the call's scope).
    updateState: <TState>(updater: (draft: Draft<TState>) => void) => {
      run.updateState(updater as (draft: Draft<unknown>) => void, 'tool', scope, tool.name);
    },
    emitCustom,
    awaitChildren,
  };
}
