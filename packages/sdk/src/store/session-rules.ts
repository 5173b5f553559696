/**
 * The session rules: the one place that decides what a state-store write does to a session. Every
 * function here is pure (no I/O, no clock, no randomness, inputs are never mutated): given the records
 * a store read and the requested transition, it returns either a plan (the new records and a short list
 * of storage effects) or a typed refusal that carries the AgentError to throw. A store reads the records,
 * calls the rule, and writes the plan atomically under a compare-and-set of what it read; it decides
 * nothing itself. Stores differ only in how they store (rows, prefixes, JSON columns), never in what a
 * transition means.
 *
 * The transitions: {@link planBeginRun} (K1, with the `expect` precondition, a rewind to a checkpoint or
 * genesis, and superseding the running previous run), {@link planCommit} (K2 turn start, K3 step, K4
 * suspension, K5 terminal, and the resume commit), {@link planRenewLease}, {@link planClaimRun},
 * {@link planRequestStop} and {@link planJournalAppend}; {@link checkFence} is the run fence they share.
 */
import { AgentError, RunSupersededError, StateCommitError } from '../errors.js';
import type { AgentErrorInfo } from '../errors.js';
import type { Message } from '../messages.js';
import type {
  BeginRunRequest,
  BeginRunResult,
  CheckpointInfo,
  Commit,
  JournalEntry,
  RunLease,
  RunRecord,
  RunStatus,
  SessionSnapshot,
  StopRequest,
  SuspensionRecord,
  TurnRecord,
} from '../store.js';
import { GENESIS_CHECKPOINT, stateConflictError } from '../store.js';
import type { Writable } from '../writable.js';

// ---- records ----

/**
 * The committed step indexes of a run, as sorted, disjoint, inclusive ranges: `[[0, 41]]` after 42 steps
 * committed in order. Steps come in order, so the set is almost always one range. Stores may keep it as
 * JSON as is.
 */
export type StepSet = readonly (readonly [number, number])[];

/** The step set of a run that committed no step. */
export const NO_STEPS: StepSet = Object.freeze([]);

/**
 * The session header: what a store keeps of a session besides its conversation rows, its state values
 * and its checkpoints. Every rule reads and returns this record; `version` grows by one per write.
 */
export interface SessionHeader {
  readonly sessionId: string;
  readonly agentType: string;
  readonly parentSessionId?: string;
  /** The run allowed to write; every other run's commits are refused. */
  readonly currentRunId: string | undefined;
  /** The session's current (latest) turn. */
  readonly turn: TurnRecord | undefined;
  /** Writes applied so far (K1 and every commit); 0 before the session's first K1. */
  readonly version: number;
  /** Steps committed over the session's whole life. */
  readonly stepCount: number;
  /** Rows in the committed conversation. */
  readonly messageCount: number;
  /** How many runs began with the `resumed` signal. */
  readonly resumeCount: number;
}

/**
 * What the rules read of a run. Each rule takes only the fields it needs (a `Pick` of this), so that a
 * store reads no more than that.
 */
export interface RunHeader {
  readonly runId: string;
  readonly sessionId: string;
  readonly status: RunStatus;
  /** The execution attempt; writes are fenced by it. */
  readonly epoch: number;
  /** Steps committed by this run. */
  readonly stepCount: number;
  /** The step indexes this run committed (each at most once). */
  readonly committedSteps: StepSet;
  readonly leaseOwner: string;
  readonly leaseExpiresAt: number;
  /** A stop another process asked for (the holder of the lease learns it at its next renewal). */
  readonly stopRequest?: StopRequest;
}

/** The run fence: a write must come from the session's current run, at its epoch, while it runs. */
export type RunFence = Pick<RunHeader, 'runId' | 'status' | 'epoch'>;

/** What a commit reads and changes of the run that commits. */
export type CommittingRun = Pick<RunHeader, 'runId' | 'status' | 'epoch' | 'stepCount' | 'committedSteps'>;

/**
 * A checkpoint a rewind can restore, as the store found it in the session. A store passes its own record
 * (a subtype carrying its storage keys) and gets the same object back in {@link Rewind}.
 */
