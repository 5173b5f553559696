/** @helix-agents/sdk/ready-made: hooks you register as they are — confirmation, result offloading, redaction, guards, budgets and the spec's patterns. */
export * from './confirmation.js';
export * from './tool-result-offload.js';
export * from './redaction.js';
export * from './tool-guard.js';
export * from './token-budget.js';
export * from './logging.js';
export * from './metrics.js';
export * from './rate-limit.js';
export * from './timing.js';
