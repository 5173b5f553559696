import { assertKVKey, HookStoreError, toJsonValue } from '@helix-agents/sdk/hooks';
import type { JsonValue, KVStore } from '@helix-agents/sdk/hooks';
import type BetterSqlite3 from 'better-sqlite3';
import type { SqliteDatabase } from './database.js';
import { handleOf, immediate } from './database.js';
import { schemaTooNew } from './migrations.js';

/** The version of the kv table layout this code writes. */
export const SQLITE_KV_SCHEMA_VERSION = 1;

/**
 * Creates (once) the tables of a component that lives beside the core schema and records its version
 * in `helix_components`; refuses a database where a newer version of the component wrote them. Kept
 * out of the core migration list so that the kv and file stores can ship and version on their own.
 */
export function ensureComponentSchema(db: BetterSqlite3.Database, component: string, version: number, ddl: string): void {
  immediate(db, () => {
    db.exec('CREATE TABLE IF NOT EXISTS helix_components (component TEXT PRIMARY KEY, version INTEGER NOT NULL, applied_at INTEGER NOT NULL)');
    const found = db.prepare<[string], number>('SELECT version FROM helix_components WHERE component = ?').pluck().get(component);
    if (found !== undefined && found > version) throw schemaTooNew(`${component} tables`, found, version, db.name);
    if (found === version) return;
    db.exec(ddl);
    db.prepare('INSERT INTO helix_components (component, version, applied_at) VALUES (?, ?, ?) ON CONFLICT (component) DO UPDATE SET version = excluded.version, applied_at = excluded.applied_at').run(
      component,
      version,
      Date.now(),
    );
  })();
}

/** Throws `hook_store_closed` once the database is closed. */
export function assertOpen(database: SqliteDatabase, what: string): void {
  if (database.closed) throw new HookStoreError('hook_store_closed', `The SQLite ${what} at ${database.path} is closed.`);
}

const KV_DDL = `
  CREATE TABLE IF NOT EXISTS hook_kv (
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (namespace, key)
  ) WITHOUT ROWID;
`;

/**
 * The SQLite {@link KVStore} behind `ctx.host.kv`: one row per key in `hook_kv`, the value as JSON text,
 * on the project's database (share the `database` of `openSqliteStores`). Writes are durable once the
 * promise resolves (WAL; see the database's `synchronous` setting).
 */
export class SqliteKVStore implements KVStore {
  /** The database the values live in. */
  readonly database: SqliteDatabase;
  readonly #get: BetterSqlite3.Statement<[string, string], string>;
  readonly #set: BetterSqlite3.Statement<[string, string, string, number]>;
  readonly #delete: BetterSqlite3.Statement<[string, string]>;
  readonly #list: BetterSqlite3.Statement<[string, string], string>;
  readonly #insertNew: (namespace: string, key: string, text: string) => string;

  constructor(database: SqliteDatabase) {
    this.database = database;
    const db = handleOf(database);
    ensureComponentSchema(db, 'hook_kv', SQLITE_KV_SCHEMA_VERSION, KV_DDL);
    this.#get = db.prepare<[string, string], string>('SELECT value FROM hook_kv WHERE namespace = ? AND key = ?').pluck();
    this.#set = db.prepare<[string, string, string, number]>(
      'INSERT INTO hook_kv (namespace, key, value, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at',
    );
    this.#delete = db.prepare<[string, string]>('DELETE FROM hook_kv WHERE namespace = ? AND key = ?');
    const insertNew = db.prepare<[string, string, string, number]>('INSERT INTO hook_kv (namespace, key, value, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (namespace, key) DO NOTHING');
    this.#insertNew = immediate(db, (namespace: string, key: string, text: string) => {
      insertNew.run(namespace, key, text, Date.now());
      return this.#get.get(namespace, key) as string;
    });
    // Keys sort after their prefix, so the range starts at the prefix and the scan stops at the first key without it.
    this.#list = db.prepare<[string, string], string>('SELECT key FROM hook_kv WHERE namespace = ? AND key >= ? ORDER BY key').pluck();
  }

  async get(namespace: string, key: string): Promise<JsonValue | undefined> {
    assertKVKey(key);
    assertOpen(this.database, 'kv store');
    const text = this.#get.get(namespace, key);
    return text === undefined ? undefined : (JSON.parse(text) as JsonValue);
  }

  async set(namespace: string, key: string, value: JsonValue): Promise<void> {
    assertKVKey(key);
    const text = JSON.stringify(toJsonValue(value));
    assertOpen(this.database, 'kv store');
    this.#set.run(namespace, key, text, Date.now());
  }

  /** Atomic across connections and processes: the insert and the read are one IMMEDIATE transaction. */
  async setIfAbsent(namespace: string, key: string, value: JsonValue): Promise<JsonValue> {
    assertKVKey(key);
    const text = JSON.stringify(toJsonValue(value));
    assertOpen(this.database, 'kv store');
    return JSON.parse(this.#insertNew(namespace, key, text)) as JsonValue;
  }

  async delete(namespace: string, key: string): Promise<boolean> {
    assertKVKey(key);
    assertOpen(this.database, 'kv store');
    return this.#delete.run(namespace, key).changes > 0;
  }

  async list(namespace: string, prefix = ''): Promise<readonly string[]> {
    assertOpen(this.database, 'kv store');
    const keys: string[] = [];
    for (const key of this.#list.iterate(namespace, prefix)) {
      if (!key.startsWith(prefix)) break;
      keys.push(key);
    }
    return keys;
  }
}
