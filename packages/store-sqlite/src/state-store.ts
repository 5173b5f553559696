import { AgentError, GENESIS_CHECKPOINT, RunSupersededError, StateCommitError, stateConflictError } from '@helix-agents/sdk';
import type {
  AgentErrorInfo,
  BeginRunRequest,
  BeginRunResult,
  Checkpoint,
  CheckpointInfo,
  ClaimedRun,
  Commit,
  CommitReceipt,
  JournalEntry,
  JournalKind,
  Message,
  RecoverableRun,
  RunLease,
  RunRecord,
  RunStatus,
  SessionSnapshot,
  StateStore,
  SuspensionRecord,
  TurnRecord,
  UsageEntry,
  UsageFilter,
  UsageRollup,
  UsageStore,
} from '@helix-agents/sdk';
import type BetterSqlite3 from 'better-sqlite3';
import type { SqliteDatabase } from './database.js';
import { deferred, handleOf, immediate } from './database.js';
import type { StepRanges } from './step-ranges.js';
import { addStep, hasStep } from './step-ranges.js';
import { schemaTooNew, SQLITE_RECORD_VERSION } from './migrations.js';
import { UsageTable } from './usage-store.js';

interface SessionRow {
  sid: number;
  session_id: string;
  record_version: number;
  agent_type: string;
  parent_session_id: string | null;
  current_run_id: string | null;
  turn: string | null;
  resume_count: number;
}

/** The head of a session: its last commit row, without the big columns. */
interface HeadRow {
  version: number;
  run_id: string;
  message_count: number;
  step_count: number;
  run_step_count: number;
  run_steps: string;
  state_ref: number;
}

interface RunRow {
  run_id: string;
  record_version: number;
  session_id: string;
  turn_id: string;
  agent_type: string;
  status: RunStatus;
  signal: RunRecord['signal'];
  started_at: number;
  ended_at: number | null;
  step_count: number;
  output: string | null;
  error: string | null;
  suspension: string | null;
  epoch: number;
  lease_owner: string;
  lease_expires_at: number;
  options: string;
}

/** What the fence of a write reads: the session and the run's status and epoch, in one lookup. */
interface FenceRow {
  sid: number;
  current_run_id: string | null;
  turn: string | null;
  record_version: number;
  run_epoch: number | null;
  run_status: RunStatus | null;
}

interface CheckpointRow {
  id: number;
  version: number;
  run_id: string;
  checkpoint: CheckpointInfo['kind'];
  step_count: number;
  message_count: number;
  committed_at: number;
}

interface JournalRow {
  run_id: string;
  key: string;
  epoch: number;
  step_index: number;
  kind: JournalKind;
  data: string | null;
  at: number;
}

type Outcome<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: unknown };

interface PendingCommit {
  readonly commit: Commit;
  readonly resolve: (receipt: CommitReceipt) => void;
  readonly reject: (error: unknown) => void;
}

/** JSON text for a value that may be undefined (stored as NULL). */
function json(value: unknown): string | null {
  return value === undefined ? null : JSON.stringify(value);
}

function parse<T>(text: string | null): T | undefined {
  return text === null ? undefined : (JSON.parse(text) as T);
}

/**
 * The SQLite {@link StateStore}, also a {@link UsageStore} so that usage passed with a commit is
 * recorded in the commit's transaction. Every write is ONE `BEGIN IMMEDIATE` transaction that does the
 * fence check (current run, epoch, status) and the write together, so two connections or two processes
 * on the same file cannot both win. A step commit inserts its message rows and one `commits` row (the
 * session's new counters, state, usage and checkpoint) and updates nothing else. Statements are
 * prepared once per store.
 */
