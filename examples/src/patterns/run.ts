// Runs each of the common hook patterns on the scripted model:
//   npm run example -- logging | metrics | rate-limit | custom-events | timing
import { pathToFileURL } from 'node:url';
import { InMemoryStateStore, InMemoryStreamManager, JSAgentExecutor, silentLogger, type AgentHooks, type AgentResult, type StreamChunk } from '@helix-agents/sdk';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { exampleModel } from '../model.js';
import { createResearchAgent, researchScript } from '../research-agent.js';
import { createCustomEventsHooks } from './custom-events.js';
import { createLoggingHooks } from './logging.js';
import { createMemoryMetrics, createMetricsHooks } from './metrics.js';
import { createRateLimitHooks, createWindowRateLimiter } from './rate-limit.js';
import { createTimingHooks } from './timing.js';

/** The pattern examples by name. */
export const PATTERNS = ['logging', 'metrics', 'rate-limit', 'custom-events', 'timing'] as const;
/** A pattern example's name. */
export type PatternName = (typeof PATTERNS)[number];

/** What a pattern example printed and how its run ended. */
export interface PatternRun {
  readonly lines: string[];
  readonly result: AgentResult;
  readonly chunks: StreamChunk[];
}

async function runWith(hooks: AgentHooks, lines: string[], env: NodeJS.ProcessEnv, userId = 'user-1'): Promise<PatternRun> {
  const executor = new JSAgentExecutor(new InMemoryStateStore(), new InMemoryStreamManager(), new VercelAIAdapter(), { logger: silentLogger });
  const handle = await executor.execute(createResearchAgent(exampleModel(researchScript, env).model), 'Research quantum computing', { hooks, userId });
  const chunks: StreamChunk[] = [];
  for await (const chunk of handle.stream()) chunks.push(chunk);
  return { lines, result: await handle.result(), chunks };
}

/** Runs one pattern example; `print` receives what it reports, `env` picks the model. */
export async function runPattern(name: PatternName, print: (line: string) => void = console.log, env: NodeJS.ProcessEnv = process.env): Promise<PatternRun> {
  const lines: string[] = [];
  const out = (line: string): void => {
    lines.push(line);
    print(line);
  };
  switch (name) {
    case 'logging': {
      const log = (level: string) => (message: string, fields?: Record<string, unknown>) => out(`${level} ${message} ${JSON.stringify(fields ?? {})}`);
      return runWith(createLoggingHooks({ info: log('INFO'), error: log('ERROR'), debug: log('DEBUG') }), lines, env);
    }
    case 'metrics': {
      const metrics = createMemoryMetrics();
      const run = await runWith(createMetricsHooks(metrics), lines, env);
      for (const [metric, values] of metrics.histograms) out(`histogram ${metric}: ${values.length} samples`);
      for (const [metric, value] of metrics.counters) out(`counter ${metric}: ${value}`);
      return run;
    }
    case 'rate-limit': {
      // Two model calls per user per minute: the research agent needs three, so its third call is refused.
      const run = await runWith(createRateLimitHooks(createWindowRateLimiter(2, 60_000)), lines, env, 'user-limited');
      out(`run ${run.result.status}: ${run.result.error?.code ?? ''} ${run.result.error?.message ?? ''}`);
      return run;
    }
    case 'custom-events': {
      const run = await runWith(createCustomEventsHooks(), lines, env);
      for (const chunk of run.chunks) if (chunk.type === 'custom') out(`custom ${chunk.eventName} ${JSON.stringify(chunk.data)}`);
      return run;
    }
    case 'timing':
      return runWith(createTimingHooks((tool, ms) => out(`${tool}: ${ms}ms`)), lines, env);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const name = process.argv[2] as PatternName | undefined;
  if (!name || !PATTERNS.includes(name)) {
    console.error(`usage: npm run example -- <${PATTERNS.join(' | ')}>`);
    process.exitCode = 2;
  } else {
    await runPattern(name);
  }
}
