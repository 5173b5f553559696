import { AgentError, GENESIS_CHECKPOINT, RunSupersededError, StateCommitError, rollupUsage, stateConflictError } from '@helix-agents/sdk';
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
  RunOptionsRecord,
  RunRecord,
  RunStatus,
  SessionSnapshot,
  StartSignalKind,
  StateStore,
  SuspensionRecord,
  TurnRecord,
  UsageEntry,
  UsageFilter,
  UsageRollup,
  UsageStore,
} from '@helix-agents/sdk';
import type pg from 'pg';
import { POSTGRES_SCHEMA_VERSION, schemaTooNewError } from './migrations.js';
import { fromJson, quoteIdentifier, run, sqlState, statements, storeError, toJson, toNumber, transaction, type Queryable, type Statement } from './sql.js';

/** Options of {@link PostgresStateStore}. */
export interface PostgresStateStoreOptions {
  /** The Postgres schema holding the tables ('helix' by default); migrate it first with `migratePostgres`. */
  readonly schema?: string;
}

// The columns of a session snapshot; JSON columns are read as text so that a stored JSON null stays null.
const SESSION_COLUMNS = `session_id, record_version, agent_type, parent_session_id, state::text AS state, message_count, current_run_id,
  turn_id, turn_first_run_id, turn_input::text AS turn_input, turn_start_committed, turn_input_index,
  version, step_count, resume_count`;

const RUN_COLUMNS = `run_id, record_version, session_id, turn_id, agent_type, status, signal, started_at, ended_at, step_count,
  output::text AS output, error::text AS error, epoch, lease_owner, lease_expires_at, options::text AS options, suspension::text AS suspension`;

const JOURNAL_COLUMNS = `run_id, key, epoch, step_index, kind, data::text AS data, at`;

