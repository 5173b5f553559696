import type { AgentErrorInfo } from './errors.js';

/** Fields every stream chunk carries. `seq` is the chunk's offset in its stream, assigned on write. */
export interface ChunkBase {
  /** The stream the chunk belongs to (a session's stream; the session id by default). */
  readonly streamId: string;
  /** The session id (named agentId in the spec's chunk example). */
  readonly agentId: string;
  readonly agentType: string;
  /** The run that wrote the chunk. */
  readonly runId: string;
  /** Milliseconds since the epoch. */
  readonly timestamp: number;
  /** Offset in the stream, assigned by the stream manager (0-based, gap-free). */
  readonly seq: number;
}

/** How a run began: the start signal it fires. */
export type StartSignalKind = 'start' | 'resumed' | 'retry';

/**
 * A person's answer to an approval call, as a resumed run announces it (its `run_started` chunk,
 * onAgentResumed's `decisions`). Never a signature: reading it authorizes nothing.
 */
export interface ApprovalDecisionInfo {
  readonly toolCallId: string;
  readonly toolName: string;
  readonly decision: 'approve' | 'reject';
  /** The reason given with the decision (trimmed; absent when none or blank). A rejection's also reaches the model. */
  readonly reason?: string;
  /** True when the approval came with edited arguments (the call's `tool_start` carries what runs). */
  readonly edited: boolean;
}

/** The run claimed the stream and started (the last part of a run's entry). */
export interface RunStartedChunk extends ChunkBase {
  readonly type: 'run_started';
  readonly signal: StartSignalKind;
  readonly input?: string;
  /** A resumed run begun with answers to approval calls: those decisions, in the order given. */
  readonly decisions?: readonly ApprovalDecisionInfo[];
}
/** A model call attempt starts. */
export interface StepStartChunk extends ChunkBase {
  readonly type: 'step_start';
  readonly stepIndex: number;
  /** 1-based attempt of this step's model call. */
  readonly attempt: number;
}
/** Streamed model text. */
export interface TextDeltaChunk extends ChunkBase {
  readonly type: 'text_delta';
  readonly stepIndex: number;
  readonly delta: string;
}
/**
 * Streamed model reasoning (thinking). `blockEnd` marks the last chunk of a reasoning block: its
 * `delta` is then empty. A reader that does not care about blocks concatenates the deltas.
 */
