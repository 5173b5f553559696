import type { AgentErrorInfo } from './errors.js';
import type { Message } from './messages.js';
import type { StartSignalKind, StatePatch } from './stream.js';

/** The status of a run. */
export type RunStatus = 'running' | 'completed' | 'failed' | 'interrupted' | 'superseded' | 'suspended';

/** The kinds of commit of ARCHITECTURE.md: K1 run start, K2 turn start, K3 step, K4 suspension, K5 terminal. */
export type CommitKind = 'run_start' | 'turn_start' | 'step' | 'suspension' | 'terminal';

/** A turn: one user input and the runs that answer it. */
export interface TurnRecord {
  readonly turnId: string;
  /** The run that opened the turn. */
  readonly firstRunId: string;
  /** The turn's input rows, recorded at K1 so a recovery can re-fire onMessage for them. */
  readonly input: readonly Message[];
  /** True once the turn's start commit (K2) landed: its start work never runs again. */
  readonly startCommitted: boolean;
  /** Index in the conversation of the turn's first input row (set at K2). */
  readonly inputMessageIndex?: number;
}

/** A run as stored. */
export interface RunRecord {
  readonly runId: string;
  readonly sessionId: string;
  readonly turnId: string;
  readonly agentType: string;
  readonly status: RunStatus;
  readonly signal: StartSignalKind;
  readonly startedAt: number;
  readonly endedAt?: number;
  /** Steps committed by this run. */
  readonly stepCount: number;
  readonly output?: unknown;
  readonly error?: AgentErrorInfo;
}

/** A session as stored: the committed conversation and state and its current run. */
export interface SessionSnapshot {
  readonly sessionId: string;
  readonly agentType: string;
  readonly parentSessionId?: string;
  /** The committed custom state (immutable; do not mutate). */
  readonly state: unknown;
  /** The committed conversation (immutable rows). */
  readonly messages: readonly Message[];
  /** The run allowed to write; every other run's commits are refused. */
  readonly currentRunId: string | undefined;
  /** The session's current (latest) turn. */
  readonly turn: TurnRecord | undefined;
  /** Commits applied so far; grows by one per commit. */
  readonly version: number;
  /** Steps committed over the session's whole life. */
  readonly stepCount: number;
  /** How many times the session was resumed (v7 `SessionState.resumeCount`). */
  readonly resumeCount: number;
}

/** The run-start commit (K1): creates the session if needed and makes `runId` its current run. */
export interface BeginRunRequest {
  readonly sessionId: string;
  readonly runId: string;
  readonly agentType: string;
  readonly signal: StartSignalKind;
  /** State for a session that does not exist yet (already validated by the agent's stateSchema). */
  readonly initialState: unknown;
  readonly parentSessionId?: string;
  /** Opens a new turn with these input rows; absent when the run continues the current turn. */
  readonly newTurn?: { readonly turnId: string; readonly input: readonly Message[] };
  readonly startedAt: number;
}

/** What K1 returns: the session as the run must start from. */
export interface BeginRunResult {
  readonly session: SessionSnapshot;
  /** The run that was current before this one (it is now superseded), if it was still running. */
  readonly supersededRunId?: string;
}

/** A checkpoint: a restorable point of a session (after K2, every K3 and K5). */
export interface CheckpointInfo {
  readonly checkpointId: string;
  readonly sessionId: string;
  readonly runId: string;
  readonly kind: 'turn_start' | 'step' | 'state';
  /** The session's step count at this point. */
  readonly stepCount: number;
  /** Conversation length at this point. */
  readonly messageCount: number;
  readonly createdAt: number;
}

/** A checkpoint with its contents. */
export interface Checkpoint extends CheckpointInfo {
  readonly state: unknown;
  readonly messages: readonly Message[];
}

/** One atomic, run-fenced write (K2, K3, K4 or K5). */
export interface Commit {
  readonly sessionId: string;
  readonly runId: string;
  readonly kind: Exclude<CommitKind, 'run_start'>;
  /** For step commits: the run's 0-based step index; `(runId, stepIndex)` is written at most once. */
  readonly stepIndex?: number;
  /** Rows appended to the conversation, in order. */
  readonly appendMessages?: readonly Message[];
  /** The new custom state, when it changed (an immutable value). */
  readonly state?: unknown;
  /** The patches from the previous committed state to `state`, for stores that persist diffs. */
  readonly statePatches?: readonly StatePatch[];
  /** The run's status after this commit (terminal commits, suspension). */
  readonly runStatus?: RunStatus;
  readonly output?: unknown;
  readonly error?: AgentErrorInfo;
  /** Write a checkpoint of this kind with the commit. */
  readonly checkpoint?: CheckpointInfo['kind'];
  readonly committedAt: number;
}

/** What a commit returns. */
export interface CommitReceipt {
  readonly version: number;
  readonly checkpointId?: string;
  readonly messageCount: number;
}

/**
 * The state port. Every write is one atomic operation fenced by the run id: a store refuses a commit
 * from a run that is no longer the session's current run with {@link RunSupersededError}
 * (`state_run_superseded`), and nothing of that commit is applied. Implementations: memory (here),
 * SQLite and Postgres (their own packages); all pass `runStateStoreConformance`.
 */
export interface StateStore {
  /** K1: begins a run (creates the session if needed, records the run and the new turn, fences out older runs). */
  beginRun(request: BeginRunRequest): Promise<BeginRunResult>;
  /** K2–K5: applies a commit atomically, or throws and applies nothing. */
  commit(commit: Commit): Promise<CommitReceipt>;
  /** The committed session, or undefined. */
  loadSession(sessionId: string): Promise<SessionSnapshot | undefined>;
  /** A run as stored, or undefined. */
  getRun(runId: string): Promise<RunRecord | undefined>;
  /** The session's checkpoints, oldest first. */
  listCheckpoints(sessionId: string): Promise<readonly CheckpointInfo[]>;
  /** One checkpoint with its state and conversation, or undefined. */
  loadCheckpoint(sessionId: string, checkpointId: string): Promise<Checkpoint | undefined>;
}
