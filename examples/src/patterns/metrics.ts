import type { AgentHooks } from '@helix-agents/sdk';

/** The minimal metrics client the metrics hooks need (StatsD, Prometheus and OTel meters all fit). */
export interface MetricsClient {
  histogram(name: string, value: number, tags?: Record<string, string>): void;
  counter(name: string, value: number, tags?: Record<string, string>): void;
}

/** The spec's metrics pattern: run duration and steps, model latency and tokens, tool latency. */
export function createMetricsHooks(metrics: MetricsClient): AgentHooks {
  return {
    onAgentComplete: (payload, ctx) => {
      metrics.histogram('agent.duration', payload.durationMs, { agent: ctx.agentType });
      metrics.counter('agent.steps', payload.stepCount, { agent: ctx.agentType });
    },
    afterLLMCall: (payload) => {
      metrics.histogram('llm.duration', payload.durationMs);
      if (payload.usage) {
        metrics.counter('llm.tokens.input', payload.usage.promptTokens ?? 0);
        metrics.counter('llm.tokens.output', payload.usage.completionTokens ?? 0);
        if (payload.usage.cachedTokens) metrics.counter('llm.tokens.cached', payload.usage.cachedTokens);
      }
    },
    afterTool: (payload) => {
      metrics.histogram('tool.duration', payload.durationMs, { tool: payload.tool.name, success: String(payload.success) });
    },
  };
}

/** A metrics client that keeps everything in memory, for examples and tests. */
export function createMemoryMetrics(): MetricsClient & { readonly histograms: Map<string, number[]>; readonly counters: Map<string, number> } {
  const histograms = new Map<string, number[]>();
  const counters = new Map<string, number>();
  return {
    histograms,
    counters,
    histogram(name, value) {
      histograms.set(name, [...(histograms.get(name) ?? []), value]);
    },
    counter(name, value) {
      counters.set(name, (counters.get(name) ?? 0) + value);
    },
  };
}
