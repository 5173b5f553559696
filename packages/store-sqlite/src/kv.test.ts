import { runKVStoreConformance } from '@helix-agents/sdk/conformance';
import { describe, expect, it } from 'vitest';
import { useTempDatabases } from './__tests__/temp-databases.js';
import { SqliteDatabase } from './database.js';
import { SqliteKVStore, SQLITE_KV_SCHEMA_VERSION } from './kv.js';
import { openSqliteStores } from './open.js';

const temp = useTempDatabases('helix-kv-');

runKVStoreConformance({ name: 'SqliteKVStore', create: () => new SqliteKVStore(temp.open()) });

describe('SqliteKVStore durability', () => {
  it('keeps values across a close and re-open of the project database', async () => {
    const path = temp.path();
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
    const path = temp.path();
    const a = new SqliteKVStore(SqliteDatabase.open({ path }));
    const b = new SqliteKVStore(SqliteDatabase.open({ path }));
    await a.set('n', 'k', 'from a');
    expect(await b.get('n', 'k')).toBe('from a');
    a.database.close();
    b.database.close();
  });

  it('refuses a database whose kv tables a newer version wrote', async () => {
    const path = temp.path();
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
