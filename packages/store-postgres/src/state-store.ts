import { StateCommitError, rollupUsage } from '@helix-agents/sdk';
import type { AgentErrorInfo, Message, StartSignalKind, UsageEntry, UsageFilter, UsageRollup, UsageStore } from '@helix-agents/sdk';
import {
  beginRunResult,
  GENESIS_CHECKPOINT,
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
  stepSetOf,
} from '@helix-agents/sdk/store';
import type {
  BeginRunInput,
  BeginRunPlan,
  BeginRunRequest,
  BeginRunResult,
  Checkpoint,
  CheckpointDraft,
  CheckpointInfo,
  ClaimedRun,
  ClaimOptions,
  Commit,
  CommitPlan,
  CommitReceipt,
  CommittingRun,
  JournalDrop,
  JournalEntry,
  JournalKind,
  Prunable,
  PruneReport,
  RecoverableRun,
  RestorePoint,
  RetentionPolicy,
  RunHeader,
  RunLease,
  RunOptionsRecord,
  RunPatch,
  RunRecord,
  RunStatus,
  SessionHeader,
  SessionSnapshot,
  StateStore,
  StopRequest,
  SuspensionRecord,
  TurnRecord,
} from '@helix-agents/sdk/store';
import type pg from 'pg';
import { POSTGRES_SCHEMA_VERSION, schemaTooNewError } from './migrations.js';
import { fromJson, run, sqlState, statements, storeError, toJson, toNumber, transaction, type Queryable, type Statement } from './sql.js';
import { riderSql, type ChunkRider } from './stream-manager.js';

/** Options of {@link PostgresStateStore}. */
export interface PostgresStateStoreOptions {
  /** The Postgres schema holding the tables ('helix' by default); migrate it first with `migratePostgres`. */
  readonly schema?: string;
  /**
   * What to keep of finished work (default: everything until the session is deleted). The state store
   * reads `keepCheckpoints`: the commit statement that adds a checkpoint deletes the oldest ones beyond
   * it (no extra round trip). Chunks are the stream manager's.
   */
  readonly retention?: RetentionPolicy;
}

/** How many surplus checkpoints one commit deletes at most (a policy turned on for an old schema catches up over a few commits). */
const TRIM_BATCH = 32;

// The columns of the session header the rules read (the session row without its state and initial state).
const HEADER_COLUMNS = `session_id, record_version, agent_type, parent_session_id, current_run_id,
  turn_id, turn_first_run_id, turn_input::text AS turn_input, turn_start_committed, turn_input_index,
  version, step_count, message_count, resume_count, run_epoch, run_open`;

// The columns of a session snapshot; JSON columns are read as text so that a stored JSON null stays null.
const SESSION_COLUMNS = `${HEADER_COLUMNS}, state::text AS state`;

const RUN_COLUMNS = `run_id, record_version, session_id, turn_id, agent_type, status, signal, started_at, ended_at, step_count,
  output::text AS output, error::text AS error, epoch, lease_owner, lease_expires_at, options::text AS options, suspension::text AS suspension,
  stop_request::text AS stop_request`;

const JOURNAL_COLUMNS = `run_id, key, epoch, step_index, kind, data::text AS data, at`;

/** Qualifies every column of a column list with a table alias (`a, b::text AS c` → `x.a, x.b::text AS c`). */
function qualified(columns: string, alias: string): string {
  return columns.replace(/(^|,\s*)(\w+)/g, `$1${alias}.$2`);
}

