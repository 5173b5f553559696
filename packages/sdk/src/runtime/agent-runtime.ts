import type { AgentConfig } from '../define.js';
import type { AgentHooks, RunAttribution } from '../hooks/types.js';
import type { HookManager } from '../hooks/manager.js';
import type { CheckpointInfo, RunRecord, SessionSnapshot } from '../store.js';
import type { StreamChunk, StreamReadOptions } from '../stream.js';
import type { UsageRollup, UsageStore } from '../usage.js';
import type { AgentResult } from './result.js';
import type { TurnInput } from './turn-input.js';

/** Per-run options of `execute()`. */
export interface ExecuteOptions<TState = unknown, TOutput = unknown> extends RunAttribution {
  /** Run in this session (a new one is created when absent); a second execute on a session starts a new turn and supersedes a run still going. */
  readonly sessionId?: string;
  /**
   * Execution-level hooks; they run after the agent's own hooks (and after `hookManager`'s). The children
   * of this run's sub-agent calls run them too, after their own agent's hooks (a handler the child's agent
   * already has runs once).
   */
  readonly hooks?: AgentHooks<TState, TOutput>;
  /** Execution-level hooks as a manager (e.g. from `composeHookManagers`); children run them too. */
  readonly hookManager?: HookManager<TState, TOutput>;
  /** Where model and tool usage is recorded; `handle.getUsageRollup()` reads it. Pass the state store itself (durable stores are usage stores too) to record usage atomically with each commit. */
  readonly usageStore?: UsageStore;
  /** Aborting it interrupts the run, like `handle.interrupt()`. */
  readonly abortSignal?: AbortSignal;
  /** The state of a new session (validated by the agent's stateSchema; its defaults apply). Ignored for an existing session. */
  readonly initialState?: unknown;
  /** The parent's session id, for sub-agents. */
  readonly parentSessionId?: string;
}

/** A running (or finished) run. */
export interface AgentHandle<TState = unknown, TOutput = unknown> {
  readonly sessionId: string;
  readonly runId: string;
  readonly streamId: string;
  /** Resolves when the run ends, whatever the ending (never rejects). */
  result(): Promise<AgentResult<TState, TOutput>>;
  /** This run's chunks, from run_started to its terminal chunk: live, or replayed after the run ended. Aborting `signal` ends a following reader. */
  stream(options?: { readonly signal?: AbortSignal }): AsyncIterable<StreamChunk>;
  /** The run's usage so far, or undefined when no usageStore was given. */
  getUsageRollup(): Promise<UsageRollup | undefined>;
  /**
   * Stops the run: no new model call or tool starts, calls that finish keep their recorded results, the
   * rest are paired `run_stopped`, the terminal commit is written and onAgentFail fires with
   * `run_interrupted` (status `interrupted`). Resolves with the result.
   */
  stop(reason?: string): Promise<AgentResult<TState, TOutput>>;
  /** The same as `stop()`: the spec's name for it. */
  interrupt(reason?: string): Promise<AgentResult<TState, TOutput>>;
}

/** Per-run options of resume(), retry(), send() and the answer entry points. */
export interface RunCallOptions extends RunAttribution {
  readonly hooks?: AgentHooks;
  readonly hookManager?: HookManager;
  readonly usageStore?: UsageStore;
  readonly abortSignal?: AbortSignal;
}

/** A client tool's result, for resume({ mode: 'continue' }) / submitToolResult(). */
export interface ToolResultSubmission {
  readonly toolCallId: string;
  readonly result: unknown;
  readonly isError?: boolean;
}

/** A human's decision on a call that needs approval. */
export interface ApprovalDecision {
  readonly toolCallId: string;
  readonly decision: 'approve' | 'reject';
  /** Edited arguments (approve only); validated against the tool's input schema. */
  readonly input?: unknown;
  /** Told to the model on a rejection. */
  readonly reason?: string;
  /** Required when the executor signs approvals (`approvalSecret`): made with `executor.signApproval()` on the server that decides (never carried by the stream). */
  readonly signature?: string;
}

/** How to resume a session. */
export type ResumeOptions = RunCallOptions &
  (
    | { readonly mode: 'continue' | 'with_confirmation'; readonly toolResults?: readonly ToolResultSubmission[]; readonly decisions?: readonly ApprovalDecision[] }
    | { readonly mode: 'with_message'; readonly message: string }
    | { readonly mode: 'from_checkpoint'; readonly checkpointId: string }
  );

