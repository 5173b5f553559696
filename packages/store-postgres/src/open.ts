import type { PruneReport, RetentionPolicy } from '@helix-agents/sdk/store';
import { pruneAll, resolveRetention, schedulePrune } from '@helix-agents/sdk/store';
import pg from 'pg';
import { migratePostgres } from './migrations.js';
import { PostgresStateStore } from './state-store.js';
import { PostgresStreamManager } from './stream-manager.js';

/** Options of {@link openPostgresStores} shared by both ways to connect. */
export interface PostgresStoresCommonOptions {
  /** The Postgres schema holding the tables ('helix' by default); created and migrated on open. */
  readonly schema?: string;
  /** How often following stream readers poll when no notification came, in ms (1000 by default). */
  readonly pollIntervalMs?: number;
  /** How long a queued stream chunk waits for the next commit before it is written on its own (10 ms by default). */
  readonly flushIntervalMs?: number;
  /**
   * What to keep of finished work (default: everything until the session is deleted; docs/retention.md):
   * the newest `keepCheckpoints` per session, the chunks of finished runs for `chunkTtlMs`, and a prune
   * every `pruneIntervalMs` (stopped by `close()`). Throws an AgentError `config_invalid` for a bad value.
   */
  readonly retention?: RetentionPolicy;
}

/** Options of {@link openPostgresStores}: a connection string (the stores own their pool) or your pool. */
export type OpenPostgresStoresOptions = PostgresStoresCommonOptions &
  (
    | {
        /** A libpq-style URL, e.g. `postgres://user:pass@host:5432/db`. */
        readonly connectionString: string;
        /** Connections of the pool the stores create (10 by default). */
        readonly maxConnections?: number;
        readonly pool?: undefined;
      }
    | {
        /** A pool you own: `close()` leaves it open. A following stream reader holds one of its connections for LISTEN. */
        readonly pool: pg.Pool;
        readonly connectionString?: undefined;
        readonly maxConnections?: undefined;
      }
  );

/** The three stores on one Postgres schema, and how to close them. */
export interface PostgresStores {
  /** The state store; it is also the usage store, so usage passed with a commit lands in its transaction. */
  readonly stateStore: PostgresStateStore;
  readonly streamManager: PostgresStreamManager;
  /** The same object as `stateStore`. */
  readonly usageStore: PostgresStateStore;
  readonly pool: pg.Pool;
  readonly schema: string;
  /**
   * Drops what the retention policy no longer keeps, as of `now` (default `Date.now()`): the chunks of
   * finished runs older than `chunkTtlMs`, and journal entries of runs that are no longer current.
   */
  prune(now?: number): Promise<PruneReport>;
  /** Stops the prune timer and stream listening, and ends the pool when the stores created it. */
  close(): Promise<void>;
}

/**
 * Opens the Postgres stores: connects, creates or migrates the schema (refusing one written by a newer
 * version with an AgentError `state_schema_too_new`), and returns the state, stream and usage stores.
 */
export async function openPostgresStores(options: OpenPostgresStoresOptions): Promise<PostgresStores> {
  const schema = options.schema ?? 'helix';
  // Checked before connecting: a bad policy opens nothing.
  const retention = options.retention ?? {};
  const { pruneIntervalMs } = resolveRetention(retention);
  const owned = options.pool === undefined;
  const pool = options.pool ?? new pg.Pool({ connectionString: options.connectionString, max: options.maxConnections ?? 10 });
  // An idle connection that breaks (a server restart) is dropped by the pool; without a listener the
  // error event would crash the process. The next query opens a fresh connection.
  if (owned) pool.on('error', () => undefined);
  try {
    await migratePostgres(pool, { schema });
  } catch (error) {
    if (owned) await pool.end();
    throw error;
  }
  const stateStore = new PostgresStateStore(pool, { schema, retention });
  const streamManager = new PostgresStreamManager(pool, {
    schema,
    retention,
    ...(options.pollIntervalMs === undefined ? {} : { pollIntervalMs: options.pollIntervalMs }),
    ...(options.flushIntervalMs === undefined ? {} : { flushIntervalMs: options.flushIntervalMs }),
  });
  // A step's chunks ride in its commit statement (the committing run's), or go beside it (other runs').
  stateStore.sendChunksWithCommits(
    () => streamManager.flushQueued(),
    (runId) => streamManager.takeRider(runId),
  );
  let closing: Promise<void> | undefined;
  const prune = (now: number = Date.now()): Promise<PruneReport> => pruneAll([streamManager, stateStore], now);
  // A failed timed prune (a lost connection) is tried again at the next tick.
  const stopPruning = schedulePrune(() => (closing === undefined ? prune() : Promise.resolve()), pruneIntervalMs);
  return {
    stateStore,
    streamManager,
    usageStore: stateStore,
    pool,
    schema,
    prune,
    close: () =>
      (closing ??= (async () => {
        stopPruning();
        await streamManager.close();
        if (owned) await pool.end();
      })()),
  };
}
