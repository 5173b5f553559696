import type { AgentHooks } from '@helix-agents/sdk';

/** The spec's custom-events pattern: emitCustom() puts `{ type: 'custom', eventName, data }` on the stream. */
export function createCustomEventsHooks(): AgentHooks {
  return {
    onAgentStart: async (payload, ctx) => {
      await ctx.emitCustom('agent.initialized', { agent: ctx.agentType, input: payload.input, timestamp: new Date().toISOString() });
    },
    afterTool: async (payload, ctx) => {
      await ctx.emitCustom('tool.executed', { tool: payload.tool.name, success: payload.success, durationMs: payload.durationMs });
    },
    onStateChange: async (payload, ctx) => {
      await ctx.emitCustom('state.changed', { source: payload.source, toolName: payload.toolName });
    },
  };
}
