// The SQLite read caches (issue 17 item 3; docs/durability.md "The read caches"): a helix step on SQLite
// with the per-connection caches of the commit fence and the stream head on and off, in ONE process,
// interleaved round by round with a raw row commit on the same machine (the floor of bench/loop.ts).
// Every figure is a mean over the steps of a round; the table gives the median and spread (min–max) of
// the per-round ratios. Nothing here is a timed assertion.
// Run: node --conditions=helix-source --import tsx bench/read-cache.ts   (options: --rounds 10 --runs 5 --steps 100 --sync NORMAL,FULL)
import { helixBench, median, rawSqliteCommits, sqliteStores } from './workloads.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback;
}

/** What one comparison measured: per-round µs per step (caches on, off) and µs per raw commit. */
export interface ReadCacheFigures {
  readonly synchronous: 'NORMAL' | 'FULL';
  readonly on: readonly number[];
  readonly off: readonly number[];
  readonly raw: readonly number[];
  /** Write transactions per step with the caches on and off (the same: the caches save reads, not transactions). */
  readonly txPerStep: { readonly on: number; readonly off: number };
}

/**
 * Runs `rounds` rounds of: `runs` helix runs of `steps` steps with the caches on, as many with them off (the
 * order alternating), and as many raw commits as steps; after `warmupRuns` runs of each. Returns the
 * per-round means (µs per step or commit).
 */
export async function compareReadCaches(synchronous: 'NORMAL' | 'FULL', rounds: number, steps: number, warmupRuns: number, runs = 1): Promise<ReadCacheFigures> {
  const on = sqliteStores(synchronous, undefined, undefined, true);
  const off = sqliteStores(synchronous, undefined, undefined, false);
  const raw = rawSqliteCommits(synchronous);
  try {
    const benchOn = helixBench(on, steps);
    const benchOff = helixBench(off, steps);
    for (let i = 0; i < warmupRuns; i++) {
      await benchOn.run();
      await benchOff.run();
    }
    raw.commits(warmupRuns * steps);
    const figures = { on: [] as number[], off: [] as number[], raw: [] as number[] };
    const tx = { on: 0, off: 0 };
    const timedRun = async (which: 'on' | 'off'): Promise<void> => {
      const stores = which === 'on' ? on : off;
      const before = stores.sqlite.database.writeTransactions;
      let ms = 0;
      for (let i = 0; i < runs; i++) ms += await (which === 'on' ? benchOn : benchOff).run();
      figures[which].push((ms / (runs * steps)) * 1000);
      tx[which] += stores.sqlite.database.writeTransactions - before;
    };
    for (let r = 0; r < rounds; r++) {
      // Alternate who goes first, so that neither always runs after the other's checkpoint.
      for (const which of r % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const)) await timedRun(which);
      figures.raw.push((raw.commits(runs * steps) / (runs * steps)) * 1000);
    }
    return { synchronous, ...figures, txPerStep: { on: tx.on / (rounds * runs * steps), off: tx.off / (rounds * runs * steps) } };
  } finally {
    raw.close();
    on.close();
    off.close();
  }
}


/** The per-round ratios a/b as "median (min–max)". */
export function ratioText(a: readonly number[], b: readonly number[]): string {
  const ratios = a.map((x, i) => x / b[i]!);
  return `${median(ratios).toFixed(2)}x (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`;
}

if (process.argv[1]?.endsWith('read-cache.ts')) {
  const rounds = Number(arg('rounds', '10'));
  const runs = Number(arg('runs', '5'));
  const steps = Number(arg('steps', '100'));
  const modes = arg('sync', 'NORMAL,FULL').split(',') as ('NORMAL' | 'FULL')[];
  console.log(`SQLite read caches on vs off: ${rounds} interleaved rounds of ${runs} runs of ${steps} steps each side, beside ${runs * steps} raw row commits per round. Node ${process.version}\n`);
  const rows = [['synchronous', 'µs/step on', 'µs/step off', 'µs/raw commit', 'off / on', 'on / raw', 'off / raw', 'tx/step on', 'tx/step off']];
  for (const synchronous of modes) {
    const f = await compareReadCaches(synchronous, rounds, steps, synchronous === 'FULL' ? 20 : 200, synchronous === 'FULL' ? Math.max(1, runs >> 1) : runs);
    rows.push([
      synchronous,
      median(f.on).toFixed(1),
      median(f.off).toFixed(1),
      median(f.raw).toFixed(1),
      ratioText(f.off, f.on),
      ratioText(f.on, f.raw),
      ratioText(f.off, f.raw),
      f.txPerStep.on.toFixed(2),
      f.txPerStep.off.toFixed(2),
    ]);
  }
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  for (const row of rows) console.log(row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  '));
}
