import { runFileStoreConformance } from '@helix-agents/sdk/conformance';
import { describe, expect, it } from 'vitest';
import { useTempDatabases } from './__tests__/temp-databases.js';
import { SqliteFileStore } from './files.js';
import { SqliteKVStore } from './kv.js';
import { openSqliteStores } from './open.js';

const temp = useTempDatabases('helix-files-');

const text = (value: string) => new TextEncoder().encode(value);
const decode = (value: Uint8Array | undefined) => (value === undefined ? undefined : new TextDecoder().decode(value));

runFileStoreConformance({ name: 'SqliteFileStore', create: () => new SqliteFileStore(temp.open()) });

describe('SqliteFileStore durability', () => {
  it('keeps files, appends and metadata across a close and re-open, beside the kv and core tables', async () => {
    const path = temp.path();
    const first = openSqliteStores({ path });
    const files = new SqliteFileStore(first.database);
    const kv = new SqliteKVStore(first.database);
    await files.write('session/a/s1', 'journal.md', text('# Journal\n'), { owner: 'memory' });
    for (let i = 0; i < 70; i++) await files.append('session/a/s1', 'journal.md', text(`- turn ${i}\n`));
    await files.write('deployment/a', 'index.md', text('s1\n'));
    await kv.set('agent/a', 'k', true);
    const before = await files.read('session/a/s1', 'journal.md');
    first.close();
    await expect(files.read('session/a/s1', 'journal.md')).rejects.toMatchObject({ code: 'hook_store_closed' });

    const second = openSqliteStores({ path });
    const again = new SqliteFileStore(second.database);
    const after = await again.read('session/a/s1', 'journal.md');
    expect(decode(after?.data)).toBe(decode(before?.data));
    expect(decode(after?.data)).toMatch(/^# Journal\n- turn 0\n[\s\S]*- turn 69\n$/);
    expect(after?.info).toEqual(before?.info);
    expect(after?.info.metadata).toEqual({ owner: 'memory' });
    expect((await again.list('deployment/a')).map((f) => [f.path, f.size])).toEqual([['index.md', 3]]);
    expect(await new SqliteKVStore(second.database).get('agent/a', 'k')).toBe(true);
    second.close();
  });
});
