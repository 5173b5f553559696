/**
 * @helix-agents/sdk/store: what a store implementer writes code against (the records a state store
 * keeps, the commit and journal shapes, the session rules every store applies). Users of the runtime
 * do not need it; they pass a store to an executor.
 */
export * from '../store.js';
export * from './session-rules.js';
export * from './session-delete.js';

// The writer side of the stream port, for stream-manager implementers.
export type { StreamChunkInput, StreamWriter } from '../stream.js';
