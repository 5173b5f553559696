// The benches' workloads, run once each with few steps and NOT timed: they keep working, and what is
// deterministic about them (transactions per step on SQLite) holds.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString, writeHeapSnapshot } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { diffHeapSnapshots, HEAP_CATEGORIES } from './heap-snapshot.js';
import { compareReadCaches, ratioText } from './read-cache.js';
import { clockStatements, fsyncPerWrite, helixOnPageSize, layoutTransactions, pageTransactions, STEP_LAYOUTS, stepAnatomy } from './full-step.js';
import { pagesPerRow } from './row-layouts.js';
import { bareConcurrent, bareRun, generateTextRun, helixBench, memoryStores, postgresStores, promisesDuring, rawSqliteCommits, retainedHeapMb, sqliteStores, walPagesPerStep } from './workloads.js';

describe('bench smoke (untimed)', () => {
  it('the bare loop, helix in memory (each hook set, concurrent runs) and generateText complete their steps', async () => {
    expect(await bareRun(5)).toBeGreaterThanOrEqual(0);
    expect(await bareRun(5, { schemaOnce: true })).toBeGreaterThanOrEqual(0);
    expect(await bareConcurrent(3, 4)).toBeGreaterThanOrEqual(0);
    for (const hooks of ['none', 'observer', 'every-point'] as const) expect(await helixBench(memoryStores(), 5, { hooks }).run()).toBeGreaterThanOrEqual(0);
    expect(await helixBench(memoryStores(), 4).concurrent(3)).toBeGreaterThanOrEqual(0);
    expect(await helixBench(memoryStores(), 5, { aiSdkAdapter: true }).run()).toBeGreaterThanOrEqual(0);
    // The deleting variant's runs leave no session behind; the others keep theirs.
    const deleting = memoryStores();
    const kept = memoryStores();
    for (let i = 0; i < 2; i++) {
      await helixBench(deleting, 5, { deleteSessions: true }).run();
      await helixBench(kept, 5).run();
    }
    expect(deleting.stateStore.held().sessions).toBe(0);
    expect(kept.stateStore.held().sessions).toBe(2);
    expect(await generateTextRun(5)).toBeGreaterThanOrEqual(0);
  });

  it('the promises a step creates are counted, not timed: with one observer a step whose hooks, model call and tool call answer at once makes fewer than 6 (4.4 measured; 6.4 while the step was an async function of its own, 18.4 and 44 before that)', async () => {
    const perRun = async (steps: number): Promise<number> => {
      const bench = helixBench(memoryStores(), steps);
      for (let i = 0; i < 3; i++) await bench.run();
      return promisesDuring(bench.run);
    };
    // The difference of two run lengths leaves the run's start and end out.
    const perStep = ((await perRun(40)) - (await perRun(10))) / 30;
    // At least the adapter's reply and the model call's own: a count of zero means the counter broke.
    expect(perStep).toBeGreaterThanOrEqual(2);
    expect(perStep).toBeLessThan(6);
  });

  it('helix on SQLite: each further step of a run is exactly one write transaction (NORMAL and FULL), beside a working raw-commit floor', async () => {
    for (const synchronous of ['NORMAL', 'FULL'] as const) {
      // A long flush interval: only commits write queued chunks, so the count is exact.
      const stores = sqliteStores(synchronous, 60_000);
      const raw = rawSqliteCommits(synchronous);
      try {
        const count = async (steps: number): Promise<number> => {
          const before = stores.sqlite.database.writeTransactions;
          await helixBench(stores, steps).run();
          return stores.sqlite.database.writeTransactions - before;
        };
        const short = await count(3);
        const long = await count(13);
        expect((long - short) / 10).toBe(1);
        expect(raw.commits(5)).toBeGreaterThanOrEqual(0);
      } finally {
        raw.close();
        stores.close();
      }
    }
  });

  it('the read-cache bench compares the caches on and off in one process: every round measured on each side, the same write transactions per step (the caches save reads, not transactions)', async () => {
    const figures = await compareReadCaches('NORMAL', 2, 5, 1);
    for (const side of [figures.on, figures.off, figures.raw]) {
      expect(side).toHaveLength(2);
      for (const us of side) expect(us).toBeGreaterThan(0);
    }
    expect(figures.txPerStep.on).toBe(figures.txPerStep.off);
    expect(figures.txPerStep.on).toBeGreaterThan(1);
    expect(ratioText([2, 6], [1, 2])).toBe('2.50x (2.00–3.00)');
  });

  it('the log pages a SQLite step writes are counted, beside a raw commit: with a step\'s chunks in one row and its messages in its commits row, a step writes fewer than 8 pages (11.4 with schema version 3)', async () => {
    const pages = await walPagesPerStep('NORMAL', 100, 1);
    expect(pages.raw).toBeGreaterThanOrEqual(1);
    expect(pages.raw).toBeLessThan(3);
    expect(pages.step).toBeGreaterThan(pages.raw);
    expect(pages.step).toBeLessThan(8);
    // Ten runs at once: a step still writes a bounded number of pages (3.5 in all, 2.6 of them its stream's chunk row).
    const together = await walPagesPerStep('NORMAL', 20, 1, 10);
    expect(together.step).toBeGreaterThan(0.5);
    expect(together.step).toBeLessThan(8);
  });

  it('the row-layout bench counts what docs/performance.md reads from it: an index costs one run a page a row, clustering costs a group transaction of many sessions more', () => {
    const one = { append: pagesPerRow('append', 1, 1, 700, 20), clustered: pagesPerRow('clustered', 1, 1, 700, 20) };
    const many = { append: pagesPerRow('append', 10, 10, 700, 10), clustered: pagesPerRow('clustered', 10, 10, 700, 10) };
    expect(one.append - one.clustered).toBeGreaterThan(0.8);
    expect(many.clustered - many.append).toBeGreaterThan(1);
    for (const pages of [one.append, one.clustered, many.append, many.clustered]) expect(pages).toBeGreaterThan(0);
  });

  it('the FULL-step bench splits a step by its statements, beside working floors: every statement is clocked once (a step is BEGIN, COMMIT and its writes), the parts add up to the step, a file keeps the page size it was made with, and the clock puts the statements back', async () => {
    const anatomy = await stepAnatomy('NORMAL', 1, 2, 5, 20);
    expect(anatomy.commitUs).toBeGreaterThan(0);
    expect(anatomy.otherStatementsUs).toBeGreaterThan(0);
    expect(anatomy.commitUs + anatomy.otherStatementsUs + anatomy.restUs).toBeCloseTo(anatomy.stepUs, 6);
    expect(anatomy.rawUs).toBeGreaterThan(0);
    // A run's start and end cost the same whatever its length, so two lengths give a further step's statements:
    // at least BEGIN, COMMIT and the commits row, and no more than the 7 a step makes today (BEGIN, COMMIT, the
    // commits and stream rows, two total_changes reads, data_version; no journal DELETE for a run without entries).
    const longer = await stepAnatomy('NORMAL', 1, 2, 10, 20);
    const furtherStep = (longer.statementsPerStep * 20 - anatomy.statementsPerStep * 10) / 10;
    expect(furtherStep).toBeGreaterThanOrEqual(3);
    expect(furtherStep).toBeLessThanOrEqual(7);
    // The database is made (its pragmas and tables) before the clock starts, so the clock sees the transactions alone.
    const pages = pageTransactions('NORMAL', 2);
    const clock = clockStatements();
    try {
      expect(pages.transactions(3)).toBeGreaterThanOrEqual(0);
      // Three transactions of two inserts: BEGIN, two INSERTs and COMMIT each.
      expect(clock.statements).toBe(12);
    } finally {
      pages.close();
      clock.stop();
    }
    const after = clockStatements();
    after.stop();
    const unclocked = pageTransactions('NORMAL', 1);
    unclocked.transactions(2);
    unclocked.close();
    expect(after.statements).toBe(0);
    expect(fsyncPerWrite(true, 3)).toBeGreaterThan(0);
    expect(fsyncPerWrite(false, 3)).toBeGreaterThan(0);
    const small = helixOnPageSize('NORMAL', 2048, 3);
    try {
      expect(small.pageSize).toBe(2048);
      expect(await small.bench.run()).toBeGreaterThanOrEqual(0);
    } finally {
      small.close();
    }
  });

  it('the FULL-step bench\'s layouts write what each names: a step is one transaction, the commits row appended and indexed or clustered, its chunks a row apart or a column of it, and a new session every 100 steps', () => {
    const expected = {
      today: { appended: 150, clustered: 0, batches: 150 },
      'chunks-in-commit': { appended: 150, clustered: 0, batches: 0 },
      'clustered-both': { appended: 0, clustered: 150, batches: 150 },
      'one-clustered': { appended: 0, clustered: 150, batches: 0 },
    } as const;
    for (const layout of STEP_LAYOUTS) {
      const target = layoutTransactions('NORMAL', layout);
      const clock = clockStatements();
      try {
        expect(target.transactions(150)).toBeGreaterThanOrEqual(0);
        // BEGIN, COMMIT and one INSERT for each row the layout writes.
        const rows = layout === 'today' || layout === 'clustered-both' ? 2 : 1;
        expect(clock.statements, layout).toBe(150 * (2 + rows));
      } finally {
        clock.stop();
      }
      try {
        expect(target.rows(), layout).toEqual(expected[layout]);
      } finally {
        target.close();
      }
    }
  });

  it('helix on Postgres: each further step of a run is exactly one statement, beside a working raw-commit floor', async () => {
    const stores = await postgresStores();
    try {
      const count = async (steps: number): Promise<number> => {
        const before = stores.statements();
        await helixBench(stores, steps).run();
        return stores.statements() - before;
      };
      const short = await count(3);
      const long = await count(13);
      expect((long - short) / 10).toBe(1);
      expect(await stores.rawCommits(3)).toBeGreaterThanOrEqual(0);
    } finally {
      await stores.closeAll();
    }
  }, 120_000);

  it('the retained-heap workload and the snapshot diff: categories add up to the snapshots\' difference, and kept sessions show as their ids', async () => {
    // vitest's workers do not start with --expose-gc; the workload needs a full collection.
    setFlagsFromString('--expose-gc');
    (globalThis as { gc?: () => void }).gc ??= runInNewContext('gc') as () => void;
    const dir = mkdtempSync(join(tmpdir(), 'helix-heap-smoke-'));
    try {
      const path = (moment: string): string => join(dir, `${moment}.heapsnapshot`);
      const moments: string[] = [];
      const heapMb = await retainedHeapMb(5, 3, true, undefined, { warmupRuns: 2, onCollected: (moment) => (moments.push(moment), writeHeapSnapshot(path(moment))) });
      expect(moments).toEqual(['before', 'after']);
      expect(Number.isFinite(heapMb)).toBe(true);
      const diff = diffHeapSnapshots(path('before'), path('after'), /^heap-\d+$/);
      const sum = HEAP_CATEGORIES.reduce((total, category) => total + diff.byCategory[category], 0);
      expect(sum).toBe(diff.totalAfter - diff.totalBefore);
      // The five measured sessions (heap-2 to heap-6) are kept: their ids are new strings of program data.
      expect(diff.idStrings.count).toBeGreaterThanOrEqual(5);
      expect(diff.byCategory['program data']).toBeGreaterThan(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