export interface RestorePoint {
  readonly checkpointId: string;
  /** Conversation length at the checkpoint. */
  readonly messageCount: number;
}

// ---- refusals ----

/** Why a transition was refused. */
export type RefusalReason =
  /** K1's `expect` precondition does not hold (`state_conflict`). */
  | 'expect_failed'
  /** K1 without a new turn on a session that has no turn (`state_commit_failed`). */
  | 'no_turn'
  /** K1 restores a checkpoint the session does not have (`state_not_found`). */
  | 'checkpoint_not_found'
  /** A commit to a session that does not exist (`state_commit_failed`). */
  | 'no_session'
  /** A lease renewal or journal entry of a run that was never begun (`state_commit_failed`). */
  | 'no_run'
  /** The run is not the session's current run, not at this epoch, or not running (`state_run_superseded`). */
  | 'superseded'
  /** A step commit without an index, or of a step the run already committed (`state_commit_failed`). */
  | 'step_not_committable'
  /** claimRun of a run that is unknown, not running, not current, or whose lease has not expired (`state_run_not_recoverable`). */
  | 'not_recoverable';

/** A refused transition: nothing may be written; the store throws `error`. */
export interface Refusal {
  readonly ok: false;
  readonly reason: RefusalReason;
  readonly error: AgentError;
}

/** A rule's answer: a plan to write (`ok: true`), or a refusal that carries no record at all. */
export type Decision<P> = ({ readonly ok: true } & P) | Refusal;

function refuse(reason: RefusalReason, error: AgentError): Refusal {
  return { ok: false, reason, error };
}

/** The plan of a decision, or throws the refusal's error (for stores that act on a decision at once). */
export function orThrow<P>(decision: Decision<P>): { readonly ok: true } & P {
  if (!decision.ok) throw decision.error;
  return decision;
}

/** The refusal of a write to a session that does not exist. */
function noSession(sessionId: string): Refusal {
  return refuse('no_session', new StateCommitError(`Session ${sessionId} does not exist.`));
}

/** The refusal of a write by a run that was never begun. */
function noRun(runId: string): Refusal {
  return refuse('no_run', new StateCommitError(`Run ${runId} was never begun.`));
}

function noTurn(sessionId: string): Refusal {
  return refuse('no_turn', new StateCommitError(`Session ${sessionId} has no turn to continue; start a run with a new turn.`));
}

function notRecoverable(runId: string, why: string): Refusal {
  return refuse('not_recoverable', new AgentError('state_run_not_recoverable', `Run ${runId} cannot be claimed: ${why}.`, { details: { runId } }));
}

function checkpointNotFound(sessionId: string, checkpointId: string): Refusal {
  return refuse('checkpoint_not_found', new AgentError('state_not_found', `Session ${sessionId} has no checkpoint ${checkpointId}.`, { details: { checkpointId } }));
}

// ---- step sets ----

/** True when `step` is in the set. */
export function hasStep(steps: StepSet, step: number): boolean {
  for (const [lo, hi] of steps) if (step >= lo && step <= hi) return true;
  return false;
}

/** A new set: `steps` with `step` added (extending the last range in the usual, in-order case). */
export function withStep(steps: StepSet, step: number): StepSet {
  const last = steps.at(-1);
  if (last && step === last[1] + 1) {
    const extended = steps.slice();
    extended[extended.length - 1] = [last[0], step];
    return extended;
  }
  const all = [...steps, [step, step] as const].sort((a, b) => a[0] - b[0]);
  const merged: [number, number][] = [];
  for (const [lo, hi] of all) {
    const previous = merged.at(-1);
    if (previous && lo <= previous[1] + 1) previous[1] = Math.max(previous[1], hi);
    else merged.push([lo, hi]);
  }
  return merged;
}

/** The step set of these committed indexes (any order, duplicates allowed). */
export function stepSetOf(indexes: readonly number[]): StepSet {
  let steps: StepSet = NO_STEPS;
  for (const index of [...indexes].sort((a, b) => a - b)) if (!hasStep(steps, index)) steps = withStep(steps, index);
  return steps;
}

// ---- the fence ----

