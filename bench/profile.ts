// Where a helix step's time goes: runs one workload of bench/workloads.ts under V8's CPU profiler (through
// node:inspector, in this process) and prints the functions with the most self time, grouped by function and
// file, with garbage collection and idle time as their own rows. The figure to read is the share of each row.
// With --alloc it runs V8's sampling heap profiler instead (objects that were collected included), and prints
// the bytes allocated per step and the functions that allocate them: a figure a loaded machine cannot blur.
// With --lines it prints the source lines with the most self time instead (V8's position ticks; the lines of
// the built files under dist/, which tsc keeps close to the source).
// Run: npm run bench:profile   (options: --workload memory|sqlite-normal|sqlite-full --steps 200 --seconds 5 --top 25 --alloc --inclusive --lines --concurrent 100
// --checkpoint inline|background)
import { readFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { fileURLToPath } from 'node:url';
import type { SqliteCheckpointMode } from '@helix-agents/store-sqlite';
import { helixBench, memoryStores, sqliteStores, type BenchStores } from './workloads.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback;
}

const WORKLOAD = arg('workload', 'memory');
const STEPS = Number(arg('steps', '200'));
const SECONDS = Number(arg('seconds', '5'));
const TOP = Number(arg('top', '25'));
const ALLOC = process.argv.includes('--alloc');
// With --inclusive a function's row counts the samples in it or in anything it called (each function once a
// sample). A resumed async function runs from the microtask queue, so its caller's row does not include it.
const INCLUSIVE = process.argv.includes('--inclusive');
const LINES = process.argv.includes('--lines');
// With --concurrent C the workload is C runs at once (bench.concurrent), as the bench's concurrent variant.
const CONCURRENT = Number(arg('concurrent', '1'));
// Inline by default: V8's sampler interrupts the main thread with a signal every sample, which cuts SQLite's
// busy-wait sleeps short, so a commit that meets the background thread's restarting checkpoint gives up
// after milliseconds instead of its 5 s timeout. `--checkpoint background` profiles the default anyway.
const CHECKPOINT: SqliteCheckpointMode = arg('checkpoint', 'inline') === 'background' ? 'background' : 'inline';

/** The parts of a V8 CPU profile this script reads. */
interface ProfileNode {
  readonly id: number;
  readonly children?: readonly number[];
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  /** Self samples by line (1-based) of the function's script. */
  readonly positionTicks?: readonly { readonly line: number; readonly ticks: number }[];
}
interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples?: readonly number[];
}
/** A node of V8's sampling heap profile: its frame, the bytes sampled in it, and its callees. */
interface HeapNode {
  readonly callFrame: ProfileNode['callFrame'];
  readonly selfSize: number;
  readonly children: readonly HeapNode[];
}

function storesFor(workload: string): BenchStores {
  if (workload === 'memory') return memoryStores();
  if (workload === 'sqlite-normal') return sqliteStores('NORMAL', undefined, CHECKPOINT);
  if (workload === 'sqlite-full') return sqliteStores('FULL', undefined, CHECKPOINT);
  throw new Error(`unknown --workload ${workload} (memory, sqlite-normal, sqlite-full)`);
}

/** A short, stable label for a frame: the function and the file it is in (path from the repository). */
function label(node: ProfileNode): string {
  const { functionName, url } = node.callFrame;
  if (url === '') return `(${functionName || 'native'})`;
  const file = url.replace(/^file:\/\//, '').replace(/.*\/(packages|bench|node_modules)\//, '$1/');
  return `${functionName || '(anonymous)'}  ${file}`;
}

const stores = storesFor(WORKLOAD);
const bench = helixBench(stores, STEPS);
for (let i = 0; i < Math.ceil(20_000 / STEPS); i++) await bench.run();

const session = new Session();
session.connect();
let runs = 0;
/** Runs the workload for SECONDS; returns the number of runs. */
async function drive(): Promise<number> {
  let count = 0;
  const until = performance.now() + SECONDS * 1000;
  while (performance.now() < until) {
    if (CONCURRENT > 1) await bench.concurrent(CONCURRENT);
    else await bench.run();
    count += CONCURRENT;
  }
  return count;
}
const counts = new Map<string, number>();
let total = 0;
let lineProfile: CpuProfile | undefined;
if (ALLOC) {
  // Every object counts, the short-lived ones too: they are what a step's garbage is made of.
  await session.post('HeapProfiler.enable');
  await session.post('HeapProfiler.startSampling', { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  runs = await drive();
  const { profile } = (await session.post('HeapProfiler.stopSampling')) as { profile: { head: HeapNode } };
  const walk = (node: HeapNode): void => {
    if (node.selfSize > 0) {
      const key = label({ id: 0, callFrame: node.callFrame });
      counts.set(key, (counts.get(key) ?? 0) + node.selfSize);
      total += node.selfSize;
    }
    for (const child of node.children) walk(child);
  };
  walk(profile.head);
} else {
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
  runs = await drive();
  const { profile } = (await session.post('Profiler.stop')) as { profile: CpuProfile };
  lineProfile = profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parentOf = new Map<number, number>();
  for (const n of profile.nodes) for (const child of n.children ?? []) parentOf.set(child, n.id);
  for (const id of profile.samples ?? []) {
    const node = byId.get(id);
    if (!node) continue;
    total++;
    if (LINES) continue;
    if (!INCLUSIVE) {
      const key = label(node);
      counts.set(key, (counts.get(key) ?? 0) + 1);
      continue;
    }
    const seen = new Set<string>();
    for (let at: ProfileNode | undefined = node; at; at = byId.get(parentOf.get(at.id) ?? -1)) seen.add(label(at));
    for (const key of seen) counts.set(key, (counts.get(key) ?? 0) + 1);
  }
}
session.disconnect();
stores.close();

/** The text of line `line` (1-based) of the script at `url`, trimmed and cut to 110 characters. */
function sourceLine(url: string, line: number): string {
  try {
    const text = readFileSync(fileURLToPath(url), 'utf8').split('\n')[line - 1] ?? '';
    return text.trim().slice(0, 110);
  } catch {
    return '';
  }
}

if (LINES && lineProfile) {
  for (const node of lineProfile.nodes) {
    for (const { line, ticks } of node.positionTicks ?? []) {
      const key = `${label(node)}:${line}  ${node.callFrame.url.startsWith('file:') ? sourceLine(node.callFrame.url, line) : ''}`;
      counts.set(key, (counts.get(key) ?? 0) + ticks);
    }
  }
}

const steps = runs * STEPS;
const rows = [...counts.entries()].sort((a, b) => b[1] - a[1]).slice(0, TOP);
if (ALLOC) {
  process.stdout.write(`${WORKLOAD}, N=${STEPS}: ${runs} runs (${steps} steps); ${(total / steps / 1024).toFixed(1)} KB allocated per step (sampled); by function\n`);
  for (const [key, bytes] of rows) process.stdout.write(`${((bytes / total) * 100).toFixed(1).padStart(5)}%  ${(bytes / steps).toFixed(0).padStart(6)} B/step  ${key}\n`);
} else {
  process.stdout.write(`${WORKLOAD}, N=${STEPS}: ${runs} runs (${steps} steps) in ${SECONDS} s, ${total} samples; ${LINES ? 'self time by line' : INCLUSIVE ? 'inclusive time by function' : 'self time by function'}\n`);
  for (const [key, count] of rows) process.stdout.write(`${((count / total) * 100).toFixed(1).padStart(5)}%  ${key}\n`);
}
