import { AgentError, type AgentErrorInfo } from './errors.js';
import type { Message } from './messages.js';
import type { StartSignalKind, StatePatch } from './stream.js';
import type { UsageEntry } from './usage.js';

/** The status of a run. */
export type RunStatus = 'running' | 'completed' | 'failed' | 'interrupted' | 'superseded' | 'suspended';

/**
 * The kinds of commit (docs/semantics.md): K1 run start, K2 turn start, K3 step, K4 suspension, K5
 * terminal; `resume` records the answers a resumed run delivered (client tool results, approved or
 * rejected calls, children's outcomes) before its first model call.
 */
export type CommitKind = 'run_start' | 'turn_start' | 'step' | 'resume' | 'suspension' | 'terminal';

/** Why a run suspended (an approval reports `client_tool`: docs/rules.md, C17). */
export type SuspensionReason = 'client_tool' | 'awaiting_children' | 'step_partial';

/** A call a suspended run waits on. */
export interface PendingCall {
  readonly toolCallId: string;
  readonly toolName: string;
  /** The call's (validated, possibly rewritten) arguments. */
  readonly input: unknown;
  /** client: the caller answers with submitToolResult; approval: a human approves or rejects; children: sub-agent sessions finish. */
  readonly kind: 'client' | 'approval' | 'children';
  /** For `children`: the child sessions awaited. */
  readonly children?: readonly { readonly sessionId: string; readonly agentType: string }[];
}

/** What a suspension commit (K4) records on the run: the boundary it stopped at. */
export interface SuspensionRecord {
  readonly reason: SuspensionReason;
  readonly pending: readonly PendingCall[];
  /** The step the pending calls belong to. */
  readonly stepIndex: number;
  readonly suspendedAt: number;
}

/** Restore this id to rewind a session to its very beginning (empty conversation, initial state). */
export const GENESIS_CHECKPOINT = 'genesis';

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

/** What a run was started with, kept so that any process can recover it. */
export interface RunOptionsRecord {
  /** The user input of the turn the run began (absent for runs that continue a turn). */
  readonly input?: string;
  readonly userId?: string;
  readonly tags?: readonly string[];
  readonly metadata?: Readonly<Record<string, string>>;
  readonly parentSessionId?: string;
  /** For a sub-agent's run: the parent's tool call that started it. */
  readonly parentToolCallId?: string;
  /** How deep the run is in a tree of sub-agents (absent: 0, a root run). */
  readonly depth?: number;
  /** The run a resume, retry or rewind continues from. */
  readonly previousRunId?: string;
  /** The checkpoint a retry or rewind restored. */
  readonly restoredCheckpointId?: string;
  /** The runtime's record of how the run began (answers to deliver, signal fields); a JSON value stores keep as is. */
  readonly start?: unknown;
  /** A dry run (rule 156): side-effecting tools were answered without running; runs that continue it stay dry. */
  readonly dryRun?: boolean;
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
  /** The execution attempt: 1 at K1, +1 each time a process claims the run for recovery. Commits are fenced by it. */
  readonly epoch: number;
  /** Who holds the lease (a process id), and until when (ms since the epoch). */
  readonly leaseOwner: string;
  readonly leaseExpiresAt: number;
  readonly options: RunOptionsRecord;
  /** Set by the suspension commit of a suspended run. */
  readonly suspension?: SuspensionRecord;
  /** A stop another process asked for (see {@link StateStore.requestStop}); the first request is kept. */
  readonly stopRequest?: StopRequest;
}

/** A request to stop a running run, made through the store by any process (`StateStore.requestStop`). */
export interface StopRequest {
  /** Why (at most 1,000 characters are kept). */
  readonly reason: string;
  /** When it was asked for (ms since the epoch). */
  readonly requestedAt: number;
}

/** A run's right to write: commits must carry its runId and epoch. */
export interface RunLease {
  readonly runId: string;
  readonly epoch: number;
  readonly owner: string;
  readonly expiresAt: number;
  /** Set on a renewed lease when another process asked for the run to stop: the holder stops the run. */
  readonly stopRequest?: StopRequest;
}

/**
 * What the journal records between two step commits, so that a recovered run replays work instead of
 * doing it again: the staged start-signal marker, a model reply, a side-effecting tool call's start and
 * result, a terminal hook's outcome.
 */
export type JournalKind = 'start_signal' | 'model_reply' | 'call_started' | 'call_result' | 'terminal_hook' | 'child_spawn';