/** What the fence reads: the session's current run id and the run the write names. */
export interface FenceInput {
  readonly sessionId: string;
  /** The session's current run id (undefined when the session has none, or does not exist). */
  readonly currentRunId: string | undefined;
  /** The run the write names, as stored (undefined when there is no such run). */
  readonly run: RunFence | undefined;
}

/**
 * The run fence every write after K1 passes: the run must be the session's current run, at the epoch the
 * write carries, and still running. Returns the refusal (RunSupersededError, `state_run_superseded`)
 * when it is not, else undefined.
 */
export function checkFence(input: FenceInput, runId: string, epoch: number): Refusal | undefined {
  return fenceRefusal(input.sessionId, input.currentRunId, input.run, runId, epoch);
}

/** {@link checkFence} with its input spread out (the hot path of every commit allocates nothing for it). */
function fenceRefusal(sessionId: string, currentRunId: string | undefined, run: RunFence | undefined, runId: string, epoch: number): Refusal | undefined {
  if (currentRunId !== runId || !run || run.runId !== runId || run.epoch !== epoch || run.status !== 'running') {
    return refuse('superseded', new RunSupersededError(sessionId, runId, currentRunId));
  }
  return undefined;
}

// ---- K1: begin a run ----

/** What {@link planBeginRun} reads. */
export interface BeginRunInput<P extends RestorePoint = RestorePoint> {
  /** The session's header, or undefined when the session does not exist yet. */
  readonly session: SessionHeader | undefined;
  /** The session's current run, when it has one. */
  readonly currentRun: Pick<RunHeader, 'runId' | 'status' | 'stepCount'> | undefined;
  /**
   * The checkpoint `request.restoreCheckpointId` names, as the store found it among this session's
   * checkpoints; undefined when the session has no such checkpoint. Ignored when the request restores
   * nothing or restores genesis.
   */
  readonly restorePoint?: P | undefined;
}

/**
 * A rewind, applied with the K1 that asks for it: cut the conversation to `messageCount` rows, drop the
 * checkpoints after the target (all of them for genesis: they describe a discarded branch), and restore
 * the target's state (the session's initial state for genesis).
 */
export type Rewind<P extends RestorePoint = RestorePoint> =
  | { readonly to: 'genesis'; readonly messageCount: 0 }
  | { readonly to: 'checkpoint'; readonly checkpoint: P; readonly messageCount: number };

/** A run to mark superseded (status `superseded`, `endedAt`, its step count kept) and whose journal to drop. */
export interface Supersede {
  readonly runId: string;
  readonly endedAt: number;
  readonly stepCount: number;
}

/** What K1 writes. */
export interface BeginRunPlan<P extends RestorePoint = RestorePoint> {
  /** The session's new header. */
  readonly session: SessionHeader;
  /** True when the session did not exist: create it, with `request.initialState` as its state and as its genesis state. */
  readonly create: boolean;
  /** The new run, to record (status running, epoch 1, the lease). */
  readonly run: RunRecord;
  /** The new run as the rules read it in its next writes. */
  readonly runHeader: RunHeader;
  readonly lease: RunLease;
  /** Set when the K1 rewinds the session. */
  readonly rewind?: Rewind<P>;
  /** Set when the previous current run was still running. */
  readonly supersede?: Supersede;
  /**
   * The run whose journal to drop: the session's previous current run, whatever its status. Once
   * replaced it can never commit, append or be claimed again, so its journal has no reader left (a
   * resume reads the suspended run's record, never its journal).
   */
  readonly dropJournalOf?: string;
}

/**
 * K1: begins `request.runId` as the session's current run. Refusals, in this order, before anything is
 * written: the `expect` precondition (the current run and its status must be the expected ones;
 * `state_conflict`), a new session without a new turn ("no turn to continue"), a checkpoint the session
 * does not have (`state_not_found`; a new session has only genesis), an existing session without a turn
 * and no new turn.
 *
 * The plan: a new turn (its start not committed) or the current one; a rewind cuts the conversation,
 * drops later checkpoints and restores state, and when it goes back to before the turn's input rows it
 * discards the turn's start commit (startCommitted false, inputMessageIndex dropped), so the run that
 * follows owes the turn's start work again (docs/rules.md, rules 21 and 22); a previous run
 * still running is superseded; the previous current run's journal is dropped (a replaced run never
 * writes again, so nothing reads it: docs/retention.md); the version grows by one, a `resumed` signal
 * counts a resume, the step count is kept, and the K1 sets the agent type.
 */