export interface ReasoningDeltaChunk extends ChunkBase {
  readonly type: 'reasoning_delta';
  readonly stepIndex: number;
  readonly delta: string;
  /** True on the chunk that closes a reasoning block. */
  readonly blockEnd?: boolean;
}
/** A call waits for a human decision (approval). It never carries a signature: reading the stream authorizes nothing (see `signApproval`). */
export interface ToolApprovalRequestChunk extends ChunkBase {
  readonly type: 'tool_approval_request';
  readonly toolCallId: string;
  readonly toolName: string;
  readonly arguments: unknown;
}
/** The run suspended: its part of the stream pauses here until a resume starts a fresh run. */
export interface SuspendedChunk extends ChunkBase {
  readonly type: 'suspended';
  readonly reason: 'client_tool' | 'awaiting_children' | 'step_partial';
  readonly pendingToolCallIds: readonly string[];
}
/** The model asked for tool calls: one envelope per model step (before any of them runs). */
export interface ActionsRequestedChunk extends ChunkBase {
  readonly type: 'actions_requested';
  readonly stepIndex: number;
  readonly calls: readonly { readonly callId: string; readonly toolName: string; readonly args: unknown }[];
}
/** Every call of a step has its result (in the order the model asked for them). */
export interface ActionsCompletedChunk extends ChunkBase {
  readonly type: 'actions_completed';
  readonly stepIndex: number;
  readonly results: readonly { readonly callId: string; readonly toolName: string; readonly output: unknown; readonly isError: boolean; readonly stubbed?: boolean }[];
}
/** Token totals of a run's model calls (retried attempts included). */
export interface RunUsageSummary {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cacheReadTokens: number;
  readonly cacheWriteTokens: number;
  readonly reasoningTokens: number;
  /** Priced with the agent's `limits.pricing`, when it has one. */
  readonly costUsd?: number;
  readonly model?: string;
}
/** A tool call starts executing. */
export interface ToolStartChunk extends ChunkBase {
  readonly type: 'tool_start';
  readonly toolCallId: string;
  readonly toolName: string;
  readonly arguments: unknown;
}
/** A tool call ended (success or failure). */
export interface ToolEndChunk extends ChunkBase {
  readonly type: 'tool_end';
  readonly toolCallId: string;
  readonly toolName: string;
  readonly success: boolean;
  readonly result?: unknown;
  readonly error?: AgentErrorInfo;
  readonly durationMs: number;
  /** True when a dry run answered the call without running the tool (rule 156). */
  readonly stubbed?: boolean;
  /** How many times the tool ran (set for a tool with a retry policy, rule 157). */
  readonly attempts?: number;
}
/** A tool call failed and runs again under its retry policy (rule 157). */
export interface ToolRetryChunk extends ChunkBase {
  readonly type: 'tool_retry';
  readonly toolCallId: string;
  readonly toolName: string;
  /** The 1-based try about to run (2 for the first retry). */
  readonly attempt: number;
  /** Why the previous try failed (its error message). */
  readonly reason: string;
  /** How long the run waits before the try. */
  readonly delayMs: number;
}
/** Custom state changed; `patches` are RFC 6902-like Immer patches against the previous state. */
export interface StatePatchChunk extends ChunkBase {
  readonly type: 'state_patch';
  readonly patches: readonly StatePatch[];
  readonly source: 'tool' | 'hook' | 'system';
  readonly toolName?: string;
}
/** A custom event from a hook or tool (`emitCustom`). */
export interface CustomChunk extends ChunkBase {
  readonly type: 'custom';
  readonly eventName: string;
  readonly data: unknown;
}
/** What one hook invocation decided. */
export type HookDecision = 'allow' | 'block' | 'rewrite' | 'continue' | 'error';

/**
 * One hook invocation, for audit: its decision, why, and how long it took. Written for every steering
 * decision and every handled hook error (and, with `auditHooks: 'all'`, for every invocation).
 */
export interface HookDecisionChunk extends ChunkBase {
  readonly type: 'hook_decision';
  readonly hookPoint: string;
  readonly hookName: string;
  readonly decision: HookDecision;
  readonly reason?: string;
  readonly durationMs: number;
  readonly toolCallId?: string;
  /** The policy that handled an error (`decision: 'error'`). */
  readonly policy?: string;
  readonly errorInfo?: AgentErrorInfo;
}

/** Non-terminal trouble, e.g. a retried 429 (the spec's `run.warning`). */
export interface WarningChunk extends ChunkBase {
  readonly type: 'warning';
  readonly errorInfo: AgentErrorInfo;
}
/** Terminal: the run failed or was interrupted (the spec's `run.failed`); `errorInfo.retryable` says whether to offer a retry. */
export interface ErrorChunk extends ChunkBase {
  readonly type: 'error';
  readonly status: 'failed' | 'interrupted';
  readonly errorInfo: AgentErrorInfo;
  readonly usage?: RunUsageSummary;
}
/** Terminal: the run completed. `state` is absent when onAgentComplete threw (its writes were dropped). */
export interface EndChunk extends ChunkBase {
  readonly type: 'end';
  readonly output: unknown;
  readonly state?: unknown;
  readonly usage?: RunUsageSummary;
}

/**
 * A child run's chunk, forwarded live into its parent's stream: a reader of the parent sees the whole
 * tree. Never terminal for the parent (a child's end is just another chunk here).
 */
export interface SubAgentChunk extends ChunkBase {
  readonly type: 'subagent_chunk';
  /** The child's session id. */
  readonly childSessionId: string;
  /** The parent's tool call that started the child. */
  readonly parentToolCallId: string;
  /** 1 for a child of the root run, 2 for a grandchild, ... */
  readonly depth: number;
  /** The child's chunk as the child's own stream has it. */
  readonly chunk: StreamChunk;
}

