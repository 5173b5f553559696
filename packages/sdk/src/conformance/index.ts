/** Conformance suites (vitest) that every store and runtime implementation runs from its own tests. */
export * from './state-store.js';
