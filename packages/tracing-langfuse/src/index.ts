/** @helix-agents/tracing-langfuse: Langfuse traces for helix-agents runs, as hooks (createLangfuseHooks). */
export { createLangfuseHooks, toChatMessage, usageDetails, TRACING_LANGFUSE_VERSION } from './langfuse-hooks.js';
export type { LangfuseHooksOptions, LangfuseTracing } from './langfuse-hooks.js';
export type { AnyAgentHooks, TracedDecision } from '@helix-agents/tracing-otel';
