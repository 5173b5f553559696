// PostgresKVStore creates its schema and table on first use. Several processes (here: pools, each its own
// sessions) opening one store at once, and a migration of the same schema at the same moment, must all
// succeed: Postgres's CREATE ... IF NOT EXISTS alone fails for the later of two concurrent creators.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { migratePostgres, PostgresKVStore } from './index.js';
import { useTestPostgres } from './__tests__/cluster.js';

const cluster = useTestPostgres();
const OPENERS = 6;
const ROUNDS = 6;

describe('PostgresKVStore setup', () => {
  it('stores opened at once by several processes on a new schema, beside a migration of it, all set up: every first write lands and each reads every other\'s', async () => {
    const pools = Array.from({ length: OPENERS }, () => new pg.Pool({ connectionString: cluster.postgres.connectionString, max: 1 }));
    try {
      for (let round = 0; round < ROUNDS; round++) {
        const schema = cluster.schemaName('kv_setup');
        const stores = pools.map((pool) => new PostgresKVStore(pool, { schema }));
        const migration = migratePostgres(pools[0]!, { schema });
        const writes = await Promise.allSettled(stores.map((kv, i) => kv.set('ns', `k${i}`, { by: i })));
        expect(writes.map((w) => (w.status === 'rejected' ? String(w.reason) : 'ok'))).toEqual(stores.map(() => 'ok'));
        expect((await migration).to).toBeGreaterThan(0);
        for (const kv of stores) expect(await kv.list('ns', 'k')).toEqual(stores.map((_, i) => `k${i}`));
        expect(await stores[0]!.get('ns', `k${OPENERS - 1}`)).toEqual({ by: OPENERS - 1 });
      }
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
    }
  });
});
