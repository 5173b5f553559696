// One throwaway cluster per test file: started in beforeAll, stopped in afterAll (also when tests fail;
// a killed worker's cluster is stopped by the watchdog of startTestPostgres). Each store gets its own
// schema, so tests in a file never see each other's rows and no second cluster is needed. Stores open on
// two long-lived pools ("this process" and "another process"), which saves a connection set-up per test.
import type { RetentionPolicy } from '@helix-agents/sdk/store';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { openPostgresStores, type PostgresStores } from '../index.js';
import { startTestPostgres, type TestPostgres } from '../testing/index.js';

/** Which of the file's two pools a store uses. */
export type PoolSide = 'first' | 'second';

/** The running cluster of this test file. */
export interface ClusterHandle {
  /** The cluster (available inside tests and hooks). */
  readonly postgres: TestPostgres;
  /** A fresh schema name. */
  schemaName(prefix?: string): string;
  /** Opens stores on a fresh schema (or on `schema`) on one of the file's pools. */
  open(schema?: string, options?: { readonly side?: PoolSide; readonly pollIntervalMs?: number; readonly retention?: RetentionPolicy }): Promise<PostgresStores>;
}

let counter = 0;

/** Registers the cluster of this test file. */
export function useTestPostgres(): ClusterHandle {
  let postgres: TestPostgres | undefined;
  const pools = new Map<PoolSide, pg.Pool>();
  const opened = new Set<PostgresStores>();
  beforeAll(async () => {
    postgres = await startTestPostgres();
  }, 120_000);
  afterAll(async () => {
    try {
      await Promise.all([...opened].map((s) => s.close()));
      await Promise.all([...pools.values()].map((p) => p.end()));
    } finally {
      await postgres?.stop();
    }
  }, 60_000);
  const pool = (side: PoolSide): pg.Pool => {
    let found = pools.get(side);
    if (!found) {
      found = new pg.Pool({ connectionString: handle.postgres.connectionString, max: 6 });
      found.on('error', () => undefined);
      pools.set(side, found);
    }
    return found;
  };
  const handle: ClusterHandle = {
    get postgres(): TestPostgres {
      if (!postgres) throw new Error('the test cluster is not running');
      return postgres;
    },
    schemaName: (prefix = 't') => `${prefix}_${process.pid}_${++counter}`,
    open: async (schema, options = {}) => {
      const stores = await openPostgresStores({
        pool: pool(options.side ?? 'first'),
        schema: schema ?? handle.schemaName(),
        ...(options.pollIntervalMs === undefined ? {} : { pollIntervalMs: options.pollIntervalMs }),
        ...(options.retention === undefined ? {} : { retention: options.retention }),
      });
      opened.add(stores);
      return {
        ...stores,
        close: async () => {
          opened.delete(stores);
          await stores.close();
        },
      };
    },
  };
  return handle;
}
