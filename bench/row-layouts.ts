// How many log pages a row costs on a WAL database under two layouts of a per-session history table, counted,
// not timed: `append` (a rowid table appended at the end, found per session through a (sid, version) index: how
// helix's `commits` table is laid out) and `clustered` (the rowid is sid * 2^32 + version, no index: how its
// `stream_batches` table is laid out). One session, or many taking turns, each row its own transaction or
// a round's rows in one (as group commit does), for rows of about a helix step's commits row with its chunks
// apart (about 0.7 KB each: the commits row, the chunk batch) and together (1.4 KB). docs/performance.md reads the figures.
// Run: npm run bench:row-layouts
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';

/** A table layout the script measures. */
export type RowLayout = 'append' | 'clustered';

/** The log bytes of one frame: a 4 KB page and its 24-byte header. */
const FRAME_BYTES = 4096 + 24;

/**
 * Log pages a row costs, over `rounds` rounds in which each of `sessions` sessions appends one row of about
 * `rowBytes` bytes, `perTransaction` rows to a transaction, after 20 rows of each session to start from.
 */
export function pagesPerRow(layout: RowLayout, sessions: number, perTransaction: number, rowBytes: number, rounds = 50): number {
  const dir = mkdtempSync(join(tmpdir(), 'helix-layout-'));
  const path = join(dir, 'rows.db');
  const db = new BetterSqlite3(path);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('wal_autocheckpoint = 0');
    db.exec('CREATE TABLE rows (id INTEGER PRIMARY KEY, sid INTEGER NOT NULL, version INTEGER NOT NULL, body TEXT NOT NULL)');
    if (layout === 'append') db.exec('CREATE UNIQUE INDEX rows_by_session ON rows (sid, version)');
    const insert =
      layout === 'append'
        ? db.prepare<[number, number, string]>('INSERT INTO rows (sid, version, body) VALUES (?, ?, ?)')
        : db.prepare<[number, number, number, number, string]>('INSERT INTO rows (id, sid, version, body) VALUES (CAST(? AS INTEGER) * 4294967296 + CAST(? AS INTEGER), ?, ?, ?)');
    // Rows of a spread of sizes around rowBytes, the same spread for both layouts.
    let seed = 7;
    const body = (): string => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return 'x'.repeat(rowBytes - 100 + (seed % 200));
    };
    const put = (sid: number, version: number): void => {
      if (layout === 'append') (insert as BetterSqlite3.Statement<[number, number, string]>).run(sid, version, body());
      else (insert as BetterSqlite3.Statement<[number, number, number, number, string]>).run(sid, version, sid, version, body());
    };
    const write = db.transaction((rows: readonly (readonly [number, number])[]) => {
      for (const [sid, version] of rows) put(sid, version);
    });
    for (let version = 1; version <= 20; version++) for (let sid = 1; sid <= sessions; sid++) put(sid, version);
    db.pragma('wal_checkpoint(TRUNCATE)');
    // A reader on the snapshot before the counted rows keeps any checkpoint from copying a frame back.
    const reader = new BetterSqlite3(path);
    reader.exec('BEGIN');
    reader.prepare('SELECT count(*) FROM rows').pluck().get();
    const before = statSync(`${path}-wal`).size;
    let batch: [number, number][] = [];
    for (let version = 21; version < 21 + rounds; version++) {
      for (let sid = 1; sid <= sessions; sid++) {
        batch.push([sid, version]);
        if (batch.length === perTransaction) {
          write(batch);
          batch = [];
        }
      }
    }
    if (batch.length > 0) write(batch);
    const pages = (statSync(`${path}-wal`).size - before) / FRAME_BYTES / (rounds * sessions);
    reader.exec('COMMIT');
    reader.close();
    return pages;
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const shapes: readonly (readonly [sessions: number, perTransaction: number])[] = [
    [1, 1],
    [10, 1],
    [10, 10],
    [100, 1],
    [100, 100],
  ];
  for (const rowBytes of [700, 1_400]) {
    for (const [sessions, perTransaction] of shapes) {
      const append = pagesPerRow('append', sessions, perTransaction, rowBytes);
      const clustered = pagesPerRow('clustered', sessions, perTransaction, rowBytes);
      console.log(`rows of ${rowBytes} B, ${sessions} session(s), ${perTransaction} row(s) a transaction: append + index ${append.toFixed(2)} pages a row, clustered ${clustered.toFixed(2)}`);
    }
  }
}