export function planBeginRun<P extends RestorePoint>(input: BeginRunInput<P>, request: BeginRunRequest): Decision<BeginRunPlan<P>> {
  const { session } = input;
  const conflict = expectRefusal(input, request);
  if (conflict) return conflict;
  if (!session && !request.newTurn) return noTurn(request.sessionId);
  const rewind = rewindOf(input, request);
  if (rewind && 'error' in rewind) return rewind;
  const turn = turnOf(session, request, rewind);
  if (!turn) return noTurn(request.sessionId);
  const { run, runHeader, lease } = newRun(request, turn);
  const supersede = supersedeOf(input, request);
  const previous = session?.currentRunId;
  const dropJournalOf = previous !== undefined && previous !== request.runId ? previous : undefined;
  return {
    ok: true,
    session: beginHeader(session, request, turn, rewind),
    create: !session,
    run,
    runHeader,
    lease,
    ...(rewind ? { rewind } : {}),
    ...(supersede ? { supersede } : {}),
    ...(dropJournalOf === undefined ? {} : { dropJournalOf }),
  };
}

/** K1's `expect` precondition: the session's current run and its status must be the expected ones. */
function expectRefusal(input: BeginRunInput<RestorePoint>, request: BeginRunRequest): Refusal | undefined {
  const expected = request.expect;
  if (!expected) return undefined;
  const current = input.session?.currentRunId;
  const run = input.currentRun;
  const status = current !== undefined && run?.runId === current ? run.status : undefined;
  if (current === expected.currentRunId && status === expected.status) return undefined;
  return refuse('expect_failed', stateConflictError(request, current, status));
}

/** The rewind a K1 asks for (genesis, or a checkpoint the session has), or the refusal of an unknown checkpoint. */
function rewindOf<P extends RestorePoint>(input: BeginRunInput<P>, request: BeginRunRequest): Rewind<P> | Refusal | undefined {
  const restoreId = request.restoreCheckpointId;
  if (restoreId === undefined) return undefined;
  if (restoreId === GENESIS_CHECKPOINT) return { to: 'genesis', messageCount: 0 };
  const { session } = input;
  // A new session is at its genesis: no other checkpoint exists in it.
  const point = session ? input.restorePoint : undefined;
  if (!session || !point || point.checkpointId !== restoreId) return checkpointNotFound(request.sessionId, restoreId);
  return { to: 'checkpoint', checkpoint: point, messageCount: Math.min(session.messageCount, point.messageCount) };
}

/**
 * The turn the run belongs to: a new one (its start not committed), or the current one. A rewind to
 * before the turn's input rows discards the turn's start commit (startCommitted false,
 * inputMessageIndex dropped).
 */
function turnOf(session: SessionHeader | undefined, request: BeginRunRequest, rewind: Rewind<RestorePoint> | undefined): TurnRecord | undefined {
  if (request.newTurn) return { turnId: request.newTurn.turnId, firstRunId: request.runId, input: request.newTurn.input, startCommitted: false };
  const turn = session?.turn;
  if (!turn || !rewind || !turn.startCommitted || (turn.inputMessageIndex ?? 0) < rewind.messageCount) return turn;
  return { turnId: turn.turnId, firstRunId: turn.firstRunId, input: turn.input, startCommitted: false };
}

/** The previous run to supersede: the session's current run, if it is still running. */
function supersedeOf(input: BeginRunInput<RestorePoint>, request: BeginRunRequest): Supersede | undefined {
  const { session, currentRun } = input;
  if (!session || !currentRun || currentRun.runId !== session.currentRunId || currentRun.status !== 'running') return undefined;
  return { runId: currentRun.runId, endedAt: request.startedAt, stepCount: currentRun.stepCount };
}

