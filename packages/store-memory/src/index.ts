/** @helix-agents/store-memory: the in-memory state, stream and usage stores (the spec imports InMemoryUsageStore from here). */
export { InMemoryStateStore, InMemoryStreamManager, InMemoryUsageStore } from '@helix-agents/sdk';
