import { AgentError } from '@helix-agents/sdk';
import type BetterSqlite3 from 'better-sqlite3';

/** One step of the schema's history. Append new ones at the end; never edit or reorder a released one. */
export interface SqliteMigration {
  /** 1, 2, 3, ... in order, without gaps. */
  readonly version: number;
  readonly name: string;
  /** The DDL/DML to apply; it runs inside the migration transaction. */
  readonly sql: string;
}

/**
 * The schema's migrations, an append-only list. JSON values are stored as TEXT. Messages live in their
 * own table keyed by (session, idx) so that appending costs O(rows added). Every write of a session
 * (K1–K5) appends one `commits` row carrying the session's counters after it, the state when it
 * changed (else `state_ref` points at the row that has it; NULL means this row), the usage recorded with it, and whether it
 * is a checkpoint: a checkpoint is that row (state + message count), not a copy of the conversation.
 */
export const SQLITE_MIGRATIONS: readonly SqliteMigration[] = [
  {
    version: 1,
    name: 'sessions, commits, messages, runs, journal, usage, streams',
    // A session has a small integer `sid` to keep the index entries of its rows small. Messages and
    // commits are rowid tables appended at the end, with a (sid, n) index: on a WAL database a commit costs
    // about one page write per page it dirties, and appends share the last pages across sessions (and
    // across the commits that group commit puts in one transaction) instead of splitting pages in the
    // middle of a tree.
    sql: `
      CREATE TABLE sessions (
        sid INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL UNIQUE,
        record_version INTEGER NOT NULL,
        agent_type TEXT NOT NULL,
        parent_session_id TEXT,
        current_run_id TEXT,
        turn TEXT,
        resume_count INTEGER NOT NULL
      );
      CREATE TABLE commits (
        id INTEGER PRIMARY KEY,
        sid INTEGER NOT NULL,
        version INTEGER NOT NULL,
        run_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        message_count INTEGER NOT NULL,
        step_count INTEGER NOT NULL,
        run_step_count INTEGER NOT NULL,
        run_steps TEXT NOT NULL,
        state TEXT,
        state_ref INTEGER,
        checkpoint TEXT,
        usage TEXT,
        committed_at INTEGER NOT NULL
      );
      CREATE UNIQUE INDEX commits_by_session ON commits (sid, version);
      CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        sid INTEGER NOT NULL,
        idx INTEGER NOT NULL,
        body TEXT NOT NULL
      );
      CREATE UNIQUE INDEX messages_by_session ON messages (sid, idx);
      CREATE TABLE runs (
        run_id TEXT PRIMARY KEY,
        record_version INTEGER NOT NULL,
        session_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        agent_type TEXT NOT NULL,
        status TEXT NOT NULL,
        signal TEXT NOT NULL,
        started_at INTEGER NOT NULL,
        ended_at INTEGER,
        step_count INTEGER NOT NULL,
        output TEXT,
        error TEXT,
        suspension TEXT,
        epoch INTEGER NOT NULL,
        lease_owner TEXT NOT NULL,
        lease_expires_at INTEGER NOT NULL,
        options TEXT NOT NULL
      );
      CREATE INDEX runs_running_by_lease ON runs (lease_expires_at) WHERE status = 'running';
      CREATE TABLE journal (
        id INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL,
        key TEXT NOT NULL,
        epoch INTEGER NOT NULL,
        step_index INTEGER NOT NULL,
        kind TEXT NOT NULL,
        data TEXT,
        at INTEGER NOT NULL,
        UNIQUE (run_id, key)
      );
      CREATE INDEX journal_by_step ON journal (run_id, step_index);
      CREATE TABLE usage (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL,
        run_id TEXT NOT NULL,
        body TEXT NOT NULL
      );
      CREATE INDEX usage_by_session ON usage (session_id);
      CREATE INDEX usage_by_run ON usage (run_id);
      CREATE TABLE stream_owners (
        stream_id TEXT PRIMARY KEY,
        run_id TEXT NOT NULL,
        next_seq INTEGER NOT NULL
      ) WITHOUT ROWID;
      CREATE TABLE stream_chunks (
        stream_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        run_id TEXT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (stream_id, seq)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 2,
    name: 'runs.stop_request: stops asked for by another process',
    sql: 'ALTER TABLE runs ADD COLUMN stop_request TEXT;',
  },
  {
    version: 3,
    name: 'commits_checkpoints: the checkpoints of a session, newest first, for retention.keepCheckpoints',
    // Partial: only checkpoint rows, so trimming to the newest N reads N + a few entries, not the session's history.
    sql: 'CREATE INDEX commits_checkpoints ON commits (sid, version) WHERE checkpoint IS NOT NULL;',
  },
  {
    version: 4,
    name: 'stream_batches and commits.messages: fewer B-trees a step writes',
    // A step wrote about thirteen pages of log, one at least for every B-tree it touched. Its chunks were a
    // row each in a WITHOUT ROWID table keyed by (stream, seq), where appends split pages in half; now the
    // chunks one transaction writes to a stream are one row of a rowid table whose key is the stream's small
    // integer key (`stream_owners.sk`) times 2^32 plus the last seq, so the table's own tree finds a
    // stream's rows in order and no index is written per step; the claim's next_seq is a floor that prune
    // raises before it deletes, not a counter every write updates. Messages were rows of their own with an index; now they
    // ride in the commits row that appends them (`messages`, a JSON array, the first at index
    // `messages_at`). A session's existing messages move to its first row. The partial index of checkpoint
    // rows (one more page a step, for trimming at every commit) goes: a checkpoint past the newest
    // `keepCheckpoints` is left out by every read, and prune and rewinds un-mark it in the file.
    sql: `
      CREATE TABLE stream_owners_4 (
        sk INTEGER PRIMARY KEY,
        stream_id TEXT NOT NULL UNIQUE,
        run_id TEXT NOT NULL,
        next_seq INTEGER NOT NULL
      );
      INSERT INTO stream_owners_4 (stream_id, run_id, next_seq) SELECT stream_id, run_id, next_seq FROM stream_owners ORDER BY stream_id;
      CREATE TABLE stream_batches (
        key INTEGER PRIMARY KEY,
        first_seq INTEGER NOT NULL,
        run_id TEXT NOT NULL,
        bodies TEXT NOT NULL
      );
      INSERT INTO stream_batches (key, first_seq, run_id, bodies)
        SELECT o.sk * 4294967296 + c.seq, c.seq, c.run_id, '[' || c.body || ']' FROM stream_chunks c JOIN stream_owners_4 o ON o.stream_id = c.stream_id
        ORDER BY o.sk, c.seq;
      DROP TABLE stream_chunks;
      DROP TABLE stream_owners;
      ALTER TABLE stream_owners_4 RENAME TO stream_owners;
      ALTER TABLE commits ADD COLUMN messages TEXT;
      ALTER TABLE commits ADD COLUMN messages_at INTEGER;
      UPDATE commits SET
          messages = (SELECT json_group_array(json(body)) FROM (SELECT m.body FROM messages m WHERE m.sid = commits.sid ORDER BY m.idx)),
          messages_at = 0
        WHERE version = (SELECT min(c.version) FROM commits c WHERE c.sid = commits.sid)
          AND EXISTS (SELECT 1 FROM messages m WHERE m.sid = commits.sid);
      DROP TABLE messages;
      DROP INDEX commits_checkpoints;
    `,
  },
  {
    version: 5,
    name: 'batch rows hold their run fields once',
    // `stream_batches.shared` holds, once for a row, the run fields its chunks all repeated (streamId,
    // agentId, agentType, runId; see packing.ts); the rows written before keep their format (shared NULL).
    sql: `
      ALTER TABLE stream_batches ADD COLUMN shared TEXT;
    `,
  },
  {
    version: 6,
    name: 'rows do not repeat the run fields their row already says',
    // No table changes: the version says that rows may now be in a format older code cannot read, so that
    // older code opening the file refuses it (state_schema_too_new) instead of misreading them (a process
    // that already has it open is not stopped: no two versions on one file at once). A batch row's `shared` may be a
    // compact array (its chunks' agentType, and agentId when it is not the stream's id; their streamId is the
    // row's stream, their runId its run_id), and a commits row's usage entries may lack the sessionId and
    // runId of the row's own session and run (usage-store.ts). Rows written before read as they were.
    sql: 'SELECT 1;',
  },
];

/** The schema version this code writes: the last migration's. */
export const SQLITE_SCHEMA_VERSION: number = SQLITE_MIGRATIONS.at(-1)?.version ?? 0;

/** The version stamped on every session and run row; a row with a higher one was written by newer code. */
export const SQLITE_RECORD_VERSION = 1;

/** The error for a database (or a record in it) written by a newer helix-agents. */
export function schemaTooNew(what: string, found: number, supported: number, path: string): AgentError {
  return new AgentError(
    'state_schema_too_new',
    `The SQLite ${what} at ${path} has schema version ${found}, newer than the ${supported} this helix-agents supports. Upgrade @helix-agents/store-sqlite, or use another database file.`,
    { details: { path, found, supported } },
  );
}

/**
 * Brings the database up to {@link SQLITE_SCHEMA_VERSION}, or refuses it with `state_schema_too_new`
 * when a newer version wrote it. Safe to run twice and by two processes at once: it runs in one
 * BEGIN IMMEDIATE transaction (the second process waits for the first, then finds nothing to do).
 * Returns the migrations it applied.
 */
export function migrateSqlite(db: BetterSqlite3.Database, migrations: readonly SqliteMigration[] = SQLITE_MIGRATIONS): readonly SqliteMigration[] {
  const latest = migrations.at(-1)?.version ?? 0;
  const run = db.transaction((): SqliteMigration[] => {
    db.exec('CREATE TABLE IF NOT EXISTS helix_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)');
    const current = (db.prepare('SELECT max(version) FROM helix_migrations').pluck().get() as number | null) ?? 0;
    if (current > latest) throw schemaTooNew('database', current, latest, db.name);
    const applied: SqliteMigration[] = [];
    const record = db.prepare('INSERT INTO helix_migrations (version, name, applied_at) VALUES (?, ?, ?)');
    for (const migration of migrations) {
      if (migration.version <= current) continue;
      db.exec(migration.sql);
      record.run(migration.version, migration.name, Date.now());
      applied.push(migration);
    }
    return applied;
  });
  return run.immediate();
}

/** The highest migration recorded in the database (0 for an empty one). */
export function sqliteSchemaVersion(db: BetterSqlite3.Database): number {
  const exists = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'helix_migrations'").get();
  if (exists === undefined) return 0;
  return (db.prepare('SELECT max(version) FROM helix_migrations').pluck().get() as number | null) ?? 0;
}
