// A stream's batch rows are keyed sk * 2^32 + last seq, computed in SQL. better-sqlite3 binds every JS number
// as a REAL, and REAL arithmetic rounds past 2^53, so the parameters are cast to INTEGER first (packing.ts).
import { describe, expect, it } from 'vitest';
import { useTempDatabases } from './__tests__/temp-databases.js';
import { handleOf } from './database.js';
import { openSqliteStores } from './open.js';

describe('SQLite stream keys past 2^53', () => {
  const temp = useTempDatabases('helix-sqlite-stream-keys-');

  it('a stream whose key puts its batch rows past 2^53 keeps every chunk apart and in order (its key is computed in SQL too)', async () => {
    const stores = openSqliteStores({ path: temp.path() });
    try {
      const db = handleOf(stores.database);
      db.prepare("INSERT INTO stream_owners (sk, stream_id, run_id, next_seq) VALUES (?, 'filler', 'r0', 0)").run(2 ** 30);
      const writer = await stores.streamManager.claim('big', 'r1');
      const chunk = (i: number) => ({ streamId: 'big', agentId: 's', agentType: 'agent', runId: 'r1', type: 'text_delta', stepIndex: 0, delta: `d${i}`, timestamp: i }) as const;
      // One transaction a chunk: neighbouring keys, which REAL arithmetic would round into one.
      for (let i = 0; i < 5; i++) expect(await writer.write(chunk(i))).toBe(true);
      const read: unknown[] = [];
      for await (const c of stores.streamManager.read('big', { follow: false })) read.push(c);
      expect(read).toEqual(Array.from({ length: 5 }, (_, i) => ({ ...chunk(i), seq: i })));
      const fromThree: unknown[] = [];
      for await (const c of stores.streamManager.read('big', { follow: false, fromSeq: 3 })) fromThree.push(c);
      expect(fromThree).toEqual(read.slice(3));
    } finally {
      stores.close();
    }
  });
});
