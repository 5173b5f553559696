// What a process retains after runs whose sessions are deleted (issue 17, item 5), measured two ways, each
// repetition in a fresh child process with --expose-gc:
// - warm: 1,000 runs (sessions deleted; 20,000 steps, the warm-up of bench/loop.ts) before the "before"
//   figure, so compiled code, feedback and hidden classes exist already, then 1,000 runs: what the heap
//   keeps of finished work;
// - from one run (the method of bench/loop.ts before): 1 run, then 1,000: finished work plus what the JIT
//   builds meanwhile;
// - warm, one abortSignal: as warm, every run given the same `abortSignal` (a server's shutdown signal):
//   a run's listener on it must not outlive the run.
// Each figure is `heapUsed` after two full collections, after minus before. With --snapshot, one more child
// per method writes a V8 heap snapshot before and after and prints their difference by category
// (bench/heap-snapshot.ts): compiled code, feedback and inline caches, hidden classes, objects only those
// hold, and program data (where records, ids, Map entries or listeners of finished runs would be).
// Run: npm run bench:heap   (options: --reps 5 --runs 1000 --warmup 1000 --steps 20 --snapshot --warm-only)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeHeapSnapshot } from 'node:v8';
import { diffHeapSnapshots, HEAP_CATEGORIES } from './heap-snapshot.js';
import { retainedHeapMb } from './workloads.js';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const REPS = arg('reps', 5);
const RUNS = arg('runs', 1000);
const WARMUP = arg('warmup', 1000);
const STEPS = arg('steps', 20);
const child = process.argv.indexOf('--child');
/** Session ids of the workload (`heap-N`) and run ids (UUIDs): a new one in the "after" snapshot is a finished run still held. */
const ID_PATTERN = /^heap-\d+$|^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const mb = (bytes: number): string => `${bytes >= 0 ? '+' : ''}${(bytes / (1024 * 1024)).toFixed(3)} MB`;

if (child >= 0) {
  const warmupRuns = Number(process.argv[child + 1]);
  const shared = process.argv.includes('--with-shared-signal') ? { abortSignal: new AbortController().signal } : {};
  if (process.argv.includes('--with-snapshot')) {
    const dir = mkdtempSync(join(tmpdir(), 'helix-heap-'));
    try {
      const path = (moment: string): string => join(dir, `${moment}.heapsnapshot`);
      const heapMb = await retainedHeapMb(RUNS, STEPS, false, undefined, { ...shared, warmupRuns, onCollected: (moment) => writeHeapSnapshot(path(moment)) });
      process.stdout.write(JSON.stringify({ heapMb, diff: diffHeapSnapshots(path('before'), path('after'), ID_PATTERN) }));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  } else {
    process.stdout.write(JSON.stringify({ heapMb: await retainedHeapMb(RUNS, STEPS, false, undefined, { ...shared, warmupRuns }) }));
  }
} else {
  const spawn = (warmupRuns: number, extra: string[] = []): string =>
    execFileSync(process.execPath, ['--expose-gc', ...process.execArgv, process.argv[1]!, ...process.argv.slice(2), '--child', String(warmupRuns), ...extra], { encoding: 'utf8', maxBuffer: 1 << 24 });
  const methods: { name: string; warmupRuns: number; extra?: string[] }[] = [
    { name: `warm (${WARMUP} runs first)`, warmupRuns: WARMUP },
    ...(process.argv.includes('--warm-only')
      ? []
      : [
          { name: 'from one run', warmupRuns: 1 },
          { name: 'warm, one abortSignal', warmupRuns: WARMUP, extra: ['--with-shared-signal'] },
        ]),
  ];
  const figures = new Map(methods.map((m) => [m.name, [] as number[]]));
  for (let rep = 0; rep < REPS; rep++) {
    for (const method of methods) figures.get(method.name)!.push((JSON.parse(spawn(method.warmupRuns, method.extra)) as { heapMb: number }).heapMb);
    process.stderr.write(`round ${rep + 1}/${REPS} done\n`);
  }
  console.log(`\nRetained heap (heapUsed after two full collections) over ${RUNS} runs of ${STEPS} steps, each session deleted after its run; ${REPS} processes per method. Node ${process.version}`);
  for (const method of methods) {
    const values = figures.get(method.name)!;
    const sorted = [...values].sort((a, b) => a - b);
    console.log(`${method.name.padEnd(24)} median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(3)} MB, min ${sorted[0]!.toFixed(3)}, max ${sorted.at(-1)!.toFixed(3)}  (${values.map((v) => v.toFixed(3)).join(', ')})`);
  }
  if (process.argv.includes('--snapshot')) {
    for (const method of methods) {
      const { heapMb, diff } = JSON.parse(spawn(method.warmupRuns, [...(method.extra ?? []), '--with-snapshot'])) as { heapMb: number; diff: ReturnType<typeof diffHeapSnapshots> };
      console.log(`\nHeap snapshots, ${method.name} (heapUsed ${heapMb.toFixed(3)} MB in this process; snapshot total ${mb(diff.totalAfter - diff.totalBefore)}):`);
      for (const category of HEAP_CATEGORIES) console.log(`  ${category.padEnd(28)} ${mb(diff.byCategory[category]).padStart(12)}`);
      console.log(`  program data by type and constructor (net bytes, net count):`);
      for (const row of diff.programData.slice(0, 8)) console.log(`    ${String(row.bytes).padStart(8)} B ${String(row.count).padStart(6)}  ${row.label}`);
      console.log(`  the largest new objects of program data, and what holds them:`);
      for (const row of diff.largest) console.log(`    ${String(row.bytes).padStart(8)} B  ${row.label}  <- ${row.heldBy}`);
      console.log(`  new strings that are session or run ids: ${diff.idStrings.count}${diff.idStrings.examples.length > 0 ? ` (${diff.idStrings.examples.join(', ')})` : ''}`);
    }
  }
}
