import { AgentError, StateCommitError } from '@helix-agents/sdk';
import type { AgentErrorInfo, Message, UsageEntry, UsageFilter, UsageRollup, UsageStore } from '@helix-agents/sdk';
import {
  beginRunResult,
  GENESIS_CHECKPOINT,
  NO_STEPS,
  orThrow,
  planBeginRun,
  planClaimRun,
  planCommit,
  planDeleteSession,
  planJournalAppend,
  planRenewLease,
  planRequestStop,
  resolveRetention,
  sessionSnapshot,
} from '@helix-agents/sdk/store';
import type {
  BeginRunInput,
  BeginRunPlan,
  BeginRunRequest,
  BeginRunResult,
  Checkpoint,
  CheckpointInfo,
  ClaimedRun,
  ClaimOptions,
  Commit,
  CommitPlan,
  CommitReceipt,
  CommittingRun,
  JournalEntry,
  JournalKind,
  Prunable,
  PruneReport,
  RecoverableRun,
  RetentionPolicy,
  RestorePoint,
  RunHeader,
  RunLease,
  RunRecord,
  RunStatus,
  SessionHeader,
  SessionSnapshot,
  StateStore,
  StepSet,
  StopRequest,
  SuspensionRecord,
  TurnRecord,
} from '@helix-agents/sdk/store';
import type BetterSqlite3 from 'better-sqlite3';
import type { SqliteDatabase } from './database.js';
import { deferred, handleOf, immediate, joined } from './database.js';
import { schemaTooNew, SQLITE_RECORD_VERSION } from './migrations.js';
import { connectionCaches, type ReadCache } from './read-cache.js';
import { UsageTable, usageColumn } from './usage-store.js';

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
  stop_request: string | null;
}

/** What a commit reads: the session row and the status and epoch of the run it names, in one lookup. */
interface FenceRow extends SessionRow {
  run_epoch: number | null;
  run_status: RunStatus | null;
  /** The head's columns (NULL only for a session without commits, which a damaged file would be). */
  head_version: number | null;
  head_run_id: string;
  head_message_count: number;
  head_step_count: number;
  head_run_step_count: number;
  head_run_steps: string;
  head_state_ref: number;
  /** The highest step index of the committing run's journal entries (NULL: the run has none). */
  journal_max: number | null;
}

/**
 * A session's fence as the last commit on this connection left it (read-cache.ts): the session and run
 * columns of the fence row (its head columns are not read), the head that commit wrote, and the run's step
 * set already parsed. Valid only for commits of `head.run_id`.
 */
interface CachedFence {
  /** The fence row as the file gave it (its head columns and `journal_max` are not read again: `head` and `journalMax` are). */
  readonly row: FenceRow;
  readonly head: HeadRow;
  readonly committedSteps: StepSet;
  /**
   * At least the highest step index of the run's journal entries in the file; undefined only when it has
   * none, and a commit then runs no DELETE of them. Every insert into the journal goes through this
   * package's append, which raises it; a delete can only leave it above the truth, which costs a DELETE.
   */
  readonly journalMax: number | undefined;
}

/** How many sessions' fences a connection keeps (the oldest goes first). */
const FENCE_CACHE_SIZE = 1_024;

/** What renew, claim and a journal append read: the run and its session's current run id, in one lookup. */
interface RunFenceRow {
  run_id: string;
  session_id: string;
  record_version: number;
  status: RunStatus;
  epoch: number;
  lease_owner: string;
  lease_expires_at: number;
  stop_request: string | null;
  current_run_id: string | null;
  session_record_version: number | null;
}