/** Options of `retry()`. */
export type RetryOptions = RunCallOptions & {
  /** A message appended after the restored point (onAgentRetry's `hasMessage`). */
  readonly message?: string;
  /** The checkpoint to restore (default: the failed run's last step or turn-start checkpoint, else genesis). */
  readonly checkpointId?: string;
};

/** Options of `recover()`. */
export interface RecoverOptions {
  /** The agents that may be recovered, by name (a run of an agent not listed is left alone). */
  readonly agents: readonly AgentConfig<unknown, unknown>[] | ReadonlyMap<string, AgentConfig<unknown, unknown>>;
  /** Hooks for the recovered runs (after each agent's own hooks), and for the children they start; hooks passed to the original execute() are not stored. */
  readonly hooks?: AgentHooks;
  readonly hookManager?: HookManager;
  readonly usageStore?: UsageStore;
  /** At most this many runs (default 100). */
  readonly limit?: number;
}

/**
 * The surface users program against, whatever runs the loop: `JSAgentExecutor` (in-process) implements
 * it, and so must every other runtime (a durable engine, a remote service). The server package and the
 * runtime conformance suite take any `AgentRuntime`. Every entry resolves once the run passed its entry
 * (run-start commit, stream claim, run_started chunk) and rejects with a typed error when the entry
 * failed; a refused entry changes nothing.
 */
export interface AgentRuntime {
  /**
   * Starts a new turn with `input`: a new session, or a new turn on `options.sessionId`. `input` is the
   * user's text, or an array of AI SDK ModelMessages or UIMessages (images and files included; see {@link TurnInput}).
   */
  execute<TState, TOutput>(agent: AgentConfig<TState, TOutput>, input: TurnInput, options?: ExecuteOptions<NoInfer<TState>, NoInfer<TOutput>>): Promise<AgentHandle<TState, TOutput>>;
  /** A chat send: a new turn on an existing session, with the session's registered agent. */
  send(sessionId: string, message: TurnInput, options?: RunCallOptions): Promise<AgentHandle>;
  /** Resumes a suspended session (continue / with_confirmation), starts a turn (with_message) or rewinds (from_checkpoint). */
  resume(sessionId: string, options: ResumeOptions): Promise<AgentHandle>;
  /** Answers one pending client tool call; the session resumes with it. */
  submitToolResult(sessionId: string, toolCallId: string, result: unknown, options?: RunCallOptions & { readonly isError?: boolean }): Promise<AgentHandle>;
  /** Approves one pending call (optionally with edited arguments); the session resumes. */
  approve(sessionId: string, toolCallId: string, options?: RunCallOptions & { readonly input?: unknown; readonly reason?: string; readonly signature?: string }): Promise<AgentHandle>;
  /** Rejects one pending call (the reason goes back to the model); the session resumes. */
  reject(sessionId: string, toolCallId: string, options?: RunCallOptions & { readonly reason?: string; readonly signature?: string }): Promise<AgentHandle>;
  /** Re-runs a failed or interrupted run as a new run from a checkpoint. */
  retry(sessionId: string, options?: RetryOptions): Promise<AgentHandle>;
  /** Stops the session's current run if this runtime runs it; resolves with its result, or undefined when it runs nothing there. */
  stop(sessionId: string, reason?: string): Promise<AgentResult | undefined>;
  /** The same as `stop()`: the spec's name for it. */
  interrupt(sessionId: string, reason?: string): Promise<AgentResult | undefined>;
  /** A session's stream (all its runs' chunks in order), from `options.fromSeq`. */
  readStream(sessionId: string, options?: StreamReadOptions): AsyncIterable<StreamChunk>;
  /** The committed session (state, conversation, current run), or undefined. */
  getSession(sessionId: string): Promise<SessionSnapshot | undefined>;
  /** A run as stored, or undefined. */
  getRun(runId: string): Promise<RunRecord | undefined>;
  /** The session's restorable checkpoints, oldest first. */
  listCheckpoints(sessionId: string): Promise<readonly CheckpointInfo[]>;
  /** Continues runs whose process died. */
  recover(options: RecoverOptions): Promise<AgentHandle[]>;
  /** Adds an agent to the registry that send(), resume(), retry() and recover() look agents up in. */
  registerAgent(agent: AgentConfig<unknown, unknown>): this;
  /** Releases what the runtime holds (class-based hooks' close(), connections it owns). */
  close(): Promise<void>;
}
