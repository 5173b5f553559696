// Durable step cost (issue 3 item 10): step commits per second for each state store, with a 2 KB state
// and a 1 KB message per step (plus the step checkpoint and one usage entry, as the run loop commits
// them), for one session and for 50 concurrent sessions, each beside a raw single-row insert loop on the
// same database (one transaction per 1 KB row) as the floor.
// Run: npm run bench:store   (options: --seconds 2 --sessions 50 --only sqlite; --seconds is per side of a measurement)
// To add a store, append a StoreBenchTarget to TARGETS.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { InMemoryStateStore } from '@helix-agents/sdk';
import type { StateStore, UsageEntry } from '@helix-agents/sdk';
import { openSqliteStores } from '@helix-agents/store-sqlite';
import { openPostgresStores } from '@helix-agents/store-postgres';
import { startTestPostgres, type TestPostgres } from '@helix-agents/store-postgres/testing';
import type { Commit } from '@helix-agents/sdk/store';
import { helixBench, rawSqliteCommits, sqliteStores } from './workloads.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback;
}

const SECONDS = Number(arg('seconds', '2'));
const CONCURRENT = Number(arg('sessions', '50'));
const ONLY = arg('only', '');
const ROUNDS = 4;

/** A store opened on a fresh database for one measurement. */
export interface OpenedTarget {
  readonly store: StateStore;
  /** Inserts one 1 KB row in its own transaction on the same database: the durable floor (absent for memory). */
  readonly insertRow?: (i: number) => Promise<void>;
  close(): Promise<void>;
}

/** One column of the report: how to open a fresh store of that kind. */
export interface StoreBenchTarget {
  readonly name: string;
  open(): Promise<OpenedTarget>;
}

function sqliteTarget(synchronous: 'NORMAL' | 'FULL'): StoreBenchTarget {
  return {
    name: `sqlite ${synchronous}`,
    async open() {
      const dir = mkdtempSync(join(tmpdir(), 'helix-bench-'));
      const path = join(dir, 'helix.db');
      const stores = openSqliteStores({ path, synchronous });
      // The floor: a second connection on the same file with the same settings.
      const raw = new BetterSqlite3(path);
      raw.pragma('journal_mode = WAL');
      raw.pragma(`synchronous = ${synchronous}`);
      raw.exec('CREATE TABLE IF NOT EXISTS bench_rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL)');
      const insert = raw.prepare('INSERT INTO bench_rows (body) VALUES (?)');
      const body = 'r'.repeat(1024);
      return {
        store: stores.stateStore,
        insertRow: async () => {
          insert.run(body);
        },
        async close() {
          raw.close();
          stores.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  };
}

/**
 * Postgres: one durable throwaway cluster (fsync, synchronous commit and full-page writes on), started on
 * the first open and stopped shortly after the last close; each open gets a fresh schema. Set
 * HELIX_BENCH_POSTGRES_URL to measure an existing server instead. Store and floor share one warm pool.
 */
function postgresTarget(): StoreBenchTarget {
  // The store's default pool size; on a 2-core machine more connections only add contention.
  const POOL = 10;
  let cluster: Promise<TestPostgres> | undefined;
  let open = 0;
  let stopTimer: ReturnType<typeof setTimeout> | undefined;
  let schemas = 0;
  const url = process.env['HELIX_BENCH_POSTGRES_URL'];
  return {
    name: 'postgres',
    async open() {
      if (stopTimer) clearTimeout(stopTimer);
      open++;
      const connectionString = url ?? (await (cluster ??= startTestPostgres({ durable: true }))).connectionString;
      const stores = await openPostgresStores({ connectionString, schema: `bench_${process.pid}_${++schemas}`, maxConnections: POOL });
      // Connect the whole pool first: connection set-up is not what a step costs.
      const clients = await Promise.all(Array.from({ length: POOL }, () => stores.pool.connect()));
      for (const client of clients) client.release();
      await stores.pool.query(`CREATE TABLE "${stores.schema}".bench_rows (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, body text NOT NULL)`);
      const insert = { name: `bench_rows_${stores.schema}`, text: `INSERT INTO "${stores.schema}".bench_rows (body) VALUES ($1)` };
      const body = 'r'.repeat(1024);
      return {
        store: stores.stateStore,
        insertRow: async () => {
          await stores.pool.query({ ...insert, values: [body] });
        },
        async close() {
          await stores.pool.query(`DROP SCHEMA "${stores.schema}" CASCADE`);
          await stores.close();
          // A next open usually follows at once (warm-up, then the measurement): keep the cluster for it.
          if (--open === 0 && cluster) {
            const running = cluster;
            stopTimer = setTimeout(() => {
              cluster = undefined;
              void running.then((c) => c.stop());
            }, 500);
          }
        },
      };
    },
  };
}

/** The columns of the report. A Postgres target goes here (open a fresh database; insertRow = one INSERT per transaction). */
export const TARGETS: StoreBenchTarget[] = [
  { name: 'memory', open: async () => ({ store: new InMemoryStateStore(), close: async () => {} }) },
  sqliteTarget('NORMAL'),
  sqliteTarget('FULL'),
  postgresTarget(),
];

const STATE_PAD = 's'.repeat(2048 - 40);
const MESSAGE = 'm'.repeat(1024);

/** Commits steps on `sessions` concurrent (new) sessions for `seconds`; returns the steps and the time taken. */
async function runSteps(store: StateStore, sessions: number, seconds: number): Promise<{ count: number; ms: number }> {
  const deadline = performance.now() + seconds * 1000;
  let count = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: sessions }, async (_, s) => {
      const sessionId = `bench-${s}-${Math.random().toString(36).slice(2)}`;
      const runId = `run-${sessionId}`;
      await store.beginRun({
        sessionId,
        runId,
        agentType: 'bench',
        signal: 'start',
        initialState: { step: 0, pad: STATE_PAD },
        newTurn: { turnId: `turn-${runId}`, input: [{ role: 'user', content: 'go' }] },
        startedAt: Date.now(),
        leaseOwner: 'bench',
        leaseMs: 600_000,
        options: {},
      });
      for (let i = 0; performance.now() < deadline; i++) {
        const usage: UsageEntry = { kind: 'llm', sessionId, runId, stepIndex: i, attempt: 1, model: 'bench', usage: { promptTokens: 10, completionTokens: 2, totalTokens: 12 }, success: true, durationMs: 0, at: Date.now() };
        const commit: Commit = {
          sessionId,
          runId,
          epoch: 1,
          kind: 'step',
          stepIndex: i,
          appendMessages: [{ role: 'assistant', content: MESSAGE }],
          state: { step: i + 1, pad: STATE_PAD },
          checkpoint: 'step',
          usage: [usage],
          committedAt: Date.now(),
        };
        await store.commit(commit);
        count++;
      }
    }),
  );
  return { count, ms: performance.now() - started };
}