/** The session's header after K1. */
function beginHeader(session: SessionHeader | undefined, request: BeginRunRequest, turn: TurnRecord, rewind: Rewind<RestorePoint> | undefined): SessionHeader {
  // A new session takes the request's parent; an existing one keeps its own.
  const parentSessionId = session ? session.parentSessionId : request.parentSessionId;
  const before = session ?? { version: 0, stepCount: 0, messageCount: 0, resumeCount: 0 };
  return {
    sessionId: request.sessionId,
    agentType: request.agentType,
    ...(parentSessionId === undefined ? {} : { parentSessionId }),
    currentRunId: request.runId,
    turn,
    version: before.version + 1,
    stepCount: before.stepCount,
    messageCount: rewind ? rewind.messageCount : before.messageCount,
    resumeCount: before.resumeCount + (request.signal === 'resumed' ? 1 : 0),
  };
}

/** The run K1 begins: running, at epoch 1, with its lease. */
function newRun(request: BeginRunRequest, turn: TurnRecord): { run: RunRecord; runHeader: RunHeader; lease: RunLease } {
  const lease: RunLease = { runId: request.runId, epoch: 1, owner: request.leaseOwner, expiresAt: request.startedAt + request.leaseMs };
  const run: RunRecord = {
    runId: request.runId,
    sessionId: request.sessionId,
    turnId: turn.turnId,
    agentType: request.agentType,
    status: 'running',
    signal: request.signal,
    startedAt: request.startedAt,
    stepCount: 0,
    epoch: 1,
    leaseOwner: lease.owner,
    leaseExpiresAt: lease.expiresAt,
    options: request.options,
  };
  const runHeader: RunHeader = { runId: run.runId, sessionId: run.sessionId, status: 'running', epoch: 1, stepCount: 0, committedSteps: NO_STEPS, leaseOwner: lease.owner, leaseExpiresAt: lease.expiresAt };
  return { run, runHeader, lease };
}

/** What K1 returns to its caller, given the plan and the session snapshot the store built from it. */
export function beginRunResult(plan: BeginRunPlan<RestorePoint>, session: SessionSnapshot): BeginRunResult {
  return { session, lease: plan.lease, ...(plan.supersede ? { supersededRunId: plan.supersede.runId } : {}) };
}

// ---- K2–K5: commits ----

/** What {@link planCommit} reads. */
export interface CommitInput {
  /** The session's header, or undefined when the session does not exist. */
  readonly session: SessionHeader | undefined;
  /** The run the commit names, as stored (a store may pass the session's current run instead: a different run fails the fence). */
  readonly run: CommittingRun | undefined;
}

/** The fields of the run record a commit sets (a field is present only when it changes). */
export interface RunPatch {
  readonly status?: RunStatus;
  readonly endedAt?: number;
  readonly output?: unknown;
  readonly error?: AgentErrorInfo;
  readonly suspension?: SuspensionRecord;
}

/** A checkpoint to write with the commit: the session's state after the commit and the conversation prefix of `messageCount` rows. The store names it. */
export type CheckpointDraft = Omit<CheckpointInfo, 'checkpointId'>;

/** Which journal entries of the run a commit drops: all of them, or those of steps up to `throughStep`. */
export type JournalDrop = { readonly runId: string; readonly all: true } | { readonly runId: string; readonly all: false; readonly throughStep: number };

/** What a commit writes. `commit.state`, `commit.statePatches` and `commit.usage` are written as given. */
export interface CommitPlan {
  /** The session's new header (version + 1, counters, the turn). */
  readonly session: SessionHeader;
  /** The committing run after the commit (step count and set, status). */
  readonly run: CommittingRun;
  /** Set when the run record changes beyond its step counters (status, end, output, error, suspension). */
  readonly runPatch?: RunPatch;
  /** Rows to append, the first at index `at` (the conversation's length before the commit). */
  readonly append: { readonly at: number; readonly messages: readonly Message[] };
  /** The step index to record as committed, for a step commit. */
  readonly stepIndex?: number;
  /** True when the turn changed (a turn-start commit): the store writes `session.turn`. */
  readonly turnChanged: boolean;
  /** A checkpoint to write with the commit. */
  readonly checkpoint?: CheckpointDraft;
  /** Journal entries to drop with the commit. */
  readonly dropJournal?: JournalDrop;
}

