import type { SpanStatusCode } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { z } from 'zod';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import {
  defineAgent,
  defineTool,
  InMemoryStateStore,
  InMemoryStreamManager,
  JSAgentExecutor,
  silentLogger,
  type AgentDefinition,
  type StateStore,
  type StreamManager,
} from '@helix-agents/sdk';
import { createScriptedModel, type ScriptedStep, type ScriptedStepObject } from '@helix-agents/sdk/testing';

/** A tracer provider whose spans land in memory, synchronously, when they end. */
export function memoryTracing() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  return { exporter, provider, spans: () => exporter.getFinishedSpans() };
}

/** Executor over the in-memory stores and the Vercel adapter, as a user would wire it. */
export function setup(options: { stateStore?: StateStore; wrapStream?: (streams: InMemoryStreamManager) => StreamManager } = {}) {
  const stateStore = options.stateStore ?? new InMemoryStateStore();
  const streams = new InMemoryStreamManager();
  const executor = new JSAgentExecutor(stateStore, options.wrapStream ? options.wrapStream(streams) : streams, new VercelAIAdapter(), { logger: silentLogger });
  return { executor, stateStore, streams };
}

/** A tool whose body can be scripted per test. */
export function tool(name: string, execute: (input: { q: string }) => unknown | Promise<unknown>) {
  return defineTool({ name, description: `the ${name} tool`, inputSchema: z.object({ q: z.string() }), execute: (input) => execute(input) });
}

/** An agent with an output schema (it finishes through `__finish__`) over a scripted model. */
export function agent(steps: readonly ScriptedStep[], overrides: Partial<AgentDefinition<Record<string, unknown>, { answer: string }>> = {}) {
  return defineAgent<Record<string, unknown>, { answer: string }>({
    name: 'researcher',
    description: 'Finds things out.',
    systemPrompt: 'You research.',
    outputSchema: z.object({ answer: z.string() }),
    llmConfig: { model: createScriptedModel(steps, { provider: 'openai.chat', modelId: 'gpt-test' }), temperature: 0.2, retry: { initialDelayMs: 1, maxDelayMs: 2 } },
    ...overrides,
  });
}

/** The `__finish__` step of {@link agent}. */
export const finish = (answer: string): ScriptedStepObject => ({ toolCalls: [{ name: '__finish__', args: { answer } }], usage: { inputTokens: 30, outputTokens: 5 } });

/** Spans by name prefix, in end order. */
export function named(spans: readonly ReadableSpan[], prefix: string): ReadableSpan[] {
  return spans.filter((s) => s.name === prefix || s.name.startsWith(`${prefix} `));
}

/** The one span with a name; fails loudly otherwise. */
export function only(spans: readonly ReadableSpan[], name: string): ReadableSpan {
  const found = spans.filter((s) => s.name === name);
  if (found.length !== 1) throw new Error(`expected one span "${name}", found ${found.length}: ${spans.map((s) => s.name).join(', ')}`);
  return found[0]!;
}

/** True when `child` is a direct child of `parent` in the same trace. */
export function isChildOf(child: ReadableSpan, parent: ReadableSpan): boolean {
  return child.parentSpanContext?.spanId === parent.spanContext().spanId && child.spanContext().traceId === parent.spanContext().traceId;
}

/** The numeric code of a span's status. */
export const status = (span: ReadableSpan): SpanStatusCode => span.status.code;

/** Start and end of a span in ms, to check that spans overlap. */
export function interval(span: ReadableSpan): [number, number] {
  const ms = (t: readonly [number, number]) => t[0] * 1000 + t[1] / 1e6;
  return [ms(span.startTime), ms(span.endTime)];
}
