// A step on Postgres: its chunks ride in its commit statement (no statement of their own), and the
// stream still holds every chunk of every step, in order, once the commit resolved.
import { JSAgentExecutor, silentLogger } from '@helix-agents/sdk';
import { createAddLoop } from '@helix-agents/sdk/testing';
import { describe, expect, it } from 'vitest';
import { useTestPostgres } from './__tests__/cluster.js';

const cluster = useTestPostgres();


describe('Postgres: a step\'s chunks ride in its commit statement', () => {
  it('each further step adds exactly one statement (the commit, its chunks appended by it), and the stream holds every chunk in order', async () => {
    const stores = await cluster.open();
    try {
      let statements = 0;
      let inFlight = 0;
      let overlapped = 0;
      const query = stores.pool.query.bind(stores.pool) as (...args: unknown[]) => Promise<unknown>;
      (stores.pool as unknown as { query: (...args: unknown[]) => Promise<unknown> }).query = async (...args: unknown[]) => {
        statements++;
        if (inFlight > 0) overlapped++;
        inFlight++;
        try {
          return await query(...args);
        } finally {
          inFlight--;
        }
      };
      const runOf = async (steps: number) => {
        const before = statements;
        const beforeOverlap = overlapped;
        const executor = new JSAgentExecutor(stores.stateStore, stores.streamManager, createAddLoop(steps).adapter, { logger: silentLogger });
        const handle = await executor.execute(createAddLoop(steps).agent, 'go', { usageStore: stores.usageStore });
        const result = await handle.result();
        expect(result.status).toBe('completed');
        return { statements: statements - before, overlapped: overlapped - beforeOverlap, sessionId: result.sessionId };
      };
      const short = await runOf(3);
      const long = await runOf(13);
      // Leases are renewed on a timer (not per step), so only per-step statements differ.
      expect((long.statements - short.statements) / 10).toBe(1);
      // Nothing else goes out while a step's commit is in flight.
      expect(long.overlapped - short.overlapped).toBe(0);
      const types: string[] = [];
      const seqs: number[] = [];
      for await (const chunk of stores.streamManager.read(long.sessionId, { follow: false })) {
        types.push(chunk.type);
        seqs.push(chunk.seq);
      }
      expect(seqs).toEqual(seqs.map((_, i) => i));
      expect(types.filter((t) => t === 'step_start')).toHaveLength(13);
      expect(types.filter((t) => t === 'tool_end')).toHaveLength(12);
      expect(types.at(-1)).toBe('end');
    } finally {
      await stores.close();
    }
  }, 120_000);
});
