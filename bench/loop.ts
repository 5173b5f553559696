// Framework overhead per step (issues 2 and 17), every figure as a ratio within one run: a bare
// hand-written tool loop, helix in memory (one observer; a no-op on every hook point; no hooks) at
// several history lengths, 100 concurrent runs, the AI SDK's own tool loop (generateText), helix on
// SQLite beside one raw row commit on the same machine, and helix on a durable Postgres (a throwaway
// cluster it starts) beside one raw single-row commit on the same pool. Each variant runs in a child process of its
// own; the variants are interleaved in REPS rounds (in a rotating order), and each figure is the median
// of the rounds, with the spread (min–max) of the per-round ratios.
// Every variant warms up for the same number of steps (--warmup-steps, default 20,000), whatever its run
// length, and short runs are timed in batches (--sample-steps, default 2,000 steps per timing).
// Run: npm run bench   (options: --reps 5 --runs 15 --warmup 10 --warmup-steps 20000 --sample-steps 2000 --only helix-)
import { execFileSync } from 'node:child_process';
import {
  bareConcurrent,
  bareRun,
  generateTextRun,
  helixBench,
  median,
  memoryStores,
  postgresStores,
  rawSqliteCommits,
  retainedHeapMb,
  retainedSqliteRows,
  walPagesPerStep,
  sqliteStores,
  type HookSet,
} from './workloads.js';
import type { SqliteCheckpointMode } from '@helix-agents/store-sqlite';
import { stepAnatomy } from './full-step.js';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}
function text(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback;
}

const REPS = arg('reps', 5);
const RUNS = arg('runs', 15);
const WARMUP = arg('warmup', 10);
const ONLY = text('only', '');


/** What a child measures: µs per step, and for durable variants the floor's µs per commit measured beside it. */
interface Sample {
  readonly usPerStep: number;
  readonly floorUs?: number;
  readonly txPerStep?: number;
}

interface Variant {
  readonly id: string;
  readonly name: string;
  /** The id of the variant its "vs bare" ratio divides by (the bare loop of the same shape). */
  readonly bare: string;
  measure(): Promise<Sample>;
}

/** Steps every variant runs before its clock starts, whatever its run length (the JIT must be warm for all). */
const WARMUP_STEPS = arg('warmup-steps', 20_000);
/** Steps one timing covers at least: short runs are timed in batches, so a sample is not one timer tick. */
const SAMPLE_STEPS = arg('sample-steps', 2_000);
const WARMUP_MS = 3_000;

/**
 * Warm-up (at least `warmup` runs and WARMUP_STEPS steps), then the median of `runs` timings of `once`
 * (ms for `work` steps; each timing a batch of runs covering at least SAMPLE_STEPS steps), as µs per step.
 */
async function timed(once: () => Promise<number>, work: number, runs = RUNS, warmup = WARMUP): Promise<number> {
  // A slow variant (the AI SDK's loop) stops warming after WARMUP_MS once it ran its `warmup` runs.
  const warmupRuns = Math.max(warmup, Math.ceil(WARMUP_STEPS / work));
  const warmUntil = performance.now() + WARMUP_MS;
  for (let i = 0; i < warmupRuns && (i < warmup || performance.now() < warmUntil); i++) await once();
  const batch = Math.max(1, Math.ceil(SAMPLE_STEPS / work));
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    let ms = 0;
    for (let b = 0; b < batch; b++) ms += await once();
    samples.push(ms / batch);
  }
  return (median(samples) * 1000) / work;
}

/**
 * The bare loop with its zod schema made once for every run, as helix's agent makes its tool's once: the
 * bare loop's own per-run cost (zod compiling a new schema at its first parse, about 55 µs) taken out. The
 * "vs bare" ratios divide by the bare loop that makes its schema each run, the floor issue 17 set its targets
 * against; this row says how much of that floor is the schema.
 */
const bareSchemaOnce: Variant = {
  id: 'bare-schema-once-200',
  name: 'bare loop, schema made once, N=200',
  bare: 'bare-200',
  measure: async () => ({ usPerStep: await timed(() => bareRun(200, { schemaOnce: true }), 200) }),
};

