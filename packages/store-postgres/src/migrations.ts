import { AgentError } from '@helix-agents/sdk';
import type pg from 'pg';
import { lockSchemaDdl, quoteIdentifier, storeError } from './sql.js';

/** One step of the schema's history. Applied in order, once, inside the migration transaction. */
export interface PostgresMigration {
  readonly version: number;
  readonly name: string;
  /** The DDL, given the quoted schema name. */
  readonly statements: (schema: string) => readonly string[];
}

/**
 * The schema's history: append only. Never edit or reorder an entry that has shipped; add a new one.
 * JSON payloads are `json` (exact text), not `jsonb`: the store never queries inside them, `json` keeps
 * them byte for byte (key order, `\u0000` in strings, which `jsonb` rejects) and skips jsonb's rebuild on
 * every write, while still validating the JSON and allowing `->` for inspection.
 */
export const POSTGRES_MIGRATIONS: readonly PostgresMigration[] = [
  {
    version: 1,
    name: 'sessions, runs, messages, checkpoints, journal, usage, streams',
    statements: (s) => [
      // Sessions, runs and streams rows are updated on every step or write, never in an indexed column:
      // free room on their pages keeps those updates HOT (no new index entries, less WAL).
      `CREATE TABLE ${s}.sessions (
        session_id text PRIMARY KEY,
        record_version smallint NOT NULL,
        agent_type text NOT NULL,
        parent_session_id text,
        state json,
        -- What a rewind to the genesis checkpoint restores.
        initial_state json,
        message_count integer NOT NULL DEFAULT 0,
        current_run_id text,
        -- The fence of the current run, kept on the session row so that one row lock covers every check.
        run_epoch integer NOT NULL DEFAULT 0,
        run_open boolean NOT NULL DEFAULT false,
        turn_id text,
        turn_first_run_id text,
        turn_input json,
        turn_start_committed boolean NOT NULL DEFAULT false,
        turn_input_index integer,
        version bigint NOT NULL DEFAULT 0,
        step_count integer NOT NULL DEFAULT 0,
        resume_count integer NOT NULL DEFAULT 0,
        created_at bigint NOT NULL,
        updated_at bigint NOT NULL
      ) WITH (fillfactor = 50)`,
      // Append-only conversation rows: a step writes only the rows it adds.
      `CREATE TABLE ${s}.messages (
        session_id text NOT NULL,
        idx integer NOT NULL,
        message json NOT NULL,
        PRIMARY KEY (session_id, idx)
      )`,
      `CREATE TABLE ${s}.runs (
        run_id text PRIMARY KEY,
        record_version smallint NOT NULL,
        session_id text NOT NULL,
        turn_id text NOT NULL,
        agent_type text NOT NULL,
        status text NOT NULL,
        signal text NOT NULL,
        started_at bigint NOT NULL,
        ended_at bigint,
        step_count integer NOT NULL DEFAULT 0,
        output json,
        error json,
        epoch integer NOT NULL,
        lease_owner text NOT NULL,
        lease_expires_at bigint NOT NULL,
        options json NOT NULL,
        suspension json
      ) WITH (fillfactor = 50)`,
      `CREATE INDEX runs_recoverable ON ${s}.runs (lease_expires_at) WHERE status = 'running'`,
      // (runId, stepIndex) is written at most once: the primary key refuses a second commit of a step.
      `CREATE TABLE ${s}.steps (
        run_id text NOT NULL,
        step_index integer NOT NULL,
        committed_at bigint NOT NULL,
        PRIMARY KEY (run_id, step_index)
      )`,
      // A checkpoint is the state plus a prefix length of the conversation.
      `CREATE TABLE ${s}.checkpoints (
        session_id text NOT NULL,
        id bigint GENERATED ALWAYS AS IDENTITY,
        run_id text NOT NULL,
        kind text NOT NULL,
        step_count integer NOT NULL,
        message_count integer NOT NULL,
        created_at bigint NOT NULL,
        state json,
        PRIMARY KEY (session_id, id)
      )`,
      `CREATE TABLE ${s}.journal (
        run_id text NOT NULL,
        key text NOT NULL,
        id bigint GENERATED ALWAYS AS IDENTITY,
        epoch integer NOT NULL,
        step_index integer NOT NULL,
        kind text NOT NULL,
        data json,
        at bigint NOT NULL,
        PRIMARY KEY (run_id, key)
      )`,
      `CREATE INDEX journal_order ON ${s}.journal (run_id, id)`,
      // An append-only log that is only ever rolled up (order does not matter): no key of its own.
      `CREATE TABLE ${s}.usage (
        session_id text NOT NULL,
        run_id text NOT NULL,
        entry json NOT NULL
      )`,
      `CREATE INDEX usage_session ON ${s}.usage (session_id)`,
      `CREATE INDEX usage_run ON ${s}.usage (run_id)`,
      `CREATE TABLE ${s}.streams (
        stream_id text PRIMARY KEY,
        owner text,
        next_seq bigint NOT NULL DEFAULT 0,
        -- Claims are numbered, so news of an older claim arriving late silences no newer writer.
        generation bigint NOT NULL DEFAULT 0
      ) WITH (fillfactor = 50)`,
      `CREATE TABLE ${s}.chunks (
        stream_id text NOT NULL,
        seq bigint NOT NULL,
        run_id text NOT NULL,
        chunk json NOT NULL,
        PRIMARY KEY (stream_id, seq)
      )`,
    ],
  },
  {
    version: 2,
    name: 'runs.stop_request: stops asked for by another process',
    statements: (s) => [`ALTER TABLE ${s}.runs ADD COLUMN stop_request json`],
  },
];