export class SqliteStateStore implements StateStore, UsageStore {
  /** The database this store writes. */
  readonly database: SqliteDatabase;
  readonly #usage: UsageTable;
  readonly #q: ReturnType<typeof prepare>;
  readonly #beginRun: (request: BeginRunRequest) => BeginRunResult;
  readonly #commitBatch: (commits: readonly Commit[]) => Outcome<CommitReceipt>[];
  #queue: PendingCommit[] = [];
  #flushScheduled = false;
  readonly #renew: (runId: string, epoch: number, leaseMs: number, now: number) => RunLease;
  readonly #claim: (runId: string, owner: string, leaseMs: number, now: number) => ClaimedRun;
  readonly #append: (entry: JournalEntry) => JournalEntry;
  readonly #readSession: (sessionId: string) => SessionSnapshot | undefined;
  readonly #readRun: (runId: string) => RunRecord | undefined;
  readonly #readCheckpoint: (sessionId: string, id: number) => Checkpoint | undefined;

  constructor(database: SqliteDatabase) {
    this.database = database;
    const db = handleOf(database);
    this.#usage = new UsageTable(db);
    const q = prepare(db);
    this.#q = q;
    this.#beginRun = immediate(db, (request) => this.#doBeginRun(request));
    // Group commit: the commits issued in one tick (concurrent sessions) share one transaction, each in
    // its own savepoint, so that a refused commit rolls back alone while the others share one WAL sync.
    const one = db.transaction((commit: Commit) => this.#doCommit(commit));
    this.#commitBatch = immediate(db, (commits: readonly Commit[]): Outcome<CommitReceipt>[] => {
      if (commits.length === 1) return [{ ok: true, value: this.#doCommit(commits[0]!) }];
      return commits.map((commit) => {
        try {
          return { ok: true, value: one(commit) as CommitReceipt };
        } catch (error) {
          return { ok: false, error };
        }
      });
    });
    // Commits queued when the connection closes still land (or fail) before it goes.
    database.onClose(() => this.#flush());
    this.#renew = immediate(db, (runId, epoch, leaseMs, now) => this.#doRenew(runId, epoch, leaseMs, now));
    this.#claim = immediate(db, (runId, owner, leaseMs, now) => this.#doClaim(runId, owner, leaseMs, now));
    this.#append = immediate(db, (entry) => this.#doAppend(entry));
    // Reads run in one (deferred) transaction so that they see one snapshot of the database, never part of a commit.
    this.#readSession = deferred(db, (sessionId) => {
      const row = q.session.get(sessionId);
      return row ? this.#snapshot(row) : undefined;
    });
    this.#readRun = deferred(db, (runId) => this.#run(runId));
    this.#readCheckpoint = deferred(db, (sessionId, id) => {
      const sid = q.sid.get(sessionId);
      const row = sid === undefined ? undefined : q.checkpoint.get(id, sid);
      if (sid === undefined || !row) return undefined;
      const state = row.state ?? q.stateAt.get(row.state_ref) ?? 'null';
      return { ...checkpointInfo(row, sessionId), state: JSON.parse(state) as unknown, messages: this.#messages(sid, row.message_count) };
    });
  }

  async beginRun(request: BeginRunRequest): Promise<BeginRunResult> {
    this.#flush();
    return guard('begin a run', () => this.#beginRun(request));
  }

  async commit(commit: Commit): Promise<CommitReceipt> {
    return new Promise<CommitReceipt>((resolve, reject) => {
      this.#queue.push({ commit, resolve, reject });
      if (!this.#flushScheduled) {
        this.#flushScheduled = true;
        queueMicrotask(() => this.#flush());
      }
    });
  }

  /** Applies the queued commits in call order, in one transaction. Every other operation flushes first, so call order is kept. */
  #flush(): void {
    this.#flushScheduled = false;
    if (this.#queue.length === 0) return;
    const batch = this.#queue;
    this.#queue = [];
    let outcomes: Outcome<CommitReceipt>[];
    try {
      outcomes = guard('commit', () => this.#commitBatch(batch.map((p) => p.commit)));
    } catch (error) {
      for (const pending of batch) pending.reject(error);
      return;
    }
    batch.forEach((pending, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) pending.resolve(outcome.value);
      else pending.reject(wrap('commit', outcome.error));
    });
  }

  async renewLease(runId: string, epoch: number, leaseMs: number, now: number): Promise<RunLease> {
    this.#flush();
    return guard('renew a lease', () => this.#renew(runId, epoch, leaseMs, now));
  }

  async listRecoverable(now: number, limit = 100): Promise<readonly RecoverableRun[]> {
    this.#flush();
    return this.#q.recoverable.all(now, limit).map((row) => ({
      sessionId: row.session_id,
      runId: row.run_id,
      agentType: row.agent_type,
      epoch: row.epoch,
      leaseOwner: row.lease_owner,
      leaseExpiresAt: row.lease_expires_at,
    }));
  }

  async claimRun(runId: string, owner: string, leaseMs: number, now: number): Promise<ClaimedRun> {
    this.#flush();
    return guard('claim a run', () => this.#claim(runId, owner, leaseMs, now));
  }

  async appendJournal(entry: JournalEntry): Promise<JournalEntry> {
    this.#flush();
    return guard('append to the journal', () => this.#append(entry));
  }

  async loadJournal(runId: string): Promise<readonly JournalEntry[]> {
    this.#flush();
    return this.#q.journal.all(runId).map(journalEntry);
  }

  async loadSession(sessionId: string): Promise<SessionSnapshot | undefined> {
    this.#flush();
    return this.#readSession(sessionId);
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    this.#flush();
    return this.#readRun(runId);
  }

  async listCheckpoints(sessionId: string): Promise<readonly CheckpointInfo[]> {
    this.#flush();
    const sid = this.#q.sid.get(sessionId);
    if (sid === undefined) return [];
    return this.#q.checkpoints.all(sid).map((row) => checkpointInfo(row, sessionId));
  }

  async loadCheckpoint(sessionId: string, checkpointId: string): Promise<Checkpoint | undefined> {
    this.#flush();
    const match = /^cp_(\d+)$/.exec(checkpointId);
    return match ? this.#readCheckpoint(sessionId, Number(match[1])) : undefined;
  }

  async record(entries: readonly UsageEntry[]): Promise<void> {
    this.#flush();
    if (entries.length > 0) this.#usage.record(entries);
  }

  async getRollup(filter: UsageFilter = {}): Promise<UsageRollup> {
    this.#flush();
    return this.#usage.rollup(filter);
  }

  // ---- the transactions (each runs inside BEGIN IMMEDIATE ... COMMIT) ----

  #doBeginRun(request: BeginRunRequest): BeginRunResult {
    const q = this.#q;
    let row = q.session.get(request.sessionId);
    if (row) this.#checkRecord('session', row.record_version);
    if (request.expect) {
      const current = row?.current_run_id ?? undefined;
      const status = current === undefined ? undefined : q.runStatus.get(current);
      if (current !== request.expect.currentRunId || status !== request.expect.status) {
        throw stateConflictError(request, current, status === undefined ? undefined : String(status));
      }
    }
    let turn: TurnRecord | undefined = request.newTurn
      ? { turnId: request.newTurn.turnId, firstRunId: request.runId, input: request.newTurn.input, startCommitted: false }
      : parse<TurnRecord>(row?.turn ?? null);
    if (!turn) throw new StateCommitError(`Session ${request.sessionId} has no turn to continue; start a run with a new turn.`);
    let head: HeadRow | undefined;
    let supersededRunId: string | undefined;
    let restored: { stateRef: number; messageCount: number } | undefined;
    if (!row) {
      // A new session is at its genesis already; any other checkpoint cannot exist in it.
      if (request.restoreCheckpointId !== undefined && request.restoreCheckpointId !== GENESIS_CHECKPOINT) throw checkpointNotFound(request.sessionId, request.restoreCheckpointId);
      q.insertSession.run(request.sessionId, SQLITE_RECORD_VERSION, request.agentType, request.parentSessionId ?? null);
    } else {
      const sid = row.sid;
      head = this.#head(sid);
      if (request.restoreCheckpointId !== undefined) {
        restored = this.#restore(sid, request.sessionId, request.restoreCheckpointId, head.message_count);
        // A rewind to before the turn's input rows discards the turn's start commit (rule 22).
        if (turn.startCommitted && (turn.inputMessageIndex ?? 0) >= restored.messageCount) {
          const { inputMessageIndex: _dropped, ...rest } = turn;
          turn = { ...rest, startCommitted: false };
        }
      }
      if (row.current_run_id !== null && q.runStatus.get(row.current_run_id) === 'running') {
        supersededRunId = row.current_run_id;
        q.supersedeRun.run(request.startedAt, head.run_id === supersededRunId ? head.run_step_count : 0, supersededRunId);
        q.dropJournal.run(supersededRunId);
      }
    }
    q.startSession.run(request.runId, JSON.stringify(turn), request.agentType, request.signal === 'resumed' ? 1 : 0, request.sessionId);
    row = q.session.get(request.sessionId)!;
    const expiresAt = request.startedAt + request.leaseMs;
    q.insertRun.run(
      request.runId,
      SQLITE_RECORD_VERSION,
      request.sessionId,
      turn.turnId,
      request.agentType,
      request.signal,
      request.startedAt,
      request.leaseOwner,
      expiresAt,
      JSON.stringify(request.options),
    );
    // K1 is a write of the session too: it gets a commits row (the version moves, the new run's step set starts empty).
    // The session's first row holds the initial state, which is what a rewind to genesis restores.
    q.insertCommit.run(
      row.sid,
      (head?.version ?? 0) + 1,
      request.runId,
      'run_start',
      restored?.messageCount ?? head?.message_count ?? 0,
      head?.step_count ?? 0,
      0,
      '[]',
      head ? null : JSON.stringify(request.initialState),
      // A new session's first row has the state itself (NULL = this row).
      restored?.stateRef ?? head?.state_ref ?? null,
      null,
      null,
      request.startedAt,
    );
    const session = this.#snapshot(row);
    const lease: RunLease = { runId: request.runId, epoch: 1, owner: request.leaseOwner, expiresAt };
    return { session, lease, ...(supersededRunId === undefined ? {} : { supersededRunId }) };
  }

  /** Rewinds a session's rows to a checkpoint: later messages are deleted, later checkpoints stop being checkpoints (their rows stay: versions only grow). */
  #restore(sid: number, sessionId: string, checkpointId: string, messageCount: number): { stateRef: number; messageCount: number } {
    const q = this.#q;
    let target: { stateRef: number; messageCount: number; version: number };
    if (checkpointId === GENESIS_CHECKPOINT) target = { stateRef: q.genesis.get(sid)!, messageCount: 0, version: 0 };
    else {
      const match = /^cp_(\d+)$/.exec(checkpointId);
      const checkpoint = match ? q.checkpoint.get(Number(match[1]), sid) : undefined;
      if (!checkpoint) throw checkpointNotFound(sessionId, checkpointId);
      target = { stateRef: checkpoint.state_ref, messageCount: Math.min(messageCount, checkpoint.message_count), version: checkpoint.version };
    }
    q.deleteMessages.run(sid, target.messageCount);
    q.dropCheckpoints.run(sid, target.version);
    return { stateRef: target.stateRef, messageCount: target.messageCount };
  }

  /** Refuses a write from a run that is not the session's current, running run at this epoch. */
  #fence(sessionId: string, runId: string, epoch: number): FenceRow {
    const fence = this.#q.fence.get(runId, sessionId);
    if (!fence) throw new StateCommitError(`Session ${sessionId} does not exist.`);
    this.#checkRecord('session', fence.record_version);
    if (fence.current_run_id !== runId || fence.run_status !== 'running' || fence.run_epoch !== epoch) {
      throw new RunSupersededError(sessionId, runId, fence.current_run_id ?? undefined);
    }
    return fence;
  }

  #doCommit(commit: Commit): CommitReceipt {
    const q = this.#q;
    const fence = this.#fence(commit.sessionId, commit.runId, commit.epoch);
    const sid = fence.sid;
    const head = this.#head(sid);
    // Only the current run commits, and its K1 wrote a commits row: the head's step set is this run's.
    let steps = JSON.parse(head.run_steps) as StepRanges;
    const isStep = commit.kind === 'step';
    if (isStep) {
      if (commit.stepIndex === undefined || hasStep(steps, commit.stepIndex)) {
        throw new StateCommitError(`Step ${String(commit.stepIndex)} of run ${commit.runId} is already committed or has no index.`);
      }
      steps = addStep(steps, commit.stepIndex);
    }
    const before = head.message_count;
    let messageCount = before;
    if (commit.appendMessages) {
      for (const message of commit.appendMessages) q.insertMessage.run(sid, messageCount++, JSON.stringify(message));
    }
    if (commit.kind === 'turn_start' && fence.turn !== null) {
      q.setTurn.run(JSON.stringify({ ...(JSON.parse(fence.turn) as TurnRecord), startCommitted: true, inputMessageIndex: before }), sid);
    }
    const version = head.version + 1;
    const stepCount = head.step_count + (isStep ? 1 : 0);
    const runStepCount = head.run_step_count + (isStep ? 1 : 0);
    const stateText = commit.state === undefined ? null : JSON.stringify(commit.state);
    const id = Number(
      q.insertCommit.run(
        sid,
        version,
        commit.runId,
        commit.kind,
        messageCount,
        stepCount,
        runStepCount,
        JSON.stringify(steps),
        stateText,
        stateText === null ? head.state_ref : null,
        commit.checkpoint ?? null,
        commit.usage && commit.usage.length > 0 ? JSON.stringify(commit.usage) : null,
        commit.committedAt,
      ).lastInsertRowid,
    );
    if (commit.kind === 'terminal') q.dropJournal.run(commit.runId);
    else if (isStep) q.dropJournalThrough.run(commit.runId, commit.stepIndex!);
    // The runs row changes only when the run's status or result does, not on every step.
    if (commit.runStatus !== undefined || commit.kind === 'terminal' || commit.output !== undefined || commit.error !== undefined || commit.suspension !== undefined) {
      q.updateRun.run(
        runStepCount,
        commit.runStatus ?? null,
        commit.kind === 'terminal' ? commit.committedAt : null,
        json(commit.output),
        json(commit.error),
        json(commit.suspension),
        commit.runId,
      );
    }
    return { version, messageCount, ...(commit.checkpoint ? { checkpointId: `cp_${id}` } : {}) };
  }

  #doRenew(runId: string, epoch: number, leaseMs: number, now: number): RunLease {
    const run = this.#q.run.get(runId);
    if (!run) throw new StateCommitError(`Run ${runId} was never begun.`);
    this.#fence(run.session_id, runId, epoch);
    const expiresAt = now + leaseMs;
    this.#q.renew.run(expiresAt, runId);
    return { runId, epoch, owner: run.lease_owner, expiresAt };
  }

  #doClaim(runId: string, owner: string, leaseMs: number, now: number): ClaimedRun {
    const q = this.#q;
    const run = q.run.get(runId);
    const row = run ? q.session.get(run.session_id) : undefined;
    if (!run || !row || row.current_run_id !== runId || run.status !== 'running' || run.lease_expires_at > now) {
      const why = !run
        ? 'it does not exist'
        : run.status !== 'running'
          ? `it is ${run.status}`
          : row?.current_run_id !== runId
            ? 'another run took over its session'
            : 'its lease has not expired';
      throw new AgentError('state_run_not_recoverable', `Run ${runId} cannot be claimed: ${why}.`, { details: { runId } });
    }
    this.#checkRecord('run', run.record_version);
    const expiresAt = now + leaseMs;
    q.claim.run(owner, expiresAt, runId);
    const claimed = this.#run(runId)!;
    return {
      session: this.#snapshot(row),
      run: claimed,
      lease: { runId, epoch: claimed.epoch, owner, expiresAt },
      journal: q.journal.all(runId).map(journalEntry),
    };
  }

  #doAppend(entry: JournalEntry): JournalEntry {
    const q = this.#q;
    const run = q.run.get(entry.runId);
    if (!run) throw new StateCommitError(`Run ${entry.runId} was never begun.`);
    this.#fence(run.session_id, entry.runId, entry.epoch);
    const inserted = q.insertJournal.run(entry.runId, entry.key, entry.epoch, entry.stepIndex, entry.kind, json(entry.data), entry.at);
    if (inserted.changes > 0) return entry;
    // The key exists: the first entry wins (a replayed step must see what was recorded the first time).
    return journalEntry(q.journalEntry.get(entry.runId, entry.key)!);
  }

  // ---- reads (inside a transaction of the caller) ----

  #head(sid: number): HeadRow {
    const head = this.#q.head.get(sid);
    // Every session's K1 wrote a commits row, so a session always has a head.
    if (!head) throw new StateCommitError(`The SQLite session #${sid} has no commits; the database is damaged.`);
    return head;
  }

  #messages(sid: number, count: number): Message[] {
    return this.#q.messages.all(sid, count).map((body) => JSON.parse(body) as Message);
  }

  #snapshot(row: SessionRow): SessionSnapshot {
    this.#checkRecord('session', row.record_version);
    const head = this.#head(row.sid);
    return {
      sessionId: row.session_id,
      agentType: row.agent_type,
      ...(row.parent_session_id === null ? {} : { parentSessionId: row.parent_session_id }),
      state: JSON.parse(this.#q.stateAt.get(head.state_ref) ?? 'null') as unknown,
      messages: this.#messages(row.sid, head.message_count),
      currentRunId: row.current_run_id ?? undefined,
      turn: parse<TurnRecord>(row.turn),
      version: head.version,
      stepCount: head.step_count,
      resumeCount: row.resume_count,
    };
  }

  /** A run as stored; the current run's step count lives in its session's head (steps do not touch the runs row). */
  #run(runId: string): RunRecord | undefined {
    const row = this.#q.runWithSession.get(runId);
    if (!row) return undefined;
    this.#checkRecord('run', row.record_version);
    let stepCount = row.step_count;
    if (row.current_run_id === runId && row.sid !== null) {
      const head = this.#head(row.sid);
      if (head.run_id === runId) stepCount = head.run_step_count;
    }
    return runRecord(row, stepCount);
  }

  #checkRecord(what: 'session' | 'run', version: number): void {
    if (version > SQLITE_RECORD_VERSION) throw schemaTooNew(`${what} record`, version, SQLITE_RECORD_VERSION, this.database.path);
  }
}