function buildStatements(s: string) {
  // The first `count` rows: inside a statement that also cuts the conversation (a rewind), the snapshot
  // still shows the rows it deletes, and the session row's count is what the statement decided.
  const messagesOf = (row: string) => `(SELECT json_agg(m.message ORDER BY m.idx)::text FROM ${s}.messages m WHERE m.session_id = ${row}.session_id AND m.idx < ${row}.message_count)`;
  return {
    // K1, first half: create the session if needed and lock its row (the no-op update takes the lock).
    beginLock: `INSERT INTO ${s}.sessions AS x (session_id, record_version, agent_type, parent_session_id, state, initial_state, created_at, updated_at)
      VALUES ($1, $2, $3, $4, $5::json, $5::json, $6, $6)
      ON CONFLICT (session_id) DO UPDATE SET updated_at = x.updated_at
      RETURNING current_run_id, run_open, turn_id IS NOT NULL AS has_turn`,
    // A rewind's target: the conversation length it restores.
    restorePoint: `SELECT message_count FROM ${s}.checkpoints WHERE session_id = $1 AND id = $2`,
    // K1, second half, under the session lock: supersede the running run, record the new one, move the
    // session; a rewind ($13) also cuts the conversation to $15 rows, drops the checkpoints after the
    // restored one ($14; NULL for genesis) and restores its state.
    beginWrite: `WITH prev AS (
        UPDATE ${s}.runs SET status = 'superseded', ended_at = $7::bigint, record_version = $2
        WHERE run_id = $10::text AND run_id <> $3::text AND status = 'running'
      ), dropped AS (
        DELETE FROM ${s}.journal WHERE run_id = $10::text
      ), cut AS (
        DELETE FROM ${s}.messages WHERE $13::boolean AND session_id = $1 AND idx >= $15::integer
      ), branch AS (
        DELETE FROM ${s}.checkpoints WHERE $13::boolean AND session_id = $1 AND id > COALESCE($14::bigint, 0)
      ), run AS (
        INSERT INTO ${s}.runs (run_id, record_version, session_id, turn_id, agent_type, status, signal, started_at, step_count, epoch, lease_owner, lease_expires_at, options)
        VALUES ($3, $2, $1, COALESCE($11::text, (SELECT turn_id FROM ${s}.sessions WHERE session_id = $1)), $4, 'running', $5, $7, 0, 1, $8, $9, $6::json)
        ON CONFLICT (run_id) DO UPDATE SET record_version = EXCLUDED.record_version, session_id = EXCLUDED.session_id, turn_id = EXCLUDED.turn_id,
          agent_type = EXCLUDED.agent_type, status = 'running', signal = EXCLUDED.signal, started_at = EXCLUDED.started_at, ended_at = NULL,
          step_count = 0, output = NULL, error = NULL, epoch = 1, lease_owner = EXCLUDED.lease_owner, lease_expires_at = EXCLUDED.lease_expires_at,
          options = EXCLUDED.options, suspension = NULL
      ), sess AS (
        UPDATE ${s}.sessions SET record_version = $2, current_run_id = $3, run_epoch = 1, run_open = true, agent_type = $4,
          turn_id = COALESCE($11::text, turn_id),
          turn_first_run_id = CASE WHEN $11::text IS NULL THEN turn_first_run_id ELSE $3 END,
          turn_input = CASE WHEN $11::text IS NULL THEN turn_input ELSE $12::json END,
          -- A new turn starts uncommitted; a rewind to before the turn's input rows discards its start commit.
          turn_start_committed = CASE WHEN $11::text IS NOT NULL THEN false
            WHEN $13::boolean AND turn_start_committed AND COALESCE(turn_input_index, 0) >= $15::integer THEN false
            ELSE turn_start_committed END,
          turn_input_index = CASE WHEN $11::text IS NOT NULL THEN NULL
            WHEN $13::boolean AND turn_start_committed AND COALESCE(turn_input_index, 0) >= $15::integer THEN NULL
            ELSE turn_input_index END,
          state = CASE WHEN NOT $13::boolean THEN state
            WHEN $14::bigint IS NULL THEN initial_state
            ELSE (SELECT c.state FROM ${s}.checkpoints c WHERE c.session_id = $1 AND c.id = $14::bigint) END,
          message_count = CASE WHEN $13::boolean THEN LEAST(message_count, $15::integer) ELSE message_count END,
          version = version + 1,
          resume_count = resume_count + CASE WHEN $5::text = 'resumed' THEN 1 ELSE 0 END,
          updated_at = $7
        WHERE session_id = $1
        RETURNING ${SESSION_COLUMNS}
      )
      SELECT sess.*, ${messagesOf('sess')} AS messages FROM sess`,
    // K2–K5 in ONE statement (one round trip, one implicit transaction). `fence` takes the session row's
    // lock first; every write reads `ok`, which holds a row only when the fence passes, so a refused
    // commit writes nothing. Under the lock, `fence` sees the row's latest version (a concurrent commit we
    // waited for included), and the other parts follow it. A second commit of a step breaks the steps
    // primary key and rolls the whole statement back.
    commit: `WITH fence AS MATERIALIZED (
        SELECT session_id, current_run_id, run_epoch, run_open, message_count, step_count
        FROM ${s}.sessions WHERE session_id = $1 FOR UPDATE
      ), ok AS MATERIALIZED (
        SELECT session_id, message_count, step_count + CASE WHEN $3::text = 'step' THEN 1 ELSE 0 END AS step_count
        FROM fence WHERE current_run_id = $2::text AND run_epoch = $14::integer AND run_open
      ), step AS (
        INSERT INTO ${s}.steps (run_id, step_index, committed_at)
        SELECT $2, $4::integer, $13::bigint FROM ok WHERE $3::text = 'step'
      ), msgs AS (
        INSERT INTO ${s}.messages (session_id, idx, message)
        SELECT ok.session_id, ok.message_count + e.ord::integer - 1, e.value FROM ok, json_array_elements($5::json) WITH ORDINALITY AS e(value, ord)
      ), sess AS (
        UPDATE ${s}.sessions x SET
          record_version = $15,
          state = COALESCE($7::json, x.state),
          message_count = ok.message_count + $6::integer,
          step_count = ok.step_count,
          version = x.version + 1,
          run_open = CASE WHEN $8::text IS NULL THEN x.run_open ELSE $8::text = 'running' END,
          turn_start_committed = x.turn_start_committed OR ($3::text = 'turn_start' AND x.turn_id IS NOT NULL),
          turn_input_index = CASE WHEN $3::text = 'turn_start' AND x.turn_id IS NOT NULL THEN ok.message_count ELSE x.turn_input_index END,
          updated_at = $13::bigint
        FROM ok WHERE x.session_id = ok.session_id
        RETURNING x.version, x.state, x.message_count, x.step_count
      ), run AS (
        UPDATE ${s}.runs r SET
          record_version = $15,
          step_count = r.step_count + CASE WHEN $3::text = 'step' THEN 1 ELSE 0 END,
          status = COALESCE($8::text, r.status),
          ended_at = CASE WHEN $3::text = 'terminal' THEN $13::bigint ELSE r.ended_at END,
          output = COALESCE($9::json, r.output),
          error = COALESCE($10::json, r.error),
          suspension = COALESCE($18::json, r.suspension)
        FROM ok WHERE r.run_id = $2
      ), cp AS (
        INSERT INTO ${s}.checkpoints (session_id, run_id, kind, step_count, message_count, created_at, state)
        SELECT $1, $2, $11::text, sess.step_count, sess.message_count, $13::bigint, sess.state FROM sess WHERE $11::text IS NOT NULL
        RETURNING id
      ), used AS (
        INSERT INTO ${s}.usage (session_id, run_id, entry)
        SELECT u.session_id, u.run_id, u.entry FROM ok, ROWS FROM (json_array_elements($12::json), unnest($16::text[]), unnest($17::text[])) AS u(entry, session_id, run_id)
      ), dropped AS (
        DELETE FROM ${s}.journal j USING ok WHERE j.run_id = $2 AND ($3::text = 'terminal' OR ($3::text = 'step' AND j.step_index <= $4::integer))
      )
      SELECT f.current_run_id, sess.version, sess.message_count, (SELECT id FROM cp) AS checkpoint_id
      FROM fence f LEFT JOIN sess ON true`,
    renew: `UPDATE ${s}.runs r SET lease_expires_at = $3 WHERE r.run_id = $1 AND r.epoch = $2 AND r.status = 'running'
      AND EXISTS (SELECT 1 FROM ${s}.sessions x WHERE x.session_id = r.session_id AND x.current_run_id = r.run_id AND x.run_epoch = r.epoch AND x.run_open)
      RETURNING lease_owner`,
    fenceOf: `SELECT r.session_id, x.current_run_id FROM ${s}.runs r LEFT JOIN ${s}.sessions x ON x.session_id = r.session_id WHERE r.run_id = $1`,
    recoverable: `SELECT r.session_id, r.run_id, r.agent_type, r.epoch, r.lease_owner, r.lease_expires_at
      FROM ${s}.runs r JOIN ${s}.sessions x ON x.session_id = r.session_id AND x.current_run_id = r.run_id
      WHERE r.status = 'running' AND r.lease_expires_at <= $1
      ORDER BY r.lease_expires_at, r.started_at, r.run_id LIMIT $2`,
    claimLock: `SELECT session_id FROM ${s}.sessions WHERE session_id = (SELECT session_id FROM ${s}.runs WHERE run_id = $1) FOR UPDATE`,
    claimWrite: `WITH r AS (
        UPDATE ${s}.runs SET epoch = epoch + 1, lease_owner = $2, lease_expires_at = $3::bigint, record_version = $5
        WHERE run_id = $1 AND status = 'running' AND lease_expires_at <= $4::bigint
          AND EXISTS (SELECT 1 FROM ${s}.sessions x WHERE x.session_id = runs.session_id AND x.current_run_id = runs.run_id)
        RETURNING ${RUN_COLUMNS}
      ), sess AS (
        UPDATE ${s}.sessions x SET run_epoch = r.epoch, record_version = $5 FROM r WHERE x.session_id = r.session_id
        RETURNING ${SESSION_COLUMNS.replace(/(^|,\s*)(\w+)/g, '$1x.$2')}
      )
      SELECT row_to_json(r)::text AS run, row_to_json(sess)::text AS session, ${messagesOf('sess')} AS messages FROM r, sess`,
    // One statement: the fence check (a shared lock on the session row, so a concurrent supersede waits
    // for us or we see it) and the insert.
    journalAppend: `WITH f AS (
        SELECT x.session_id FROM ${s}.runs r JOIN ${s}.sessions x ON x.session_id = r.session_id
        WHERE r.run_id = $1 AND x.current_run_id = $1 AND x.run_epoch = $2 AND x.run_open
        FOR SHARE OF x
      )
      INSERT INTO ${s}.journal (run_id, key, epoch, step_index, kind, data, at)
      SELECT $1, $3, $2, $4, $5, $6::json, $7 FROM f
      ON CONFLICT (run_id, key) DO NOTHING
      RETURNING id`,
    journalCheck: `SELECT r.session_id, x.current_run_id, x.run_epoch, x.run_open,
        (SELECT row_to_json(j)::text FROM (SELECT ${JOURNAL_COLUMNS} FROM ${s}.journal WHERE run_id = $1 AND key = $2) j) AS existing
      FROM ${s}.runs r LEFT JOIN ${s}.sessions x ON x.session_id = r.session_id WHERE r.run_id = $1`,
    journalLoad: `SELECT ${JOURNAL_COLUMNS} FROM ${s}.journal WHERE run_id = $1 ORDER BY id`,
    session: `SELECT ${SESSION_COLUMNS}, ${messagesOf('x')} AS messages FROM ${s}.sessions x WHERE x.session_id = $1`,
    run: `SELECT ${RUN_COLUMNS} FROM ${s}.runs WHERE run_id = $1`,
    checkpoints: `SELECT id, session_id, run_id, kind, step_count, message_count, created_at FROM ${s}.checkpoints WHERE session_id = $1 ORDER BY id`,
    checkpoint: `SELECT c.id, c.session_id, c.run_id, c.kind, c.step_count, c.message_count, c.created_at, c.state::text AS state,
        (SELECT json_agg(m.message ORDER BY m.idx)::text FROM ${s}.messages m WHERE m.session_id = c.session_id AND m.idx < c.message_count) AS messages
      FROM ${s}.checkpoints c WHERE c.session_id = $1 AND c.id = $2`,
    usageRecord: `INSERT INTO ${s}.usage (session_id, run_id, entry)
      SELECT u.session_id, u.run_id, u.entry FROM ROWS FROM (json_array_elements($1::json), unnest($2::text[]), unnest($3::text[])) AS u(entry, session_id, run_id)`,
    usageAll: `SELECT entry::text AS entry FROM ${s}.usage`,
    usageBySession: `SELECT entry::text AS entry FROM ${s}.usage WHERE session_id = $1`,
    usageByRun: `SELECT entry::text AS entry FROM ${s}.usage WHERE run_id = $1`,
    usageByBoth: `SELECT entry::text AS entry FROM ${s}.usage WHERE session_id = $1 AND run_id = $2`,
  };
}

