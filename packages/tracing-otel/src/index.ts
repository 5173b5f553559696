/** @helix-agents/tracing-otel: OpenTelemetry GenAI spans for helix-agents runs, as hooks. */
export { createOtelHooks, TRACING_OTEL_VERSION } from './otel-hooks.js';
export type {
  AnyAgentHooks,
  OtelHooksOptions,
  OtelTracing,
  OtelTracingStats,
  RunOutcomeStatus,
  RunStartSignal,
  SpanLifecycleEvent,
  TracedDecision,
  TracedRun,
  TracedSpanKind,
} from './otel-hooks.js';
/** The attribute and event names our spans use (`gen_ai.*` copied from the GenAI conventions, `helix.*` our own). */
export * as GenAiAttributes from './conventions.js';
export { genAiProviderName } from './conventions.js';
export { replyMessages, splitPrompt, toGenAiMessage, toJson } from './content.js';
export type { GenAiMessage, GenAiPart } from './content.js';