/** A checkpoint a rewind restores, with the keys of its commits row. */
interface SqliteRestorePoint extends RestorePoint {
  /** The session version of its commits row: the checkpoints after it are those of later versions. */
  readonly version: number;
  /** The commits row that holds its state. */
  readonly stateRef: number;
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

/** Options of {@link SqliteStateStore}. */
export interface SqliteStateStoreOptions {
  /**
   * What to keep of finished work (default: everything until the session is deleted). The state store
   * reads `keepCheckpoints`: past the newest N of a session, a checkpoint is gone at once for every read
   * (list, load, restore); `prune()` and a rewind un-mark such rows in the file. Chunks are the stream
   * manager's.
   */
  readonly retention?: RetentionPolicy;
}

/** How many commit rows one prune transaction deletes (or strips of their state) at most. */
const PRUNE_BATCH = 2_000;

/**
 * The SQLite {@link StateStore}, also a {@link UsageStore} so that usage passed with a commit is
 * recorded in the commit's transaction. Every write is ONE `BEGIN IMMEDIATE` transaction: it reads the
 * session's rows (the session row, its head commits row, the run), asks the session rules of
 * `@helix-agents/sdk/store` for a plan, and writes the plan. BEGIN IMMEDIATE takes the database's write
 * lock before the read, so nothing can change between the read and the write: two connections or two
 * processes on the same file cannot both win, and a refused write writes nothing. A step commit inserts
 * one `commits` row (the session's new counters, the messages it appends, state, usage and checkpoint)
 * and updates nothing else. Statements are prepared once per store.
 */
export class SqliteStateStore implements StateStore, UsageStore, Prunable {
  /** The database this store writes. */
  readonly database: SqliteDatabase;
  /** The checkpoints kept per session (Infinity: all). */
  readonly #keepCheckpoints: number;
  /** The last turn record a commit parsed, and its text (see #turnOf). */
  #turnText: string | undefined;
  #turnParsed: TurnRecord | undefined;
  readonly #prune: () => { journalEntries: number; records: number; trimmed: number };
  readonly #usage: UsageTable;
  readonly #q: ReturnType<typeof prepare>;
  /** The fences the last commits left, per session id: shared by every state store on the connection. */
  readonly #fences: ReadCache<CachedFence>;
  readonly #beginRun: (request: BeginRunRequest) => BeginRunResult;
  readonly #commitBatch: (commits: readonly Commit[]) => Outcome<CommitReceipt>[];
  #queue: PendingCommit[] = [];
  #flushScheduled = false;
  readonly #renew: (runId: string, epoch: number, leaseMs: number, now: number) => RunLease;
  readonly #claim: (runId: string, owner: string, leaseMs: number, now: number, takeover: boolean) => ClaimedRun;
  readonly #append: (entry: JournalEntry) => JournalEntry;
  readonly #requestStop: (runId: string, request: StopRequest) => RunRecord | undefined;
  readonly #deleteSession: (sessionId: string) => boolean;
  readonly #readSession: (sessionId: string) => SessionSnapshot | undefined;
  readonly #readRun: (runId: string) => RunRecord | undefined;
  readonly #readCheckpoint: (sessionId: string, id: number) => Checkpoint | undefined;