function bare(steps: number): Variant {
  return { id: `bare-${steps}`, name: `bare loop, N=${steps}`, bare: `bare-${steps}`, measure: async () => ({ usPerStep: await timed(() => bareRun(steps), steps) }) };
}

function helixMemory(steps: number, hooks: HookSet): Variant {
  const label = hooks === 'observer' ? 'one observer' : hooks === 'every-point' ? 'a no-op on every hook point' : 'no hooks';
  return {
    id: `helix-${hooks}-${steps}`,
    name: `helix memory, ${label}, N=${steps}`,
    bare: `bare-${steps}`,
    measure: async () => {
      // A fresh store per measurement, as a process would have; runs accumulate sessions in it.
      const bench = helixBench(memoryStores(), steps, { hooks });
      return { usPerStep: await timed(bench.run, steps) };
    },
  };
}

/**
 * One observer, each session deleted after its run (inside the timing): the store keeps no history, as the
 * bare loop keeps none. Beside helix-observer-200 it shows what the kept sessions cost (their collection).
 */
const deletingVariant: Variant = {
  id: 'helix-deleting-200',
  name: 'helix memory, one observer, sessions deleted, N=200',
  bare: 'bare-200',
  measure: async () => {
    const bench = helixBench(memoryStores(), 200, { deleteSessions: true });
    return { usPerStep: await timed(bench.run, 200) };
  },
};

const CONCURRENT_RUNS = 100;
const CONCURRENT_STEPS = 20;

const concurrentVariants: Variant[] = [
  {
    id: 'bare-concurrent',
    name: `bare loop, ${CONCURRENT_RUNS} concurrent runs of ${CONCURRENT_STEPS}`,
    bare: 'bare-concurrent',
    measure: async () => ({ usPerStep: await timed(() => bareConcurrent(CONCURRENT_RUNS, CONCURRENT_STEPS), CONCURRENT_RUNS * CONCURRENT_STEPS, 7, 3) }),
  },
  {
    id: 'helix-concurrent',
    name: `helix memory, ${CONCURRENT_RUNS} concurrent runs of ${CONCURRENT_STEPS}`,
    bare: 'bare-concurrent',
    measure: async () => {
      const bench = helixBench(memoryStores(), CONCURRENT_STEPS);
      return { usPerStep: await timed(() => bench.concurrent(CONCURRENT_RUNS), CONCURRENT_RUNS * CONCURRENT_STEPS, 7, 3) };
    },
  },
];

const DURABLE_STEPS = 100;

/**
 * helix on SQLite and, in the same process and interleaved with it, the raw row commit it is compared with.
 * Both figures are means over every step and every commit of the timed rounds, so that WAL checkpoints
 * (the floor's own, SQLite's inline ones, and any stall the background thread leaves) are on both clocks.
 */
function helixSqlite(synchronous: 'NORMAL' | 'FULL', checkpoint: SqliteCheckpointMode = 'background'): Variant {
  return {
    id: `sqlite-${synchronous}${checkpoint === 'inline' ? '-inline' : ''}`,
    name: `helix SQLite ${synchronous}${checkpoint === 'inline' ? ' (inline checkpoints)' : ''}, N=${DURABLE_STEPS}`,
    bare: `bare-200`,
    measure: async () => {
      const stores = sqliteStores(synchronous, undefined, checkpoint);
      const raw = rawSqliteCommits(synchronous);
      try {
        const bench = helixBench(stores, DURABLE_STEPS);
        const rounds = 20;
        let stepMs = 0;
        let floorMs = 0;
        let tx = 0;
        // Warm-up: the same number of steps as every other variant (the JIT, and past the write transactions
        // after which the checkpoint thread starts); three runs, as before, left the code still compiling.
        for (let r = 0; r < Math.max(3, Math.ceil(WARMUP_STEPS / DURABLE_STEPS)); r++) await bench.run();
        raw.commits(Math.max(3 * DURABLE_STEPS, WARMUP_STEPS));
        for (let r = 0; r < rounds; r++) {
          const before = stores.sqlite.database.writeTransactions;
          stepMs += await bench.run();
          tx += stores.sqlite.database.writeTransactions - before;
          floorMs += raw.commits(DURABLE_STEPS);
        }
        const steps = rounds * DURABLE_STEPS;
        return { usPerStep: (stepMs / steps) * 1000, floorUs: (floorMs / steps) * 1000, txPerStep: tx / steps };
      } finally {
        raw.close();
        stores.close();
      }
    },
  };
}

