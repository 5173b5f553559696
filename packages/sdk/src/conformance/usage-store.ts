import { describe, expect, it } from 'vitest';
import type { UsageEntry, UsageStore } from '../usage.js';
import { rollupUsage } from '../usage.js';
import { llmUsageEntry, T0 } from './fixtures.js';

/** How the usage conformance suite gets fresh usage stores. */
export interface UsageStoreConformanceOptions {
  /** A display name for the describe block. */
  readonly name: string;
  /** A new, empty usage store (an empty database) for each test. */
  readonly create: () => UsageStore | Promise<UsageStore>;
  /** Called after each test with the store `create` returned. */
  readonly destroy?: (store: UsageStore) => void | Promise<void>;
}

function tool(sessionId: string, runId: string, toolName: string, success = true, durationMs = 4): UsageEntry {
  return { kind: 'tool', sessionId, runId, stepIndex: 0, toolName, toolCallId: `${runId}-${toolName}`, success, durationMs, at: T0 };
}

/**
 * The conformance suite every {@link UsageStore} must pass (call it from the implementation's tests; it
 * uses vitest): recorded entries roll up exactly as {@link rollupUsage} folds them, by run, by session
 * and overall.
 */
export function runUsageStoreConformance(options: UsageStoreConformanceOptions): void {
  function withStore(fn: (store: UsageStore) => Promise<void>): () => Promise<void> {
    return async () => {
      const store = await options.create();
      try {
        await fn(store);
      } finally {
        await options.destroy?.(store);
      }
    };
  }

  describe(`UsageStore conformance: ${options.name}`, () => {
    it('an empty store rolls up to zero', withStore(async (store) => {
      expect(await store.getRollup({})).toEqual(rollupUsage([]));
      expect(await store.getRollup({ sessionId: 's1' })).toEqual(rollupUsage([]));
    }));

    it('rolls up by run, by session, by both and overall exactly as rollupUsage folds the entries', withStore(async (store) => {
      const a = [llmUsageEntry('s1', 'r1', 0, { prompt: 10, completion: 5, cached: 3, cacheWrite: 2, reasoning: 1 }), tool('s1', 'r1', 'search'), tool('s1', 'r1', 'search', false, 7)];
      const b = [llmUsageEntry('s1', 'r2', 0, { prompt: 4, completion: 1 }, false), llmUsageEntry('s1', 'r2', 1, undefined), tool('s1', 'r2', 'fetch')];
      const c = [llmUsageEntry('s2', 'r3', 0, { prompt: 100, completion: 50 })];
      await store.record(a);
      await store.record(b);
      await store.record(c);
      await store.record([]);
      expect(await store.getRollup({ runId: 'r1' })).toEqual(rollupUsage(a));
      expect(await store.getRollup({ runId: 'r2' })).toEqual(rollupUsage(b));
      expect(await store.getRollup({ sessionId: 's1' })).toEqual(rollupUsage([...a, ...b]));
      expect(await store.getRollup({ sessionId: 's1', runId: 'r3' })).toEqual(rollupUsage([]));
      expect(await store.getRollup({ sessionId: 's2', runId: 'r3' })).toEqual(rollupUsage(c));
      expect(await store.getRollup({})).toEqual(rollupUsage([...a, ...b, ...c]));
      expect(await store.getRollup({ sessionId: 's1' })).toMatchObject({
        tokens: { prompt: 14, completion: 6, total: 20, cached: 3, cacheWrite: 2, reasoning: 1 },
        modelCalls: 3,
        failedModelCalls: 1,
        toolStats: { totalCalls: 3, failures: 1, byTool: { search: { calls: 2, failures: 1, totalDurationMs: 11 }, fetch: { calls: 1, failures: 0, totalDurationMs: 4 } } },
      });
    }));

    it('every record call adds its entries, even identical ones', withStore(async (store) => {
      const entry = llmUsageEntry('s1', 'r1', 0, { prompt: 1, completion: 1 });
      await store.record([entry]);
      await store.record([entry]);
      expect((await store.getRollup({ runId: 'r1' })).modelCalls).toBe(2);
    }));

    it('keeps many entries', withStore(async (store) => {
      const entries = Array.from({ length: 2_000 }, (_, i) => (i % 3 === 0 ? tool('s1', `r${i % 7}`, `t${i % 5}`, i % 4 !== 0, i) : llmUsageEntry('s1', `r${i % 7}`, i, { prompt: i, completion: 1 }, i % 11 !== 0)));
      for (let i = 0; i < entries.length; i += 100) await store.record(entries.slice(i, i + 100));
      expect(await store.getRollup({ sessionId: 's1' })).toEqual(rollupUsage(entries));
      expect(await store.getRollup({ runId: 'r3' })).toEqual(rollupUsage(entries.filter((e) => e.runId === 'r3')));
    }));
  });
}
