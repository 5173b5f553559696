import { existsSync, statSync } from 'node:fs';
import { setImmediate as yieldNow } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { useTempDatabases } from './__tests__/temp-databases.js';
import { CHECKPOINT_HARD_LIMIT, CHECKPOINT_LOOK_EVERY, CHECKPOINT_WORKER_AFTER, restartLogPast } from './checkpointer.js';
import { handleOf, immediate, SqliteDatabase } from './database.js';

const BODY = 'x'.repeat(1000);

/** A table and a one-row write transaction on `database`'s connection, counted like the stores' writes. */
function writer(database: SqliteDatabase): () => void {
  const db = handleOf(database);
  db.exec('CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL)');
  const insert = db.prepare('INSERT INTO rows (body) VALUES (?)');
  const write = immediate(db, () => insert.run(BODY));
  return () => {
    write();
  };
}

/** Waits (yielding, up to 20 s) until `ready()` holds. */
async function until(ready: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function rowCount(path: string): number {
  const database = SqliteDatabase.open({ path, checkpoint: 'inline' });
  try {
    return handleOf(database).prepare('SELECT count(*) FROM rows').pluck().get() as number;
  } finally {
    database.close();
  }
}

describe('WAL checkpoints in a background thread', () => {
  const temp = useTempDatabases('helix-sqlite-checkpoint-');

  it('after its first write transactions a file database copies its log in a worker thread: the connection no longer checkpoints inline', async () => {
    const path = temp.path();
    const database = SqliteDatabase.open({ path });
    expect(database.checkpoint).toBe('background');
    const write = writer(database);
    for (let i = 0; i < CHECKPOINT_WORKER_AFTER - 1; i++) write();
    expect(database.checkpointsInBackground).toBe(false);
    expect(handleOf(database).pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    write();
    await until(() => database.checkpointsInBackground, 'the checkpoint thread');
    expect(handleOf(database).pragma('wal_autocheckpoint', { simple: true })).toBe(0);
    // With the connection's own checkpoint off, only the thread moves pages from the log into the file.
    const before = statSync(path).size;
    for (let i = 0; i < 400; i++) {
      write();
      await yieldNow();
    }
    await until(() => statSync(path).size >= before + 400 * 1000, 'the rows to reach the database file');
    database.close();
  });

  it("checkpoint: 'inline' keeps SQLite's automatic checkpoint and starts no thread; :memory: has no log to checkpoint", async () => {
    const database = SqliteDatabase.open({ path: temp.path(), checkpoint: 'inline' });
    const write = writer(database);
    for (let i = 0; i < CHECKPOINT_WORKER_AFTER + 50; i++) write();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(database.checkpointsInBackground).toBe(false);
    expect(handleOf(database).pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    database.close();
    const memory = SqliteDatabase.open({ path: ':memory:' });
    expect(memory.checkpoint).toBe('inline');
    memory.close();
  });

  it('close stops the thread, and the file holds every committed row (the last connection folds the log in)', async () => {
    const path = temp.path();
    const database = SqliteDatabase.open({ path });
    const write = writer(database);
    const total = CHECKPOINT_WORKER_AFTER + 1_000;
    for (let i = 0; i < total; i++) {
      write();
      if (i % 16 === 0) await yieldNow();
    }
    await until(() => database.checkpointsInBackground, 'the checkpoint thread');
    database.close();
    expect(database.checkpointsInBackground).toBe(false);
    // The thread closes its connection after the database's; the last one to close removes the log.
    await until(() => !existsSync(`${path}-wal`), 'the log to be folded in at close');
    expect(rowCount(path)).toBe(total);
  });

  it('the log stays bounded under commits with no pause between them: never past the hard limit plus the pages of one look of commits', { timeout: 60_000 }, async () => {
    const path = temp.path();
    const database = SqliteDatabase.open({ path });
    const write = writer(database);
    for (let i = 0; i < CHECKPOINT_WORKER_AFTER; i++) write();
    await until(() => database.checkpointsInBackground, 'the checkpoint thread');
    // 40,000 one-KB rows are about 44,000 pages of log (180 MB) if it never started again from its beginning.
    // The bound holds however loaded the machine (the connection restarts the log itself past the hard
    // limit), so the file is measured after every commit; a commit of one such row writes at most 3 pages
    // (a leaf, and the two of a split).
    const rows = 40_000;
    let largest = 0;
    for (let i = 0; i < rows; i++) {
      write();
      if (i % 8 === 0) await yieldNow();
      largest = Math.max(largest, statSync(`${path}-wal`).size);
    }
    expect(largest).toBeLessThanOrEqual(32 + (CHECKPOINT_HARD_LIMIT + 3 * CHECKPOINT_LOOK_EVERY) * (4096 + 24));
    database.close();
    expect(rowCount(path)).toBe(rows + CHECKPOINT_WORKER_AFTER);
  });

  it('past the hard limit the committing connection restarts the log itself: the next commit writes from its beginning', () => {
    const path = temp.path();
    const database = SqliteDatabase.open({ path, checkpoint: 'inline' });
    const db = handleOf(database);
    db.pragma('wal_autocheckpoint = 0');
    const write = writer(database);
    for (let i = 0; i < 300; i++) write();
    const frames = (): number => (db.pragma('wal_checkpoint(PASSIVE)') as { log: number }[])[0]!.log;
    expect(restartLogPast(db, path, 1_000)).toBe('below');
    expect(frames()).toBeGreaterThan(250);
    expect(restartLogPast(db, path, 100)).toBe('restarted');
    write();
    // Restarted: the log's frames are the one commit's, not 300 commits' and one more.
    expect(frames()).toBeLessThan(5);
    expect(rowCount(path)).toBe(301);
    database.close();
  });
});
