// Which B-trees a helix step's log pages belong to: counted, not timed. Run it with
//   node --conditions=helix-source --import tsx bench/wal-trees.ts [NORMAL|FULL] [CONCURRENT]
// (CONCURRENT runs at once, 1 by default: their commits share transactions, as group commit does).
// It prints, per step, the log frames (pages) each table or index of the file got, page 1 (the file
// header and the schema) and the pages no tree holds at the end (freed ones), beside the total that
// `walPagesPerStep` counts.
import { openSync, readSync, closeSync, statSync } from 'node:fs';
import BetterSqlite3 from 'better-sqlite3';
import { helixBench, sqliteStores } from './workloads.js';

/** The header of a log file, then per frame a 24-byte header (its page number first) and the page. */
const WAL_HEADER_BYTES = 32;
const FRAME_HEADER_BYTES = 24;

/** The page numbers of the frames in `[from, to)` of a log file with `pageSize` pages. */
function framePages(file: string, from: number, to: number, pageSize: number): number[] {
  const frame = FRAME_HEADER_BYTES + pageSize;
  const first = Math.max(0, Math.ceil((from - WAL_HEADER_BYTES) / frame));
  const pages: number[] = [];
  const fd = openSync(file, 'r');
  try {
    const header = Buffer.alloc(4);
    for (let offset = WAL_HEADER_BYTES + first * frame; offset + frame <= to; offset += frame) {
      readSync(fd, header, 0, 4, offset);
      pages.push(header.readUInt32BE(0));
    }
  } finally {
    closeSync(fd);
  }
  return pages;
}

/**
 * The log pages a helix step writes, by the B-tree that holds each page at the end (`page 1` for the file
 * header, `free` for pages no tree holds), over `runs` rounds of `concurrent` runs of `steps` steps at once
 * after a first round.
 */
export async function walPagesByTree(synchronous: 'NORMAL' | 'FULL', steps = 100, runs = 5, concurrent = 1): Promise<{ total: number; trees: Record<string, number> }> {
  const stores = sqliteStores(synchronous, undefined, 'inline');
  const path = stores.sqlite.database.path;
  try {
    const bench = helixBench(stores, steps);
    const round = (): Promise<number> => (concurrent === 1 ? bench.run() : bench.concurrent(concurrent));
    await round();
    // A reader holding a snapshot keeps checkpoints from copying frames back or restarting the log.
    const reader = new BetterSqlite3(path);
    reader.pragma('wal_checkpoint(TRUNCATE)');
    reader.exec('BEGIN');
    reader.prepare('SELECT count(*) FROM sessions').pluck().get();
    const before = statSync(`${path}-wal`).size;
    for (let i = 0; i < runs; i++) await round();
    const after = statSync(`${path}-wal`).size;
    reader.exec('COMMIT');
    reader.close();
    const look = new BetterSqlite3(path, { readonly: true });
    try {
      const pageSize = look.pragma('page_size', { simple: true }) as number;
      const owner = new Map<number, string>();
      for (const row of look.prepare('SELECT name, pageno FROM dbstat').all() as { name: string; pageno: number }[]) owner.set(row.pageno, row.name);
      owner.set(1, 'page 1');
      const trees: Record<string, number> = {};
      const pages = framePages(`${path}-wal`, before, after, pageSize);
      for (const page of pages) {
        const name = owner.get(page) ?? 'free';
        trees[name] = (trees[name] ?? 0) + 1 / (runs * steps * concurrent);
      }
      return { total: pages.length / (runs * steps * concurrent), trees };
    } finally {
      look.close();
    }
  } finally {
    stores.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const synchronous = process.argv[2] === 'FULL' ? 'FULL' : 'NORMAL';
  const concurrent = Number(process.argv[3] ?? '1');
  const { total, trees } = await walPagesByTree(synchronous, 100, 5, concurrent);
  const rounded = Object.fromEntries(Object.entries(trees).sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, Number(v.toFixed(3))]));
  console.log(JSON.stringify({ synchronous, concurrent, pagesPerStep: Number(total.toFixed(3)), trees: rounded }));
}
