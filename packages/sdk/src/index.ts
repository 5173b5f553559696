/** @helix-agents/sdk: agents, tools, the run loop, hooks, in-memory stores, errors and stream chunks. */
export * from './errors.js';
export * from './messages.js';
export * from './llm.js';
export * from './stream.js';
export * from './store.js';
export * from './usage.js';
export * from './define.js';
export * from './hooks/types.js';
export * from './hooks/manager.js';
export { JSAgentExecutor } from './runtime/executor.js';
export type { ExecuteOptions, AgentHandle, JSAgentExecutorOptions } from './runtime/executor.js';
export type { AgentResult } from './runtime/result.js';
export { consoleLogger, silentLogger } from './runtime/logger.js';
export type { Logger } from './runtime/logger.js';
export { InMemoryStateStore } from './memory/state-store.js';
export { InMemoryStreamManager } from './memory/stream-manager.js';
export { InMemoryUsageStore } from './memory/usage-store.js';