/** One journal record. `key` is unique per run (e.g. `call_result:3:call_abc`). */
export interface JournalEntry {
  readonly runId: string;
  readonly epoch: number;
  /** The step it belongs to (the run's step count when it was written). */
  readonly stepIndex: number;
  readonly kind: JournalKind;
  readonly key: string;
  /** A JSON value. */
  readonly data: unknown;
  readonly at: number;
}

/** A run whose lease expired while it was running: its process is presumed dead. */
export interface RecoverableRun {
  readonly sessionId: string;
  readonly runId: string;
  readonly agentType: string;
  readonly epoch: number;
  readonly leaseOwner: string;
  readonly leaseExpiresAt: number;
}

/** Options of {@link StateStore.claimRun}. */
export interface ClaimOptions {
  /** Claim even though the run's lease has not expired (the caller knows its holder is gone). */
  readonly takeover?: boolean;
}

/** What claiming a run for recovery returns: everything needed to continue it. */
export interface ClaimedRun {
  readonly session: SessionSnapshot;
  readonly run: RunRecord;
  readonly lease: RunLease;
  /** The journal of the run's uncommitted work, oldest first. */
  readonly journal: readonly JournalEntry[];
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
  /**
   * Rewinds the session to this checkpoint in the same atomic step (messages after it are dropped, its
   * state restored; `GENESIS_CHECKPOINT` rewinds to the start). When the checkpoint precedes the current
   * turn's input rows, the turn's start commit is discarded (startCommitted becomes false).
   */
  readonly restoreCheckpointId?: string;
  /**
   * A precondition checked inside K1: the session's current run must be this one, with this status
   * (e.g. the suspended run a resume answers). Otherwise nothing is written and K1 throws an AgentError
   * `state_conflict`, so two concurrent resumes cannot both deliver the same answers.
   */
  readonly expect?: { readonly currentRunId: string | undefined; readonly status: RunStatus };
  /** Opens a new turn with these input rows; absent when the run continues the current turn. */
  readonly newTurn?: { readonly turnId: string; readonly input: readonly Message[] };
  readonly startedAt: number;
  /** The process that runs it, and how long its lease lasts before it must be renewed. */
  readonly leaseOwner: string;
  readonly leaseMs: number;
  readonly options: RunOptionsRecord;
}

/** What K1 returns: the session as the run must start from. */
export interface BeginRunResult {
  readonly session: SessionSnapshot;
  /** The run that was current before this one (it is now superseded), if it was still running. */
  readonly supersededRunId?: string;
  readonly lease: RunLease;
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
  /** The run's epoch (its lease generation); a commit from an older epoch is refused like a superseded run's. */
  readonly epoch: number;
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
  /** The boundary a suspension commit (runStatus `suspended`) stopped at; stored on the run. */
  readonly suspension?: SuspensionRecord;
  /** Usage to record atomically with the commit (only when this store is also the run's usage store). */
  readonly usage?: readonly UsageEntry[];
  readonly committedAt: number;
}

/** What a commit returns. */
export interface CommitReceipt {
  readonly version: number;
  readonly checkpointId?: string;
  readonly messageCount: number;
}

/**
 * The state port. Every write is one atomic operation fenced by the run id and epoch: a store refuses a
 * write from a run that is no longer the session's current run, or from an older epoch of it, with
 * {@link RunSupersededError} (`state_run_superseded`), and nothing of that write is applied.
 * Implementations: memory (here), SQLite and Postgres (their own packages); all pass
 * `runStateStoreConformance` from `@helix-agents/sdk/conformance`. What a write does is decided by the
 * session rules (`planBeginRun`, `planCommit`, ... of `@helix-agents/sdk/store`); a store reads the
 * records, asks the rules, and writes the plan atomically.
 */