const RUN_COLUMNS =
  'run_id, record_version, session_id, turn_id, agent_type, status, signal, started_at, ended_at, step_count, output, error, suspension, epoch, lease_owner, lease_expires_at, options';

function prepare(db: BetterSqlite3.Database) {
  return {
    session: db.prepare<[string], SessionRow>(
      'SELECT sid, session_id, record_version, agent_type, parent_session_id, current_run_id, turn, resume_count FROM sessions WHERE session_id = ?',
    ),
    sid: db.prepare<[string], number>('SELECT sid FROM sessions WHERE session_id = ?').pluck(),
    insertSession: db.prepare<[string, number, string, string | null]>(
      'INSERT INTO sessions (session_id, record_version, agent_type, parent_session_id, current_run_id, turn, resume_count) VALUES (?, ?, ?, ?, NULL, NULL, 0)',
    ),
    startSession: db.prepare<[string, string | null, string, number, string]>(
      'UPDATE sessions SET current_run_id = ?, turn = ?, agent_type = ?, resume_count = resume_count + ? WHERE session_id = ?',
    ),
    setTurn: db.prepare<[string, number]>('UPDATE sessions SET turn = ? WHERE sid = ?'),
    head: db.prepare<[number], HeadRow>(
      'SELECT version, run_id, message_count, step_count, run_step_count, run_steps, coalesce(state_ref, id) AS state_ref FROM commits WHERE sid = ? ORDER BY version DESC LIMIT 1',
    ),
    genesis: db.prepare<[number], number>('SELECT id FROM commits WHERE sid = ? AND version = 1').pluck(),
    stateAt: db.prepare<[number], string>('SELECT state FROM commits WHERE id = ?').pluck(),
    insertCommit: db.prepare<[number, number, string, string, number, number, number, string, string | null, number | null, string | null, string | null, number]>(
      'INSERT INTO commits (sid, version, run_id, kind, message_count, step_count, run_step_count, run_steps, state, state_ref, checkpoint, usage, committed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    ),
    messages: db.prepare<[number, number], string>('SELECT body FROM messages WHERE sid = ? AND idx < ? ORDER BY idx').pluck(),
    deleteMessages: db.prepare<[number, number]>('DELETE FROM messages WHERE sid = ? AND idx >= ?'),
    dropCheckpoints: db.prepare<[number, number]>('UPDATE commits SET checkpoint = NULL WHERE sid = ? AND version > ? AND checkpoint IS NOT NULL'),
    insertMessage: db.prepare<[number, number, string]>('INSERT INTO messages (sid, idx, body) VALUES (?, ?, ?)'),
    checkpoints: db.prepare<[number], CheckpointRow>(
      'SELECT id, version, run_id, checkpoint, step_count, message_count, committed_at FROM commits WHERE sid = ? AND checkpoint IS NOT NULL ORDER BY version',
    ),
    checkpoint: db.prepare<[number, number], CheckpointRow & { state: string | null; state_ref: number }>(
      'SELECT id, version, run_id, checkpoint, step_count, message_count, committed_at, state, coalesce(state_ref, id) AS state_ref FROM commits WHERE id = ? AND sid = ? AND checkpoint IS NOT NULL',
    ),
    fence: db.prepare<[string, string], FenceRow>(
      `SELECT s.sid, s.current_run_id, s.turn, s.record_version, r.epoch AS run_epoch, r.status AS run_status
       FROM sessions s LEFT JOIN runs r ON r.run_id = ? WHERE s.session_id = ?`,
    ),
    run: db.prepare<[string], RunRow>(`SELECT ${RUN_COLUMNS} FROM runs WHERE run_id = ?`),
    runWithSession: db.prepare<[string], RunRow & { sid: number | null; current_run_id: string | null }>(
      `SELECT r.*, s.sid, s.current_run_id FROM runs r LEFT JOIN sessions s ON s.session_id = r.session_id WHERE r.run_id = ?`,
    ),
    runStatus: db.prepare<[string], RunStatus>('SELECT status FROM runs WHERE run_id = ?').pluck(),
    insertRun: db.prepare<[string, number, string, string, string, string, number, string, number, string]>(
      `INSERT INTO runs (run_id, record_version, session_id, turn_id, agent_type, status, signal, started_at, step_count, epoch, lease_owner, lease_expires_at, options)
       VALUES (?, ?, ?, ?, ?, 'running', ?, ?, 0, 1, ?, ?, ?)`,
    ),
    supersedeRun: db.prepare<[number, number, string]>("UPDATE runs SET status = 'superseded', ended_at = ?, step_count = ? WHERE run_id = ?"),
    updateRun: db.prepare<[number, RunStatus | null, number | null, string | null, string | null, string | null, string]>(
      'UPDATE runs SET step_count = ?, status = coalesce(?, status), ended_at = coalesce(?, ended_at), output = coalesce(?, output), error = coalesce(?, error), suspension = coalesce(?, suspension) WHERE run_id = ?',
    ),
    renew: db.prepare<[number, string]>('UPDATE runs SET lease_expires_at = ? WHERE run_id = ?'),
    claim: db.prepare<[string, number, string]>('UPDATE runs SET epoch = epoch + 1, lease_owner = ?, lease_expires_at = ? WHERE run_id = ?'),
    recoverable: db.prepare<[number, number], RunRow>(
      `SELECT r.run_id, r.session_id, r.agent_type, r.epoch, r.lease_owner, r.lease_expires_at FROM runs r
       JOIN sessions s ON s.session_id = r.session_id AND s.current_run_id = r.run_id
       WHERE r.status = 'running' AND r.lease_expires_at <= ? ORDER BY r.lease_expires_at, r.rowid LIMIT ?`,
    ),
    journal: db.prepare<[string], JournalRow>('SELECT run_id, key, epoch, step_index, kind, data, at FROM journal WHERE run_id = ? ORDER BY id'),
    journalEntry: db.prepare<[string, string], JournalRow>('SELECT run_id, key, epoch, step_index, kind, data, at FROM journal WHERE run_id = ? AND key = ?'),
    insertJournal: db.prepare<[string, string, number, number, string, string | null, number]>(
      'INSERT INTO journal (run_id, key, epoch, step_index, kind, data, at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, key) DO NOTHING',
    ),
    dropJournal: db.prepare<[string]>('DELETE FROM journal WHERE run_id = ?'),
    dropJournalThrough: db.prepare<[string, number]>('DELETE FROM journal WHERE run_id = ? AND step_index <= ?'),
  };
}

/** Runs a write; driver failures (busy after the timeout, I/O, a closed database) become a StateCommitError. */
function guard<T>(what: string, fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    throw wrap(what, error);
  }
}