function buildStatements(s: string) {
  // K2–K5: the write of a plan in ONE statement (one round trip, one implicit transaction), under a
  // compare-and-set: \`sess\` updates the session row only if it is still at the version ($19) and fence
  // (current run $2, epoch $14, open) the plan was decided from, and every other part reads \`sess\`, so
  // when the row moved on nothing at all is written. The UPDATE takes the row's lock; a concurrent writer
  // we waited for makes the condition fail (Postgres re-checks it on the latest row version).
  const commitCtes = `WITH sess AS (
        UPDATE ${s}.sessions x SET
          record_version = $5, version = $6::bigint, message_count = $7::integer, step_count = $8::integer, run_open = $9::boolean,
          turn_start_committed = $10::boolean, turn_input_index = $11::integer, state = COALESCE($12::json, x.state), updated_at = $13::bigint
        WHERE x.session_id = $1 AND x.current_run_id = $2::text AND x.run_epoch = $3::integer AND x.run_open AND x.version = $4::bigint
          AND x.record_version <= $5
        RETURNING x.session_id, x.state
      ), step AS (
        INSERT INTO ${s}.steps (run_id, step_index, committed_at)
        SELECT $2, $14::integer, $13::bigint FROM sess WHERE $14::integer IS NOT NULL
      ), msgs AS (
        INSERT INTO ${s}.messages (session_id, idx, message)
        SELECT sess.session_id, $15::integer + e.ord::integer - 1, e.value FROM sess, json_array_elements($16::json) WITH ORDINALITY AS e(value, ord)
      ), run AS (
        UPDATE ${s}.runs r SET
          record_version = $5,
          step_count = $17::integer,
          status = COALESCE($18::text, r.status),
          ended_at = COALESCE($19::bigint, r.ended_at),
          output = COALESCE($20::json, r.output),
          error = COALESCE($21::json, r.error),
          suspension = COALESCE($22::json, r.suspension)
        FROM sess WHERE r.run_id = $2
      ), cp AS (
        INSERT INTO ${s}.checkpoints (session_id, run_id, kind, step_count, message_count, created_at, state)
        SELECT $1, $2, $23::text, $24::integer, $25::integer, $26::bigint, sess.state FROM sess WHERE $23::text IS NOT NULL
        RETURNING id
      ), used AS (
        INSERT INTO ${s}.usage (session_id, run_id, entry)
        SELECT u.session_id, u.run_id, u.entry FROM sess, ROWS FROM (json_array_elements($27::json), unnest($28::text[]), unnest($29::text[])) AS u(entry, session_id, run_id)
      ), dropped AS (
        DELETE FROM ${s}.journal j USING sess WHERE j.run_id = $2 AND ($30::boolean OR j.step_index <= $31::integer)
      ), trimmed AS (
        -- retention.keepCheckpoints ($32): this statement's snapshot does not show the row cp inserts, so keep $32 - 1 older ones.
        DELETE FROM ${s}.checkpoints t USING sess WHERE $23::text IS NOT NULL AND $32::integer IS NOT NULL AND t.session_id = $1
          AND t.id IN (SELECT o.id FROM ${s}.checkpoints o WHERE o.session_id = $1 ORDER BY o.id DESC OFFSET $32::integer - 1 LIMIT ${TRIM_BATCH})
      )`;
  const rider = riderSql(s, 33, 'sess');
  // The first `count` rows: inside a statement that also cuts the conversation (a rewind), the snapshot
  // still shows the rows it deletes, and the session row's count is what the statement decided.
  const messagesOf = (row: string) => `(SELECT json_agg(m.message ORDER BY m.idx)::text FROM ${s}.messages m WHERE m.session_id = ${row}.session_id AND m.idx < ${row}.message_count)`;
  return {
    // The header a commit decides from when this store has none cached (or its cached one went stale):
    // the session row, its current run's status and step count, and that run's committed step indexes.
    header: `SELECT ${qualified(HEADER_COLUMNS, 'x')}, r.status AS run_status, r.step_count AS run_step_count,
        (SELECT json_agg(st.step_index)::text FROM ${s}.steps st WHERE st.run_id = x.current_run_id) AS run_steps
      FROM ${s}.sessions x LEFT JOIN ${s}.runs r ON r.run_id = x.current_run_id WHERE x.session_id = $1`,
    // K1, first statement: create the session if needed and lock its row (the no-op update takes the
    // lock); the row it returns is the latest (a locked row is re-read after the wait). Version 0 is a row
    // this transaction created: every committed session has had its K1.
    beginLock: `INSERT INTO ${s}.sessions AS x (session_id, record_version, agent_type, parent_session_id, state, initial_state, created_at, updated_at)
      VALUES ($1, $2, $3, $4, $5::json, $5::json, $6, $6)
      ON CONFLICT (session_id) DO UPDATE SET updated_at = x.updated_at
      RETURNING ${HEADER_COLUMNS}`,
    // K1, second statement, under the session lock (so its snapshot has every commit of the session): the
    // current run's status and step count, and the conversation length of the checkpoint a rewind restores.
    beginRead: `SELECT r.status AS run_status, r.step_count AS run_step_count,
        (SELECT c.message_count FROM ${s}.checkpoints c WHERE c.session_id = $1 AND c.id = $3::bigint) AS restore_count
      FROM (SELECT 1) AS one LEFT JOIN ${s}.runs r ON r.run_id = $2::text`,
    // K1, the write of its plan, under the session lock: supersede the previous run ($10 at $21, unless it
    // is the new one), record the new run, set the session's header; a rewind ($13) also cuts the
    // conversation to $15 rows, drops the checkpoints after the restored one ($14; NULL for genesis: all
    // of them) and restores its state.
    beginWrite: `WITH prev AS (
        UPDATE ${s}.runs SET status = 'superseded', ended_at = $21::bigint, record_version = $2
        WHERE run_id = $10::text AND run_id <> $3::text
      ), dropped AS (
        DELETE FROM ${s}.journal WHERE run_id = $22::text AND run_id <> $3::text
      ), cut AS (
        DELETE FROM ${s}.messages WHERE $13::boolean AND session_id = $1 AND idx >= $15::integer
      ), branch AS (
        DELETE FROM ${s}.checkpoints WHERE $13::boolean AND session_id = $1 AND id > COALESCE($14::bigint, 0)
      ), run AS (
        INSERT INTO ${s}.runs (run_id, record_version, session_id, turn_id, agent_type, status, signal, started_at, step_count, epoch, lease_owner, lease_expires_at, options)
        VALUES ($3, $2, $1, $11, $4, 'running', $5, $7, 0, 1, $8, $9, $6::json)
        ON CONFLICT (run_id) DO UPDATE SET record_version = EXCLUDED.record_version, session_id = EXCLUDED.session_id, turn_id = EXCLUDED.turn_id,
          agent_type = EXCLUDED.agent_type, status = 'running', signal = EXCLUDED.signal, started_at = EXCLUDED.started_at, ended_at = NULL,
          step_count = 0, output = NULL, error = NULL, epoch = 1, lease_owner = EXCLUDED.lease_owner, lease_expires_at = EXCLUDED.lease_expires_at,
          options = EXCLUDED.options, suspension = NULL, stop_request = NULL
      ), sess AS (
        UPDATE ${s}.sessions SET record_version = $2, current_run_id = $3, run_epoch = 1, run_open = true, agent_type = $4,
          turn_id = $11, turn_first_run_id = $16, turn_input = CASE WHEN $12::json IS NULL THEN turn_input ELSE $12::json END,
          turn_start_committed = $17::boolean, turn_input_index = $18::integer,
          state = CASE WHEN NOT $13::boolean THEN state
            WHEN $14::bigint IS NULL THEN initial_state
            ELSE (SELECT c.state FROM ${s}.checkpoints c WHERE c.session_id = $1 AND c.id = $14::bigint) END,
          message_count = $15::integer, version = $19::bigint, resume_count = $20::integer, updated_at = $7
        WHERE session_id = $1
        RETURNING ${SESSION_COLUMNS}
      )
      SELECT sess.*, ${messagesOf('sess')} AS messages FROM sess`,
    commit: `${commitCtes}
      SELECT (SELECT count(*) FROM sess)::integer AS applied, (SELECT id FROM cp) AS checkpoint_id`,
    // The same, appending the run's queued stream chunks ($33–$39, a ChunkRider) when the commit applies:
    // a step and its chunks in one statement, so one round trip and one transaction.
    commitWithChunks: `${commitCtes}, ${rider.ctes}
      SELECT (SELECT count(*) FROM sess)::integer AS applied, (SELECT id FROM cp) AS checkpoint_id, ${rider.columns}`,
    // A lease renewal, conditioned on the fence the caller presents (the run current, at its epoch, open).
    renew: `UPDATE ${s}.runs r SET lease_expires_at = $3 WHERE r.run_id = $1 AND r.epoch = $2 AND r.status = 'running'
      AND EXISTS (SELECT 1 FROM ${s}.sessions x WHERE x.session_id = r.session_id AND x.current_run_id = r.run_id AND x.run_epoch = r.epoch AND x.run_open)
      RETURNING lease_owner, stop_request::text AS stop_request`,
    // A stop request, recorded once on a running run (not fenced: any process may ask).
    requestStop: `UPDATE ${s}.runs SET stop_request = $2::json WHERE run_id = $1 AND status = 'running' AND stop_request IS NULL`,
    // What renew, claim and a journal append decide from: the run and its session's fence.
    runFence: `SELECT r.run_id, r.record_version, r.session_id, r.status, r.epoch, r.lease_owner, r.lease_expires_at, r.stop_request::text AS stop_request,
        x.current_run_id, x.record_version AS session_record_version
      FROM ${s}.runs r LEFT JOIN ${s}.sessions x ON x.session_id = r.session_id WHERE r.run_id = $1`,
    recoverable: `SELECT r.session_id, r.run_id, r.agent_type, r.epoch, r.lease_owner, r.lease_expires_at
      FROM ${s}.runs r JOIN ${s}.sessions x ON x.session_id = r.session_id AND x.current_run_id = r.run_id
      WHERE r.status = 'running' AND r.lease_expires_at <= $1
      ORDER BY r.lease_expires_at, r.started_at, r.run_id LIMIT $2`,
    // The contended commit path: lock the session row first, then read its header in a fresh snapshot.
    lockSession: `SELECT session_id FROM ${s}.sessions WHERE session_id = $1 FOR UPDATE`,
    // deleteSession: lock the session row and read its current run, then one statement deletes it all.
    lockForDelete: `SELECT x.current_run_id, r.status AS run_status FROM ${s}.sessions x LEFT JOIN ${s}.runs r ON r.run_id = x.current_run_id WHERE x.session_id = $1 FOR UPDATE OF x`,
    deleteSession: `WITH gone_runs AS (DELETE FROM ${s}.runs WHERE session_id = $1 RETURNING run_id),
        j AS (DELETE FROM ${s}.journal WHERE run_id IN (SELECT run_id FROM gone_runs)),
        st AS (DELETE FROM ${s}.steps WHERE run_id IN (SELECT run_id FROM gone_runs)),
        c AS (DELETE FROM ${s}.checkpoints WHERE session_id = $1),
        m AS (DELETE FROM ${s}.messages WHERE session_id = $1),
        u AS (DELETE FROM ${s}.usage WHERE session_id = $1)
      DELETE FROM ${s}.sessions WHERE session_id = $1`,
    claimLock: `SELECT session_id FROM ${s}.sessions WHERE session_id = (SELECT session_id FROM ${s}.runs WHERE run_id = $1) FOR UPDATE`,
    // A claim's write, under the session lock and a compare-and-set on the run fields the plan was decided
    // from (epoch $6, lease expiry $7, running): a lease renewed in between makes it write nothing.
    // It returns what the claimer continues from: the run, the session and the run's journal.
    claimWrite: `WITH r AS (
        UPDATE ${s}.runs SET epoch = $2, lease_owner = $3, lease_expires_at = $4::bigint, record_version = $5
        WHERE run_id = $1 AND epoch = $6 AND lease_expires_at = $7::bigint AND status = 'running'
        RETURNING ${RUN_COLUMNS}
      ), sess AS (
        UPDATE ${s}.sessions x SET run_epoch = r.epoch, record_version = $5 FROM r WHERE x.session_id = r.session_id
        RETURNING ${qualified(SESSION_COLUMNS, 'x')}
      )
      SELECT row_to_json(r)::text AS run, row_to_json(sess)::text AS session, ${messagesOf('sess')} AS messages,
        (SELECT json_agg(j ORDER BY j.id)::text FROM (SELECT id, ${JOURNAL_COLUMNS} FROM ${s}.journal WHERE run_id = $1) j) AS journal
      FROM r, sess`,
    // A journal append, conditioned on the fence the entry presents. One statement: the fence check (a
    // shared lock on the session row, so a concurrent supersede waits for us or we see it) and the insert.
    journalAppend: `WITH f AS (
        SELECT x.session_id FROM ${s}.runs r JOIN ${s}.sessions x ON x.session_id = r.session_id
        WHERE r.run_id = $1 AND x.current_run_id = $1 AND x.run_epoch = $2 AND x.run_open
        FOR SHARE OF x
      )
      INSERT INTO ${s}.journal (run_id, key, epoch, step_index, kind, data, at)
      SELECT $1, $3, $2, $4, $5, $6::json, $7 FROM f
      ON CONFLICT (run_id, key) DO NOTHING
      RETURNING id`,
    journalEntry: `SELECT ${JOURNAL_COLUMNS} FROM ${s}.journal WHERE run_id = $1 AND key = $2`,
    journalLoad: `SELECT ${JOURNAL_COLUMNS} FROM ${s}.journal WHERE run_id = $1 ORDER BY id`,
    session: `SELECT ${SESSION_COLUMNS}, ${messagesOf('x')} AS messages FROM ${s}.sessions x WHERE x.session_id = $1`,
    run: `SELECT ${RUN_COLUMNS} FROM ${s}.runs WHERE run_id = $1`,
    checkpoints: `SELECT id, session_id, run_id, kind, step_count, message_count, created_at FROM ${s}.checkpoints WHERE session_id = $1 ORDER BY id`,
    checkpoint: `SELECT c.id, c.session_id, c.run_id, c.kind, c.step_count, c.message_count, c.created_at, c.state::text AS state,
        (SELECT json_agg(m.message ORDER BY m.idx)::text FROM ${s}.messages m WHERE m.session_id = c.session_id AND m.idx < c.message_count) AS messages
      FROM ${s}.checkpoints c WHERE c.session_id = $1 AND c.id = $2`,
    // Journals of runs that are no longer their session's current run (left by versions before K1 dropped them).
    pruneJournals: `WITH gone AS (DELETE FROM ${s}.journal j WHERE NOT EXISTS (SELECT 1 FROM ${s}.runs r JOIN ${s}.sessions x ON x.session_id = r.session_id
        WHERE r.run_id = j.run_id AND x.current_run_id = j.run_id) RETURNING 1)
      SELECT count(*)::integer AS n FROM gone`,
    // The committed-step rows of runs that are no longer current: only the current run commits (the fence
    // reads its steps), so nothing reads these.
    pruneSteps: `WITH gone AS (DELETE FROM ${s}.steps st WHERE NOT EXISTS (SELECT 1 FROM ${s}.runs r JOIN ${s}.sessions x ON x.session_id = r.session_id
        WHERE r.run_id = st.run_id AND x.current_run_id = st.run_id) RETURNING 1)
      SELECT count(*)::integer AS n FROM gone`,
    usageRecord: `INSERT INTO ${s}.usage (session_id, run_id, entry)
      SELECT u.session_id, u.run_id, u.entry FROM ROWS FROM (json_array_elements($1::json), unnest($2::text[]), unnest($3::text[])) AS u(entry, session_id, run_id)`,
    usageAll: `SELECT entry::text AS entry FROM ${s}.usage`,
    usageBySession: `SELECT entry::text AS entry FROM ${s}.usage WHERE session_id = $1`,
    usageByRun: `SELECT entry::text AS entry FROM ${s}.usage WHERE run_id = $1`,
    usageByBoth: `SELECT entry::text AS entry FROM ${s}.usage WHERE session_id = $1 AND run_id = $2`,
  };
}