  constructor(database: SqliteDatabase, options: SqliteStateStoreOptions = {}) {
    this.database = database;
    this.#keepCheckpoints = resolveRetention(options.retention).keepCheckpoints;
    const db = handleOf(database);
    this.#usage = new UsageTable(db);
    const q = prepare(db);
    this.#q = q;
    const fences = connectionCaches(db).cache<CachedFence>('fence', FENCE_CACHE_SIZE);
    this.#fences = fences;
    // The write paths that touch one session's rows drop its fence and keep the others; prune clears all.
    this.#beginRun = immediate(db, (request) => this.#doBeginRun(request), 'keeps');
    // Group commit: the commits issued in one tick (concurrent sessions) share one transaction, each in
    // its own savepoint, so that a refused commit rolls back alone while the others share one WAL sync.
    const one = db.transaction((commit: Commit) => this.#doCommit(commit));
    // Queued stream chunks on this connection (a step's chunks) are written in the same transaction.
    this.#commitBatch = joined(db, (commits: readonly Commit[]): Outcome<CommitReceipt>[] => {
      if (commits.length === 1) return [{ ok: true, value: this.#doCommit(commits[0]!) }];
      return commits.map((commit) => {
        try {
          return { ok: true, value: one(commit) as CommitReceipt };
        } catch (error) {
          // Its savepoint rolled back: whatever it cached is not in the file.
          fences.drop(commit.sessionId);
          return { ok: false, error };
        }
      });
    }, 'keeps');
    // Commits queued when the connection closes still land (or fail) before it goes.
    database.onClose(() => this.#flush());
    // A renewal writes the lease and an append the journal, neither of which a fence holds.
    this.#renew = immediate(db, (runId, epoch, leaseMs, now) => this.#doRenew(runId, epoch, leaseMs, now), 'keeps');
    this.#claim = immediate(db, (runId, owner, leaseMs, now, takeover) => this.#doClaim(runId, owner, leaseMs, now, takeover), 'keeps');
    this.#append = joined(db, (entry) => this.#doAppend(entry), 'keeps');
    this.#requestStop = immediate(db, (runId, request) => this.#doRequestStop(runId, request), 'keeps');
    const del = {
      commits: db.prepare<[number]>('DELETE FROM commits WHERE sid = ?'),
      journal: db.prepare<[string]>('DELETE FROM journal WHERE run_id IN (SELECT run_id FROM runs WHERE session_id = ?)'),
      runs: db.prepare<[string]>('DELETE FROM runs WHERE session_id = ?'),
      usage: db.prepare<[string]>('DELETE FROM usage WHERE session_id = ?'),
      session: db.prepare<[number]>('DELETE FROM sessions WHERE sid = ?'),
    };
    // One transaction: the session goes with everything it holds, or nothing goes.
    this.#deleteSession = immediate(
      db,
      (sessionId: string) => {
        fences.drop(sessionId);
        const row = q.session.get(sessionId);
        if (!row) return false;
        const current = row.current_run_id === null ? undefined : this.#run(row.current_run_id);
        const refused = planDeleteSession({ sessionId, currentRun: current && { runId: current.runId, status: current.status } });
        if (refused) throw refused;
        del.commits.run(row.sid);
        del.journal.run(sessionId);
        del.runs.run(sessionId);
        del.usage.run(sessionId);
        del.session.run(row.sid);
        return true;
      },
      'keeps',
    );
    // Journals of runs that are not their session's current run (left by versions before K1 dropped them).
    const deadJournals = db.prepare(
      `DELETE FROM journal WHERE run_id IN (SELECT DISTINCT j.run_id FROM journal j LEFT JOIN runs r ON r.run_id = j.run_id
         LEFT JOIN sessions s ON s.session_id = r.session_id WHERE s.current_run_id IS NOT j.run_id)`,
    );
    // Commit rows nothing reads: not a session's head (its last row), not its genesis (version 1), not a
    // checkpoint, and not the row holding the state of one of those. Rows that carry usage (the rollup
    // reads them) or messages (the conversation) stay, without their state.
    const unread = `WITH heads AS (SELECT sid, max(version) AS v FROM commits GROUP BY sid),
        keep AS (SELECT coalesce(c.state_ref, c.id) AS id FROM commits c WHERE c.checkpoint IS NOT NULL
          UNION SELECT coalesce(c.state_ref, c.id) FROM commits c JOIN heads h ON h.sid = c.sid AND h.v = c.version)
      SELECT c.id FROM commits c JOIN heads h ON h.sid = c.sid
      WHERE c.checkpoint IS NULL AND c.version > 1 AND c.version < h.v AND c.id NOT IN (SELECT id FROM keep)`;
    const dropCommits = db.prepare(`DELETE FROM commits WHERE id IN (${unread} AND c.usage IS NULL AND c.messages IS NULL LIMIT ${PRUNE_BATCH})`);
    const dropStates = db.prepare(`UPDATE commits SET state = NULL WHERE id IN (${unread} AND (c.usage IS NOT NULL OR c.messages IS NOT NULL) AND c.state IS NOT NULL LIMIT ${PRUNE_BATCH})`);
    // Checkpoints past each session's newest `keepCheckpoints` (already gone for every read) are un-marked
    // in the file first, so that the rows only they kept can go.
    const trimAll = db.prepare<[number]>(
      `UPDATE commits SET checkpoint = NULL WHERE id IN (SELECT id FROM (
         SELECT id, row_number() OVER (PARTITION BY sid ORDER BY version DESC) AS newer FROM commits WHERE checkpoint IS NOT NULL)
       WHERE newer > ? LIMIT ${PRUNE_BATCH})`,
    );
    const keep = this.#keepCheckpoints;
    this.#prune = immediate(db, () => {
      const trimmed = Number.isFinite(keep) ? trimAll.run(keep).changes : 0;
      return { journalEntries: deadJournals.run().changes, records: dropCommits.run().changes + dropStates.run().changes, trimmed };
    });
    // Reads run in one (deferred) transaction so that they see one snapshot of the database, never part of a commit.
    this.#readSession = deferred(db, (sessionId) => {
      const row = q.session.get(sessionId);
      return row ? this.#snapshot(row) : undefined;
    });
    this.#readRun = deferred(db, (runId) => this.#run(runId));
    this.#readCheckpoint = deferred(db, (sessionId, id) => {
      const sid = q.sid.get(sessionId);
      const row = sid === undefined ? undefined : this.#checkpointRow(id, sid);
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

  async claimRun(runId: string, owner: string, leaseMs: number, now: number, options: ClaimOptions = {}): Promise<ClaimedRun> {
    this.#flush();
    return guard('claim a run', () => this.#claim(runId, owner, leaseMs, now, options.takeover === true));
  }

  async appendJournal(entry: JournalEntry): Promise<JournalEntry> {
    this.#flush();
    return guard('append to the journal', () => this.#append(entry));
  }

  async requestStop(runId: string, request: StopRequest): Promise<RunRecord | undefined> {
    this.#flush();
    return guard('request a stop', () => this.#requestStop(runId, request));
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
    return this.#q.checkpoints.all(sid, Number.isFinite(this.#keepCheckpoints) ? this.#keepCheckpoints : -1).map((row) => checkpointInfo(row, sessionId));
  }

  async loadCheckpoint(sessionId: string, checkpointId: string): Promise<Checkpoint | undefined> {
    this.#flush();
    const match = /^cp_(\d+)$/.exec(checkpointId);
    return match ? this.#readCheckpoint(sessionId, Number(match[1])) : undefined;
  }

  async deleteSession(sessionId: string): Promise<boolean> {
    this.#flush();
    return guard('delete a session', () => this.#deleteSession(sessionId));
  }

  /**
   * Drops the journal entries of runs that are no longer their session's current run (a database written
   * by an older version kept them), and the commit rows nothing reads any more: rows that are neither a
   * session's head, its genesis, a checkpoint nor the holder of one's state (a row that carries usage
   * or messages stays, without its state). First it un-marks the checkpoints past each session's newest
   * `keepCheckpoints` (no read sees them from the commit that made them surplus on); chunks are the stream
   * manager's (`openSqliteStores(...).prune()` runs both).
   */
  async prune(): Promise<PruneReport> {
    this.#flush();
    let journalEntries = 0;
    let records = 0;
    for (;;) {
      const batch = guard('prune', () => this.#prune());
      journalEntries += batch.journalEntries;
      records += batch.records;
      if (batch.records < PRUNE_BATCH && batch.trimmed < PRUNE_BATCH) break;
      // Let other writers in between batches.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    return { chunks: 0, journalEntries, records };
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
    // K1 rewrites the session's row, head and runs.
    this.#fences.drop(request.sessionId);
    const found = this.#q.session.get(request.sessionId);
    if (found) this.#checkRecord('session', found.record_version);
    const head = found ? this.#head(found.sid) : undefined;
    const plan = orThrow(planBeginRun(this.#beginInput(found, head, request.restoreCheckpointId), request));
    this.#writeBegin(request, plan, found?.sid, head);
    return beginRunResult(plan, this.#snapshot(this.#q.session.get(request.sessionId)!));
  }

  /** What K1 decides from: the session's header, its current run, the checkpoint a rewind restores. */
  #beginInput(found: SessionRow | undefined, head: HeadRow | undefined, restoreId: string | undefined): BeginRunInput<SqliteRestorePoint> {
    if (!found || !head) return { session: undefined, currentRun: undefined };
    const current = found.current_run_id === null ? undefined : this.#q.runHeader.get(found.current_run_id);
    return {
      session: sessionHeader(found, head),
      currentRun: current && { runId: current.run_id, status: current.status, stepCount: runStepCount(current, head) },
      restorePoint: restoreId === undefined || restoreId === GENESIS_CHECKPOINT ? undefined : this.#restorePoint(found.sid, restoreId),
    };
  }

  /** Writes K1's plan: the session row (created if new), a rewind, the superseded run, the new run, and a commits row. */
  #writeBegin(request: BeginRunRequest, plan: BeginRunPlan<SqliteRestorePoint>, existing: number | undefined, head: HeadRow | undefined): void {
    const q = this.#q;
    const { rewind, supersede, session, run } = plan;
    const sid = existing ?? Number(q.insertSession.run(request.sessionId, SQLITE_RECORD_VERSION, request.agentType, request.parentSessionId ?? null).lastInsertRowid);
    // The commits row holding the state the session goes on from; NULL for a new session's first row, which holds the state itself.
    let stateRef = head?.state_ref ?? null;
    if (rewind) {
      // Checkpoints past the newest `keepCheckpoints` are un-marked first, so that dropping the later ones
      // does not bring them back; then later checkpoints stop being checkpoints (their rows stay: versions only grow).
      if (Number.isFinite(this.#keepCheckpoints)) q.trimSession.run(sid, this.#keepCheckpoints);
      q.dropMessagesFrom.run(sid, rewind.messageCount);
      q.cutMessagesAt.run(rewind.messageCount, sid, rewind.messageCount, rewind.messageCount);
      q.dropCheckpoints.run(sid, rewind.to === 'genesis' ? 0 : rewind.checkpoint.version);
      if (!plan.create) stateRef = rewind.to === 'genesis' ? q.genesis.get(sid)! : rewind.checkpoint.stateRef;
    }
    if (supersede) q.supersedeRun.run(supersede.endedAt, supersede.stepCount, supersede.runId);
    // The replaced run never writes again: its journal has no reader left.
    if (plan.dropJournalOf !== undefined) q.dropJournal.run(plan.dropJournalOf);
    q.startSession.run(run.runId, json(session.turn), session.agentType, session.resumeCount, sid);
    q.insertRun.run(run.runId, SQLITE_RECORD_VERSION, run.sessionId, run.turnId, run.agentType, run.signal, run.startedAt, run.leaseOwner, run.leaseExpiresAt, JSON.stringify(run.options));
    // K1 is a write of the session too: it gets a commits row (the version moves, the new run's step set starts empty).
    // The session's first row holds the initial state, which is what a rewind to genesis restores.
    q.insertCommit.run(
      sid,
      session.version,
      run.runId,
      'run_start',
      session.messageCount,
      session.stepCount,
      plan.runHeader.stepCount,
      JSON.stringify(plan.runHeader.committedSteps),
      plan.create ? JSON.stringify(request.initialState) : null,
      stateRef,
      null,
      null,
      request.startedAt,
      null,
      null,
    );
  }

  /** A checkpoint of the session a rewind can restore, with the row keys it needs, or undefined. */
  #restorePoint(sid: number, checkpointId: string): SqliteRestorePoint | undefined {
    const match = /^cp_(\d+)$/.exec(checkpointId);
    const row = match ? this.#checkpointRow(Number(match[1]), sid) : undefined;
    return row && { checkpointId, messageCount: row.message_count, version: row.version, stateRef: row.state_ref };
  }

  /** A checkpoint's row when it is one of the session's newest `keepCheckpoints` checkpoints. */
  #checkpointRow(id: number, sid: number): (CheckpointRow & { state: string | null; state_ref: number }) | undefined {
    const row = this.#q.checkpoint.get(id, sid);
    if (!row || !Number.isFinite(this.#keepCheckpoints)) return row;
    return this.#q.checkpointsNewer.get(sid, row.version, this.#keepCheckpoints)! < this.#keepCheckpoints ? row : undefined;
  }

  /**
   * The turn record of a commit's session, parsed once for as long as its text stays the same: the steps
   * of a turn all read the same record. The rules never change what they are given, so the object is shared.
   */
  #turnOf(text: string | null): TurnRecord | undefined {
    if (text === null) return undefined;
    if (text !== this.#turnText) {
      this.#turnParsed = JSON.parse(text) as TurnRecord;
      this.#turnText = text;
    }
    return this.#turnParsed;
  }

  #doCommit(commit: Commit): CommitReceipt {
    // The fence the last commit of this run left on this connection, when nothing else wrote since (read-cache.ts).
    const cached = this.#fences.get(commit.sessionId);
    const hit = cached !== undefined && cached.head.run_id === commit.runId ? cached : undefined;
    const fence = hit ? hit.row : this.#q.fence.get(commit.runId, commit.sessionId);
    if (fence && !hit) this.#checkRecord('session', fence.record_version);
    const head = hit ? hit.head : fence ? headOf(fence) : undefined;
    const run = fence && head && committingRun(fence, head, commit.runId, hit?.committedSteps);
    const plan = orThrow(planCommit({ session: fence && head ? sessionHeader(fence, head, this.#turnOf(fence.turn)) : undefined, run }, commit));
    // Accepted: the session and its head exist.
    const runSteps = JSON.stringify(plan.run.committedSteps);
    const { id, stateRef, journalMax } = this.#writeCommit(commit, plan, fence!.sid, head!, runSteps, hit ? hit.journalMax : (fence!.journal_max ?? undefined));
    if (plan.turnChanged || plan.runPatch) {
      // A turn's start and a run's status change rewrite more than the head: read again next time.
      this.#fences.drop(commit.sessionId);
    } else {
      const { session } = plan;
      // The session and run columns are unchanged (no turn, no status change); the head is the row just written.
      const next: HeadRow = {
        version: session.version,
        run_id: commit.runId,
        message_count: session.messageCount,
        step_count: session.stepCount,
        run_step_count: plan.run.stepCount,
        run_steps: runSteps,
        state_ref: stateRef,
      };
      this.#fences.set(commit.sessionId, { row: fence!, head: next, committedSteps: plan.run.committedSteps, journalMax });
    }
    return { version: plan.session.version, messageCount: plan.session.messageCount, ...(plan.checkpoint ? { checkpointId: `cp_${id}` } : {}) };
  }

  /**
   * Writes a commit's plan: the turn, one commits row (with the messages it appends), the journal drop (none
   * when `journalMax`, the run's highest journal step as {@link CachedFence} keeps it, says nothing is there to
   * drop), the runs row if it changes. Returns the commits row's id, the id of the row holding the session's
   * state now, and the run's highest journal step after the drop.
   */
  #writeCommit(commit: Commit, plan: CommitPlan, sid: number, head: HeadRow, runSteps: string, journalMax: number | undefined): { id: number; stateRef: number; journalMax: number | undefined } {
    const q = this.#q;
    const { session, append } = plan;
    const messages = append.messages.length === 0 ? null : JSON.stringify(append.messages);
    if (plan.turnChanged) q.setTurn.run(json(session.turn), sid);
    const stateText = commit.state === undefined ? null : JSON.stringify(commit.state);
    const usage = usageColumn(commit.usage, commit.sessionId, commit.runId);
    const { lastInsertRowid } = q.insertCommit.run(
      sid,
      session.version,
      commit.runId,
      commit.kind,
      session.messageCount,
      session.stepCount,
      plan.run.stepCount,
      runSteps,
      stateText,
      stateText === null ? head.state_ref : null,
      plan.checkpoint?.kind ?? null,
      usage,
      commit.committedAt,
      messages,
      messages === null ? null : append.at,
    );
    const drop = plan.dropJournal;
    let journalLeft = journalMax;
    if (drop && journalMax !== undefined) {
      if (drop.all) q.dropJournal.run(drop.runId);
      else q.dropJournalThrough.run(drop.runId, drop.throughStep);
      // Entries of later steps stay, and so does the bound.
      if (drop.all || journalMax <= drop.throughStep) journalLeft = undefined;
    }
    // The runs row changes only when the run's status or result does, not on every step.
    const patch = plan.runPatch;
    if (patch) q.updateRun.run(plan.run.stepCount, patch.status ?? null, patch.endedAt ?? null, json(patch.output), json(patch.error), json(patch.suspension), commit.runId);
    const id = Number(lastInsertRowid);
    return { id, stateRef: stateText === null ? head.state_ref : id, journalMax: journalLeft };
  }

  #doRenew(runId: string, epoch: number, leaseMs: number, now: number): RunLease {
    const fence = this.#runFence(runId);
    const { lease } = orThrow(planRenewLease({ run: fence && runHeaderOf(fence), currentRunId: fence?.current_run_id ?? undefined }, runId, epoch, leaseMs, now));
    this.#q.renew.run(lease.expiresAt, runId);
    return lease;
  }

  #doClaim(runId: string, owner: string, leaseMs: number, now: number, takeover: boolean): ClaimedRun {
    const q = this.#q;
    const fence = this.#runFence(runId);
    const { lease } = orThrow(planClaimRun({ run: fence && runHeaderOf(fence), currentRunId: fence?.current_run_id ?? undefined }, runId, owner, leaseMs, now, takeover));
    // The epoch moves: the session's cached fence (which holds it) goes.
    this.#fences.drop(fence!.session_id);
    q.claim.run(lease.epoch, lease.owner, lease.expiresAt, runId);
    // Accepted: the run is its session's current run, so both rows exist.
    return { session: this.#snapshot(q.session.get(fence!.session_id)!), run: this.#run(runId)!, lease, journal: q.journal.all(runId).map(journalEntry) };
  }

  #doRequestStop(runId: string, request: StopRequest): RunRecord | undefined {
    const fence = this.#runFence(runId);
    const { write } = orThrow(planRequestStop({ run: fence && runHeaderOf(fence) }, request));
    // A fence does not hold the stop request; dropped all the same, as the run's row changes.
    if (fence) this.#fences.drop(fence.session_id);
    if (write) this.#q.requestStop.run(JSON.stringify(write), runId);
    return this.#run(runId);
  }

  #doAppend(entry: JournalEntry): JournalEntry {
    const q = this.#q;
    const fence = this.#runFence(entry.runId);
    const stored = fence ? q.journalEntry.get(entry.runId, entry.key) : undefined;
    const plan = orThrow(
      planJournalAppend({ run: fence && runHeaderOf(fence), currentRunId: fence?.current_run_id ?? undefined, existing: stored && journalEntry(stored) }, entry),
    );
    if (plan.write) {
      q.insertJournal.run(entry.runId, entry.key, entry.epoch, entry.stepIndex, entry.kind, json(entry.data), entry.at);
      // The cached fence of the run's session learns of the entry, so that the next step commit drops it.
      const cached = fence && this.#fences.current(fence.session_id);
      if (cached && cached.head.run_id === entry.runId) {
        const journalMax = cached.journalMax === undefined ? entry.stepIndex : Math.max(cached.journalMax, entry.stepIndex);
        if (journalMax !== cached.journalMax) this.#fences.set(fence.session_id, { row: cached.row, head: cached.head, committedSteps: cached.committedSteps, journalMax });
      }
    }
    return plan.entry;
  }

  /** A run with its session's current run id (what renew, claim and append decide from), or undefined. */
  #runFence(runId: string): RunFenceRow | undefined {
    const fence = this.#q.runFence.get(runId);
    if (fence) this.#checkRecord('run', fence.record_version);
    if (fence && fence.session_record_version !== null) this.#checkRecord('session', fence.session_record_version);
    return fence;
  }

  // ---- reads (inside a transaction of the caller) ----

  #head(sid: number): HeadRow {
    const head = this.#q.head.get(sid);
    // Every session's K1 wrote a commits row, so a session always has a head.
    if (!head) throw noHead(sid);
    return head;
  }

  #messages(sid: number, count: number): Message[] {
    const out: Message[] = [];
    for (const row of this.#q.messages.all(sid, count)) {
      const messages = JSON.parse(row.messages) as Message[];
      for (let i = 0; i < messages.length && row.messages_at + i < count; i++) out.push(messages[i]!);
    }
    return out;
  }

  #snapshot(row: SessionRow): SessionSnapshot {
    this.#checkRecord('session', row.record_version);
    const head = this.#head(row.sid);
    return sessionSnapshot(sessionHeader(row, head), JSON.parse(this.#q.stateAt.get(head.state_ref) ?? 'null') as unknown, this.#messages(row.sid, head.message_count));
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
  'run_id, record_version, session_id, turn_id, agent_type, status, signal, started_at, ended_at, step_count, output, error, suspension, epoch, lease_owner, lease_expires_at, options, stop_request';

function prepare(db: BetterSqlite3.Database) {
  return {
    session: db.prepare<[string], SessionRow>(
      'SELECT sid, session_id, record_version, agent_type, parent_session_id, current_run_id, turn, resume_count FROM sessions WHERE session_id = ?',
    ),
    sid: db.prepare<[string], number>('SELECT sid FROM sessions WHERE session_id = ?').pluck(),
    insertSession: db.prepare<[string, number, string, string | null]>(
      'INSERT INTO sessions (session_id, record_version, agent_type, parent_session_id, current_run_id, turn, resume_count) VALUES (?, ?, ?, ?, NULL, NULL, 0)',
    ),
    startSession: db.prepare<[string, string | null, string, number, number]>('UPDATE sessions SET current_run_id = ?, turn = ?, agent_type = ?, resume_count = ? WHERE sid = ?'),
    setTurn: db.prepare<[string | null, number]>('UPDATE sessions SET turn = ? WHERE sid = ?'),
    head: db.prepare<[number], HeadRow>(
      'SELECT version, run_id, message_count, step_count, run_step_count, run_steps, coalesce(state_ref, id) AS state_ref FROM commits WHERE sid = ? ORDER BY version DESC LIMIT 1',
    ),
    genesis: db.prepare<[number], number>('SELECT id FROM commits WHERE sid = ? AND version = 1').pluck(),
    stateAt: db.prepare<[number], string>('SELECT state FROM commits WHERE id = ?').pluck(),
    insertCommit: db.prepare<[number, number, string, string, number, number, number, string, string | null, number | null, string | null, string | null, number, string | null, number | null]>(
      'INSERT INTO commits (sid, version, run_id, kind, message_count, step_count, run_step_count, run_steps, state, state_ref, checkpoint, usage, committed_at, messages, messages_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    ),
    // The conversation is the messages of the session's commits rows, in version order, each row's from its
    // messages_at on (a rewind cuts them: rows from the cut on lose theirs, a row across it keeps its part).
    messages: db.prepare<[number, number], { messages_at: number; messages: string }>(
      'SELECT messages_at, messages FROM commits WHERE sid = ? AND messages IS NOT NULL AND messages_at < ? ORDER BY version',
    ),
    dropMessagesFrom: db.prepare<[number, number]>('UPDATE commits SET messages = NULL, messages_at = NULL WHERE sid = ? AND messages IS NOT NULL AND messages_at >= ?'),
    cutMessagesAt: db.prepare<[number, number, number, number]>(
      `UPDATE commits SET messages = (SELECT json_group_array(json(value)) FROM (SELECT value FROM json_each(commits.messages) WHERE key < ? - commits.messages_at ORDER BY key))
       WHERE sid = ? AND messages IS NOT NULL AND messages_at < ? AND messages_at + json_array_length(messages) > ?`,
    ),
    dropCheckpoints: db.prepare<[number, number]>('UPDATE commits SET checkpoint = NULL WHERE sid = ? AND version > ? AND checkpoint IS NOT NULL'),
    // The newest `limit` checkpoints (-1: all), oldest first.
    checkpoints: db.prepare<[number, number], CheckpointRow>(
      `SELECT * FROM (SELECT id, version, run_id, checkpoint, step_count, message_count, committed_at FROM commits
         WHERE sid = ? AND checkpoint IS NOT NULL ORDER BY version DESC LIMIT ?) ORDER BY version`,
    ),
    // How many checkpoints of the session are newer than a version, counting no further than `limit`.
    checkpointsNewer: db
      .prepare<[number, number, number], number>(
        'SELECT count(*) FROM (SELECT 1 FROM commits WHERE sid = ? AND version > ? AND checkpoint IS NOT NULL ORDER BY version DESC LIMIT ?)',
      )
      .pluck(),
    // Un-marks the session's checkpoints past its newest N.
    trimSession: db.prepare<[number, number]>(
      'UPDATE commits SET checkpoint = NULL WHERE id IN (SELECT id FROM commits WHERE sid = ? AND checkpoint IS NOT NULL ORDER BY version DESC LIMIT -1 OFFSET ?)',
    ),
    checkpoint: db.prepare<[number, number], CheckpointRow & { state: string | null; state_ref: number }>(
      'SELECT id, version, run_id, checkpoint, step_count, message_count, committed_at, state, coalesce(state_ref, id) AS state_ref FROM commits WHERE id = ? AND sid = ? AND checkpoint IS NOT NULL',
    ),
    // A commit's one read: the session, the committing run's fence, and the session's head (its last commits row).
    fence: db.prepare<[string, string], FenceRow>(
      `SELECT s.sid, s.session_id, s.record_version, s.agent_type, s.parent_session_id, s.current_run_id, s.turn, s.resume_count,
         r.epoch AS run_epoch, r.status AS run_status,
         h.version AS head_version, h.run_id AS head_run_id, h.message_count AS head_message_count, h.step_count AS head_step_count,
         h.run_step_count AS head_run_step_count, h.run_steps AS head_run_steps, coalesce(h.state_ref, h.id) AS head_state_ref,
         (SELECT max(j.step_index) FROM journal j WHERE j.run_id = r.run_id) AS journal_max
       FROM sessions s LEFT JOIN runs r ON r.run_id = ?
       LEFT JOIN commits h ON h.id = (SELECT c.id FROM commits c WHERE c.sid = s.sid ORDER BY c.version DESC LIMIT 1)
       WHERE s.session_id = ?`,
    ),
    runFence: db.prepare<[string], RunFenceRow>(
      `SELECT r.run_id, r.session_id, r.record_version, r.status, r.epoch, r.lease_owner, r.lease_expires_at, r.stop_request,
         s.current_run_id, s.record_version AS session_record_version
       FROM runs r LEFT JOIN sessions s ON s.session_id = r.session_id WHERE r.run_id = ?`,
    ),
    runHeader: db.prepare<[string], Pick<RunRow, 'run_id' | 'status' | 'step_count'>>('SELECT run_id, status, step_count FROM runs WHERE run_id = ?'),
    run: db.prepare<[string], RunRow>(`SELECT ${RUN_COLUMNS} FROM runs WHERE run_id = ?`),
    runWithSession: db.prepare<[string], RunRow & { sid: number | null; current_run_id: string | null }>(
      `SELECT r.*, s.sid, s.current_run_id FROM runs r LEFT JOIN sessions s ON s.session_id = r.session_id WHERE r.run_id = ?`,
    ),
    insertRun: db.prepare<[string, number, string, string, string, string, number, string, number, string]>(
      `INSERT INTO runs (run_id, record_version, session_id, turn_id, agent_type, status, signal, started_at, step_count, epoch, lease_owner, lease_expires_at, options)
       VALUES (?, ?, ?, ?, ?, 'running', ?, ?, 0, 1, ?, ?, ?)`,
    ),
    supersedeRun: db.prepare<[number, number, string]>("UPDATE runs SET status = 'superseded', ended_at = ?, step_count = ? WHERE run_id = ?"),
    updateRun: db.prepare<[number, RunStatus | null, number | null, string | null, string | null, string | null, string]>(
      'UPDATE runs SET step_count = ?, status = coalesce(?, status), ended_at = coalesce(?, ended_at), output = coalesce(?, output), error = coalesce(?, error), suspension = coalesce(?, suspension) WHERE run_id = ?',
    ),
    renew: db.prepare<[number, string]>('UPDATE runs SET lease_expires_at = ? WHERE run_id = ?'),
    requestStop: db.prepare<[string, string]>('UPDATE runs SET stop_request = ? WHERE run_id = ?'),
    claim: db.prepare<[number, string, number, string]>('UPDATE runs SET epoch = ?, lease_owner = ?, lease_expires_at = ? WHERE run_id = ?'),
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

/** The header the session rules read: the session row and its head (the last commits row). */
function sessionHeader(row: SessionRow, head: HeadRow, turn: TurnRecord | undefined = parse<TurnRecord>(row.turn)): SessionHeader {
  return {
    sessionId: row.session_id,
    agentType: row.agent_type,
    ...(row.parent_session_id === null ? {} : { parentSessionId: row.parent_session_id }),
    currentRunId: row.current_run_id ?? undefined,
    turn,
    version: head.version,
    stepCount: head.step_count,
    messageCount: head.message_count,
    resumeCount: row.resume_count,
  };
}

/** The error for a session without a head: every session's K1 wrote a commits row, so its file is damaged. */
function noHead(sid: number): StateCommitError {
  return new StateCommitError(`The SQLite session #${sid} has no commits; the database is damaged.`);
}

/** The head a commit's read brought with its fence; every session's K1 wrote a commits row, so a session always has one. */
function headOf(fence: FenceRow): HeadRow {
  if (fence.head_version === null) throw noHead(fence.sid);
  return {
    version: fence.head_version,
    run_id: fence.head_run_id,
    message_count: fence.head_message_count,
    step_count: fence.head_step_count,
    run_step_count: fence.head_run_step_count,
    run_steps: fence.head_run_steps,
    state_ref: fence.head_state_ref,
  };
}

/**
 * The run a commit names, as the rules read it, or undefined when there is no such run. Only the current
 * run commits, and its K1 wrote a commits row: the head's step count and step set are the current run's.
 */
function committingRun(fence: FenceRow, head: HeadRow, runId: string, parsedSteps?: StepSet): CommittingRun | undefined {
  if (fence.run_status === null || fence.run_epoch === null) return undefined;
  const isHead = head.run_id === runId;
  return {
    runId,
    status: fence.run_status,
    epoch: fence.run_epoch,
    stepCount: isHead ? head.run_step_count : 0,
    committedSteps: isHead ? (parsedSteps ?? (JSON.parse(head.run_steps) as StepSet)) : NO_STEPS,
  };
}

/** A run's step count: the head counts the current run's steps (a step does not touch its runs row). */
function runStepCount(run: Pick<RunRow, 'run_id' | 'step_count'>, head: HeadRow | undefined): number {
  return head?.run_id === run.run_id ? head.run_step_count : run.step_count;
}

/** What renew, claim and a journal append read of a run. */
function runHeaderOf(row: RunFenceRow): Pick<RunHeader, 'runId' | 'sessionId' | 'status' | 'epoch' | 'leaseOwner' | 'leaseExpiresAt' | 'stopRequest'> {
  return {
    runId: row.run_id,
    sessionId: row.session_id,
    status: row.status,
    epoch: row.epoch,
    leaseOwner: row.lease_owner,
    leaseExpiresAt: row.lease_expires_at,
    ...(row.stop_request === null ? {} : { stopRequest: JSON.parse(row.stop_request) as StopRequest }),
  };
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
    ...(row.stop_request === null ? {} : { stopRequest: JSON.parse(row.stop_request) as StopRequest }),
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
