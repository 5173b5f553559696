import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JSAgentExecutor, silentLogger } from '@helix-agents/sdk';
import { runRetentionConformance } from '@helix-agents/sdk/conformance';
import { createAddLoop } from '@helix-agents/sdk/testing';
import { describe, expect, it } from 'vitest';
import { handleOf, SqliteDatabase } from './database.js';
import { SqliteUsageStore } from './usage-store.js';
import { openSqliteStores, type SqliteStores } from './open.js';

const opened = new Map<unknown, { stores: SqliteStores; dir: string }>();

runRetentionConformance({
  name: 'openSqliteStores (a real database file)',
  create: (retention) => {
    const dir = mkdtempSync(join(tmpdir(), 'helix-retention-'));
    let stores: SqliteStores;
    try {
      stores = openSqliteStores({ path: join(dir, 'helix.db'), retention, pollIntervalMs: 5 });
    } catch (error) {
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
    opened.set(stores.stateStore, { stores, dir });
    return stores;
  },
  destroy: (stores) => {
    const found = opened.get(stores.stateStore);
    opened.delete(stores.stateStore);
    found?.stores.close();
    if (found) rmSync(found.dir, { recursive: true, force: true });
  },
});

describe('SQLite retention: the file stays bounded', () => {
  it('over 200 runs of one session with keepCheckpoints 3 and chunkTtlMs 0, checkpoints, journal rows and stream chunks stay at the same small counts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'helix-bounded-'));
    const stores = openSqliteStores({ path: join(dir, 'helix.db'), retention: { keepCheckpoints: 3, chunkTtlMs: 0 } });
    try {
      const db = handleOf(stores.database);
      const count = (sql: string): number => db.prepare(sql).pluck().get() as number;
      const counts = () => ({
        checkpoints: count('SELECT count(*) FROM commits WHERE checkpoint IS NOT NULL'),
        journal: count('SELECT count(*) FROM journal'),
        chunks: count('SELECT coalesce(sum(key % 4294967296 - first_seq + 1), 0) FROM stream_batches'),
        // Rows holding messages are the conversation, which grows; the others are bounded.
        commits: count('SELECT count(*) FROM commits WHERE messages IS NULL'),
      });
      const loop = createAddLoop(3);
      const executor = new JSAgentExecutor(stores.stateStore, stores.streamManager, loop.adapter, { logger: silentLogger });
      const seen: ReturnType<typeof counts>[] = [];
      for (let i = 0; i < 200; i++) {
        const handle = i === 0 ? await executor.execute(loop.agent, 'go', { sessionId: 'long' }) : await executor.send('long', 'go');
        expect((await handle.result()).status).toBe('completed');
        await stores.prune();
        if (i === 9 || i === 99 || i === 199) seen.push(counts());
      }
      // Only the newest 3 checkpoints, no journal, no chunk of a finished run (every run finished), and only
      // the commit rows something reads (the head, genesis, the checkpoints and the rows holding their state).
      expect(seen[0]).toMatchObject({ checkpoints: 3, journal: 0, chunks: 0 });
      expect(seen[0]!.commits).toBeLessThanOrEqual(3 + 2 + 3);
      expect(seen).toEqual([seen[0], seen[0], seen[0]]);
      // The session is whole: its conversation and its last run's stream start where they should.
      expect((await stores.stateStore.loadSession('long'))?.messages.filter((m) => m.role === 'user')).toHaveLength(200);
      const next = await (await executor.send('long', 'go')).result();
      expect(next.status).toBe('completed');
      const chunks: number[] = [];
      for await (const c of stores.streamManager.read('long', { follow: false })) chunks.push(c.seq);
      // Only the last run's chunks, at the offsets that follow 200 runs of at least 3 chunks each.
      expect(chunks.length).toBeGreaterThanOrEqual(3);
      expect(chunks[0]).toBeGreaterThanOrEqual(200 * 3);
      expect(chunks).toEqual(chunks.map((_, i) => chunks[0]! + i));
    } finally {
      stores.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('pruned commit rows leave every kept checkpoint, genesis and the usage rollup as they were', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'helix-ledger-'));
    const stores = openSqliteStores({ path: join(dir, 'helix.db'), retention: { keepCheckpoints: 3 } });
    try {
      const loop = createAddLoop(4);
      const executor = new JSAgentExecutor(stores.stateStore, stores.streamManager, loop.adapter, { logger: silentLogger });
      for (let i = 0; i < 12; i++) {
        const handle = i === 0 ? await executor.execute(loop.agent, 'go', { sessionId: 'ledger', usageStore: stores.usageStore }) : await executor.send('ledger', `go ${i}`, { usageStore: stores.usageStore });
        await handle.result();
      }
      const kept = await executor.listCheckpoints('ledger');
      const before = await Promise.all(kept.map((c) => stores.stateStore.loadCheckpoint('ledger', c.checkpointId)));
      const rollup = await stores.stateStore.getRollup({ sessionId: 'ledger' });
      const session = await stores.stateStore.loadSession('ledger');
      const report = await stores.prune();
      expect(report.records).toBeGreaterThan(0);
      expect(await executor.listCheckpoints('ledger')).toEqual(kept);
      expect(await Promise.all(kept.map((c) => stores.stateStore.loadCheckpoint('ledger', c.checkpointId)))).toEqual(before);
      expect(await stores.stateStore.getRollup({ sessionId: 'ledger' })).toEqual(rollup);
      expect(await stores.stateStore.loadSession('ledger')).toEqual(session);
      // A second prune finds nothing more; the session goes on, rewinds to its oldest kept checkpoint and to genesis.
      expect((await stores.prune()).records).toBe(0);
      expect((await (await executor.send('ledger', 'again')).result()).status).toBe('completed');
      const oldest = (await executor.listCheckpoints('ledger'))[0]!;
      const rewound = await (await executor.resume('ledger', { mode: 'from_checkpoint', checkpointId: oldest.checkpointId })).result();
      expect(rewound.status).toBe('completed');
      await stores.prune();
      const restarted = await (await executor.resume('ledger', { mode: 'from_checkpoint', checkpointId: 'genesis' })).result();
      expect(restarted.status).toBe('completed');
      // Genesis: the conversation started again from nothing (no user row of the twelve turns is left).
      expect((await stores.stateStore.loadSession('ledger'))?.messages.some((m) => m.role === 'user' && m.content === 'go 1')).toBe(false);
    } finally {
      stores.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('the same 200 runs without a policy keep every checkpoint and chunk (what the policy saves)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'helix-unbounded-'));
    const stores = openSqliteStores({ path: join(dir, 'helix.db') });
    try {
      const db = handleOf(stores.database);
      const loop = createAddLoop(3);
      const executor = new JSAgentExecutor(stores.stateStore, stores.streamManager, loop.adapter, { logger: silentLogger });
      for (let i = 0; i < 200; i++) {
        const handle = i === 0 ? await executor.execute(loop.agent, 'go', { sessionId: 'long' }) : await executor.send('long', 'go');
        await handle.result();
        await stores.prune();
      }
      expect(db.prepare('SELECT count(*) FROM commits WHERE checkpoint IS NOT NULL').pluck().get()).toBeGreaterThanOrEqual(200 * 2);
      expect(db.prepare('SELECT sum(key % 4294967296 - first_seq + 1) FROM stream_batches').pluck().get()).toBeGreaterThanOrEqual(200 * 3);
    } finally {
      stores.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('SQLite: deleting a session cleans a separate SqliteUsageStore', () => {
  it('JSAgentExecutor.deleteSession drops the session\'s rows from a SqliteUsageStore on another database, and keeps other sessions\' rows', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'helix-usage-'));
    const stores = openSqliteStores({ path: join(dir, 'helix.db') });
    const usageDatabase = SqliteDatabase.open({ path: join(dir, 'usage.db') });
    try {
      const usage = new SqliteUsageStore(usageDatabase);
      const rows = (sessionId: string): number => handleOf(usageDatabase).prepare('SELECT count(*) FROM usage WHERE session_id = ?').pluck().get(sessionId) as number;
      const loop = createAddLoop(3);
      const executor = new JSAgentExecutor(stores.stateStore, stores.streamManager, loop.adapter, { logger: silentLogger });
      for (const sessionId of ['gone', 'stays']) expect((await (await executor.execute(loop.agent, 'go', { sessionId, usageStore: usage })).result()).status).toBe('completed');
      expect(rows('gone')).toBeGreaterThan(0);
      const kept = rows('stays');
      expect(kept).toBeGreaterThan(0);
      expect(await executor.deleteSession('gone')).toBe(true);
      expect(rows('gone')).toBe(0);
      expect((await usage.getRollup({ sessionId: 'gone' })).modelCalls).toBe(0);
      expect(rows('stays')).toBe(kept);
      expect(await usage.deleteSession('gone')).toBe(false);
    } finally {
      stores.close();
      usageDatabase.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
