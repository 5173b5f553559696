import type { AgentHooks } from '../hooks/types.js';

/** What the timing hooks report besides the tool name and the milliseconds. */
export interface ToolTiming {
  readonly toolCallId: string;
  readonly success: boolean;
  readonly blocked: boolean;
}

/**
 * The spec's timing pattern: the time from a call's beforeTool to its afterTool (later beforeTool hooks and
 * any wait for a human included, unlike `afterTool`'s `durationMs`), keyed by run and call id so concurrent
 * runs whose providers reuse call ids do not mix.
 */
export function createTimingHooks<TState = unknown, TOutput = unknown>(
  report: (tool: string, ms: number, timing: ToolTiming) => void = (tool, ms) => console.log(`${tool}: ${ms}ms`),
): AgentHooks<TState, TOutput> {
  const started = new Map<string, Map<string, number>>();
  const forget = (runId: string): void => void started.delete(runId);
  return {
    beforeTool: (payload, ctx) => {
      let calls = started.get(ctx.runId);
      if (!calls) started.set(ctx.runId, (calls = new Map()));
      calls.set(payload.toolCall.id, performance.now());
    },
    afterTool: (payload, ctx) => {
      const calls = started.get(ctx.runId);
      const start = calls?.get(payload.toolCall.id);
      if (start === undefined) return;
      calls?.delete(payload.toolCall.id);
      report(payload.tool.name, Math.round(performance.now() - start), { toolCallId: payload.toolCall.id, success: payload.success, blocked: payload.blocked });
    },
    // A call whose beforeTool chain failed the run never reaches afterTool: drop the run's entries at its end.
    onAgentComplete: (_payload, ctx) => forget(ctx.runId),
    onAgentFail: (_payload, ctx) => forget(ctx.runId),
    onAgentSuperseded: (_payload, ctx) => forget(ctx.runId),
  };
}
