import { once } from 'node:events';
import { statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { setImmediate as yieldNow } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { useTempDatabases } from './__tests__/temp-databases.js';
import { BackgroundCheckpointer, CHECKPOINT_ROUND_MS, type CheckpointLimits, restartLogPast } from './checkpointer.js';

// These tests drive the checkpointer on a plain connection with small limits, so that a few megabytes of log
// show what the defaults do with tens: the worker's restart, the connection's hard limit, a pinning reader.

const driver = createRequire(import.meta.url).resolve('better-sqlite3');

/** The size of the log file holding `pages` frames (4 KB pages). */
const logBytes = (pages: number): number => 32 + pages * (4096 + 24);

/** The most pages one commit of these tests writes: a leaf, an overflow page for the 6 KB rows, and a split. */
const PAGES_PER_COMMIT = 4;

interface Setup {
  readonly db: BetterSqlite3.Database;
  readonly path: string;
  readonly checkpointer: BackgroundCheckpointer;
  readonly warnings: string[];
  /** One committed write transaction of a `bytes`-byte row, holding the write lock `holdMs` before it commits. */
  write(bytes?: number, holdMs?: number): void;
  /** The log file's size now. */
  walSize(): number;
}

describe('the WAL stays bounded under a writer that never pauses', () => {
  const temp = useTempDatabases('helix-sqlite-walbound-');
  const opened: { db: BetterSqlite3.Database; checkpointer: BackgroundCheckpointer }[] = [];
  afterEach(() => {
    for (const { db, checkpointer } of opened.splice(0)) {
      checkpointer.stop();
      db.close();
    }
  });

  function setup(limits: Partial<CheckpointLimits>): Setup {
    const path = temp.path();
    const db = new BetterSqlite3(path, { timeout: 5_000 });
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.exec('CREATE TABLE rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL)');
    const warnings: string[] = [];
    const checkpointer = new BackgroundCheckpointer(db, path, (message) => warnings.push(message), { startAfter: 8, ...limits });
    opened.push({ db, checkpointer });
    const insert = db.prepare('INSERT INTO rows (body) VALUES (?)');
    const transaction = db.transaction((bytes: number, holdMs: number) => {
      insert.run('x'.repeat(bytes));
      // Busy inside the transaction: the write lock is free only for the few microseconds between commits.
      const end = performance.now() + holdMs;
      while (performance.now() < end);
    });
    return {
      db,
      path,
      checkpointer,
      warnings,
      write: (bytes = 1_000, holdMs = 0) => {
        transaction.immediate(bytes, holdMs);
        checkpointer.afterWrite();
      },
      walSize: () => statSync(`${path}-wal`).size,
    };
  }

  async function started(s: Setup): Promise<void> {
    for (let i = 0; i < 8; i++) s.write();
    const deadline = Date.now() + 20_000;
    while (!s.checkpointer.running) {
      if (Date.now() > deadline) throw new Error('the checkpoint thread did not start');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  it('the worker paces its rounds: under commits with no pause it runs at most one passive checkpoint every CHECKPOINT_ROUND_MS, and each copies what was committed before it (the file grows)', { timeout: 60_000 }, async () => {
    // Back-to-back rounds fsynced the log and the file over and over beside every commit's own fsync.
    const s = setup({ restartAbove: 1_000_000, hardLimit: 3_000_000, lookEvery: 1_000_000 });
    await started(s);
    const fileBefore = statSync(s.path).size;
    const roundsBefore = s.checkpointer.counts.workerRounds;
    const from = performance.now();
    let written = 0;
    while (performance.now() - from < 600) {
      for (let i = 0; i < 10; i++) s.write();
      written += 10;
      await yieldNow();
    }
    const elapsed = performance.now() - from;
    const rounds = s.checkpointer.counts.workerRounds - roundsBefore;
    expect(written).toBeGreaterThan(100);
    // One round may have begun just before the window and one may end just after it.
    expect(rounds).toBeLessThanOrEqual(Math.ceil(elapsed / CHECKPOINT_ROUND_MS) + 2);
    const deadline = Date.now() + 20_000;
    while (statSync(s.path).size < fileBefore + written * 1_000) {
      if (Date.now() > deadline) throw new Error('the rows did not reach the database file');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(s.checkpointer.counts.workerRounds).toBeGreaterThan(roundsBefore);
  });

  it("the connection's restart says 'locked' and restarts nothing while another connection holds the checkpoint lock (SQLite answers with a busy row, not an error)", async () => {
    // No worker here: the one checkpoint besides the connection's is the other connection's below.
    const s = setup({ startAfter: 1_000_000_000 });
    s.db.pragma('wal_autocheckpoint = 0');
    for (let i = 0; i < 300; i++) s.write();
    // A reader of the 300-row snapshot, then 50 commits it does not see.
    const reader = new BetterSqlite3(s.path);
    reader.exec('BEGIN');
    expect(reader.prepare('SELECT count(*) FROM rows').pluck().get()).toBe(300);
    for (let i = 0; i < 50; i++) s.write();
    // Another connection's restarting checkpoint takes the checkpoint lock and the write lock, and waits for the reader.
    const holder = new Worker(
      `const { parentPort, workerData } = require('node:worker_threads');
       const db = new (require(workerData.driver))(workerData.path, { timeout: 20000 });
       parentPort.postMessage(db.pragma('wal_checkpoint(RESTART)')[0]);
       db.close();`,
      { eval: true, workerData: { driver, path: s.path } },
    );
    const finished = once(holder, 'message') as Promise<[{ busy: number }]>;
    try {
      s.db.pragma('busy_timeout = 0');
      const holdsTheWriteLock = (): boolean => {
        try {
          s.db.exec('BEGIN IMMEDIATE; ROLLBACK');
          return false;
        } catch {
          return true;
        }
      };
      const deadline = Date.now() + 10_000;
      while (!holdsTheWriteLock()) {
        if (Date.now() > deadline) throw new Error('the other checkpoint did not start');
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      expect(restartLogPast(s.db, s.path, 100)).toBe('locked');
    } finally {
      reader.exec('COMMIT');
      reader.close();
    }
    const [result] = await finished;
    expect(result.busy).toBe(0);
    await holder.terminate();
    // With the reader gone the other connection's restart completed: the next commit writes the log from its beginning.
    s.db.pragma('busy_timeout = 5000');
    s.write();
    expect((s.db.pragma('wal_checkpoint(PASSIVE)') as { log: number }[])[0]!.log).toBeLessThan(5);
  });

  it('a writer that holds the write lock all but microseconds between commits: the worker asks it to pause after a commit and restarts the log, which stays under the hard limit plus one look of commits', { timeout: 60_000 }, async () => {
    const limits = { restartAbove: 200, hardLimit: 600, lookEvery: 8 };
    const s = setup(limits);
    await started(s);
    let largest = 0;
    // About 2.2 pages a commit: some 1,300 pages, six times the worker's threshold.
    for (let i = 0; i < 600; i++) {
      s.write(6_000, 2);
      largest = Math.max(largest, s.walSize());
      if (i % 50 === 0) await yieldNow();
    }
    const counts = s.checkpointer.counts;
    expect(counts.workerRestarts).toBeGreaterThanOrEqual(2);
    expect(counts.pauses).toBeGreaterThanOrEqual(1);
    expect(largest).toBeLessThanOrEqual(logBytes(limits.hardLimit + limits.lookEvery * PAGES_PER_COMMIT));
    expect(s.warnings).toEqual([]);
  });

  it('a worker that never restarts the log (it fell behind): past the hard limit the connection waits for the end of its round and restarts the log itself, at every look', { timeout: 60_000 }, async () => {
    const limits = { restartAbove: 1_000_000_000, hardLimit: 300, lookEvery: 8 };
    const s = setup(limits);
    await started(s);
    let largest = 0;
    // About 3,000 pages: ten times the hard limit, written with no pause but a yield every 8 commits.
    for (let i = 0; i < 3_000; i++) {
      s.write();
      largest = Math.max(largest, s.walSize());
      if (i % 8 === 0) await yieldNow();
    }
    const counts = s.checkpointer.counts;
    expect(counts.workerRestarts).toBe(0);
    expect(counts.hardLimitRestarted).toBeGreaterThanOrEqual(5);
    expect(counts.hardLimitRestarted).toBe(counts.hardLimitRestarts);
    expect(largest).toBeLessThanOrEqual(logBytes(limits.hardLimit + limits.lookEvery * PAGES_PER_COMMIT));
    expect(s.warnings).toEqual([]);
  });

  it('a reader holding an old snapshot: the log grows (SQLite cannot restart a log in use), the writer is not paused for it, one warning; once the reader ends the log restarts and its file shrinks back to the hard limit', { timeout: 60_000 }, async () => {
    const limits = { restartAbove: 100, hardLimit: 300, lookEvery: 8 };
    const s = setup(limits);
    await started(s);
    const reader = new BetterSqlite3(s.path);
    try {
      reader.exec('BEGIN');
      reader.prepare('SELECT count(*) FROM rows').pluck().get();
      const before = s.checkpointer.counts;
      for (let i = 0; i < 1_000; i++) {
        s.write();
        if (i % 8 === 0) await yieldNow();
      }
      expect(s.walSize()).toBeGreaterThan(logBytes(900));
      const pinned = s.checkpointer.counts;
      expect(pinned.workerRestarts).toBe(before.workerRestarts);
      expect(pinned.pauses).toBe(before.pauses);
      expect(pinned.hardLimitRestarted).toBe(before.hardLimitRestarted);
      expect(s.warnings.filter((w) => w.includes('could not start again'))).toHaveLength(1);
    } finally {
      reader.exec('COMMIT');
      reader.close();
    }
    const deadline = Date.now() + 20_000;
    while (s.walSize() > logBytes(limits.hardLimit)) {
      if (Date.now() > deadline) throw new Error('the log did not restart after the reader ended');
      s.write();
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    const after = s.checkpointer.counts;
    expect(after.workerRestarts + after.hardLimitRestarted).toBeGreaterThan(0);
  });
});
