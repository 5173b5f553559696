import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { AgentError, StateCommitError } from '@helix-agents/sdk';
import BetterSqlite3 from 'better-sqlite3';
import { BackgroundCheckpointer, type SqliteCheckpointMode } from './checkpointer.js';
import { migrateSqlite } from './migrations.js';
import { connectionCaches, type CacheEffect } from './read-cache.js';

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
  /**
   * Who runs WAL checkpoints: `'background'` (default) a worker thread, so that no commit waits for
   * one; `'inline'` SQLite's automatic checkpoint inside the committing connection. See
   * {@link SqliteCheckpointMode}. Ignored for `:memory:`.
   */
  readonly checkpoint?: SqliteCheckpointMode;
  /**
   * Internal, for tests and benchmarks: `false` turns off the connection's read caches (a step's commit
   * then reads its session's fence and its stream's owner from the file, as every other connection's
   * commit could have changed them). Default true; docs/durability.md says why they are always exact.
   */
  readonly readCaches?: boolean;
}

const handles = new WeakMap<SqliteDatabase, BetterSqlite3.Database>();
const checkpointers = new WeakMap<BetterSqlite3.Database, BackgroundCheckpointer>();

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
  /** Who runs WAL checkpoints (`'inline'` for `:memory:`, which has no log). */
  readonly checkpoint: SqliteCheckpointMode;
  #closed = false;
  readonly #onClose: (() => void)[] = [];

  private constructor(db: BetterSqlite3.Database, path: string, synchronous: 'NORMAL' | 'FULL', appliedMigrations: readonly number[], checkpoint: SqliteCheckpointMode) {
    handles.set(this, db);
    this.path = path;
    this.synchronous = synchronous;
    this.appliedMigrations = appliedMigrations;
    this.checkpoint = checkpoint;
    if (checkpoint === 'background') {
      const checkpointer = new BackgroundCheckpointer(db, path, (message) => process.emitWarning(`helix-agents SQLite (${path}): ${message}`, 'HelixSqliteWarning'));
      checkpointers.set(db, checkpointer);
      this.#onClose.push(() => checkpointer.stop());
    }
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
      connectionCaches(db).enabled = options.readCaches !== false;
    } catch (error) {
      db.close();
      throw AgentError.isInstance(error) ? error : openFailed(path, error);
    }
    return new SqliteDatabase(db, path, synchronous, applied, memory ? 'inline' : (options.checkpoint ?? 'background'));
  }

  /**
   * How many write transactions this connection has committed or rolled back since it opened (a
   * group of commits sharing one transaction counts once). For benchmarks and tests: a step of a run
   * costs one.
   */
  get writeTransactions(): number {
    return counters.get(handleOf(this))?.count ?? 0;
  }

  /**
   * Whether a background checkpoint thread runs now: it starts after this connection's first few hundred
   * write transactions, and stops (checkpoints run inline again) at close or should it fail.
   */
  get checkpointsInBackground(): boolean {
    return checkpointers.get(handleOf(this))?.running ?? false;
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

const counters = new WeakMap<BetterSqlite3.Database, { count: number }>();
const participants = new WeakMap<BetterSqlite3.Database, WriteParticipant[]>();

function counterOf(db: BetterSqlite3.Database): { count: number } {
  let counter = counters.get(db);
  if (!counter) {
    counter = { count: 0 };
    counters.set(db, counter);
  }
  return counter;
}

/**
 * Work that rides in another store's write transaction on the same connection (the stream manager's
 * queued chunks ride in the state store's commits). Package-internal.
 */
export interface WriteParticipant {
  /** Runs inside the transaction; returns what to do once it committed (true) or rolled back (false). */
  write(): ((committed: boolean) => void) | undefined;
}

/** Registers a participant in the joined write transactions of `database`'s connection. */
export function joinWrites(database: SqliteDatabase, participant: WriteParticipant): void {
  const db = handleOf(database);
  const list = participants.get(db) ?? [];
  list.push(participant);
  participants.set(db, list);
}

/**
 * Wraps `fn` in a write transaction (BEGIN IMMEDIATE: the write lock is taken up front, so the fence check
 * and the write cannot interleave with another writer). `effect` says what `fn`'s writes do to the
 * connection's read caches (read-cache.ts): `'keeps'` only for a path that updates or drops every cache entry
 * its writes touch; any other path clears them. A transaction that throws (rolled back) always clears them.
 */
export function immediate<A extends unknown[], R>(db: BetterSqlite3.Database, fn: (...args: A) => R, effect: CacheEffect = 'clears'): (...args: A) => R {
  const caches = connectionCaches(db);
  const keeps = effect === 'keeps';
  const transaction = db.transaction((...args: A): R => {
    // Inside BEGIN IMMEDIATE: no other writer can commit between this check and the writes. A path that
    // clears them leaves the caches unusable while it runs, so its writes cannot set an entry.
    if (!keeps) {
      caches.invalidate();
      return fn(...args);
    }
    caches.begin();
    const result = fn(...args);
    caches.end();
    return result;
  });
  const nested = db.transaction(fn);
  const counter = counterOf(db);
  const checkpointer = checkpointers.get(db);
  // better-sqlite3 types transactions through `any`; this keeps the caller's signature exact.
  return (...args: A) => {
    if (db.inTransaction) {
      // A savepoint in a transaction someone else began: it did not check the stamp, so nothing cached is
      // used in it, and a path that does not keep the caches clears them (the outer transaction may still
      // roll back what it wrote).
      if (!keeps || !caches.usable) caches.invalidate();
      try {
        return nested.immediate(...args) as R;
      } catch (error) {
        caches.invalidate();
        throw error;
      }
    }
    counter.count++;
    try {
      return transaction.immediate(...args) as R;
    } catch (error) {
      // Rolled back: an entry set or dropped in it may describe writes the file no longer holds.
      caches.invalidate();
      throw error;
    } finally {
      checkpointer?.afterWrite();
    }
  };
}

/**
 * Like {@link immediate}, and the connection's participants (queued stream chunks) write in the same
 * transaction, before `fn`: one commit carries both. A participant must keep the read caches.
 */
export function joined<A extends unknown[], R>(db: BetterSqlite3.Database, fn: (...args: A) => R, effect: CacheEffect = 'clears'): (...args: A) => R {
  let settle: ((committed: boolean) => void)[] = [];
  // The participants keep the caches (the stream manager's writes do): the effect is `fn`'s.
  const run = immediate(
    db,
    (...args: A): R => {
      for (const participant of participants.get(db) ?? []) {
        const done = participant.write();
        if (done) settle.push(done);
      }
      return fn(...args);
    },
    effect,
  );
  return (...args: A) => {
    settle = [];
    let result: R;
    try {
      result = run(...args);
    } catch (error) {
      const mine = settle;
      settle = [];
      for (const done of mine) done(false);
      throw error;
    }
    const mine = settle;
    settle = [];
    for (const done of mine) done(true);
    return result;
  };
}

/** Wraps `fn` in a read transaction, so that its statements all see one snapshot. */
export function deferred<A extends unknown[], R>(db: BetterSqlite3.Database, fn: (...args: A) => R): (...args: A) => R {
  const transaction = db.transaction(fn);
  return (...args: A) => transaction.deferred(...args) as R;
}
