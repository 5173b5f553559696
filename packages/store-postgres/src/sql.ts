import { AgentError, StateCommitError } from '@helix-agents/sdk';
import type pg from 'pg';

/** A named (prepared) statement: Postgres parses and plans it once per connection. */
export interface Statement {
  readonly name: string;
  readonly text: string;
}

/** Quotes an identifier (a schema name) for SQL text. */
export function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** FNV-1a, 32 bits, as 8 hex digits: a short, stable suffix that ties a statement name to its exact text. */
export function shortHash(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0).toString(16).padStart(8, '0');
}

/**
 * Builds the statements of one schema. The name carries a hash of the text, because pg refuses a name
 * reused with another text on the same connection (two stores with different schemas can share a pool).
 */
export function statements<K extends string>(schema: string, build: (s: string) => Record<K, string>): Record<K, Statement> {
  const texts = build(quoteIdentifier(schema));
  const out = {} as Record<K, Statement>;
  for (const key of Object.keys(texts) as K[]) {
    const text = texts[key];
    out[key] = { name: `helix_${key}_${shortHash(text)}`, text };
  }
  return out;
}

/** Something that runs queries: the pool, or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, 'query'> | pg.PoolClient;

/** Runs a named statement. */
export async function run<R extends pg.QueryResultRow>(db: Queryable, statement: Statement, values: readonly unknown[]): Promise<R[]> {
  const result = await db.query<R>({ name: statement.name, text: statement.text, values: values as unknown[] });
  return result.rows;
}

/** JSON text for a `json` parameter; `undefined` becomes SQL NULL (nothing to write). */
export function toJson(value: unknown): string | null {
  return value === undefined ? null : (JSON.stringify(value) ?? null);
}

/** Parses JSON text read with `::text` (SQL NULL stays undefined, so a stored JSON `null` stays `null`). */
export function fromJson(text: string | null | undefined): unknown {
  return text === null || text === undefined ? undefined : (JSON.parse(text) as unknown);
}

/** A bigint column (pg returns int8 as a string) as a number; millisecond timestamps and offsets fit. */
export function toNumber(value: string | number | null | undefined): number {
  return typeof value === 'number' ? value : Number(value);
}

/** The SQLSTATE of a pg error, if any. */
export function sqlState(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && typeof (error as { code?: unknown }).code === 'string' ? (error as { code: string }).code : undefined;
}

/** Wraps a driver or server failure in a StateCommitError; helix errors pass through. */
export function storeError(operation: string, error: unknown): AgentError {
  if (AgentError.isInstance(error)) return error;
  const message = error instanceof Error ? error.message : String(error);
  const code = sqlState(error);
  return new StateCommitError(`Postgres ${operation} failed: ${message}`, { cause: error, details: { operation, ...(code === undefined ? {} : { sqlState: code }) } });
}

/**
 * Runs `fn` in a transaction on one pooled connection. A broken connection is destroyed instead of
 * going back to the pool.
 */
export async function transaction<T>(pool: pg.Pool, operation: string, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw storeError(operation, error);
  }
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    try {
      await client.query('ROLLBACK');
    } catch (rollbackError) {
      broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
    }
    throw storeError(operation, error);
  } finally {
    client.release(broken);
  }
}

/**
 * Takes the transaction-scoped advisory lock that every process holds while it creates or migrates objects
 * of `schema`, so that they take turns. Postgres's `CREATE ... IF NOT EXISTS` does not hold against a creator
 * in another session: the later one fails on a catalog index (23505, 42710 or 42P07) instead of finding the
 * object. Under this lock the later one runs after the first has committed, and finds it.
 */
export async function lockSchemaDdl(client: pg.PoolClient, schema: string): Promise<void> {
  await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`helix-agents:migrate:${schema}`]);
}

/**
 * Runs `ddl` (idempotent statements such as `CREATE ... IF NOT EXISTS` for objects of `schema`) in one
 * transaction under the schema's DDL lock ({@link lockSchemaDdl}, the one migrations take). So processes
 * that create the same objects at once take turns, and each finds what the other made. A failure rejects
 * with an AgentError `state_commit_failed` that names `operation`, and nothing of it stays behind.
 */
export async function createSchemaObjects(pool: pg.Pool, schema: string, ddl: readonly string[], operation: string): Promise<void> {
  await transaction(pool, operation, async (client) => {
    await lockSchemaDdl(client, schema);
    for (const statement of ddl) await client.query(statement);
  });
}