type Statements = Record<keyof ReturnType<typeof buildStatements>, Statement>;

/** The session header columns. */
interface HeaderRow {
  session_id: string;
  record_version: number;
  agent_type: string;
  parent_session_id: string | null;
  current_run_id: string | null;
  turn_id: string | null;
  turn_first_run_id: string | null;
  turn_input: string | null;
  turn_start_committed: boolean;
  turn_input_index: number | null;
  version: string | number;
  step_count: number;
  message_count: number;
  resume_count: number;
  run_epoch: number;
  run_open: boolean;
}

interface SessionRow extends HeaderRow {
  state: string | null;
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
  stop_request: string | null;
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

/** The run and its session's fence, as renew, claim and a journal append read them. */
interface RunFenceRow {
  run_id: string;
  record_version: number;
  session_id: string;
  status: string;
  epoch: number;
  lease_owner: string;
  lease_expires_at: string | number;
  stop_request: string | null;
  current_run_id: string | null;
  session_record_version: number | null;
}

/** What K1 reads under the session lock besides the session row. */
interface BeginReadRow {
  run_status: string | null;
  run_step_count: number | null;
  restore_count: number | null;
}

/** A session header with its current run, as a commit decides from it. */
interface CommitBasis {
  readonly session: SessionHeader | undefined;
  readonly run: CommittingRun | undefined;
}

const CHECKPOINT_PREFIX = 'cp_';

/** How many times a renewal, claim or journal append decides again after its compare-and-set found the records moved on. */
const MAX_ATTEMPTS = 8;

/** How many session headers a store keeps (the sessions this process works on now). */
const MAX_CACHED_HEADERS = 10_000;

/**
 * The Postgres {@link StateStore}, also a {@link UsageStore} (usage passed with a commit is written in
 * the commit's transaction). What a write does is decided by the session rules of
 * `@helix-agents/sdk/store`; this store reads the records, asks the rules, and writes the plan under a
 * compare-and-set of what it read. The run's fence (current run id, epoch, still running) is kept on the
 * session row, so one row covers every check.
 *
 * - A commit (K2–K5) is the hot path and stays ONE round trip: the store keeps the session header (and
 *   its current run's counters and committed steps) it last read or wrote for each session, decides from
 *   that, and writes the plan in one statement conditioned on the session version and fence it decided
 *   from. Why not a transaction per commit: BEGIN, a locking read, the write and COMMIT are four round
 *   trips where one suffices, and the only writers of a session are its current run's process and the
 *   rare K1 or claim that takes it over. When the condition fails (another process or instance moved the
 *   session on), nothing is written, and the commit takes the contended path: a short transaction that
 *   locks the session row, reads the header under the lock and decides again, so a refusal such as a
 *   supersede comes from the rules, from fresh records, and commits racing for one session queue on its
 *   row lock instead of retrying. A refusal decided from the kept header is never trusted either: it is
 *   confirmed on that path. The kept header is only a guess of the records; the compare-and-set is what
 *   makes the write safe.
 * - K1 and a claim are short transactions: lock the session row, read, decide, write, commit (they also
 *   need fresh reads of other rows: the current run's status, a checkpoint, the journal).
 * - A lease renewal and a journal append are one statement conditioned on the fence the caller presents;
 *   only when it fails does the store read the run and its session and let the rules refuse (or, for an
 *   append whose key exists, return the first entry).
 *
 * A step costs O(rows it adds): messages are rows keyed by (session, index), and a checkpoint is the state
 * plus a conversation length. Operations of one session apply in call order.
 */
export class PostgresStateStore implements StateStore, UsageStore, Prunable {
  /** The pool the store queries through. */
  readonly pool: pg.Pool;
  /** The Postgres schema of its tables. */
  readonly schema: string;
  readonly #sql: Statements;
  readonly #tails = new Map<string, Promise<void>>();
  readonly #sessionOfRun = new Map<string, string>();
  /** The session headers this store last read or wrote: what a commit decides from first. */
  readonly #headers = new Map<string, CommitBasis>();
  #chunks: (() => Promise<void>) | undefined;
  #takeRider: ((runId: string) => ChunkRider | undefined) | undefined;
  /** The checkpoints kept per session (Infinity: all). */
  readonly #keepCheckpoints: number;