/** One Immer patch (`op`, `path`, `value`). */
export interface StatePatch {
  readonly op: 'replace' | 'remove' | 'add';
  readonly path: readonly (string | number)[];
  readonly value?: unknown;
}

/** Every chunk a run writes to its stream. Terminal chunks are `end` and `error`. */
export type StreamChunk =
  | RunStartedChunk
  | StepStartChunk
  | TextDeltaChunk
  | ReasoningDeltaChunk
  | ActionsRequestedChunk
  | ActionsCompletedChunk
  | ToolApprovalRequestChunk
  | SuspendedChunk
  | ToolStartChunk
  | ToolEndChunk
  | ToolRetryChunk
  | StatePatchChunk
  | CustomChunk
  | HookDecisionChunk
  | SubAgentChunk
  | WarningChunk
  | ErrorChunk
  | EndChunk;

/** The `type` of a {@link StreamChunk}. */
export type StreamChunkType = StreamChunk['type'];

/** A chunk as written: the stream manager assigns `seq`. */
export type StreamChunkInput = StreamChunk extends infer C ? (C extends StreamChunk ? Omit<C, 'seq'> : never) : never;

/**
 * True for the chunks that end a run's part of the stream (a suspended run's ends with `suspended`): a
 * stored chunk, or one about to be written.
 */
export function isTerminalChunk<C extends StreamChunk | StreamChunkInput>(chunk: C): chunk is Extract<C, { readonly type: 'end' | 'error' | 'suspended' }> {
  return chunk.type === 'end' || chunk.type === 'error' || chunk.type === 'suspended';
}

/** A run's right to write to a stream. A writer whose claim was taken by a newer run writes nothing. */
export interface StreamWriter {
  /** The offset of this claim's first chunk. */
  readonly startSeq: number;
  /** Appends a chunk; returns false (and writes nothing) when a newer run has claimed the stream. */
  write(chunk: StreamChunkInput): Promise<boolean>;
  /**
   * Optional: appends a chunk without waiting for it. A queued chunk keeps its place in call order
   * with the writer's other chunks, and is stored (and visible to readers) no later than the writer's
   * next `write()`, the next state commit on the same database (a durable store writes the chunks of a
   * step in the step commit's transaction) or the store's flush interval. A chunk written while the
   * writer no longer owns the stream is dropped (and {@link owned} turns false). The writer may keep
   * the chunk object: the caller must not change it afterwards. The run loop queues every chunk but a
   * run's first and its terminal ones when the writer has this method.
   */
  queue?(chunk: StreamChunkInput): void;
  /** True while this writer still owns the stream. */
  readonly owned: boolean;
}

/** Options for reading a stream. */
export interface StreamReadOptions {
  /** Start at this offset (inclusive); 0 by default. Reconnecting clients pass the last seq they saw + 1. */
  readonly fromSeq?: number;
  /** Keep following new chunks (default true). With false, the reader ends at the current end of the stream. */
  readonly follow?: boolean;
  /** Only this run's chunks, ending after its terminal chunk (or once a newer run claimed the stream and all of this run's chunks were read). */
  readonly untilRunEnds?: string;
  /** Stops a following reader. */
  readonly signal?: AbortSignal;
}

/**
 * The stream port: each session has one ordered stream, claimed by its current run. Implementations:
 * {@link InMemoryStreamManager} here; durable ones in the store packages.
 */
export interface StreamManager {
  /** Makes `runId` the stream's writer; the previous claim stops writing. */
  claim(streamId: string, runId: string): Promise<StreamWriter>;
  /** Reads chunks in order, live or after the fact. */
  read(streamId: string, options?: StreamReadOptions): AsyncIterable<StreamChunk>;
  /**
   * Deletes a stream: its chunks and its claim (a writer that still holds it writes nothing more, and
   * following readers end). A later claim starts the stream again at offset 0.
   */
  deleteStream(streamId: string): Promise<void>;
}
