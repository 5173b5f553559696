// What a durable SQLite step's time is made of, beside the raw row commit it is compared with, in one process
// (issue 17 item 3: FULL within 1.5x of one raw FULL commit). Five parts, each a ratio within this run:
//   1. the log fsync by pages: transactions that rewrite 1, 2, 4 or 8 pages, once the log is overwritten in
//      place (after its first restart), with synchronous = FULL;
//   2. a file that grows against one overwritten in place: one 4 KB write and one fsync each;
//   3. a helix step (N=100) with FULL and with NORMAL, split into the time inside COMMIT (the log write and,
//      with FULL, its fsync), inside every other statement, and the rest (the run loop and the store's own
//      code), beside a raw 1 KB row commit on its own file;
//   4. a helix FULL step on a file made with 4,096-, 2,048- and 1,024-byte pages;
//   5. a step's two rows alone (no run loop, no store code) under four table layouts, NORMAL and FULL.
// Run: npm run bench:full-step   (options: --rounds 6 --runs 10)
import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { helixBench, median, rawSqliteCommits, sqliteStores } from './workloads.js';

type Synchronous = 'NORMAL' | 'FULL';

/** The statement methods the clock wraps (`pluck` and `raw` return the statement itself, so they need none). */
const CLOCKED = ['run', 'get', 'all'] as const;

/** Time spent inside better-sqlite3's statements since the clock started, split into COMMIT and the others. */
export interface StatementClock {
  /** ms inside `COMMIT` statements (where the log is written and, with FULL, fsynced). */
  readonly commitMs: number;
  /** ms inside every other statement (BEGIN, the inserts, the reads). */
  readonly otherMs: number;
  /** Statements run. */
  readonly statements: number;
  /** Sets every figure back to 0. */
  reset(): void;
  /** Puts the statement methods back. */
  stop(): void;
}

/**
 * Wraps better-sqlite3's statement methods (of every statement, in this process) with a clock. The wrapper
 * costs about two `performance.now()` calls a statement, which the times include.
 */
export function clockStatements(): StatementClock {
  const probe = new BetterSqlite3(':memory:');
  const proto = Object.getPrototypeOf(probe.prepare('SELECT 1')) as Record<string, (...args: unknown[]) => unknown>;
  probe.close();
  const originals = CLOCKED.map((name) => [name, proto[name]!] as const);
  let commitMs = 0;
  let otherMs = 0;
  let statements = 0;
  for (const [name, original] of originals) {
    proto[name] = function (this: { source: string }, ...args: unknown[]) {
      const started = performance.now();
      try {
        return original.apply(this, args);
      } finally {
        const ms = performance.now() - started;
        statements++;
        if (this.source === 'COMMIT') commitMs += ms;
        else otherMs += ms;
      }
    };
  }
  return {
    get commitMs() {
      return commitMs;
    },
    get otherMs() {
      return otherMs;
    },
    get statements() {
      return statements;
    },
    reset() {
      commitMs = 0;
      otherMs = 0;
      statements = 0;
    },
    stop() {
      for (const [name, original] of originals) proto[name] = original;
    },
  };
}

/**
 * A database whose transactions each rewrite `pages` pages: one 100-byte row into each of `pages` tables
 * (a table's last leaf page takes many, so each transaction dirties one page a table, and page 1 when the
 * file grows). `transactions(count)` returns ms; the log restarts every 1,000 pages (SQLite's default).
 */
