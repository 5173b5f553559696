import type { PruneReport, RetentionPolicy } from '@helix-agents/sdk/store';
import { pruneAll, resolveRetention, schedulePrune } from '@helix-agents/sdk/store';
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
  /**
   * What to keep of finished work (default: everything until the session is deleted; docs/retention.md):
   * the newest `keepCheckpoints` per session, the chunks of finished runs for `chunkTtlMs`, and a prune
   * every `pruneIntervalMs` (stopped by `close()`). Throws an AgentError `config_invalid` for a bad value.
   */
  readonly retention?: RetentionPolicy;
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
  /**
   * Drops what the retention policy no longer keeps, as of `now` (default `Date.now()`): the chunks of
   * finished runs older than `chunkTtlMs`, and journal entries of runs that are no longer current.
   */
  prune(now?: number): Promise<PruneReport>;
  /** Stops the prune timer, flushes pending stream writes, ends following readers and closes the connection. */
  close(): void;
}

/**
 * Opens (creating and migrating it if needed) a SQLite database — `.helix/helix.db` under the working
 * directory by default — and returns the state, stream and usage stores on it. Throws an AgentError
 * `state_schema_too_new` when a newer helix-agents wrote the file.
 */
export function openSqliteStores(options: SqliteStoresOptions = {}): SqliteStores {
  // Checked before the file is opened: a bad policy opens nothing.
  const retention = options.retention ?? {};
  const { pruneIntervalMs } = resolveRetention(retention);
  const database = SqliteDatabase.open(options);
  const stateStore = new SqliteStateStore(database, { retention });
  const streamOptions: SqliteStreamManagerOptions = {
    retention,
    ...(options.pollIntervalMs === undefined ? {} : { pollIntervalMs: options.pollIntervalMs }),
    ...(options.flushIntervalMs === undefined ? {} : { flushIntervalMs: options.flushIntervalMs }),
  };
  const streamManager = new SqliteStreamManager(database, streamOptions);
  const prune = (now: number = Date.now()): Promise<PruneReport> => pruneAll([streamManager, stateStore], now);
  // A failed timed prune (a busy database) is tried again at the next tick.
  const stopPruning = schedulePrune(() => (database.closed ? Promise.resolve() : prune()), pruneIntervalMs);
  return {
    stateStore,
    streamManager,
    usageStore: stateStore,
    database,
    prune,
    close: () => {
      stopPruning();
      database.close();
    },
  };
}
