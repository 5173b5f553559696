// One throwaway Postgres cluster and one DBOS worker for a test file (DBOS runs once per process): the
// helix stores get a fresh schema per test, DBOS keeps its workflows in its own database on the cluster.
import { openPostgresStores, type PostgresStores } from '@helix-agents/store-postgres';
import { startTestPostgres, type TestPostgres } from '@helix-agents/store-postgres/testing';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { launchDBOSWorker, type DBOSWorker } from '../index.js';

/** The cluster and worker of this test file. */
export interface DBOSTestHarness {
  readonly postgres: TestPostgres;
  readonly worker: DBOSWorker;
  /** The DBOS system database's URL. */
  readonly systemDatabaseUrl: string;
  /** Stores on a fresh schema (closed with the file). */
  open(schema?: string): Promise<PostgresStores>;
  /** A name unique in this process (executor names, schemas). */
  unique(prefix: string): string;
}

let counter = 0;

/** Starts Postgres and a DBOS worker for this file, and stops both after it. */
export function useDBOSHarness(executorId = `test-${process.pid}`): DBOSTestHarness {
  let postgres: TestPostgres | undefined;
  let worker: DBOSWorker | undefined;
  let pool: pg.Pool | undefined;
  const opened = new Set<PostgresStores>();
  beforeAll(async () => {
    postgres = await startTestPostgres();
    worker = await launchDBOSWorker({ systemDatabaseUrl: sysUrl(postgres), executorId, applicationVersion: 'test', logLevel: 'error' });
    pool = new pg.Pool({ connectionString: postgres.connectionString, max: 8 });
    pool.on('error', () => undefined);
  }, 120_000);
  afterAll(async () => {
    try {
      await worker?.shutdown();
      await Promise.all([...opened].map((s) => s.close()));
      await pool?.end();
    } finally {
      await postgres?.stop();
    }
  }, 60_000);
  const harness: DBOSTestHarness = {
    get postgres(): TestPostgres {
      if (!postgres) throw new Error('the test cluster is not running');
      return postgres;
    },
    get worker(): DBOSWorker {
      if (!worker) throw new Error('the DBOS worker is not running');
      return worker;
    },
    get systemDatabaseUrl(): string {
      return sysUrl(harness.postgres);
    },
    unique: (prefix) => `${prefix}_${process.pid}_${++counter}`,
    open: async (schema) => {
      if (!pool) throw new Error('the test cluster is not running');
      const stores = await openPostgresStores({ pool, schema: schema ?? harness.unique('s') });
      opened.add(stores);
      return stores;
    },
  };
  return harness;
}

function sysUrl(postgres: TestPostgres): string {
  return `postgres://postgres@127.0.0.1:${postgres.port}/dbos_sys`;
}