export interface StateStore {
  /** K1: begins a run (creates the session if needed, records the run, its lease and the new turn, fences out older runs). */
  beginRun(request: BeginRunRequest): Promise<BeginRunResult>;
  /**
   * K2–K5: applies a commit atomically, or throws and applies nothing. A step commit also drops the
   * journal entries of that step; a terminal commit drops the run's whole journal and ends its lease.
   */
  commit(commit: Commit): Promise<CommitReceipt>;
  /** Extends the lease of a running run; throws RunSupersededError when the run is no longer current or its epoch moved on. */
  renewLease(runId: string, epoch: number, leaseMs: number, now: number): Promise<RunLease>;
  /** Runs still current and `running` whose lease expired before `now`, oldest first. */
  listRecoverable(now: number, limit?: number): Promise<readonly RecoverableRun[]>;
  /**
   * Takes over a running run whose lease expired (its process died): the epoch goes up by one, so any
   * write of the old process is refused from then on. Throws an AgentError `state_run_not_recoverable`
   * when the run is not current, not running, or its lease has not expired. With `takeover`, the lease
   * need not have expired: a durable engine that has already decided the old process is gone (it owns the
   * run's workflow now) claims at once; the epoch still goes up, so the old process is fenced out the same way.
   */
  claimRun(runId: string, owner: string, leaseMs: number, now: number, options?: ClaimOptions): Promise<ClaimedRun>;
  /** Records a journal entry, fenced like a commit. Writing a key that exists keeps the first entry and returns it. */
  appendJournal(entry: JournalEntry): Promise<JournalEntry>;
  /** The run's journal (uncommitted work), oldest first. */
  loadJournal(runId: string): Promise<readonly JournalEntry[]>;
  /**
   * Asks for a running run to stop, from any process: the request is recorded on the run; the process
   * holding the run's lease sees it at its next renewal (`RunLease.stopRequest`) and stops the run as
   * `handle.stop()` does, and a process that claims the run for recovery finds it on the claimed run and
   * stops it at once. Not fenced (the asker holds no lease). The first request is kept; a run that is not
   * running is left as it is. Returns the run as stored afterwards, or undefined when there is none.
   */
  requestStop(runId: string, request: StopRequest): Promise<RunRecord | undefined>;
  /** The committed session, or undefined. */
  loadSession(sessionId: string): Promise<SessionSnapshot | undefined>;
  /** A run as stored, or undefined. */
  getRun(runId: string): Promise<RunRecord | undefined>;
  /** The session's checkpoints, oldest first. */
  listCheckpoints(sessionId: string): Promise<readonly CheckpointInfo[]>;
  /** One checkpoint with its state and conversation, or undefined. */
  loadCheckpoint(sessionId: string, checkpointId: string): Promise<Checkpoint | undefined>;
  /**
   * Deletes a session and everything it holds (its runs, their journals and committed steps, its
   * checkpoints, messages and usage entries); resolves true when there was one. Refuses (an AgentError
   * `session_running`, nothing deleted) while the session's current run is running. The session's
   * stream is the stream manager's: delete it there too (`JSAgentExecutor.deleteSession` does both).
   */
  deleteSession(sessionId: string): Promise<boolean>;
}

/** A store's synchronous commit: the same write as its `commit`, applied before it returns. */
export type CommitNow = (this: StateStore, commit: Commit) => CommitReceipt;

const COMMIT_NOW = Symbol('helix.commitNow');

/**
 * Marks `commit` (a store class's `commit` method) as having a synchronous form, `now`: the run loop then
 * commits a step without a promise. The mark is on the method itself, so a subclass that overrides
 * `commit`, or a wrapper (a Proxy, a bound or decorated method) puts a method without it in its place,
 * and the loop goes through that `commit` as it should. For stores whose writes are synchronous (memory).
 */
export function offerCommitNow(commit: StateStore['commit'], now: CommitNow): void {
  Object.defineProperty(commit, COMMIT_NOW, { value: now });
}

/** The synchronous form of `store`'s own `commit`, when that method offers one ({@link offerCommitNow}). */
export function commitNowOf(store: StateStore): CommitNow | undefined {
  return (store.commit as { readonly [COMMIT_NOW]?: CommitNow })[COMMIT_NOW];
}

/** The refusal of a K1 whose `expect` precondition does not hold (`state_conflict`); the session rules refuse with this one. */
export function stateConflictError(request: BeginRunRequest, currentRunId: string | undefined, status: string | undefined): AgentError {
  return new AgentError(
    'state_conflict',
    `Session ${request.sessionId} changed: its current run is ${currentRunId ?? 'none'} (${status ?? 'no status'}), not ${request.expect?.currentRunId ?? 'none'} (${request.expect?.status ?? ''}).`,
    { details: { sessionId: request.sessionId, currentRunId, status, expected: request.expect } },
  );
}

/**
 * What a store keeps of finished work (docs/retention.md). Every store takes the same policy: the memory
 * stores, `openSqliteStores` and `openPostgresStores`. Each field left out keeps today's behaviour
 * (everything is kept until the session is deleted).
 *
 * One rule is not a choice, and needs no field: a run's journal goes once the run can never write
 * again. Its terminal commit (K5) drops it, a supersede drops it, and a K1 that replaces the session's
 * current run drops the replaced run's (a suspended run answered by a resume, or left by a new turn).
 * A suspended run that is still its session's current run keeps its journal.
 */