/**
 * K2–K5 and the resume commit. Refusals: a session that does not exist, the run fence (not the current
 * run, another epoch, or not running: `state_run_superseded`), a step commit without an index or of a
 * step this run already committed (a step index is committed at most once per run).
 *
 * The plan: rows append at the end; a step commit counts a step on the session and on the run and drops
 * the journal entries of that step and older ones; a turn-start commit marks the turn's start committed
 * at the index of its first appended row; `runStatus`, `output`, `error` and `suspension` set those run
 * fields; a terminal commit sets `endedAt` and drops the run's whole journal; the version grows by one.
 */
export function planCommit(input: CommitInput, commit: Commit): Decision<CommitPlan> {
  const { session, run } = input;
  if (!session) return noSession(commit.sessionId);
  const fenced = fenceRefusal(session.sessionId, session.currentRunId, run, commit.runId, commit.epoch);
  if (fenced || !run) return fenced ?? noRun(commit.runId);
  const isStep = commit.kind === 'step';
  const stepIndex = commit.stepIndex;
  let committedSteps = run.committedSteps;
  if (isStep) {
    if (stepIndex === undefined || hasStep(committedSteps, stepIndex)) {
      return refuse('step_not_committable', new StateCommitError(`Step ${String(stepIndex)} of run ${commit.runId} is already committed or has no index.`));
    }
    committedSteps = withStep(committedSteps, stepIndex);
  }
  const messages = commit.appendMessages ?? NO_ROWS;
  const at = session.messageCount;
  const stepCount = session.stepCount + (isStep ? 1 : 0);
  const messageCount = at + messages.length;
  const turn = session.turn;
  const turnChanged = commit.kind === 'turn_start' && turn !== undefined;
  const runPatch = patchOf(commit);
  // Every field is written out (absent ones as undefined), so that plans share one shape: this runs on every
  // step. Records are built field by field too: V8 copies `{ ...record, field: value }` slowly when a spread
  // key is overridden, and the copy it makes is slow to copy again.
  return {
    ok: true,
    session: nextHeader(session, turnChanged ? startCommitted(turn, at) : turn, stepCount, messageCount),
    run: { runId: run.runId, status: runPatch?.status ?? run.status, epoch: run.epoch, stepCount: run.stepCount + (isStep ? 1 : 0), committedSteps },
    runPatch,
    append: { at, messages },
    stepIndex: isStep ? stepIndex : undefined,
    turnChanged,
    checkpoint:
      commit.checkpoint === undefined
        ? undefined
        : { sessionId: session.sessionId, runId: commit.runId, kind: commit.checkpoint, stepCount, messageCount, createdAt: commit.committedAt },
    dropJournal: commit.kind === 'terminal' ? { runId: run.runId, all: true } : isStep ? { runId: run.runId, all: false, throughStep: stepIndex! } : undefined,
  };
}

const NO_ROWS: readonly Message[] = Object.freeze([]);

/** The header after a commit: the version grows by one; the turn and counters are the commit's. */
function nextHeader(session: SessionHeader, turn: TurnRecord | undefined, stepCount: number, messageCount: number): SessionHeader {
  const { sessionId, agentType, parentSessionId, currentRunId, resumeCount } = session;
  const version = session.version + 1;
  // Two literals rather than a conditional spread in the middle of one (which V8 builds slowly, on every step).
  if (parentSessionId === undefined) return { sessionId, agentType, currentRunId, turn, version, stepCount, messageCount, resumeCount };
  return { sessionId, agentType, parentSessionId, currentRunId, turn, version, stepCount, messageCount, resumeCount };
}

/** The turn with its start committed, its input rows from `inputMessageIndex` on. */
function startCommitted(turn: TurnRecord, inputMessageIndex: number): TurnRecord {
  return { turnId: turn.turnId, firstRunId: turn.firstRunId, input: turn.input, startCommitted: true, inputMessageIndex };
}