  constructor(pool: pg.Pool, options: PostgresStateStoreOptions = {}) {
    this.pool = pool;
    this.#keepCheckpoints = resolveRetention(options.retention).keepCheckpoints;
    this.schema = options.schema ?? 'helix';
    this.#sql = statements(this.schema, buildStatements);
  }

  async beginRun(request: BeginRunRequest): Promise<BeginRunResult> {
    this.#learn(request.runId, request.sessionId);
    return this.#inOrder(sessionKey(request.sessionId), () => this.#beginRun(request));
  }

  async commit(commit: Commit): Promise<CommitReceipt> {
    // The run's own queued chunks (the step's) ride in the commit statement; other runs' go out beside it.
    const rider = this.#takeRider?.(commit.runId);
    const chunks = this.#chunks?.();
    const receipt = this.#inOrder(sessionKey(commit.sessionId), () => this.#commit(commit, rider));
    if (chunks === undefined) return receipt;
    const [result] = await Promise.allSettled([receipt, chunks]);
    if (result.status === 'rejected') throw result.reason;
    return result.value;
  }

  /**
   * Package-internal (used by `openPostgresStores`): at each commit, `take` hands over the committing
   * run's queued chunks, which the commit statement appends (one statement, one transaction, for a step
   * and its chunks); `flush` sends every other writer's queued chunks beside it, and the commit resolves
   * once both landed.
   */
  sendChunksWithCommits(flush: () => Promise<void>, take?: (runId: string) => ChunkRider | undefined): void {
    this.#chunks = flush;
    this.#takeRider = take;
  }