type Statements = Record<keyof ReturnType<typeof buildStatements>, Statement>;

interface SessionRow {
  session_id: string;
  record_version: number;
  agent_type: string;
  parent_session_id: string | null;
  state: string | null;
  current_run_id: string | null;
  turn_id: string | null;
  turn_first_run_id: string | null;
  turn_input: string | null;
  turn_start_committed: boolean;
  turn_input_index: number | null;
  version: string | number;
  step_count: number;
  resume_count: number;
  messages?: string | null;
}

interface RunRow {
  run_id: string;
  record_version: number;
  session_id: string;
  turn_id: string;
  agent_type: string;
  status: string;
  signal: string;
  started_at: string | number;
  ended_at: string | number | null;
  step_count: number;
  output: string | null;
  error: string | null;
  epoch: number;
  lease_owner: string;
  lease_expires_at: string | number;
  options: string;
  suspension: string | null;
}

interface JournalRow {
  run_id: string;
  key: string;
  epoch: number;
  step_index: number;
  kind: string;
  data: string | null;
  at: string | number;
}

const CHECKPOINT_PREFIX = 'cp_';

/**
 * The Postgres {@link StateStore}, also a {@link UsageStore} (usage passed with a commit is written in
 * the commit's transaction). Every fenced write takes the session row's lock and checks the run's fence
 * (current run id, epoch, still running), kept on that row so one lock covers it, in the same
 * transaction as the write: a commit (K2–K5) is a single statement, a K1 or a claim a short transaction.
 * A step costs O(rows it adds): messages are rows keyed by (session, index), and a checkpoint is the
 * state plus a conversation length. Operations of one session apply in call order.
 */
