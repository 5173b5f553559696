import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { AgentError, StateCommitError } from '@helix-agents/sdk';
import BetterSqlite3 from 'better-sqlite3';
import { migrateSqlite } from './migrations.js';

/** Where {@link SqliteDatabase.open} puts the database by default: a project-local folder. */
export const DEFAULT_SQLITE_PATH = '.helix/helix.db';

/** How to open a SQLite database. */
export interface SqliteDatabaseOptions {
  /** The database file; `.helix/helix.db` under the working directory by default (the folder is created). `:memory:` for a private in-memory database. */
  readonly path?: string;
  /**
   * `NORMAL` (default): in WAL mode a commit survives a crash of the process, but the last commits
   * before an OS crash or a power loss may be lost. `FULL`: every commit is fsynced and survives power
   * loss too, at several times the cost per commit.
   */
  readonly synchronous?: 'NORMAL' | 'FULL';
  /** How long a write waits for another process's write lock before failing (default 5,000 ms). */
  readonly busyTimeoutMs?: number;
}

const handles = new WeakMap<SqliteDatabase, BetterSqlite3.Database>();

/**
 * One open connection to a helix-agents SQLite database (WAL mode, migrated). The stores of this
 * package share it; open another one (in this process or another) for a second connection.
 */
export class SqliteDatabase {
  /** The absolute path of the database file (or `:memory:`). */
  readonly path: string;
  /** The `synchronous` setting in force. */
  readonly synchronous: 'NORMAL' | 'FULL';
  /** The versions of the migrations this open applied (empty when the schema was already current). */
  readonly appliedMigrations: readonly number[];
  #closed = false;
  readonly #onClose: (() => void)[] = [];

  private constructor(db: BetterSqlite3.Database, path: string, synchronous: 'NORMAL' | 'FULL', appliedMigrations: readonly number[]) {
    handles.set(this, db);
    this.path = path;
    this.synchronous = synchronous;
    this.appliedMigrations = appliedMigrations;
  }

  /**
   * Opens (creating it if needed) and migrates a database. Throws an AgentError `state_schema_too_new`
   * when the file was written by a newer version of this package.
   */
  static open(options: SqliteDatabaseOptions = {}): SqliteDatabase {
    const memory = options.path === ':memory:';
    const path = memory ? ':memory:' : resolve(options.path ?? DEFAULT_SQLITE_PATH);
    if (!memory) mkdirSync(dirname(path), { recursive: true });
    const synchronous = options.synchronous ?? 'NORMAL';
    let db: BetterSqlite3.Database;
    try {
      db = new BetterSqlite3(path, { timeout: options.busyTimeoutMs ?? 5_000 });
    } catch (error) {
      throw openFailed(path, error);
    }
    let applied: readonly number[];
    try {
      // WAL: readers never block the writer and a commit is one append to the log.
      if (!memory) db.pragma('journal_mode = WAL');
      db.pragma(`synchronous = ${synchronous === 'FULL' ? 'FULL' : 'NORMAL'}`);
      applied = migrateSqlite(db).map((m) => m.version);
    } catch (error) {
      db.close();
      throw AgentError.isInstance(error) ? error : openFailed(path, error);
    }
    return new SqliteDatabase(db, path, synchronous, applied);
  }

  /** True once {@link close} ran. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Closes the connection (idempotent); followers of its streams end. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const hook of this.#onClose.splice(0)) hook();
    handleOf(this).close();
  }

  /** Registers work to do just before the connection closes (used by the stores of this package). */
  onClose(hook: () => void): void {
    this.#onClose.push(hook);
  }
}

function openFailed(path: string, error: unknown): StateCommitError {
  return new StateCommitError(`Could not open the SQLite database at ${path}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
}

/** The better-sqlite3 connection behind a {@link SqliteDatabase} (package-internal: not exported from the index). */
export function handleOf(database: SqliteDatabase): BetterSqlite3.Database {
  const db = handles.get(database);
  if (!db) throw new Error('Not a SqliteDatabase opened by SqliteDatabase.open().');
  return db;
}

/** Wraps `fn` in a write transaction (BEGIN IMMEDIATE: the write lock is taken up front, so the fence check and the write cannot interleave with another writer). */
export function immediate<A extends unknown[], R>(db: BetterSqlite3.Database, fn: (...args: A) => R): (...args: A) => R {
  const transaction = db.transaction(fn);
  // better-sqlite3 types transactions through `any`; this keeps the caller's signature exact.
  return (...args: A) => transaction.immediate(...args) as R;
}

/** Wraps `fn` in a read transaction, so that its statements all see one snapshot. */
export function deferred<A extends unknown[], R>(db: BetterSqlite3.Database, fn: (...args: A) => R): (...args: A) => R {
  const transaction = db.transaction(fn);
  return (...args: A) => transaction.deferred(...args) as R;
}
