import type { RunAttribution } from '../hooks/types.js';
import type { RunStatus } from '../store.js';
import type { StreamChunk } from '../stream.js';
import type { UsageRollup } from '../usage.js';
import type { AgentErrorInfo } from '../errors.js';

/**
 * A run on another service, as its client names it. Both ids are opaque: helix records them (so a
 * recovered parent re-attaches to the same run), passes them back to the client and shows them in
 * hooks and chunks, but never parses them or uses them as paths. Each is 1–256 characters.
 */
export interface RemoteRunRef {
  /** The child's session on the remote service (`afterSubAgent`'s `subSessionId`, `subagent_chunk`'s `childSessionId`). */
  readonly sessionId: string;
  /** The child's run. */
  readonly runId: string;
}

/** What the parent asks the remote service to run. */
export interface RemoteStartRequest extends RunAttribution {
  /** The remote agent's name (the tool's `agentType`). */
  readonly agentType: string;
  /** The child's input (the tool's `input(args)`). */
  readonly input: string;
  /**
   * The same key means the same child: a client must answer a second start with this key with the run
   * the first one started (or is starting), never start another. Derived from the parent session and
   * the tool call id, so a recovered parent that starts again gets its child back.
   */
  readonly idempotencyKey: string;
  /** The parent's session. */
  readonly parentSessionId: string;
  /** The parent's tool call that starts the child. */
  readonly parentToolCallId: string;
  /** The child's depth in its tree of sub-agents (1 for a child of a root run), so a service can enforce its own limit. */
  readonly depth: number;
}

/** Cancels a client call: the call rejects (or its stream ends) soon after the signal aborts. */
export interface RemoteCallOptions {
  readonly signal?: AbortSignal;
}

/** Where {@link RemoteAgentClient.stream} starts. */
export interface RemoteStreamOptions extends RemoteCallOptions {
  /** Resume right after the chunk this cursor came with (absent: from the run's first chunk). */
  readonly after?: string;
}

/** One chunk of the remote run, with the cursor to resume after it. */
export interface RemoteStreamItem {
  /** The child's chunk as the remote stream has it (helix forwards it to the parent's stream as a `subagent_chunk`). */
  readonly chunk: StreamChunk;
  /** Opaque resume cursor (1–1024 characters): `stream(ref, { after: cursor })` goes on after this chunk. */
  readonly cursor: string;
}

/** How the remote run ended. */
export interface RemoteAgentResult {
  /** `completed` gives the parent the output; every other status is a failed child (`subagent_failed`). */
  readonly status: Exclude<RunStatus, 'running'>;
  /** The child's output (completed runs). */
  readonly output?: unknown;
  /** Why the run did not complete. */
  readonly error?: AgentErrorInfo;
  /** The child's usage (its own children included), when the service reports it: rolled into the parent's usage. */
  readonly usage?: UsageRollup;
}

/**
 * The small, transport-neutral interface a remote sub-agent runs through
 * (`defineRemoteSubAgentTool({ client })`). An HTTP client implements it against a helix server;
 * `createInProcessAgentClient` implements it over an `AgentRuntime` in this process (for tests).
 *
 * Errors: a method that fails rejects with an `AgentError` (its `info` is an {@link AgentErrorInfo});
 * helix turns any other rejection into `subagent_remote_error`, and anything a client returns that does
 * not have the shape promised here into `subagent_remote_invalid`. Either way the parent's model gets a
 * `subagent_failed` result and the parent goes on. helix treats every value a client returns as
 * untrusted input: ids, cursors, chunks, results and usage are validated before use.
 */
export interface RemoteAgentClient {
  /** Starts the child run, or returns the one already started for `request.idempotencyKey`. */
  start(request: RemoteStartRequest, options?: RemoteCallOptions): Promise<RemoteRunRef>;
  /**
   * The run's chunks, from its first (or from after `options.after`), live, ending after its terminal
   * chunk. A stream that breaks off is opened again with the last cursor seen.
   */
  stream(ref: RemoteRunRef, options?: RemoteStreamOptions): AsyncIterable<RemoteStreamItem>;
  /** Resolves once the run has ended (may be called again after a reconnect; it must not start anything). */
  result(ref: RemoteRunRef, options?: RemoteCallOptions): Promise<RemoteAgentResult>;
  /** Asks the service to stop the run (its terminal hooks fire there); resolves once the request was accepted. */
  stop(ref: RemoteRunRef, reason?: string): Promise<void>;
}