export class PostgresStateStore implements StateStore, UsageStore {
  /** The pool the store queries through. */
  readonly pool: pg.Pool;
  /** The Postgres schema of its tables. */
  readonly schema: string;
  readonly #sql: Statements;
  readonly #tails = new Map<string, Promise<void>>();
  readonly #sessionOfRun = new Map<string, string>();

  constructor(pool: pg.Pool, options: PostgresStateStoreOptions = {}) {
    this.pool = pool;
    this.schema = options.schema ?? 'helix';
    this.#sql = statements(this.schema, buildStatements);
  }

  async beginRun(request: BeginRunRequest): Promise<BeginRunResult> {
    this.#learn(request.runId, request.sessionId);
    return this.#inOrder(sessionKey(request.sessionId), () => this.#beginRun(request));
  }

  async commit(commit: Commit): Promise<CommitReceipt> {
    return this.#inOrder(sessionKey(commit.sessionId), () => this.#commit(commit));
  }

  async renewLease(runId: string, epoch: number, leaseMs: number, now: number): Promise<RunLease> {
    return this.#inOrder(this.#runKey(runId), () => this.#renewLease(runId, epoch, leaseMs, now));
  }

  async claimRun(runId: string, owner: string, leaseMs: number, now: number): Promise<ClaimedRun> {
    const claimed = await this.#inOrder(this.#runKey(runId), () => this.#claimRun(runId, owner, leaseMs, now));
    this.#learn(runId, claimed.run.sessionId);
    return claimed;
  }

  async appendJournal(entry: JournalEntry): Promise<JournalEntry> {
    return this.#inOrder(this.#runKey(entry.runId), () => this.#appendJournal(entry));
  }