/** Runs `concurrency` loops of single-row transactions for `seconds`; returns the rows and the time taken. */
async function runFloor(insertRow: (i: number) => Promise<void>, concurrency: number, seconds: number): Promise<{ count: number; ms: number }> {
  const deadline = performance.now() + seconds * 1000;
  let count = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        await insertRow(count);
        count++;
      }
    }),
  );
  return { count, ms: performance.now() - started };
}

/**
 * Steps/s and floor rows/s on one fresh database. The two alternate in ROUNDS short slices, so that a
 * shared machine's load swings hit both sides of the ratio alike.
 */
async function measure(target: StoreBenchTarget, sessions: number): Promise<{ steps: number; floor: number | undefined }> {
  const opened = await target.open();
  try {
    const slice = SECONDS / ROUNDS;
    let steps = { count: 0, ms: 0 };
    let floor: { count: number; ms: number } | undefined;
    for (let round = 0; round < ROUNDS; round++) {
      const s = await runSteps(opened.store, sessions, slice);
      steps = { count: steps.count + s.count, ms: steps.ms + s.ms };
      if (opened.insertRow) {
        const f = await runFloor(opened.insertRow, sessions, slice);
        floor = { count: (floor?.count ?? 0) + f.count, ms: (floor?.ms ?? 0) + f.ms };
      }
    }
    return { steps: (steps.count * 1000) / steps.ms, floor: floor && (floor.count * 1000) / floor.ms };
  } finally {
    await opened.close();
  }
}

function fmt(n: number | undefined): string {
  return n === undefined ? '-' : Math.round(n).toLocaleString('en-US');
}

const rows: string[][] = [['store', 'sessions', 'steps/s', 'floor rows/s', 'steps/floor']];
for (const target of TARGETS) {
  if (ONLY !== '' && !target.name.includes(ONLY)) continue;
  for (const sessions of [1, CONCURRENT]) {
    // A short warm-up on its own database, so that JIT and file creation do not count.
    const warm = await target.open();
    await runSteps(warm.store, sessions, Math.min(0.3, SECONDS / 4));
    await warm.close();
    const { steps, floor } = await measure(target, sessions);
    rows.push([target.name, String(sessions), fmt(steps), fmt(floor), floor === undefined ? '-' : (steps / floor).toFixed(2)]);
    process.stderr.write(`${rows.at(-1)!.join('  ')}\n`);
  }
}

const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
console.log(`\nStep commits per second (2 KB state + 1 KB message + checkpoint + usage per step; ${SECONDS} s per side, in ${ROUNDS} alternating slices; floor = one 1 KB row per transaction on the same database)\n`);
for (const row of rows) console.log(row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('   '));

// Whole helix runs on SQLite (the loop, its chunks and its commits): write transactions per step, and
// µs per step beside one raw row commit, interleaved in ROUNDS.
const RUN_STEPS = 100;
console.log(`\nhelix runs on SQLite (${RUN_STEPS} steps, one tool call per step; ${ROUNDS} interleaved rounds, median)\n`);
console.log(['mode', 'tx/step', 'µs/step', 'raw commit µs', 'step / raw'].join('   '));
for (const synchronous of ['NORMAL', 'FULL'] as const) {
  if (ONLY !== '' && !`sqlite ${synchronous}`.includes(ONLY)) continue;
  const stores = sqliteStores(synchronous);
  const raw = rawSqliteCommits(synchronous);
  try {
    const bench = helixBench(stores, RUN_STEPS);
    await bench.run();
    const steps: number[] = [];
    const floor: number[] = [];
    let tx = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const before = stores.sqlite.database.writeTransactions;
      steps.push(((await bench.run()) * 1000) / RUN_STEPS);
      tx += stores.sqlite.database.writeTransactions - before;
      floor.push((raw.commits(RUN_STEPS) * 1000) / RUN_STEPS);
    }
    const mid = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
    console.log([`sqlite ${synchronous}`, (tx / (ROUNDS * RUN_STEPS)).toFixed(2), mid(steps).toFixed(0), mid(floor).toFixed(0), (mid(steps) / mid(floor)).toFixed(2)].join('   '));
  } finally {
    raw.close();
    stores.close();
  }
}
