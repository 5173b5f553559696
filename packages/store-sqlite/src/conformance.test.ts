import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runStateStoreConformance, runStreamManagerConformance, runUsageStoreConformance } from '@helix-agents/sdk/conformance';
import type { StreamManager, UsageStore } from '@helix-agents/sdk';
import type { StateStore } from '@helix-agents/sdk/store';
import { SqliteDatabase } from './database.js';
import { SqliteStateStore } from './state-store.js';
import { SqliteStreamManager } from './stream-manager.js';
import { SqliteUsageStore } from './usage-store.js';

/** Each store gets a fresh temporary folder with its database file; destroying it removes the folder. */
function tempDatabase(): SqliteDatabase {
  const dir = mkdtempSync(join(tmpdir(), 'helix-sqlite-'));
  return SqliteDatabase.open({ path: join(dir, 'helix.db') });
}

function drop(database: SqliteDatabase): void {
  database.close();
  rmSync(join(database.path, '..'), { recursive: true, force: true });
}

function databaseOf(store: StateStore | StreamManager | UsageStore): SqliteDatabase {
  return (store as unknown as { database: SqliteDatabase }).database;
}

runStateStoreConformance({
  name: 'SqliteStateStore',
  create: () => new SqliteStateStore(tempDatabase()),
  destroy: (store) => drop(databaseOf(store)),
  // Another connection on the same file.
  createSecond: (first) => new SqliteStateStore(SqliteDatabase.open({ path: databaseOf(first).path })),
  destroySecond: (second) => databaseOf(second).close(),
  openNewerSchema: async (first) => {
    const path = databaseOf(first).path;
    const other = SqliteDatabase.open({ path });
    other.close();
    const raw = new (await import('better-sqlite3')).default(path);
    raw.prepare('INSERT INTO helix_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(10_000, 'from the future', Date.now());
    raw.close();
    return new SqliteStateStore(SqliteDatabase.open({ path }));
  },
});

runStreamManagerConformance({
  name: 'SqliteStreamManager',
  create: () => new SqliteStreamManager(tempDatabase(), { pollIntervalMs: 5 }),
  destroy: (manager) => drop(databaseOf(manager)),
  createSecond: (first) => new SqliteStreamManager(SqliteDatabase.open({ path: databaseOf(first).path }), { pollIntervalMs: 5 }),
  destroySecond: (second) => databaseOf(second).close(),
});

runUsageStoreConformance({
  name: 'SqliteUsageStore',
  create: () => new SqliteUsageStore(tempDatabase()),
  destroy: (store) => drop(databaseOf(store)),
});

runUsageStoreConformance({
  name: 'SqliteStateStore as a UsageStore',
  create: () => new SqliteStateStore(tempDatabase()),
  destroy: (store) => drop(databaseOf(store)),
});
