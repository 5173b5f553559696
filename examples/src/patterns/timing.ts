import type { AgentHooks } from '@helix-agents/sdk';

/** The spec's timing pattern: tool durations keyed by the call id that beforeTool and afterTool share. */
export function createTimingHooks(report: (tool: string, ms: number) => void = (tool, ms) => console.log(`${tool}: ${ms}ms`)): AgentHooks {
  const timings = new Map<string, number>();
  return {
    beforeTool: (payload) => {
      timings.set(payload.toolCall.id, Date.now());
    },
    afterTool: (payload) => {
      const start = timings.get(payload.toolCall.id);
      if (start !== undefined) {
        report(payload.tool.name, Date.now() - start);
        timings.delete(payload.toolCall.id);
      }
    },
  };
}