  async renewLease(runId: string, epoch: number, leaseMs: number, now: number): Promise<RunLease> {
    return this.#inOrder(this.#runKey(runId), () => this.#renewLease(runId, epoch, leaseMs, now));
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

  async claimRun(runId: string, owner: string, leaseMs: number, now: number, options: ClaimOptions = {}): Promise<ClaimedRun> {
    const claimed = await this.#inOrder(this.#runKey(runId), () => this.#claimRun(runId, owner, leaseMs, now, options.takeover === true));
    this.#learn(runId, claimed.run.sessionId);
    return claimed;
  }

  async appendJournal(entry: JournalEntry): Promise<JournalEntry> {
    return this.#inOrder(this.#runKey(entry.runId), () => this.#appendJournal(entry));
  }

  async requestStop(runId: string, request: StopRequest): Promise<RunRecord | undefined> {
    return this.#inOrder(this.#runKey(runId), () => this.#requestStop(runId, request));
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

  /**
   * Drops the journal entries of runs that are no longer their session's current run (a schema written
   * by an older version kept them), and the committed-step rows of those runs (only the current run's
   * are read, by the commit fence). Checkpoints are trimmed by the commit that adds one; chunks are the
   * stream manager's (`openPostgresStores(...).prune()` runs both).
   */
  async prune(): Promise<PruneReport> {
    try {
      const [journal] = await run<{ n: number }>(this.pool, this.#sql.pruneJournals, []);
      const [steps] = await run<{ n: number }>(this.pool, this.#sql.pruneSteps, []);
      return { chunks: 0, journalEntries: journal?.n ?? 0, records: steps?.n ?? 0 };
    } catch (error) {
      throw storeError('prune', error);
    }
  }

  async deleteSession(sessionId: string): Promise<boolean> {
    const deleted = await this.#inOrder(sessionKey(sessionId), () =>
      transaction(this.pool, 'deleteSession', async (client) => {
        const [row] = await run<{ current_run_id: string | null; run_status: RunStatus | null }>(client, this.#sql.lockForDelete, [sessionId]);
        if (!row) return false;
        const current = row.current_run_id === null || row.run_status === null ? undefined : { runId: row.current_run_id, status: row.run_status };
        const refused = planDeleteSession({ sessionId, currentRun: current });
        if (refused) throw refused;
        await run(client, this.#sql.deleteSession, [sessionId]);
        return true;
      }),
    );
    this.#headers.delete(sessionId);
    return deleted;
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

  /** Keeps the header a write left (or a read found), for the session's next commit to decide from. */
  #keep(sessionId: string, basis: CommitBasis): void {
    // Bounded like #sessionOfRun: a dropped header only costs its session one read.
    if (this.#headers.size >= MAX_CACHED_HEADERS && !this.#headers.has(sessionId)) this.#headers.clear();
    this.#headers.set(sessionId, basis);
  }

  // ---- K1 ----

  async #beginRun(request: BeginRunRequest): Promise<BeginRunResult> {
    const sql = this.#sql;
    try {
      const { plan, session } = await transaction(this.pool, 'beginRun', async (client) => {
        const [locked] = await run<HeaderRow>(client, sql.beginLock, [
          request.sessionId,
          POSTGRES_SCHEMA_VERSION,
          request.agentType,
          request.parentSessionId ?? null,
          toJson(request.initialState),
          request.startedAt,
        ]);
        if (!locked) throw new StateCommitError(`Session ${request.sessionId} could not be created.`);
        const header = Number(locked.version) === 0 ? undefined : toHeader(locked, this.schema);
        const decided = orThrow(planBeginRun(await this.#beginInput(client, header, request.restoreCheckpointId), request));
        const [row] = await run<SessionRow>(client, sql.beginWrite, beginWriteValues(request, decided));
        if (!row) throw new StateCommitError(`Session ${request.sessionId} disappeared while run ${request.runId} began.`);
        return { plan: decided, session: toSession(row, this.schema) };
      });
      this.#keep(request.sessionId, { session: plan.session, run: plan.runHeader });
      return beginRunResult(plan, session);
    } catch (error) {
      this.#headers.delete(request.sessionId);
      throw error;
    }
  }

  /** What K1 decides from, read under the session lock: the current run, and the checkpoint a rewind restores. */
  async #beginInput(db: Queryable, session: SessionHeader | undefined, restoreId: string | undefined): Promise<BeginRunInput<PostgresRestorePoint>> {
    const checkpointId = restoreId === undefined || restoreId === GENESIS_CHECKPOINT ? undefined : parseCheckpointId(restoreId);
    const currentRunId = session?.currentRunId;
    if (!session || (currentRunId === undefined && checkpointId === undefined)) return { session, currentRun: undefined };
    const [read] = await run<BeginReadRow>(db, this.#sql.beginRead, [session.sessionId, currentRunId ?? null, checkpointId ?? null]);
    return {
      session,
      currentRun: currentRunId === undefined || !read || read.run_status === null ? undefined : { runId: currentRunId, status: read.run_status as RunStatus, stepCount: read.run_step_count ?? 0 },
      // restoreId is set whenever checkpointId is.
      restorePoint: checkpointId === undefined || !read || read.restore_count === null ? undefined : { checkpointId: restoreId!, messageCount: read.restore_count, id: checkpointId },
    };
  }

  // ---- K2–K5 ----

  async #commit(commit: Commit, rider?: ChunkRider): Promise<CommitReceipt> {
    const sessionId = commit.sessionId;
    try {
      // The hot path: decide from the kept header (or one fresh read) and write under a compare-and-set.
      const kept = this.#headers.get(sessionId);
      const basis = kept ?? (await this.#readHeader(this.pool, sessionId));
      const decision = planCommit(basis, commit);
      // A refusal decided from a fresh read is final; one decided from the kept header is confirmed under the lock.
      if (!decision.ok && !kept) throw decision.error;
      const written = decision.ok ? await this.#writeCommit(this.pool, commit, basis, decision, rider) : undefined;
      if (decision.ok && written) return this.#committed(commit, decision, written);
      // The locked path writes the commit alone: the chunks go back to their writer, which sends them.
      rider?.restore();
      return await this.#commitLocked(commit);
    } catch (error) {
      this.#headers.delete(sessionId);
      throw error;
    } finally {
      // Not written by any path above (a refusal, an error): the writer gets them back.
      rider?.restore();
    }
  }

  /**
   * The contended path, when the session moved on since its header was read (or a refusal needs a
   * fresh read): lock the session row, read the header under the lock, decide, write. Commits racing
   * for one session queue on its row lock here, so each makes progress.
   */
  async #commitLocked(commit: Commit): Promise<CommitReceipt> {
    return transaction(this.pool, 'commit', async (client) => {
      await run(client, this.#sql.lockSession, [commit.sessionId]);
      const basis = await this.#readHeader(client, commit.sessionId);
      const plan = orThrow(planCommit(basis, commit));
      const written = await this.#writeCommit(client, commit, basis, plan);
      if (!written) throw new StateCommitError(`Session ${commit.sessionId} changed under its row lock while run ${commit.runId} committed.`);
      return this.#committed(commit, plan, written);
    });
  }

  /** Keeps the header a commit left, and returns its receipt. */
  #committed(commit: Commit, plan: CommitPlan, written: { checkpointId?: string }): CommitReceipt {
    this.#keep(commit.sessionId, { session: plan.session, run: plan.run });
    return { version: plan.session.version, messageCount: plan.session.messageCount, ...written };
  }

  /** The header a commit decides from, read fresh (one snapshot of the session row, its current run and that run's steps). */
  async #readHeader(db: Queryable, sessionId: string): Promise<CommitBasis> {
    let row: (HeaderRow & { run_status: string | null; run_step_count: number | null; run_steps: string | null }) | undefined;
    try {
      [row] = await run<HeaderRow & { run_status: string | null; run_step_count: number | null; run_steps: string | null }>(db, this.#sql.header, [sessionId]);
    } catch (error) {
      throw storeError('commit', error);
    }
    if (!row) return { session: undefined, run: undefined };
    const session = toHeader(row, this.schema);
    const runId = row.current_run_id;
    return {
      session,
      run:
        runId === null || row.run_status === null
          ? undefined
          : {
              runId,
              status: row.run_status as RunStatus,
              epoch: row.run_epoch,
              stepCount: row.run_step_count ?? 0,
              committedSteps: stepSetOf((fromJson(row.run_steps) as number[] | undefined) ?? []),
            },
    };
  }

  /**
   * Writes a commit's plan in one statement, conditioned on the header it was decided from. Returns
   * undefined when the condition failed (nothing was written), else the checkpoint the commit wrote.
   */
  async #writeCommit(db: Queryable, commit: Commit, basis: CommitBasis, plan: CommitPlan, rider?: ChunkRider): Promise<{ checkpointId?: string } | undefined> {
    let row: { applied: number; checkpoint_id: string | number | null; rider_first?: string | number | null } | undefined;
    try {
      const values = commitValues(commit, basis, plan, this.#keepCheckpoints);
      [row] = await run<{ applied: number; checkpoint_id: string | number | null; rider_first?: string | number | null }>(
        db,
        rider ? this.#sql.commitWithChunks : this.#sql.commit,
        rider ? [...values, ...rider.values] : values,
      );
    } catch (error) {
      // A second commit of a step breaks the steps primary key and rolls the whole statement back.
      if (plan.stepIndex !== undefined && sqlState(error) === '23505' && (error as { constraint?: string }).constraint === 'steps_pkey') {
        throw new StateCommitError(`Step ${String(plan.stepIndex)} of run ${commit.runId} is already committed or has no index.`, { cause: error });
      }
      throw storeError('commit', error);
    }
    if (!row || row.applied === 0) return undefined;
    // Applied: the chunks were appended with it, unless the run no longer owns the stream.
    rider?.settle(row.rider_first !== null && row.rider_first !== undefined);
    return row.checkpoint_id === null ? {} : { checkpointId: `${CHECKPOINT_PREFIX}${String(row.checkpoint_id)}` };
  }

  // ---- leases, claims, journal ----

  async #renewLease(runId: string, epoch: number, leaseMs: number, now: number): Promise<RunLease> {
    const expiresAt = now + leaseMs;
    try {
      for (let attempt = 1; ; attempt++) {
        const [renewed] = await run<{ lease_owner: string; stop_request: string | null }>(this.pool, this.#sql.renew, [runId, epoch, expiresAt]);
        if (renewed) return { runId, epoch, owner: renewed.lease_owner, expiresAt, ...(renewed.stop_request === null ? {} : { stopRequest: JSON.parse(renewed.stop_request) as StopRequest }) };
        // The fence the caller presented does not hold: the rules say why, from fresh records.
        const fence = await this.#runFence(this.pool, runId);
        const decision = planRenewLease({ run: fence && runHeaderOf(fence), currentRunId: fence?.current_run_id ?? undefined }, runId, epoch, leaseMs, now);
        if (!decision.ok) throw decision.error;
        if (attempt >= MAX_ATTEMPTS) throw new StateCommitError(`The lease of run ${runId} kept changing; retry the renewal.`, { retryable: true });
      }
    } catch (error) {
      throw storeError('renewLease', error);
    }
  }

  async #requestStop(runId: string, request: StopRequest): Promise<RunRecord | undefined> {
    try {
      const fence = await this.#runFence(this.pool, runId);
      const { write } = orThrow(planRequestStop({ run: fence && runHeaderOf(fence) }, request));
      // Conditioned on the run still running without a request: of two askers, the first one's stays.
      if (write) await run(this.pool, this.#sql.requestStop, [runId, JSON.stringify(write)]);
    } catch (error) {
      throw storeError('requestStop', error);
    }
    return this.#getRun(runId);
  }

  async #claimRun(runId: string, owner: string, leaseMs: number, now: number, takeover: boolean): Promise<ClaimedRun> {
    const sql = this.#sql;
    const claimed = await transaction(this.pool, 'claimRun', async (client) => {
      await run(client, sql.claimLock, [runId]);
      for (let attempt = 1; ; attempt++) {
        const fence = await this.#runFence(client, runId);
        const { lease } = orThrow(planClaimRun({ run: fence && runHeaderOf(fence), currentRunId: fence?.current_run_id ?? undefined }, runId, owner, leaseMs, now, takeover));
        const [row] = await run<{ run: string; session: string; messages: string | null; journal: string | null }>(client, sql.claimWrite, [
          runId,
          lease.epoch,
          lease.owner,
          lease.expiresAt,
          POSTGRES_SCHEMA_VERSION,
          fence!.epoch,
          fence!.lease_expires_at,
        ]);
        if (row) {
          const journal = ((fromJson(row.journal) as JournalRow[] | undefined) ?? []).map(toJournal);
          return { session: toSession({ ...(JSON.parse(row.session) as SessionRow), messages: row.messages }, this.schema), run: toRun(JSON.parse(row.run) as RunRow, this.schema), lease, journal };
        }
        // The run changed between the read and the write (a renewal): read it again and decide again.
        if (attempt >= MAX_ATTEMPTS) throw new StateCommitError(`Run ${runId} kept changing while it was claimed; retry the claim.`, { retryable: true });
      }
    });
    // The claim moved the session's fence: its next commit reads the header again.
    this.#headers.delete(claimed.session.sessionId);
    return claimed;
  }

  /** A run and its session's fence, or undefined when the run does not exist. */
  async #runFence(db: Queryable, runId: string): Promise<RunFenceRow | undefined> {
    const [fence] = await run<RunFenceRow>(db, this.#sql.runFence, [runId]);
    if (fence) checkRecordVersion(fence.record_version, this.schema);
    if (fence && fence.session_record_version !== null) checkRecordVersion(fence.session_record_version, this.schema);
    return fence;
  }

  async #appendJournal(entry: JournalEntry): Promise<JournalEntry> {
    const sql = this.#sql;
    try {
      for (let attempt = 1; ; attempt++) {
        const inserted = await run(this.pool, sql.journalAppend, [entry.runId, entry.epoch, entry.key, entry.stepIndex, entry.kind, toJson(entry.data), entry.at]);
        if (inserted.length > 0) return entry;
        // Not written: the fence does not hold, or the key exists. The rules decide from fresh records.
        const fence = await this.#runFence(this.pool, entry.runId);
        const [stored] = fence ? await run<JournalRow>(this.pool, sql.journalEntry, [entry.runId, entry.key]) : [];
        const plan = orThrow(planJournalAppend({ run: fence && runHeaderOf(fence), currentRunId: fence?.current_run_id ?? undefined, existing: stored && toJournal(stored) }, entry));
        if (!plan.write) return plan.entry;
        if (attempt >= MAX_ATTEMPTS) throw new StateCommitError(`Journal entry ${entry.key} of run ${entry.runId} was neither written nor found; retry the write.`, { retryable: true });
      }
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

/** The session header the rules read, from its columns. */
function toHeader(row: HeaderRow, schema: string): SessionHeader {
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
    currentRunId: row.current_run_id ?? undefined,
    turn,
    version: toNumber(row.version),
    stepCount: row.step_count,
    messageCount: row.message_count,
    resumeCount: row.resume_count,
  };
}

function toSession(row: SessionRow, schema: string): SessionSnapshot {
  return sessionSnapshot(toHeader(row, schema), fromJson(row.state), (fromJson(row.messages) as Message[] | undefined) ?? []);
}

/** What renew, claim and a journal append read of a run. */
function runHeaderOf(row: RunFenceRow): Pick<RunHeader, 'runId' | 'sessionId' | 'status' | 'epoch' | 'leaseOwner' | 'leaseExpiresAt' | 'stopRequest'> {
  return {
    runId: row.run_id,
    sessionId: row.session_id,
    status: row.status as RunStatus,
    epoch: row.epoch,
    leaseOwner: row.lease_owner,
    leaseExpiresAt: toNumber(row.lease_expires_at),
    ...(row.stop_request === null ? {} : { stopRequest: JSON.parse(row.stop_request) as StopRequest }),
  };
}

/** A checkpoint a rewind restores, with its row id. */
interface PostgresRestorePoint extends RestorePoint {
  readonly id: string;
}

/** The parameters of `beginWrite`: K1's plan. */
function beginWriteValues(request: BeginRunRequest, plan: BeginRunPlan<PostgresRestorePoint>): unknown[] {
  const { session, run: record, rewind, supersede } = plan;
  // $22: the replaced run whose journal goes (docs/retention.md).
  const turn = session.turn;
  return [
    request.sessionId,
    POSTGRES_SCHEMA_VERSION,
    record.runId,
    session.agentType,
    record.signal,
    toJson(record.options),
    record.startedAt,
    record.leaseOwner,
    record.leaseExpiresAt,
    supersede?.runId ?? null,
    record.turnId,
    request.newTurn ? JSON.stringify(request.newTurn.input) : null,
    rewind !== undefined,
    rewind?.to === 'checkpoint' ? rewind.checkpoint.id : null,
    session.messageCount,
    turn?.firstRunId ?? null,
    turn?.startCommitted ?? false,
    turn?.inputMessageIndex ?? null,
    session.version,
    session.resumeCount,
    supersede?.endedAt ?? null,
    plan.dropJournalOf ?? null,
  ];
}

/** The parameters of `commit`: the plan, and the fence and version it was decided from. */
function commitValues(commit: Commit, basis: CommitBasis, plan: CommitPlan, keepCheckpoints: number): unknown[] {
  const { session, run: after, append } = plan;
  return [
    commit.sessionId,
    commit.runId,
    commit.epoch,
    basis.session?.version ?? 0,
    POSTGRES_SCHEMA_VERSION,
    session.version,
    session.messageCount,
    session.stepCount,
    after.status === 'running',
    session.turn?.startCommitted ?? false,
    session.turn?.inputMessageIndex ?? null,
    toJson(commit.state),
    commit.committedAt,
    plan.stepIndex ?? null,
    append.at,
    append.messages.length > 0 ? JSON.stringify(append.messages) : null,
    after.stepCount,
    ...runPatchValues(plan.runPatch),
    ...checkpointValues(plan.checkpoint),
    ...usageValues(commit.usage),
    ...journalDropValues(plan.dropJournal),
    Number.isFinite(keepCheckpoints) ? keepCheckpoints : null,
  ];
}

/** `commit` $18–$22: the run fields a commit sets (NULL keeps the stored value). */
function runPatchValues(patch: RunPatch = {}): unknown[] {
  return [patch.status ?? null, patch.endedAt ?? null, toJson(patch.output), toJson(patch.error), toJson(patch.suspension)];
}

/** `commit` $23–$26: the checkpoint to write (its kind NULL for none). */
function checkpointValues(checkpoint: CheckpointDraft | undefined): unknown[] {
  return checkpoint ? [checkpoint.kind, checkpoint.stepCount, checkpoint.messageCount, checkpoint.createdAt] : [null, null, null, null];
}

/** `commit` $27–$29: the usage entries, their sessions and runs. */
function usageValues(usage: readonly UsageEntry[] | undefined): unknown[] {
  if (usage === undefined || usage.length === 0) return [null, null, null];
  return [JSON.stringify(usage), usage.map((e) => e.sessionId), usage.map((e) => e.runId)];
}

/** `commit` $30–$31: the run's journal entries to drop (all, or through a step). */
function journalDropValues(drop: JournalDrop | undefined): unknown[] {
  if (!drop) return [false, null];
  return drop.all ? [true, null] : [false, drop.throughStep];
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
    ...(row.stop_request === null || row.stop_request === undefined ? {} : { stopRequest: fromJson(row.stop_request) as StopRequest }),
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
