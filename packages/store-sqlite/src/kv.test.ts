import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runKVStoreConformance } from '@helix-agents/sdk/conformance';
import type { KVStore } from '@helix-agents/sdk/hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteDatabase } from './database.js';
import { SqliteKVStore, SQLITE_KV_SCHEMA_VERSION } from './kv.js';
import { openSqliteStores } from './open.js';

const folders: string[] = [];
function tempPath(): string {
  const dir = mkdtempSync(join(tmpdir(), 'helix-kv-'));
  folders.push(dir);
  return join(dir, 'helix.db');
}
afterEach(() => {
  for (const dir of folders.splice(0)) rmSync(dir, { recursive: true, force: true });
});

runKVStoreConformance({
  name: 'SqliteKVStore',
  create: () => new SqliteKVStore(SqliteDatabase.open({ path: tempPath() })),
  destroy: (store: KVStore) => (store as SqliteKVStore).database.close(),
});

describe('SqliteKVStore durability', () => {
  it('keeps values across a close and re-open of the project database', async () => {
    const path = tempPath();
    const first = openSqliteStores({ path });
    const kv = new SqliteKVStore(first.database);
    await kv.set('agent/assistant', 'turns', 3);
    await kv.set('agent/assistant', 's1:last', { text: 'hello', tags: ['a'] });
    first.close();
    await expect(kv.get('agent/assistant', 'turns')).rejects.toMatchObject({ code: 'hook_store_closed' });

    const second = openSqliteStores({ path });
    const again = new SqliteKVStore(second.database);
    expect(await again.get('agent/assistant', 'turns')).toBe(3);
    expect(await again.get('agent/assistant', 's1:last')).toEqual({ text: 'hello', tags: ['a'] });
    expect(await again.list('agent/assistant')).toEqual(['s1:last', 'turns']);
    second.close();
  });

  it('two connections to one file see each other\'s writes', async () => {
    const path = tempPath();
    const a = new SqliteKVStore(SqliteDatabase.open({ path }));
    const b = new SqliteKVStore(SqliteDatabase.open({ path }));
    await a.set('n', 'k', 'from a');
    expect(await b.get('n', 'k')).toBe('from a');
    a.database.close();
    b.database.close();
  });

  it('refuses a database whose kv tables a newer version wrote', async () => {
    const path = tempPath();
    const db = SqliteDatabase.open({ path });
    new SqliteKVStore(db).database.close();
    const raw = new (await import('better-sqlite3')).default(path);
    raw.prepare('UPDATE helix_components SET version = ? WHERE component = ?').run(SQLITE_KV_SCHEMA_VERSION + 1, 'hook_kv');
    raw.close();
    const reopened = SqliteDatabase.open({ path });
    expect(() => new SqliteKVStore(reopened)).toThrow(expect.objectContaining({ code: 'state_schema_too_new' }));
    reopened.close();
  });
});