const POSTGRES_STEPS = 50;

/** helix on a durable Postgres cluster and, in the same process and interleaved with it, one raw row commit per transaction. */
const helixPostgres: Variant = {
  id: 'postgres',
  name: `helix Postgres (durable), N=${POSTGRES_STEPS}`,
  bare: 'bare-200',
  measure: async () => {
    const stores = await postgresStores();
    try {
      const bench = helixBench(stores, POSTGRES_STEPS);
      const rounds = 5;
      const steps: number[] = [];
      const floor: number[] = [];
      let statements = 0;
      await bench.run();
      await stores.rawCommits(POSTGRES_STEPS);
      for (let r = 0; r < rounds; r++) {
        const before = stores.statements();
        steps.push((await bench.run()) / POSTGRES_STEPS);
        statements += stores.statements() - before;
        floor.push((await stores.rawCommits(POSTGRES_STEPS)) / POSTGRES_STEPS);
      }
      return { usPerStep: median(steps) * 1000, floorUs: median(floor) * 1000, txPerStep: statements / (rounds * POSTGRES_STEPS) };
    } finally {
      await stores.closeAll();
    }
  },
};

const aiSdk: Variant = { id: 'generateText-200', name: 'AI SDK generateText tool loop, N=200', bare: 'bare-200', measure: async () => ({ usPerStep: await timed(() => generateTextRun(200), 200, 7, 5) }) };
const viaAdapter: Variant = {
  id: 'helix-aisdk-200',
  name: 'helix memory via the AI SDK adapter, one observer, N=200',
  bare: 'bare-200',
  measure: async () => {
    const bench = helixBench(memoryStores(), 200, { aiSdkAdapter: true });
    return { usPerStep: await timed(bench.run, 200) };
  },
};

const VARIANTS: Variant[] = [
  bare(10),
  bare(200),
  bare(1000),
  bareSchemaOnce,
  helixMemory(10, 'observer'),
  helixMemory(200, 'observer'),
  helixMemory(1000, 'observer'),
  helixMemory(200, 'none'),
  helixMemory(200, 'every-point'),
  deletingVariant,
  ...concurrentVariants,
  viaAdapter,
  aiSdk,
  helixSqlite('NORMAL'),
  helixSqlite('NORMAL', 'inline'),
  helixSqlite('FULL'),
  helixPostgres,
].filter((v) => ONLY === '' || v.id.includes(ONLY) || v.id.startsWith('bare') || v.id === 'generateText-200');

