// OpenTelemetry GenAI spans for a run (issue 7): the research agent of the Complete Example, traced with
// createOtelHooks. Without OTEL_EXPORTER_OTLP_ENDPOINT the spans are kept in memory and printed as a tree;
// with it they are sent over OTLP/HTTP to that collector (Jaeger, Tempo, Honeycomb, an OTel Collector, ...).
// HELIX_TRACE_CONTENT=1 records prompts, replies and tool arguments on the spans (off by default).
// Run: node --conditions=helix-source --import tsx examples/src/tracing-otel.ts
import { pathToFileURL } from 'node:url';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { BasicTracerProvider, BatchSpanProcessor, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { defineAgent, InMemoryStateStore, InMemoryStreamManager, JSAgentExecutor, type AgentResult } from '@helix-agents/sdk';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { createOtelHooks } from '@helix-agents/tracing-otel';
import { exampleModel } from './model.js';
import { OutputSchema, researchScript, searchTool, StateSchema, type Output, type State } from './research-agent.js';

/** Runs the research agent with OpenTelemetry tracing; prints the span tree (or where the spans went) through `write`. */
export async function runOtelExample(
  write: (text: string) => void = (t) => process.stdout.write(t),
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ result: AgentResult<State, Output>; spans: readonly ReadableSpan[] }> {
  const { model, description } = exampleModel(researchScript, env);
  const endpoint = env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'] ?? env['OTEL_EXPORTER_OTLP_ENDPOINT'];
  const memory = new InMemorySpanExporter();
  // Your app usually has a provider already (NodeSDK, a vendor distro): pass it as tracerProvider instead.
  const tracerProvider = new BasicTracerProvider({
    // The OTLP exporter reads OTEL_EXPORTER_OTLP_* itself (endpoint, headers such as an API key).
    spanProcessors: [endpoint ? new BatchSpanProcessor(new OTLPTraceExporter()) : new SimpleSpanProcessor(memory)],
  });
  const tracing = createOtelHooks({ tracerProvider, captureContent: env['HELIX_TRACE_CONTENT'] === '1' });

  const agent = defineAgent({
    name: 'research-agent',
    systemPrompt: 'You are a research assistant. Use search to find information.',
    stateSchema: StateSchema,
    outputSchema: OutputSchema,
    llmConfig: { model },
    tools: [searchTool],
    hooks: tracing.hooks,
  });
  const executor = new JSAgentExecutor(new InMemoryStateStore(), new InMemoryStreamManager(), new VercelAIAdapter());
  write(`model: ${description}\n`);
  const handle = await executor.execute(agent, 'Research quantum computing', {
    sessionId: 'conversation-456',
    userId: 'user-123',
    tags: ['research'],
    metadata: { feature: 'chat' },
  });
  const result = await handle.result();
  // Before a short-lived process exits: flush (a long-lived one keeps its provider and lets the batch processor export).
  await tracing.flush();
  const spans = memory.getFinishedSpans();
  await tracerProvider.shutdown();

  if (endpoint) write(`run ${result.status}; spans sent to ${endpoint}\n`);
  else for (const line of spanTree(spans)) write(`${line}\n`);
  return { result, spans };
}

/** The spans as an indented tree with their key GenAI attributes. */
export function spanTree(spans: readonly ReadableSpan[]): string[] {
  const lines: string[] = [];
  const childrenOf = (id: string | undefined) => spans.filter((s) => s.parentSpanContext?.spanId === id);
  const ms = (s: ReadableSpan) => (s.duration[0] * 1e3 + s.duration[1] / 1e6).toFixed(1);
  const keys = ['gen_ai.request.model', 'gen_ai.tool.call.id', 'gen_ai.usage.input_tokens', 'gen_ai.usage.output_tokens', 'gen_ai.usage.cache_read.input_tokens', 'gen_ai.conversation.id', 'user.id', 'helix.run.status', 'error.type'];
  const visit = (span: ReadableSpan, depth: number): void => {
    const attributes = keys.filter((k) => span.attributes[k] !== undefined).map((k) => `${k}=${String(span.attributes[k])}`);
    lines.push(`${'  '.repeat(depth)}${span.name} (${ms(span)} ms)${attributes.length > 0 ? `  ${attributes.join(' ')}` : ''}`);
    for (const child of childrenOf(span.spanContext().spanId)) visit(child, depth + 1);
  };
  for (const root of childrenOf(undefined)) visit(root, 0);
  return lines;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { result } = await runOtelExample();
  process.exitCode = result.status === 'completed' ? 0 : 1;
}