export function pageTransactions(synchronous: Synchronous, pages: number): { transactions(count: number): number; close(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'helix-bench-pages-'));
  const db = new BetterSqlite3(join(dir, 'pages.db'));
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous}`);
  const inserts: BetterSqlite3.Statement[] = [];
  for (let t = 0; t < pages; t++) {
    db.exec(`CREATE TABLE t${t} (id INTEGER PRIMARY KEY, body TEXT NOT NULL)`);
    inserts.push(db.prepare(`INSERT INTO t${t} (body) VALUES (?)`));
  }
  const body = 'p'.repeat(100);
  const transaction = db.transaction(() => {
    for (const insert of inserts) insert.run(body);
  });
  return {
    transactions(count: number): number {
      const started = performance.now();
      for (let i = 0; i < count; i++) transaction();
      return performance.now() - started;
    },
    close(): void {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** µs per 4 KB write and fsync on a new file: appended (the file grows each time) or overwriting a file made beforehand. */
export function fsyncPerWrite(grow: boolean, count: number): number {
  const dir = mkdtempSync(join(tmpdir(), 'helix-bench-fsync-'));
  const fd = openSync(join(dir, 'file'), 'w+');
  try {
    const page = Buffer.alloc(4096, 7);
    if (!grow) {
      for (let i = 0; i < count; i++) writeSync(fd, page, 0, page.length, i * page.length);
      fsyncSync(fd);
    }
    const started = performance.now();
    for (let i = 0; i < count; i++) {
      writeSync(fd, page, 0, page.length, i * page.length);
      fsyncSync(fd);
    }
    return ((performance.now() - started) * 1000) / count;
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Where a step's two rows go: `today`, helix's layout (the commits row appended to its table and found
 * through the `(sid, version)` index, the chunk batch in a table clustered by stream key and seq);
 * `chunks-in-commit`, the chunks in a column of the commits row (that table and index only);
 * `clustered-both`, both rows in tables clustered by session key and version, no index; `one-clustered`,
 * one row holding both in a clustered table. Every layout writes the same bytes.
 */
export type StepLayout = 'today' | 'chunks-in-commit' | 'clustered-both' | 'one-clustered';

/** The layouts {@link layoutTransactions} times, in the order bench:full-step prints them. */
export const STEP_LAYOUTS: readonly StepLayout[] = ['today', 'chunks-in-commit', 'clustered-both', 'one-clustered'];

/** Bytes of the bench step's commits row without its chunks, and of its chunk batch (docs/performance.md). */
const COMMITS_ROW_BYTES = 600;
const CHUNK_BATCH_BYTES = 600;
/** Versions a session takes before the next session begins: the bench's runs of 100 steps, each its own session. */
const VERSIONS_A_SESSION = 100;

/**
 * A database that writes a step's rows under `layout`, one write transaction (BEGIN IMMEDIATE, as helix's
 * step) per step, each session taking {@link VERSIONS_A_SESSION} steps. `transactions(count)` returns ms;
 * `rows()` counts the rows each table holds.
 */
export function layoutTransactions(synchronous: Synchronous, layout: StepLayout): { transactions(count: number): number; rows(): Record<string, number>; close(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'helix-bench-layout-'));
  const db = new BetterSqlite3(join(dir, 'layout.db'));
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous}`);
  db.exec(`
    CREATE TABLE appended (id INTEGER PRIMARY KEY, sid INTEGER NOT NULL, version INTEGER NOT NULL, body TEXT NOT NULL, chunks TEXT);
    CREATE UNIQUE INDEX appended_by_session ON appended (sid, version);
    CREATE TABLE clustered (key INTEGER PRIMARY KEY, body TEXT NOT NULL, chunks TEXT);
    CREATE TABLE batches (key INTEGER PRIMARY KEY, bodies TEXT NOT NULL);
  `);
  const appended = db.prepare<[number, number, string, string | null]>('INSERT INTO appended (sid, version, body, chunks) VALUES (?, ?, ?, ?)');
  const clustered = db.prepare<[number, string, string | null]>('INSERT INTO clustered (key, body, chunks) VALUES (?, ?, ?)');
  const batch = db.prepare<[number, string]>('INSERT INTO batches (key, bodies) VALUES (?, ?)');
  const body = 'c'.repeat(COMMITS_ROW_BYTES);
  const chunks = 'k'.repeat(CHUNK_BATCH_BYTES);
  let sid = 1;
  let version = 0;
  const write: Record<StepLayout, () => void> = {
    today: () => {
      appended.run(sid, version, body, null);
      batch.run(sid * 2 ** 32 + version, chunks);
    },
    'chunks-in-commit': () => appended.run(sid, version, body, chunks),
    'clustered-both': () => {
      clustered.run(sid * 2 ** 32 + version, body, null);
      batch.run(sid * 2 ** 32 + version, chunks);
    },
    'one-clustered': () => clustered.run(sid * 2 ** 32 + version, body, chunks),
  };
  const step = db.transaction(write[layout]).immediate;
  return {
    transactions(count: number): number {
      const started = performance.now();
      for (let i = 0; i < count; i++) {
        if (++version > VERSIONS_A_SESSION) {
          sid++;
          version = 1;
        }
        step();
      }
      return performance.now() - started;
    },
    rows(): Record<string, number> {
      const count = (table: string): number => db.prepare<[], number>(`SELECT count(*) FROM ${table}`).pluck().get()!;
      return { appended: count('appended'), clustered: count('clustered'), batches: count('batches') };
    },
    close(): void {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** helix's stores on a new file made with `pageSize`-byte pages (SQLite keeps a file's page size), and a bench of `steps` steps a run. */
export function helixOnPageSize(synchronous: Synchronous, pageSize: number, steps: number) {
  const stores = sqliteStores(synchronous, undefined, undefined, undefined, pageSize);
  const probe = new BetterSqlite3(stores.sqlite.database.path, { readonly: true });
  const madeWith = Number(probe.pragma('page_size', { simple: true }));
  probe.close();
  return {
    bench: helixBench(stores, steps),
    /** The file's page size, as SQLite made it. */
    pageSize: madeWith,
    close: (): void => stores.close(),
  };
}

/** One helix step's time, split as the statement clock sees it (µs a step), beside the raw commit (µs a commit). */
export interface StepAnatomy {
  readonly stepUs: number;
  readonly commitUs: number;
  readonly otherStatementsUs: number;
  readonly restUs: number;
  readonly statementsPerStep: number;
  readonly rawUs: number;
}

/**
 * `rounds` interleaved rounds of `runs` helix runs of `steps` steps and as many raw row commits as steps,
 * after a warm-up of 20,000 steps and commits; each figure is the median over the rounds.
 */
export async function stepAnatomy(synchronous: Synchronous, rounds: number, runs: number, steps = 100, warmupSteps = 20_000): Promise<StepAnatomy> {
  const helix = helixOnPageSize(synchronous, 4096, steps);
  const raw = rawSqliteCommits(synchronous);
  const clock = clockStatements();
  try {
    for (let i = 0; i < Math.ceil(warmupSteps / steps); i++) await helix.bench.run();
    raw.commits(warmupSteps);
    const figures: StepAnatomy[] = [];
    for (let r = 0; r < rounds; r++) {
      clock.reset();
      let ms = 0;
      for (let i = 0; i < runs; i++) ms += await helix.bench.run();
      const n = runs * steps;
      const commitUs = (clock.commitMs * 1000) / n;
      const otherStatementsUs = (clock.otherMs * 1000) / n;
      const statementsPerStep = clock.statements / n;
      const stepUs = (ms * 1000) / n;
      const rawUs = (raw.commits(n) * 1000) / n;
      figures.push({ stepUs, commitUs, otherStatementsUs, restUs: stepUs - commitUs - otherStatementsUs, statementsPerStep, rawUs });
    }
    const of = (pick: (f: StepAnatomy) => number): number => median(figures.map(pick));
    return {
      stepUs: of((f) => f.stepUs),
      commitUs: of((f) => f.commitUs),
      otherStatementsUs: of((f) => f.otherStatementsUs),
      restUs: of((f) => f.restUs),
      statementsPerStep: of((f) => f.statementsPerStep),
      rawUs: of((f) => f.rawUs),
    };
  } finally {
    clock.stop();
    raw.close();
    helix.close();
  }
}

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

async function main(): Promise<void> {
  const ROUNDS = arg('rounds', 6);
  const RUNS = arg('runs', 10);
  const fmt = (n: number): string => n.toFixed(0).padStart(5);

  // 1. The log fsync by pages, the log past its first restart (so each commit overwrites it in place).
  const pageCounts = [1, 2, 4, 8];
  const targets = pageCounts.map((pages) => pageTransactions('FULL', pages));
  for (const target of targets) target.transactions(3_000);
  const perPages = pageCounts.map(() => [] as number[]);
  for (let r = 0; r < ROUNDS; r++) targets.forEach((target, i) => perPages[i]!.push((target.transactions(500) * 1000) / 500));
  for (const target of targets) target.close();
  console.log('1. FULL transactions by the pages they rewrite (the log overwritten in place), median of', ROUNDS, 'rounds:');
  const one = median(perPages[0]!);
  pageCounts.forEach((pages, i) => {
    const us = median(perPages[i]!);
    console.log(`   ${pages} page${pages === 1 ? ' ' : 's'}: ${fmt(us)} µs a transaction, ${(us / one).toFixed(2)}x one page${pages > 1 ? `, ${((us - one) / (pages - 1)).toFixed(0)} µs a further page` : ''}`);
  });

  // 2. A growing file against one overwritten in place.
  const grow: number[] = [];
  const overwrite: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    grow.push(fsyncPerWrite(true, 400));
    overwrite.push(fsyncPerWrite(false, 400));
  }
  console.log(`2. one 4 KB write and fsync: ${fmt(median(grow))} µs when it grows the file, ${fmt(median(overwrite))} µs when it overwrites (${(median(grow) / median(overwrite)).toFixed(2)}x)`);

  // 3. A helix step split by the statement clock, beside a raw row commit.
  console.log('3. a helix step (N=100), median of', ROUNDS, 'rounds of', RUNS, 'runs, beside a raw 1 KB row commit:');
  for (const synchronous of ['FULL', 'NORMAL'] as const) {
    const a = await stepAnatomy(synchronous, ROUNDS, RUNS);
    console.log(
      `   ${synchronous.padEnd(6)} step ${fmt(a.stepUs)} µs = COMMIT ${fmt(a.commitUs)} + other statements ${fmt(a.otherStatementsUs)} (${a.statementsPerStep.toFixed(2)} statements a step in all) + the rest ${fmt(a.restUs)}; raw commit ${fmt(a.rawUs)} µs; step ${(a.stepUs / a.rawUs).toFixed(2)}x raw, its COMMIT alone ${(a.commitUs / a.rawUs).toFixed(2)}x`,
    );
  }

  // 4. The page size of the file.
  const sizes = [4096, 2048, 1024];
  const helixes = sizes.map((size) => helixOnPageSize('FULL', size, 100));
  const raw = rawSqliteCommits('FULL');
  try {
    for (const h of helixes) for (let i = 0; i < 200; i++) await h.bench.run();
    raw.commits(20_000);
    const perSize = sizes.map(() => [] as number[]);
    const rawUs: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      for (let i = 0; i < helixes.length; i++) {
        let ms = 0;
        for (let k = 0; k < RUNS; k++) ms += await helixes[i]!.bench.run();
        perSize[i]!.push((ms * 1000) / (RUNS * 100));
      }
      rawUs.push((raw.commits(RUNS * 100) * 1000) / (RUNS * 100));
    }
    console.log(`4. a helix FULL step by the file's page size, beside a raw FULL commit (4,096-byte pages) of ${fmt(median(rawUs))} µs:`);
    helixes.forEach((h, i) => console.log(`   ${String(h.pageSize).padStart(4)} bytes: ${fmt(median(perSize[i]!))} µs, ${(median(perSize[i]!) / median(rawUs)).toFixed(2)}x raw`));
  } finally {
    raw.close();
    for (const h of helixes) h.close();
  }

  // 5. A step's rows, without the run loop or the store's code, under four layouts.
  console.log('5. a step\'s two rows (a 0.6 KB commits row, a 0.6 KB chunk batch) in one transaction, by layout, beside a raw 1 KB row commit; median of', ROUNDS, 'rounds:');
  for (const synchronous of ['NORMAL', 'FULL'] as const) {
    const count = synchronous === 'FULL' ? 300 : 1_000;
    const layouts = STEP_LAYOUTS.map((layout) => layoutTransactions(synchronous, layout));
    const floor = rawSqliteCommits(synchronous);
    try {
      for (const layout of layouts) layout.transactions(3_000);
      floor.commits(3_000);
      const perLayout = layouts.map(() => [] as number[]);
      const rawUs: number[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        layouts.forEach((layout, i) => perLayout[i]!.push((layout.transactions(count) * 1000) / count));
        rawUs.push((floor.commits(count) * 1000) / count);
      }
      const rawMedian = median(rawUs);
      const cells = STEP_LAYOUTS.map((layout, i) => `${layout} ${fmt(median(perLayout[i]!))} µs (${(median(perLayout[i]!) / rawMedian).toFixed(2)}x)`);
      console.log(`   ${synchronous.padEnd(6)} ${cells.join(', ')}; raw commit ${fmt(rawMedian)} µs`);
    } finally {
      floor.close();
      for (const layout of layouts) layout.close();
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