/** The schema version this code writes: the last migration's. Rows carry it as `record_version`. */
export const POSTGRES_SCHEMA_VERSION: number = POSTGRES_MIGRATIONS.at(-1)?.version ?? 0;

/** The table that records applied migrations, inside the store's schema. */
export const MIGRATIONS_TABLE = 'schema_migrations';

/** What {@link migratePostgres} did. */
export interface MigrationResult {
  /** The schema version found (0 for an empty schema). */
  readonly from: number;
  /** The schema version now. */
  readonly to: number;
  /** The versions applied by this call (empty when another process had applied them). */
  readonly applied: readonly number[];
}

/** The error for a database written by a newer version of the store. */
export function schemaTooNewError(schema: string, found: number): AgentError {
  return new AgentError(
    'state_schema_too_new',
    `The Postgres schema "${schema}" is at version ${found}, newer than the version ${POSTGRES_SCHEMA_VERSION} this @helix-agents/store-postgres knows; upgrade this process before opening it.`,
    { details: { schema, found, supported: POSTGRES_SCHEMA_VERSION } },
  );
}

/**
 * Brings `schema` up to {@link POSTGRES_SCHEMA_VERSION}: safe to run twice and from several processes at
 * once (a transaction-scoped advisory lock serialises migrators; DDL is transactional in Postgres, so a
 * failed migration leaves nothing behind). Refuses a schema written by a newer version with an
 * AgentError `state_schema_too_new`.
 */
export async function migratePostgres(pool: pg.Pool, options: { readonly schema?: string; readonly migrations?: readonly PostgresMigration[] } = {}): Promise<MigrationResult> {
  const schema = options.schema ?? 'helix';
  const migrations = options.migrations ?? POSTGRES_MIGRATIONS;
  const latest = migrations.at(-1)?.version ?? 0;
  const s = quoteIdentifier(schema);
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw storeError('migration', error);
  }
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    await lockSchemaDdl(client, schema);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
    await client.query(`CREATE TABLE IF NOT EXISTS ${s}.${MIGRATIONS_TABLE} (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const found = await client.query<{ version: number | null }>(`SELECT max(version) AS version FROM ${s}.${MIGRATIONS_TABLE}`);
    const from = found.rows[0]?.version ?? 0;
    if (from > latest) throw schemaTooNewError(schema, from);
    const applied: number[] = [];
    for (const migration of migrations) {
      if (migration.version <= from) continue;
      for (const sql of migration.statements(s)) await client.query(sql);
      await client.query(`INSERT INTO ${s}.${MIGRATIONS_TABLE} (version, name) VALUES ($1, $2)`, [migration.version, migration.name]);
      applied.push(migration.version);
    }
    await client.query('COMMIT');
    return { from, to: Math.max(from, latest), applied };
  } catch (error) {
    try {
      await client.query('ROLLBACK');
    } catch (rollbackError) {
      broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
    }
    throw storeError('migration', error);
  } finally {
    client.release(broken);
  }
}
