// @helix-agents/llm-vercel: run helix-agents on any AI SDK language model (spec v3).
export { VercelAIAdapter } from './adapter.js';
export type { VercelAIAdapterOptions } from './adapter.js';
export { PromptConverter, convertMessage, toToolResultOutput } from './convert-prompt.js';
export { toFunctionTool, toFunctionTools } from './convert-tools.js';
export { classifyProviderError, retryAfterMsFromHeaders } from './map-error.js';
export type { ClassifiedProviderError, ProviderErrorContext } from './map-error.js';
export { toTokenUsage } from './map-usage.js';
