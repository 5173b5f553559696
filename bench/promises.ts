// Promises a helix step creates, counted with an async_hooks PROMISE hook over one run of each hook set
// after a warm-up: a figure the load of a shared machine cannot blur. Each promise is an allocation and,
// when awaited, a suspended frame and a turn of the microtask queue. With --top N it also prints the
// functions that create them (the frame that made each promise).
// Run: npm run bench:promises   (options: --steps 200 --top 0)
import { helixBench, memoryStores, promisesDuring, type HookSet } from './workloads.js';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const STEPS = arg('steps', 200);
const TOP = arg('top', 0);

/** Promises per step of one run of `hooks` (after 20 warm-up runs), and by creating frame when TOP > 0. */
async function count(hooks: HookSet): Promise<{ perStep: number; byFrame: [string, number][] }> {
  const bench = helixBench(memoryStores(), STEPS, { hooks });
  for (let i = 0; i < 20; i++) await bench.run();
  const frames = new Map<string, number>();
  const total = await promisesDuring(bench.run, () => {
    if (TOP <= 0) return;
    // The first frame outside node's own async_hooks machinery and the counting hook made the promise; a promise
    // made by a built-in (then, resolve, all) is named with the frame that called the built-in.
    const stack = (new Error().stack ?? '').split('\n').filter((line) => line.includes(' at ') && !line.includes('node:internal') && !line.includes('AsyncHook.init') && !line.includes('promisesDuring') && !line.includes('bench/promises.ts'));
    const first = stack.findIndex((line) => !line.includes('(<anonymous>)'));
    const where = stack
      .slice(0, first + 1)
      .map((line) => line.trim().replace(/^at /, '').replace(/\(.*\/(packages|bench)\//, '($1/'))
      .join(' < ') || '(unknown)';
    frames.set(where, (frames.get(where) ?? 0) + 1);
  });
  return { perStep: total / STEPS, byFrame: [...frames].sort((a, b) => b[1] - a[1]).slice(0, TOP) };
}

Error.stackTraceLimit = 12;
for (const hooks of ['none', 'observer', 'every-point'] as const) {
  const { perStep, byFrame } = await count(hooks);
  console.log(`${hooks.padEnd(12)} ${perStep.toFixed(1)} promises per step (N=${STEPS})`);
  for (const [where, n] of byFrame) console.log(`  ${(n / STEPS).toFixed(2).padStart(6)}  ${where}`);
}
