/** Conformance suites (vitest) that every store and runtime implementation runs from its own tests. */
export * from './state-store.js';
export * from './stream-manager.js';
export * from './usage-store.js';
export * from './retention.js';
// The hook kv and file stores' suites live with the subscriber ports they test.
export * from '../subscribers/conformance.js';
// The runtime conformance suite (describeRuntimeConformance, the scenarios, their traces).
export * from './runtime/index.js';