/** The run fields a commit sets, or undefined when it sets none (a plain step). */
function patchOf(commit: Commit): RunPatch | undefined {
  const terminal = commit.kind === 'terminal';
  if (commit.runStatus === undefined && !terminal && commit.output === undefined && commit.error === undefined && commit.suspension === undefined) return undefined;
  // Field by field, not five conditional spreads (one patch a run, each spread a literal and a copy); the key
  // order is the same.
  const patch: Writable<RunPatch> = {};
  if (commit.runStatus !== undefined) patch.status = commit.runStatus;
  if (terminal) patch.endedAt = commit.committedAt;
  if (commit.output !== undefined) patch.output = commit.output;
  if (commit.error !== undefined) patch.error = commit.error;
  if (commit.suspension !== undefined) patch.suspension = commit.suspension;
  return patch;
}

/** A run record with a commit's changes applied (its step count and the fields of the patch). */
export function applyRunChange(record: RunRecord, run: Pick<CommittingRun, 'stepCount'>, patch: RunPatch | undefined): RunRecord {
  // A patch field that is present (a JSON `null` output included) replaces the record's.
  const endedAt = patch?.endedAt !== undefined ? patch.endedAt : record.endedAt;
  const output = patch?.output !== undefined ? patch.output : record.output;
  const error = patch?.error !== undefined ? patch.error : record.error;
  const suspension = patch?.suspension !== undefined ? patch.suspension : record.suspension;
  // Field by field, not `{ ...record, stepCount }` (see planCommit), each optional field assigned in its
  // place rather than spread from a literal (this runs on every commit); the key order is the record's.
  const next: Writable<RunRecord> = {
    runId: record.runId,
    sessionId: record.sessionId,
    turnId: record.turnId,
    agentType: record.agentType,
    status: patch?.status !== undefined ? patch.status : record.status,
    signal: record.signal,
    startedAt: record.startedAt,
  } as RunRecord;
  if (endedAt !== undefined) next.endedAt = endedAt;
  next.stepCount = run.stepCount;
  if (output !== undefined) next.output = output;
  if (error !== undefined) next.error = error;
  next.epoch = record.epoch;
  next.leaseOwner = record.leaseOwner;
  next.leaseExpiresAt = record.leaseExpiresAt;
  next.options = record.options;
  if (suspension !== undefined) next.suspension = suspension;
  if (record.stopRequest !== undefined) next.stopRequest = record.stopRequest;
  return next;
}

/** The journal entries a commit keeps (for stores that hold the journal as a list). */
export function keptJournal(entries: readonly JournalEntry[], drop: JournalDrop | undefined): readonly JournalEntry[] {
  if (!drop) return entries;
  if (drop.all) return [];
  return entries.filter((e) => e.stepIndex > drop.throughStep);
}

// ---- leases, claims, journal ----

/** What {@link planRenewLease} reads. */
export interface RenewLeaseInput {
  /** The run, as stored (undefined when it was never begun). */
  readonly run: Pick<RunHeader, 'runId' | 'sessionId' | 'status' | 'epoch' | 'leaseOwner' | 'stopRequest'> | undefined;
  /** The current run id of the run's session. */
  readonly currentRunId: string | undefined;
}

/** What renewing a lease writes: the run's new lease expiry. */
export interface RenewLeasePlan {
  readonly lease: RunLease;
}

/** Extends the lease of a running run to `now + leaseMs`, with the stop request when one was made. Refusals: a run never begun, the run fence. */
export function planRenewLease(input: RenewLeaseInput, runId: string, epoch: number, leaseMs: number, now: number): Decision<RenewLeasePlan> {
  const { run } = input;
  if (!run) return noRun(runId);
  const fenced = checkFence({ sessionId: run.sessionId, currentRunId: input.currentRunId, run }, runId, epoch);
  if (fenced) return fenced;
  return { ok: true, lease: { runId, epoch, owner: run.leaseOwner, expiresAt: now + leaseMs, ...(run.stopRequest === undefined ? {} : { stopRequest: run.stopRequest }) } };
}

