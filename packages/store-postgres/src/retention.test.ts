// The shared retention suite on the real embedded Postgres (each test on a fresh schema), and the
// bounded-rows check of a long session.
import { JSAgentExecutor, silentLogger } from '@helix-agents/sdk';
import { runRetentionConformance } from '@helix-agents/sdk/conformance';
import { createAddLoop } from '@helix-agents/sdk/testing';
import { describe, expect, it } from 'vitest';
import { useTestPostgres } from './__tests__/cluster.js';
import type { PostgresStores } from './open.js';

const cluster = useTestPostgres();

runRetentionConformance({
  name: 'openPostgresStores (embedded Postgres)',
  create: (retention) => cluster.open(undefined, { retention, pollIntervalMs: 20 }),
  destroy: (stores) => (stores as PostgresStores).close(),
  timeoutMs: 120_000,
});

describe('Postgres retention: rows stay bounded', () => {
  it('over 100 runs of one session with keepCheckpoints 3 and chunkTtlMs 0, checkpoints, journal rows, chunks and committed-step rows stay at the same small counts', async () => {
    const stores = await cluster.open(undefined, { retention: { keepCheckpoints: 3, chunkTtlMs: 0 } });
    try {
      const count = async (table: string): Promise<number> => Number((await stores.pool.query(`SELECT count(*)::integer AS n FROM ${stores.schema}.${table}`)).rows[0].n);
      const loop = createAddLoop(3);
      const executor = new JSAgentExecutor(stores.stateStore, stores.streamManager, loop.adapter, { logger: silentLogger });
      const seen: { checkpoints: number; journal: number; chunks: number; steps: number }[] = [];
      for (let i = 0; i < 100; i++) {
        const handle = i === 0 ? await executor.execute(loop.agent, 'go', { sessionId: 'long' }) : await executor.send('long', 'go');
        expect((await handle.result()).status).toBe('completed');
        await stores.prune();
        if (i === 9 || i === 99) seen.push({ checkpoints: await count('checkpoints'), journal: await count('journal'), chunks: await count('chunks'), steps: await count('steps') });
      }
      // Only the current run's committed-step rows are left (the rest were pruned).
      expect(seen).toEqual([
        { checkpoints: 3, journal: 0, chunks: 0, steps: 1 },
        { checkpoints: 3, journal: 0, chunks: 0, steps: 1 },
      ]);
      expect((await executor.send('long', 'go').then((h) => h.result())).status).toBe('completed');
      expect((await stores.stateStore.loadSession('long'))?.messages.filter((m) => m.role === 'user')).toHaveLength(101);
    } finally {
      await stores.close();
    }
  }, 180_000);
});