function wrap(what: string, error: unknown): unknown {
  if (AgentError.isInstance(error)) return error;
  const code = (error as { code?: unknown }).code;
  return new StateCommitError(`SQLite could not ${what}: ${error instanceof Error ? error.message : String(error)}`, {
    cause: error,
    ...(typeof code === 'string' ? { details: { sqliteCode: code } } : {}),
  });
}

function checkpointNotFound(sessionId: string, checkpointId: string): AgentError {
  return new AgentError('state_not_found', `Session ${sessionId} has no checkpoint ${checkpointId}.`, { details: { checkpointId } });
}

function runRecord(row: RunRow, stepCount: number): RunRecord {
  return {
    runId: row.run_id,
    sessionId: row.session_id,
    turnId: row.turn_id,
    agentType: row.agent_type,
    status: row.status,
    signal: row.signal,
    startedAt: row.started_at,
    ...(row.ended_at === null ? {} : { endedAt: row.ended_at }),
    stepCount,
    ...(row.output === null ? {} : { output: JSON.parse(row.output) as unknown }),
    ...(row.error === null ? {} : { error: JSON.parse(row.error) as AgentErrorInfo }),
    ...(row.suspension === null ? {} : { suspension: JSON.parse(row.suspension) as SuspensionRecord }),
    epoch: row.epoch,
    leaseOwner: row.lease_owner,
    leaseExpiresAt: row.lease_expires_at,
    options: JSON.parse(row.options) as RunRecord['options'],
  };
}

function checkpointInfo(row: CheckpointRow, sessionId: string): CheckpointInfo {
  return {
    checkpointId: `cp_${row.id}`,
    sessionId,
    runId: row.run_id,
    kind: row.checkpoint,
    stepCount: row.step_count,
    messageCount: row.message_count,
    createdAt: row.committed_at,
  };
}

function journalEntry(row: JournalRow): JournalEntry {
  return { runId: row.run_id, epoch: row.epoch, stepIndex: row.step_index, kind: row.kind, key: row.key, data: parse(row.data), at: row.at };
}
