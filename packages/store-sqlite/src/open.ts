import type { SqliteDatabaseOptions } from './database.js';
import { SqliteDatabase } from './database.js';
import { SqliteStateStore } from './state-store.js';
import { SqliteStreamManager, type SqliteStreamManagerOptions } from './stream-manager.js';

/** Options of {@link openSqliteStores}. */
export interface SqliteStoresOptions extends SqliteDatabaseOptions {
  /** How often a following stream reader polls for chunks written by other processes (default 20 ms). */
  readonly pollIntervalMs?: number;
  /** How long a queued chunk waits for the next state commit before it is written on its own (default 10 ms; see {@link SqliteStreamManagerOptions}). */
  readonly flushIntervalMs?: number;
}

/** The three stores on one SQLite connection. */
export interface SqliteStores {
  /** The state store; it is also `usageStore`, so usage is recorded in the commit of its step. */
  readonly stateStore: SqliteStateStore;
  readonly streamManager: SqliteStreamManager;
  /** The same object as `stateStore` (pass both to the executor to get atomic usage). */
  readonly usageStore: SqliteStateStore;
  /** The shared connection. */
  readonly database: SqliteDatabase;
  /** Flushes pending stream writes, ends following readers and closes the connection. */
  close(): void;
}

/**
 * Opens (creating and migrating it if needed) a SQLite database — `.helix/helix.db` under the working
 * directory by default — and returns the state, stream and usage stores on it. Throws an AgentError
 * `state_schema_too_new` when a newer helix-agents wrote the file.
 */
export function openSqliteStores(options: SqliteStoresOptions = {}): SqliteStores {
  const database = SqliteDatabase.open(options);
  const stateStore = new SqliteStateStore(database);
  const streamOptions: SqliteStreamManagerOptions = {
    ...(options.pollIntervalMs === undefined ? {} : { pollIntervalMs: options.pollIntervalMs }),
    ...(options.flushIntervalMs === undefined ? {} : { flushIntervalMs: options.flushIntervalMs }),
  };
  const streamManager = new SqliteStreamManager(database, streamOptions);
  return { stateStore, streamManager, usageStore: stateStore, database, close: () => database.close() };
}
