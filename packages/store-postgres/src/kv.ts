import { assertKVKey, toJsonValue } from '@helix-agents/sdk/hooks';
import type { JsonValue, KVStore } from '@helix-agents/sdk/hooks';
import type pg from 'pg';
import { createSchemaObjects, quoteIdentifier, run, statements, storeError, type Statement } from './sql.js';

/** Options of {@link PostgresKVStore}. */
export interface PostgresKVStoreOptions {
  /** The Postgres schema of the `hook_kv` table ('helix' by default, the stores' schema); created when missing. */
  readonly schema?: string;
}

type KVStatement = 'get' | 'set' | 'insertNew' | 'delete' | 'list';

/**
 * A {@link KVStore} on Postgres: one row per key in `<schema>.hook_kv`, the value as `json` (kept as written, like the SQLite kv store's text). Share the
 * pool of `openPostgresStores` (`stores.pool`). Every method is one statement, so writers in other
 * processes see each other's writes at once, and {@link PostgresKVStore.setIfAbsent} is atomic across
 * them (an `INSERT ... ON CONFLICT DO NOTHING` and a read in one statement): the server's
 * `KVSessionOwners` over this store gives one owner per session however many server processes claim it.
 */
export class PostgresKVStore implements KVStore {
  readonly #pool: pg.Pool;
  readonly #schema: string;
  readonly #sql: Record<KVStatement, Statement>;
  #ready: Promise<void> | undefined;

  constructor(pool: pg.Pool, options: PostgresKVStoreOptions = {}) {
    this.#pool = pool;
    this.#schema = options.schema ?? 'helix';
    this.#sql = statements<KVStatement>(this.#schema, (s) => ({
      get: `SELECT value::text AS value FROM ${s}.hook_kv WHERE namespace = $1 AND key = $2`,
      set: `INSERT INTO ${s}.hook_kv (namespace, key, value, updated_at) VALUES ($1, $2, $3::json, $4) ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
      // The inserted row when this call won, the existing row otherwise, in one statement.
      insertNew: `WITH ins AS (INSERT INTO ${s}.hook_kv (namespace, key, value, updated_at) VALUES ($1, $2, $3::json, $4) ON CONFLICT (namespace, key) DO NOTHING RETURNING value)
        SELECT value::text AS value FROM ins UNION ALL SELECT value::text AS value FROM ${s}.hook_kv WHERE namespace = $1 AND key = $2 AND NOT EXISTS (SELECT 1 FROM ins)`,
      delete: `DELETE FROM ${s}.hook_kv WHERE namespace = $1 AND key = $2 RETURNING key`,
      list: `SELECT key FROM ${s}.hook_kv WHERE namespace = $1 AND starts_with(key, $2) ORDER BY key COLLATE "C"`,
    }));
  }

  async get(namespace: string, key: string): Promise<JsonValue | undefined> {
    assertKVKey(key);
    const rows = await this.#query<{ value: string }>('get', [namespace, key]);
    return rows[0] === undefined ? undefined : (JSON.parse(rows[0].value) as JsonValue);
  }

  async set(namespace: string, key: string, value: JsonValue): Promise<void> {
    assertKVKey(key);
    await this.#query('set', [namespace, key, JSON.stringify(toJsonValue(value)), Date.now()]);
  }

  async setIfAbsent(namespace: string, key: string, value: JsonValue): Promise<JsonValue> {
    assertKVKey(key);
    const text = JSON.stringify(toJsonValue(value));
    // Under READ COMMITTED a conflicting insert that has not committed yet makes ours wait, then skip;
    // the row it wrote may still be invisible to this statement's snapshot, so read again until it is.
    for (let attempt = 0; attempt < 5; attempt++) {
      const rows = await this.#query<{ value: string }>('insertNew', [namespace, key, text, Date.now()]);
      if (rows[0] !== undefined) return JSON.parse(rows[0].value) as JsonValue;
    }
    throw storeError('kv setIfAbsent', new Error(`key ${JSON.stringify(key)} stayed unreadable after conflicting writes`));
  }

  async delete(namespace: string, key: string): Promise<boolean> {
    assertKVKey(key);
    return (await this.#query('delete', [namespace, key])).length > 0;
  }

  async list(namespace: string, prefix = ''): Promise<readonly string[]> {
    const rows = await this.#query<{ key: string }>('list', [namespace, prefix]);
    return rows.map((r) => r.key);
  }

  async #query<R extends pg.QueryResultRow>(statement: KVStatement, values: readonly unknown[]): Promise<R[]> {
    await this.#ensure();
    try {
      return await run<R>(this.#pool, this.#sql[statement], values);
    } catch (error) {
      throw storeError(`kv ${statement}`, error);
    }
  }

  /**
   * Creates the schema and the table once per store: in one transaction under the schema's DDL lock (the
   * one migrations take), so that processes opening the store at once, and a migration of the same schema,
   * take turns instead of failing on the catalog. A failed setup is tried again by the next call.
   */
  #ensure(): Promise<void> {
    this.#ready ??= (async () => {
      const s = quoteIdentifier(this.#schema);
      try {
        await createSchemaObjects(this.#pool, this.#schema, [
          `CREATE SCHEMA IF NOT EXISTS ${s}`,
          `CREATE TABLE IF NOT EXISTS ${s}.hook_kv (namespace text NOT NULL, key text NOT NULL, value json NOT NULL, updated_at bigint NOT NULL, PRIMARY KEY (namespace, key))`,
        ], 'kv setup');
      } catch (error) {
        this.#ready = undefined;
        throw error;
      }
    })();
    return this.#ready;
  }
}
