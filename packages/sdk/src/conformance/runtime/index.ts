/** The runtime conformance suite: scenarios, traces, the runner and the vitest entry point. */
export * from './trace.js';
export * from './factory.js';
export type { Deferred, ScenarioContext } from './context.js';
export type { HookLayer } from './recorder.js';
export * from './scenario.js';
export * from './describe.js';
export * from './js-runtime.js';
export * from './scenarios/index.js';