const HEAP_RUNS = 1000;
/** Runs before the warm heap figure's "before" (20,000 steps, as every timed variant warms up): the JIT has compiled what the runs use. */
const HEAP_WARMUP_RUNS = 1000;
/** The policy of the retention lines: one checkpoint per session, chunks of finished runs dropped at the next prune. */
const RETENTION = { keepCheckpoints: 1, chunkTtlMs: 0 } as const;
const only = process.argv.indexOf('--variant');
const heapChild = process.argv.indexOf('--heap');
/** The figures of the retained-heap children (MB after a full collection, each in a fresh process). */
interface HeapFigures {
  readonly deletedWarm: number;
  readonly deleted: number;
  readonly kept: number;
  readonly keptWithPolicy: number;
}
if (heapChild >= 0) {
  // A child with --expose-gc: the retained heap after HEAP_RUNS runs, sessions deleted (after a warm-up, or from
  // one run as before) or kept.
  const which = process.argv[heapChild + 1];
  const figures =
    which === 'warm'
      ? { deletedWarm: await retainedHeapMb(HEAP_RUNS, 20, false, undefined, { warmupRuns: HEAP_WARMUP_RUNS }) }
      : {
          deleted: await retainedHeapMb(HEAP_RUNS, 20, false),
          kept: await retainedHeapMb(HEAP_RUNS, 20, true),
          keptWithPolicy: await retainedHeapMb(HEAP_RUNS, 20, true, RETENTION),
        };
  process.stdout.write(JSON.stringify(figures));
} else if (only >= 0) {
  // A child: one variant, so no other variant's garbage or JIT state is on its clock.
  const variant = VARIANTS.find((v) => v.id === process.argv[only + 1]);
  if (!variant) throw new Error(`no variant ${process.argv[only + 1]}`);
  process.stdout.write(JSON.stringify(await variant.measure()));
} else {
  const samples = new Map<string, Sample[]>(VARIANTS.map((v) => [v.id, []]));
  for (let rep = 0; rep < REPS; rep++) {
    // Rotate the order so that no variant always runs first (or after the slowest).
    const order = VARIANTS.map((_, i) => VARIANTS[(i + rep) % VARIANTS.length]!);
    for (const variant of order) {
      const args = [...process.execArgv, process.argv[1]!, ...process.argv.slice(2), '--variant', variant.id];
      const out = execFileSync(process.execPath, args, { encoding: 'utf8', maxBuffer: 1 << 20 });
      samples.get(variant.id)!.push(JSON.parse(out) as Sample);
    }
    process.stderr.write(`round ${rep + 1}/${REPS} done\n`);
  }
  /** Per-round ratios of `id` over `over` (same round), as median and spread. */
  const ratio = (id: string, over: (s: Sample, rep: number) => number | undefined) => {
    const values = samples.get(id)!.map((s, rep) => {
      const d = over(s, rep);
      return d === undefined ? Number.NaN : s.usPerStep / d;
    });
    return { median: median(values), min: Math.min(...values), max: Math.max(...values) };
  };
  const fmt = (r: { median: number; min: number; max: number }, digits = 2) =>
    Number.isNaN(r.median) ? '-' : `${r.median.toFixed(digits)}x (${r.min.toFixed(digits)}–${r.max.toFixed(digits)})`;
  const rows: string[][] = [['variant', 'µs/step', 'vs bare', 'vs generateText', 'vs raw commit', 'tx/step']];
  for (const variant of VARIANTS) {
    const list = samples.get(variant.id)!;
    const vsBare = ratio(variant.id, (_, rep) => samples.get(variant.bare)?.[rep]?.usPerStep);
    const vsAi = ratio(variant.id, (_, rep) => samples.get('generateText-200')?.[rep]?.usPerStep);
    const vsFloor = ratio(variant.id, (s) => s.floorUs);
    const tx = list[0]?.txPerStep;
    rows.push([variant.name, median(list.map((s) => s.usPerStep)).toFixed(2), fmt(vsBare, 1), fmt(vsAi, 3), fmt(vsFloor), tx === undefined ? '-' : tx.toFixed(2)]);
  }
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  console.log(`\nFramework overhead per step, ${REPS} interleaved rounds (each variant in its own process: at least ${WARMUP} warm-up runs and ${WARMUP_STEPS} warm-up steps, median of ${RUNS} timings of at least ${SAMPLE_STEPS} steps); ratios are per round, median (min–max). Node ${process.version}`);
  console.log('tx/step: write transactions per step on SQLite; statements per step on Postgres (each its own transaction); both include the run\'s start and end.\n');
  for (const row of rows) console.log(row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  '));
  const med = (id: string) => median((samples.get(id) ?? []).map((s) => s.usPerStep));
  if (samples.has('helix-observer-1000') && samples.has('helix-observer-10')) console.log(`\nflat in N: N=1000 over N=10 ${(med('helix-observer-1000') / med('helix-observer-10')).toFixed(2)}x`);
  if (samples.has('bare-schema-once-200') && samples.has('helix-observer-200')) console.log(`one observer, N=200, over the bare loop with its schema made once: ${fmt(ratio('helix-observer-200', (_, rep) => samples.get('bare-schema-once-200')?.[rep]?.usPerStep))}`);
  // The floor differs between processes (its JIT settles differently from run to run; 0.66–1.25 µs a step were
  // measured back to back), so the per-round ratio carries that spread: the medians of all rounds say it too.
  if (samples.has('bare-200') && samples.has('helix-observer-200')) {
    const floors = samples.get('bare-200')!.map((s) => s.usPerStep);
    console.log(`one observer, N=200, median of its rounds over the bare loop's median: ${(med('helix-observer-200') / med('bare-200')).toFixed(1)}x (${med('helix-observer-200').toFixed(2)} µs over ${med('bare-200').toFixed(2)} µs; the bare loop's rounds ${Math.min(...floors).toFixed(2)}–${Math.max(...floors).toFixed(2)} µs)`);
  }
  if (samples.has('helix-every-point-200')) console.log(`every hook point over one observer: ${fmt(ratio('helix-every-point-200', (_, rep) => samples.get('helix-observer-200')?.[rep]?.usPerStep))}`);
  const heapOf = (which: 'warm' | 'cold'): Partial<HeapFigures> =>
    JSON.parse(execFileSync(process.execPath, ['--expose-gc', ...process.execArgv, process.argv[1]!, '--heap', which], { encoding: 'utf8' })) as Partial<HeapFigures>;
  const heap = { ...heapOf('cold'), ...heapOf('warm') } as HeapFigures;
  console.log(
    `retained heap after ${HEAP_RUNS} runs of 20 steps: ${heap.deletedWarm.toFixed(2)} MB with each session deleted, after ${HEAP_WARMUP_RUNS} warm-up runs (${heap.deleted.toFixed(2)} MB after one: the JIT's code and feedback of the runs between), ${heap.kept.toFixed(2)} MB with the sessions kept, ${heap.keptWithPolicy.toFixed(2)} MB kept with retention ${JSON.stringify(RETENTION)}; npm run bench:heap says what it is`,
  );
  const tableRows = (r: Record<string, number>) => Object.entries(r).map(([k, v]) => `${k} ${v}`).join(', ');
  const pages = await walPagesPerStep('NORMAL');
  console.log(`SQLite log pages (counted, not timed): ${pages.step.toFixed(2)} a helix step of N=100 (its run's start and end shared out), ${pages.raw.toFixed(2)} a raw 1 KB row commit: ${(pages.step / pages.raw).toFixed(2)}x`);
  const together = await walPagesPerStep('NORMAL', 100, 2, 10);
  console.log(`SQLite log pages with 10 runs of N=100 at once (group commit shares their transactions): ${together.step.toFixed(2)} a step; npm run bench:wal-trees says which tables and indexes they belong to`);
  // Where a durable step's time goes beside its raw commit: the time inside COMMIT (the log write and, with FULL,
  // its fsync), inside the step's other statements, and the rest (the run loop and the store's code).
  for (const synchronous of ['NORMAL', 'FULL'] as const) {
    const split = await stepAnatomy(synchronous, 3, 5);
    console.log(
      `SQLite ${synchronous} step taken apart (npm run bench:full-step): ${split.stepUs.toFixed(0)} µs = COMMIT ${split.commitUs.toFixed(0)} (${(split.commitUs / split.rawUs).toFixed(2)}x a raw commit of ${split.rawUs.toFixed(0)} µs) + ${split.statementsPerStep.toFixed(1)} statements in all, the others ${split.otherStatementsUs.toFixed(0)} + the rest ${split.restUs.toFixed(0)}`,
    );
  }
  console.log(`SQLite rows after ${HEAP_RUNS} turns of one session: ${tableRows(await retainedSqliteRows(HEAP_RUNS, 3, RETENTION))} with retention; ${tableRows(await retainedSqliteRows(HEAP_RUNS, 3))} without`);
  if (samples.has('helix-none-200')) console.log(`one observer over no hooks: ${fmt(ratio('helix-observer-200', (_, rep) => samples.get('helix-none-200')?.[rep]?.usPerStep))}`);
}