  async loadJournal(runId: string): Promise<readonly JournalEntry[]> {
    return this.#inOrder(this.#runKey(runId), () => this.#loadJournal(runId));
  }

  async loadSession(sessionId: string): Promise<SessionSnapshot | undefined> {
    return this.#inOrder(sessionKey(sessionId), () => this.#loadSession(sessionId));
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    const found = await this.#inOrder(this.#runKey(runId), () => this.#getRun(runId));
    if (found) this.#learn(runId, found.sessionId);
    return found;
  }

  async listCheckpoints(sessionId: string): Promise<readonly CheckpointInfo[]> {
    return this.#inOrder(sessionKey(sessionId), () => this.#listCheckpoints(sessionId));
  }

  async loadCheckpoint(sessionId: string, checkpointId: string): Promise<Checkpoint | undefined> {
    return this.#inOrder(sessionKey(sessionId), () => this.#loadCheckpoint(sessionId, checkpointId));
  }

  /**
   * Runs the operations of one session in call order, as the in-memory store applies them: a commit
   * called before a K1 that supersedes its run lands first even when nobody awaited it. Over a pool,
   * two queries issued together could otherwise overtake each other on two connections. Other sessions
   * are not held up.
   */
  #inOrder<T>(key: string, operation: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key);
    const result = previous === undefined ? operation() : previous.then(operation);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.#tails.set(key, tail);
    void tail.then(() => {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    });
    return result;
  }

  /** The ordering key of a run's operations: its session's, once this store has seen the session. */
  #runKey(runId: string): string {
    const sessionId = this.#sessionOfRun.get(runId);
    return sessionId === undefined ? `run:${runId}` : sessionKey(sessionId);
  }

  #learn(runId: string, sessionId: string): void {
    // Bounded: the map only needs the runs this process works on now.
    if (this.#sessionOfRun.size >= 10_000 && !this.#sessionOfRun.has(runId)) this.#sessionOfRun.clear();
    this.#sessionOfRun.set(runId, sessionId);
  }

  async #beginRun(request: BeginRunRequest): Promise<BeginRunResult> {
    const sql = this.#sql;
    let supersededRunId: string | undefined;
    const session = await transaction(this.pool, 'beginRun', async (client) => {
      const [locked] = await run<{ current_run_id: string | null; run_open: boolean; has_turn: boolean }>(client, sql.beginLock, [
        request.sessionId,
        POSTGRES_SCHEMA_VERSION,
        request.agentType,
        request.parentSessionId ?? null,
        toJson(request.initialState),
        request.startedAt,
      ]);
      if (!locked) throw new StateCommitError(`Session ${request.sessionId} could not be created.`);
      if (request.expect) {
        const current = locked.current_run_id ?? undefined;
        const found = current === undefined ? undefined : await client.query<{ status: string }>(`SELECT status FROM ${quoteIdentifier(this.schema)}.runs WHERE run_id = $1`, [current]);
        const status = found?.rows[0]?.status;
        if (current !== request.expect.currentRunId || status !== request.expect.status) {
          throw stateConflictError(request, current, status);
        }
      }
      const restore = request.restoreCheckpointId === undefined ? undefined : await this.#restorePoint(client, request.sessionId, request.restoreCheckpointId);
      if (!request.newTurn && !locked.has_turn) throw new StateCommitError(`Session ${request.sessionId} has no turn to continue; start a run with a new turn.`);
      const previous = locked.run_open && locked.current_run_id !== null ? locked.current_run_id : undefined;
      supersededRunId = previous;
      const [row] = await run<SessionRow>(client, sql.beginWrite, [
        request.sessionId,
        POSTGRES_SCHEMA_VERSION,
        request.runId,
        request.agentType,
        request.signal,
        toJson(request.options),
        request.startedAt,
        request.leaseOwner,
        request.startedAt + request.leaseMs,
        previous ?? null,
        request.newTurn?.turnId ?? null,
        request.newTurn ? JSON.stringify(request.newTurn.input) : null,
        restore !== undefined,
        restore?.checkpointId ?? null,
        restore?.messageCount ?? 0,
      ]);
      if (!row) throw new StateCommitError(`Session ${request.sessionId} disappeared while run ${request.runId} began.`);
      return toSession(row, this.schema);
    });
    const lease: RunLease = { runId: request.runId, epoch: 1, owner: request.leaseOwner, expiresAt: request.startedAt + request.leaseMs };
    return { session, lease, ...(supersededRunId === undefined ? {} : { supersededRunId }) };
  }

  /** Where a rewind goes: a checkpoint of this session, or genesis (no checkpoint, no rows). */
  async #restorePoint(db: Queryable, sessionId: string, checkpointId: string): Promise<{ checkpointId: string | null; messageCount: number }> {
    if (checkpointId === GENESIS_CHECKPOINT) return { checkpointId: null, messageCount: 0 };
    const id = parseCheckpointId(checkpointId);
    const [row] = id === undefined ? [] : await run<{ message_count: number }>(db, this.#sql.restorePoint, [sessionId, id]);
    if (!row || id === undefined) {
      throw new AgentError('state_not_found', `Session ${sessionId} has no checkpoint ${checkpointId}.`, { details: { checkpointId } });
    }
    return { checkpointId: id, messageCount: row.message_count };
  }

  async #commit(commit: Commit): Promise<CommitReceipt> {
    const isStep = commit.kind === 'step';
    if (isStep && commit.stepIndex === undefined) throw new StateCommitError(`A step commit of run ${commit.runId} has no step index.`);
    const appended = commit.appendMessages?.length ?? 0;
    const usage = commit.usage !== undefined && commit.usage.length > 0 ? commit.usage : undefined;
    let row: CommitRow | undefined;
    try {
      [row] = await run<CommitRow>(this.pool, this.#sql.commit, [
        commit.sessionId,
        commit.runId,
        commit.kind,
        commit.stepIndex ?? null,
        appended > 0 ? JSON.stringify(commit.appendMessages) : null,
        appended,
        toJson(commit.state),
        commit.runStatus ?? null,
        toJson(commit.output),
        toJson(commit.error),
        commit.checkpoint ?? null,
        usage ? JSON.stringify(usage) : null,
        commit.committedAt,
        commit.epoch,
        POSTGRES_SCHEMA_VERSION,
        usage ? usage.map((e) => e.sessionId) : null,
        usage ? usage.map((e) => e.runId) : null,
        toJson(commit.suspension),
      ]);
    } catch (error) {
      if (isStep && sqlState(error) === '23505' && (error as { constraint?: string }).constraint === 'steps_pkey') {
        throw new StateCommitError(`Step ${String(commit.stepIndex)} of run ${commit.runId} is already committed.`, { cause: error });
      }
      throw storeError('commit', error);
    }
    if (!row) throw new StateCommitError(`Session ${commit.sessionId} does not exist.`);
    // No session row updated: the fence refused the commit, and nothing was written.
    if (row.version === null || row.message_count === null) throw new RunSupersededError(commit.sessionId, commit.runId, row.current_run_id ?? undefined);
    return {
      version: toNumber(row.version),
      messageCount: row.message_count,
      ...(row.checkpoint_id === null ? {} : { checkpointId: `${CHECKPOINT_PREFIX}${String(row.checkpoint_id)}` }),
    };
  }

  async #renewLease(runId: string, epoch: number, leaseMs: number, now: number): Promise<RunLease> {
    const expiresAt = now + leaseMs;
    try {
      const [renewed] = await run<{ lease_owner: string }>(this.pool, this.#sql.renew, [runId, epoch, expiresAt]);
      if (renewed) return { runId, epoch, owner: renewed.lease_owner, expiresAt };
      const [fence] = await run<{ session_id: string; current_run_id: string | null }>(this.pool, this.#sql.fenceOf, [runId]);
      if (!fence) throw new StateCommitError(`Run ${runId} was never begun.`);
      throw new RunSupersededError(fence.session_id, runId, fence.current_run_id ?? undefined);
    } catch (error) {
      throw storeError('renewLease', error);
    }
  }

  async listRecoverable(now: number, limit = 100): Promise<readonly RecoverableRun[]> {
    try {
      const rows = await run<{ session_id: string; run_id: string; agent_type: string; epoch: number; lease_owner: string; lease_expires_at: string }>(this.pool, this.#sql.recoverable, [now, limit]);
      return rows.map((r) => ({
        sessionId: r.session_id,
        runId: r.run_id,
        agentType: r.agent_type,
        epoch: r.epoch,
        leaseOwner: r.lease_owner,
        leaseExpiresAt: toNumber(r.lease_expires_at),
      }));
    } catch (error) {
      throw storeError('listRecoverable', error);
    }
  }

  async #claimRun(runId: string, owner: string, leaseMs: number, now: number): Promise<ClaimedRun> {
    const sql = this.#sql;
    return transaction(this.pool, 'claimRun', async (client) => {
      await run(client, sql.claimLock, [runId]);
      const [row] = await run<{ run: string; session: string; messages: string | null }>(client, sql.claimWrite, [runId, owner, now + leaseMs, now, POSTGRES_SCHEMA_VERSION]);
      if (!row) throw await this.#notRecoverable(client, runId);
      const runRecord = toRun(JSON.parse(row.run) as RunRow, this.schema);
      const session = toSession({ ...(JSON.parse(row.session) as SessionRow), messages: row.messages }, this.schema);
      const journal = (await run<JournalRow>(client, sql.journalLoad, [runId])).map(toJournal);
      return {
        session,
        run: runRecord,
        lease: { runId, epoch: runRecord.epoch, owner, expiresAt: runRecord.leaseExpiresAt },
        journal,
      };
    });
  }

  async #notRecoverable(db: Queryable, runId: string): Promise<AgentError> {
    const [row] = await run<RunRow>(db, this.#sql.run, [runId]);
    const [fence] = row ? await run<{ current_run_id: string | null }>(db, this.#sql.fenceOf, [runId]) : [];
    const why = !row
      ? 'it does not exist'
      : row.status !== 'running'
        ? `it is ${row.status}`
        : fence?.current_run_id !== runId
          ? 'another run took over its session'
          : 'its lease has not expired';
    return new AgentError('state_run_not_recoverable', `Run ${runId} cannot be claimed: ${why}.`, { details: { runId } });
  }

  async #appendJournal(entry: JournalEntry): Promise<JournalEntry> {
    const sql = this.#sql;
    try {
      const inserted = await run(this.pool, sql.journalAppend, [entry.runId, entry.epoch, entry.key, entry.stepIndex, entry.kind, toJson(entry.data), entry.at]);
      if (inserted.length > 0) return entry;
      const [check] = await run<{ session_id: string; current_run_id: string | null; run_epoch: number | null; run_open: boolean | null; existing: string | null }>(this.pool, sql.journalCheck, [
        entry.runId,
        entry.key,
      ]);
      if (!check) throw new StateCommitError(`Run ${entry.runId} was never begun.`);
      if (check.current_run_id !== entry.runId || check.run_epoch !== entry.epoch || check.run_open !== true) {
        throw new RunSupersededError(check.session_id, entry.runId, check.current_run_id ?? undefined);
      }
      if (check.existing === null) throw new StateCommitError(`Journal entry ${entry.key} of run ${entry.runId} was neither written nor found; retry the write.`);
      return toJournal(JSON.parse(check.existing) as JournalRow);
    } catch (error) {
      throw storeError('appendJournal', error);
    }
  }

  async #loadJournal(runId: string): Promise<readonly JournalEntry[]> {
    try {
      return (await run<JournalRow>(this.pool, this.#sql.journalLoad, [runId])).map(toJournal);
    } catch (error) {
      throw storeError('loadJournal', error);
    }
  }

  async #loadSession(sessionId: string): Promise<SessionSnapshot | undefined> {
    let row: SessionRow | undefined;
    try {
      [row] = await run<SessionRow>(this.pool, this.#sql.session, [sessionId]);
    } catch (error) {
      throw storeError('loadSession', error);
    }
    return row ? toSession(row, this.schema) : undefined;
  }

  async #getRun(runId: string): Promise<RunRecord | undefined> {
    let row: RunRow | undefined;
    try {
      [row] = await run<RunRow>(this.pool, this.#sql.run, [runId]);
    } catch (error) {
      throw storeError('getRun', error);
    }
    return row ? toRun(row, this.schema) : undefined;
  }

  async #listCheckpoints(sessionId: string): Promise<readonly CheckpointInfo[]> {
    try {
      const rows = await run<CheckpointRow>(this.pool, this.#sql.checkpoints, [sessionId]);
      return rows.map(toCheckpointInfo);
    } catch (error) {
      throw storeError('listCheckpoints', error);
    }
  }

  async #loadCheckpoint(sessionId: string, checkpointId: string): Promise<Checkpoint | undefined> {
    const id = parseCheckpointId(checkpointId);
    if (id === undefined) return undefined;
    let row: (CheckpointRow & { state: string | null; messages: string | null }) | undefined;
    try {
      [row] = await run<CheckpointRow & { state: string | null; messages: string | null }>(this.pool, this.#sql.checkpoint, [sessionId, id]);
    } catch (error) {
      throw storeError('loadCheckpoint', error);
    }
    if (!row) return undefined;
    return { ...toCheckpointInfo(row), state: fromJson(row.state), messages: (fromJson(row.messages) as Message[] | undefined) ?? [] };
  }

  async record(entries: readonly UsageEntry[]): Promise<void> {
    if (entries.length === 0) return;
    try {
      await run(this.pool, this.#sql.usageRecord, [JSON.stringify(entries), entries.map((e) => e.sessionId), entries.map((e) => e.runId)]);
    } catch (error) {
      throw storeError('usage record', error);
    }
  }

  async getRollup(filter: UsageFilter = {}): Promise<UsageRollup> {
    const sql = this.#sql;
    const { sessionId, runId } = filter;
    // One statement per filter shape, so each keeps a plan that uses its index.
    const [statement, values] =
      sessionId !== undefined && runId !== undefined
        ? [sql.usageByBoth, [sessionId, runId]]
        : sessionId !== undefined
          ? [sql.usageBySession, [sessionId]]
          : runId !== undefined
            ? [sql.usageByRun, [runId]]
            : [sql.usageAll, []];
    try {
      const rows = await run<{ entry: string }>(this.pool, statement, values);
      return rollupUsage(rows.map((r) => JSON.parse(r.entry) as UsageEntry));
    } catch (error) {
      throw storeError('usage rollup', error);
    }
  }
}

interface CommitRow {
  current_run_id: string | null;
  version: string | number | null;
  message_count: number | null;
  checkpoint_id: string | number | null;
}

interface CheckpointRow {
  id: string | number;
  session_id: string;
  run_id: string;
  kind: string;
  step_count: number;
  message_count: number;
  created_at: string | number;
}

function toCheckpointInfo(row: CheckpointRow): CheckpointInfo {
  return {
    checkpointId: `${CHECKPOINT_PREFIX}${String(row.id)}`,
    sessionId: row.session_id,
    runId: row.run_id,
    kind: row.kind as CheckpointInfo['kind'],
    stepCount: row.step_count,
    messageCount: row.message_count,
    createdAt: toNumber(row.created_at),
  };
}

function sessionKey(sessionId: string): string {
  return `session:${sessionId}`;
}

/** The bigint of a checkpoint id (`cp_<bigint>`); anything else names no checkpoint. */
function parseCheckpointId(checkpointId: string): string | undefined {
  const id = checkpointId.startsWith(CHECKPOINT_PREFIX) ? checkpointId.slice(CHECKPOINT_PREFIX.length) : '';
  return /^[1-9][0-9]{0,17}$/.test(id) ? id : undefined;
}

/** Refuses a row written by a newer version of the store (an older process still running during an upgrade). */
function checkRecordVersion(version: number, schema: string): void {
  if (version > POSTGRES_SCHEMA_VERSION) throw schemaTooNewError(schema, version);
}

function toSession(row: SessionRow, schema: string): SessionSnapshot {
  checkRecordVersion(row.record_version, schema);
  const turn: TurnRecord | undefined =
    row.turn_id === null
      ? undefined
      : {
          turnId: row.turn_id,
          firstRunId: row.turn_first_run_id ?? '',
          input: (fromJson(row.turn_input) as Message[] | undefined) ?? [],
          startCommitted: row.turn_start_committed,
          ...(row.turn_input_index === null ? {} : { inputMessageIndex: row.turn_input_index }),
        };
  return {
    sessionId: row.session_id,
    agentType: row.agent_type,
    ...(row.parent_session_id === null ? {} : { parentSessionId: row.parent_session_id }),
    state: fromJson(row.state),
    messages: (fromJson(row.messages) as Message[] | undefined) ?? [],
    currentRunId: row.current_run_id ?? undefined,
    turn,
    version: toNumber(row.version),
    stepCount: row.step_count,
    resumeCount: row.resume_count,
  };
}

function toRun(row: RunRow, schema: string): RunRecord {
  checkRecordVersion(row.record_version, schema);
  const output = fromJson(row.output);
  const error = fromJson(row.error) as AgentErrorInfo | undefined;
  return {
    runId: row.run_id,
    sessionId: row.session_id,
    turnId: row.turn_id,
    agentType: row.agent_type,
    status: row.status as RunStatus,
    signal: row.signal as StartSignalKind,
    startedAt: toNumber(row.started_at),
    ...(row.ended_at === null ? {} : { endedAt: toNumber(row.ended_at) }),
    stepCount: row.step_count,
    ...(row.output === null ? {} : { output }),
    ...(error === undefined ? {} : { error }),
    epoch: row.epoch,
    leaseOwner: row.lease_owner,
    leaseExpiresAt: toNumber(row.lease_expires_at),
    options: (fromJson(row.options) as RunOptionsRecord | undefined) ?? {},
    ...(row.suspension === null ? {} : { suspension: fromJson(row.suspension) as SuspensionRecord }),
  };
}

function toJournal(row: JournalRow): JournalEntry {
  return {
    runId: row.run_id,
    epoch: row.epoch,
    stepIndex: row.step_index,
    kind: row.kind as JournalKind,
    key: row.key,
    data: fromJson(row.data),
    at: toNumber(row.at),
  };
}