export interface RetentionPolicy {
  /**
   * Keep at most this many checkpoints per session, the newest (default: all). The commit that adds a
   * checkpoint drops the oldest ones beyond the limit. A dropped checkpoint can no longer be restored
   * (a rewind or retry to it is refused with `state_not_found`); a rewind to genesis always can. An
   * integer of at least 1.
   */
  readonly keepCheckpoints?: number;
  /**
   * Drop the stream chunks of finished runs once they are this old, in ms (default: never). A run's part
   * of a stream is finished when it ended with an `end` or `error` chunk, or when a later run claimed the
   * stream; a suspended run that still owns its stream is not finished. The chunks of a running run are
   * never dropped. Chunks go when `prune()` runs (a caller, a scheduler, or `pruneIntervalMs`).
   */
  readonly chunkTtlMs?: number;
  /** Run `prune()` on a timer every this many ms (default: never; the timer does not keep the process alive). */
  readonly pruneIntervalMs?: number;
}

/** A {@link RetentionPolicy} with its defaults filled in (Infinity: keep everything). */
export interface ResolvedRetention {
  readonly keepCheckpoints: number;
  readonly chunkTtlMs: number;
  readonly pruneIntervalMs: number;
}

/**
 * Checks a {@link RetentionPolicy} and fills in its defaults. Throws an AgentError `config_invalid`
 * naming the field for a value that is not a positive whole number (`keepCheckpoints`,
 * `pruneIntervalMs`) or not a number of at least 0 (`chunkTtlMs`).
 */
export function resolveRetention(policy: RetentionPolicy | undefined): ResolvedRetention {
  const field = (name: keyof RetentionPolicy, min: number, integer: boolean): number => {
    const value = policy?.[name];
    if (value === undefined) return Number.POSITIVE_INFINITY;
    const ok = typeof value === 'number' && !Number.isNaN(value) && value >= min && (!integer || Number.isInteger(value) || value === Number.POSITIVE_INFINITY);
    if (!ok) {
      throw new AgentError('config_invalid', `retention.${name} must be ${integer ? 'a whole number' : 'a number'} of at least ${min}; got ${String(value)}.`, {
        hint: 'See RetentionPolicy: leave a field out to keep everything.',
        details: { field: `retention.${name}`, value: String(value) },
      });
    }
    return value;
  };
  return { keepCheckpoints: field('keepCheckpoints', 1, true), chunkTtlMs: field('chunkTtlMs', 0, false), pruneIntervalMs: field('pruneIntervalMs', 1, false) };
}

/** What one `prune()` dropped. */
export interface PruneReport {
  /** Stream chunks of finished runs, older than `chunkTtlMs`. */
  readonly chunks: number;
  /** Journal entries of runs that can never write again (left by older versions of the store). */
  readonly journalEntries: number;
  /**
   * Bookkeeping rows nothing reads any more (SQLite: commit rows that are neither a session's head, its
   * genesis, a checkpoint nor the holder of one's state; Postgres: the committed-step rows of runs that
   * are no longer current). 0 for the memory stores, which drop theirs as they go.
   */
  readonly records: number;
}

/** A store that drops finished work by its {@link RetentionPolicy} when asked. */
export interface Prunable {
  /** Drops what the policy no longer keeps, as of `now` (ms since the epoch; `Date.now()` by default). */
  prune(now?: number): Promise<PruneReport>;
}

/** Prunes each store in turn (a stream manager and a state store, say) and adds up what they dropped. */
export async function pruneAll(stores: readonly Prunable[], now: number = Date.now()): Promise<PruneReport> {
  let chunks = 0;
  let journalEntries = 0;
  let records = 0;
  for (const store of stores) {
    const report = await store.prune(now);
    chunks += report.chunks;
    journalEntries += report.journalEntries;
    records += report.records;
  }
  return { chunks, journalEntries, records };
}

/**
 * Runs `prune` every `intervalMs` (when finite) on an unref'd timer, so it never keeps a process alive;
 * a failed prune is reported to `onError` and the timer goes on. Returns the function that stops it.
 */
export function schedulePrune(prune: () => Promise<unknown>, intervalMs: number, onError: (error: unknown) => void = () => undefined): () => void {
  if (!Number.isFinite(intervalMs)) return () => undefined;
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    prune().then(
      () => (busy = false),
      (error: unknown) => {
        busy = false;
        onError(error);
      },
    );
  }, intervalMs);
  timer.unref?.();
  return () => clearInterval(timer);
}
