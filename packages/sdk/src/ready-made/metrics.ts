import type { AgentHooks } from '../hooks/types.js';

/** The metrics client the metrics hooks need (StatsD, Prometheus and OpenTelemetry meters all fit behind it). */
export interface MetricsClient {
  histogram(name: string, value: number, tags?: Record<string, string>): void;
  counter(name: string, value: number, tags?: Record<string, string>): void;
}

/**
 * The spec's metrics pattern: run duration and steps, model latency and tokens, tool latency; plus
 * failed runs by code and blocked tool calls, which an operator needs to see a guard at work.
 */
export function createMetricsHooks<TState = unknown, TOutput = unknown>(metrics: MetricsClient): AgentHooks<TState, TOutput> {
  return {
    onAgentComplete: (payload, ctx) => {
      metrics.histogram('agent.duration', payload.durationMs, { agent: ctx.agentType });
      metrics.counter('agent.steps', payload.stepCount, { agent: ctx.agentType });
    },
    onAgentFail: (payload, ctx) => {
      metrics.counter('agent.failures', 1, { agent: ctx.agentType, code: payload.error.code });
    },
    afterLLMCall: (payload) => {
      metrics.histogram('llm.duration', payload.durationMs, { model: payload.model });
      if (payload.usage) {
        metrics.counter('llm.tokens.input', payload.usage.promptTokens, { model: payload.model });
        metrics.counter('llm.tokens.output', payload.usage.completionTokens, { model: payload.model });
        if (payload.usage.cachedTokens) metrics.counter('llm.tokens.cached', payload.usage.cachedTokens, { model: payload.model });
      }
    },
    afterTool: (payload) => {
      metrics.histogram('tool.duration', payload.durationMs, { tool: payload.tool.name, success: String(payload.success) });
      if (payload.blocked) metrics.counter('tool.blocked', 1, { tool: payload.tool.name });
    },
  };
}