/** What {@link planRequestStop} reads. */
export interface RequestStopInput {
  /** The run, as stored (undefined when it does not exist). */
  readonly run: Pick<RunHeader, 'status' | 'stopRequest'> | undefined;
}

/** What a stop request writes: the request to record on the run, or nothing (no run, not running, or asked before). */
export interface RequestStopPlan {
  readonly write: StopRequest | undefined;
}

/**
 * Records a request to stop a running run. Not fenced: any process may ask. The first request is kept;
 * a run that is not running (or does not exist) is left as it is. Never refuses.
 */
export function planRequestStop(input: RequestStopInput, request: StopRequest): Decision<RequestStopPlan> {
  const { run } = input;
  const write = run && run.status === 'running' && run.stopRequest === undefined ? { reason: request.reason.slice(0, 1_000), requestedAt: request.requestedAt } : undefined;
  return { ok: true, write };
}

/** What {@link planClaimRun} reads. */
export interface ClaimRunInput {
  /** The run, as stored (undefined when it does not exist). */
  readonly run: Pick<RunHeader, 'runId' | 'status' | 'epoch' | 'leaseExpiresAt'> | undefined;
  /** The current run id of the run's session (undefined when the session is gone). */
  readonly currentRunId: string | undefined;
}

/** What a claim writes: the run's next epoch and the new lease. */
export interface ClaimRunPlan {
  readonly lease: RunLease;
}

/**
 * Takes over a run whose process died: it must exist, be running, be its session's current run, and its
 * lease must have expired by `now` (else `state_run_not_recoverable`), unless `takeover` says the caller
 * knows the holder is gone. The epoch goes up by one, which fences out every write of the old epoch.
 */
export function planClaimRun(input: ClaimRunInput, runId: string, owner: string, leaseMs: number, now: number, takeover = false): Decision<ClaimRunPlan> {
  const { run } = input;
  if (!run) return notRecoverable(runId, 'it does not exist');
  const why =
    run.status !== 'running'
      ? `it is ${run.status}`
      : input.currentRunId !== runId
        ? 'another run took over its session'
        : run.leaseExpiresAt > now && !takeover
          ? 'its lease has not expired'
          : undefined;
  if (why !== undefined) return notRecoverable(runId, why);
  return { ok: true, lease: { runId, epoch: run.epoch + 1, owner, expiresAt: now + leaseMs } };
}

/** What {@link planJournalAppend} reads. */
export interface JournalAppendInput {
  /** The run, as stored (undefined when it was never begun). */
  readonly run: (RunFence & Pick<RunHeader, 'sessionId'>) | undefined;
  /** The current run id of the run's session. */
  readonly currentRunId: string | undefined;
  /** The entry stored under the same key, if any. */
  readonly existing: JournalEntry | undefined;
}

/** What a journal append does: write `entry`, or keep and return the entry already stored under its key. */
export type JournalAppendPlan = { readonly write: true; readonly entry: JournalEntry } | { readonly write: false; readonly entry: JournalEntry };

/** Records a journal entry, fenced like a commit. A key that exists keeps its first entry (a replayed step sees what was recorded the first time). */
export function planJournalAppend(input: JournalAppendInput, entry: JournalEntry): Decision<JournalAppendPlan> {
  const { run } = input;
  if (!run) return noRun(entry.runId);
  const fenced = checkFence({ sessionId: run.sessionId, currentRunId: input.currentRunId, run }, entry.runId, entry.epoch);
  if (fenced) return fenced;
  return input.existing ? { ok: true, write: false, entry: input.existing } : { ok: true, write: true, entry };
}

// ---- snapshots ----

/** The session snapshot a store returns: its header with the state and conversation it stores. */
export function sessionSnapshot(header: SessionHeader, state: unknown, messages: readonly Message[]): SessionSnapshot {
  return {
    sessionId: header.sessionId,
    agentType: header.agentType,
    ...(header.parentSessionId === undefined ? {} : { parentSessionId: header.parentSessionId }),
    state,
    messages,
    currentRunId: header.currentRunId,
    turn: header.turn,
    version: header.version,
    stepCount: header.stepCount,
    resumeCount: header.resumeCount,
  };
}
