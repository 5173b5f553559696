import { JSAgentExecutor, rollupUsage, silentLogger } from '@helix-agents/sdk';
import type { UsageEntry } from '@helix-agents/sdk';
import { createAddLoop } from '@helix-agents/sdk/testing';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { useTempDatabases } from './__tests__/temp-databases.js';
import { handleOf } from './database.js';
import { openSqliteStores } from './open.js';
import type { SqliteStores } from './open.js';
import { usageColumn, usageEntries } from './usage-store.js';

const SESSION = 'session-1';
const RUN = 'run-1';

/** An entry of the row's own session and run, or of another session or run (a child's, rolled into its parent's commit). */
const entryArb: fc.Arbitrary<UsageEntry> = fc.record({
  sessionId: fc.constantFrom(SESSION, SESSION, 'child-session'),
  runId: fc.constantFrom(RUN, RUN, 'child-run'),
  stepIndex: fc.nat(1000),
  success: fc.boolean(),
  durationMs: fc.double({ min: 0, max: 1e6, noNaN: true }),
  at: fc.integer({ min: 0, max: 2 ** 42 }),
  tool: fc.option(fc.string(), { nil: undefined }),
  tokens: fc.option(fc.record({ promptTokens: fc.nat(), completionTokens: fc.nat(), totalTokens: fc.nat() }), { nil: undefined }),
}).map(({ tool, tokens, ...common }): UsageEntry =>
  tool === undefined
    ? { kind: 'llm', ...common, attempt: 1, model: 'm', usage: tokens }
    : { kind: 'tool', ...common, toolName: tool, toolCallId: `c${common.stepIndex}` },
);

/** Runs the add loop of `steps` steps to its end on `stores`, its usage recorded with its commits. */
async function addLoopRun(stores: SqliteStores, steps: number): Promise<{ sessionId: string; runId: string }> {
  const loop = createAddLoop(steps);
  const executor = new JSAgentExecutor(stores.stateStore, stores.streamManager, loop.adapter, { logger: silentLogger });
  const handle = await executor.execute(loop.agent, 'go', { usageStore: stores.usageStore });
  return handle.result();
}

describe('SQLite usage in a commits row (schema version 6)', () => {
  const temp = useTempDatabases('helix-sqlite-usage-');

  it('any entries read back as recorded, whether of the row\'s own session and run (stored without those ids) or another\'s (stored whole)', () => {
    fc.assert(
      fc.property(fc.array(entryArb, { maxLength: 6 }), (entries) => {
        const column = usageColumn(entries, SESSION, RUN);
        if (entries.length === 0) {
          expect(column).toBeNull();
          return;
        }
        const stored = JSON.parse(column!) as Record<string, unknown>[];
        // Only the entries of another session or run carry ids; each entry's fields otherwise stay as recorded.
        expect(stored.map((e) => 'sessionId' in e)).toEqual(entries.map((e) => e.sessionId !== SESSION || e.runId !== RUN));
        expect(usageEntries(column!, SESSION, RUN)).toEqual(JSON.parse(JSON.stringify(entries)));
      }),
      { numRuns: 300 },
    );
  });

  it('a run\'s commits rows do not repeat its session and run ids in their usage, and the rollup by session and by run is the one its entries fold to', async () => {
    const stores = openSqliteStores({ path: temp.path() });
    try {
      const { sessionId, runId } = await addLoopRun(stores, 4);
      const db = handleOf(stores.database);
      const columns = db.prepare('SELECT usage FROM commits WHERE usage IS NOT NULL').pluck().all() as string[];
      // Four model calls and three tool calls, in the commits of their steps.
      const stored = columns.flatMap((c) => JSON.parse(c) as Record<string, unknown>[]);
      expect(stored.map((e) => e.kind).sort()).toEqual(['llm', 'llm', 'llm', 'llm', 'tool', 'tool', 'tool']);
      for (const column of columns) {
        expect(column).not.toContain(sessionId);
        expect(column).not.toContain(runId);
      }
      const bySession = await stores.usageStore.getRollup({ sessionId });
      expect(bySession.modelCalls).toBe(4);
      expect(bySession.toolStats.byTool.add?.calls).toBe(3);
      expect(await stores.usageStore.getRollup({ runId })).toEqual(bySession);
      expect(await stores.usageStore.getRollup({})).toEqual(bySession);
      expect(await stores.usageStore.getRollup({ runId: 'another-run' })).toEqual(rollupUsage([]));
      // A row written before version 6 holds whole entries: the same rollup reads from it.
      const whole = columns.map((c) => JSON.stringify(usageEntries(c, sessionId, runId)));
      expect(whole.every((c) => c.includes(runId))).toBe(true);
      const update = db.prepare('UPDATE commits SET usage = ? WHERE usage = ?');
      columns.forEach((c, i) => update.run(whole[i], c));
      expect(await stores.usageStore.getRollup({ sessionId })).toEqual(bySession);
      expect(await stores.usageStore.getRollup({ runId })).toEqual(bySession);
    } finally {
      stores.close();
    }
  });

  it('a commit\'s entry of another run is stored with its ids: its session\'s rollup counts it, the committing run\'s does not', async () => {
    const stores = openSqliteStores({ path: temp.path() });
    try {
      const { sessionId, runId } = await addLoopRun(stores, 2);
      const db = handleOf(stores.database);
      const id = db.prepare('SELECT id FROM commits WHERE usage IS NOT NULL ORDER BY id LIMIT 1').pluck().get() as number;
      const column = db.prepare('SELECT usage FROM commits WHERE id = ?').pluck().get(id) as string;
      const child: UsageEntry = { kind: 'tool', sessionId, runId: 'child-run', stepIndex: 0, toolName: 'lookup', toolCallId: 'k1', success: true, durationMs: 2, at: 5 };
      const entries = [...usageEntries(column, sessionId, runId), child];
      db.prepare('UPDATE commits SET usage = ? WHERE id = ?').run(usageColumn(entries, sessionId, runId), id);
      expect(JSON.parse(db.prepare('SELECT usage FROM commits WHERE id = ?').pluck().get(id) as string).at(-1)).toEqual(child);
      expect((await stores.usageStore.getRollup({ runId })).toolStats.byTool.lookup).toBeUndefined();
      expect((await stores.usageStore.getRollup({ sessionId })).toolStats.byTool.lookup?.calls).toBe(1);
    } finally {
      stores.close();
    }
  });
});
