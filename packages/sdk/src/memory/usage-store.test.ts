import { describe, expect, it } from 'vitest';
import { InMemoryStateStore, InMemoryUsageStore, mergeRollups, rollupUsage, type UsageEntry } from '../index.js';
import { runUsageStoreConformance } from '../conformance/index.js';

runUsageStoreConformance({ name: 'InMemoryUsageStore', create: () => new InMemoryUsageStore() });
// The in-memory state store is a usage store too (usage can be recorded with a commit).
runUsageStoreConformance({ name: 'InMemoryStateStore as a UsageStore', create: () => new InMemoryStateStore() });

describe('rollups keep every tool name a plain key', () => {
  const entry = (toolName: string): UsageEntry => ({ kind: 'tool', sessionId: 's', runId: 'r', stepIndex: 0, toolName, toolCallId: `c-${toolName}`, success: true, durationMs: 2, at: 0 });

  it('tools named constructor, __proto__ or toString are counted under their names, and no prototype changes (rollupUsage and mergeRollups)', () => {
    const names = ['constructor', '__proto__', 'toString', 'search'];
    const own = rollupUsage(names.map(entry));
    const merged = mergeRollups(own, [{ sessionId: 'c', runId: 'rc', rollup: rollupUsage(names.map(entry)) }]);
    for (const name of names) {
      expect(Object.hasOwn(own.toolStats.byTool, name)).toBe(true);
      expect(own.toolStats.byTool[name]).toEqual({ calls: 1, failures: 0, totalDurationMs: 2 });
      expect(merged.toolStats.byTool[name]).toEqual({ calls: 2, failures: 0, totalDurationMs: 4 });
    }
    expect((Object as unknown as Record<string, unknown>)['calls']).toBeUndefined();
    expect(({} as Record<string, unknown>)['calls']).toBeUndefined();
    expect(Object.keys(merged.toolStats.byTool).sort()).toEqual([...names].sort());
  });
});

describe('InMemoryUsageStore.deleteSession', () => {
  const llm = (sessionId: string, runId: string): UsageEntry => ({ kind: 'llm', sessionId, runId, stepIndex: 0, attempt: 1, model: 'm', success: true, usage: { promptTokens: 3, completionTokens: 2, totalTokens: 5 }, durationMs: 1, at: 0 });

  it('drops only that session\'s entries and says whether it held any', async () => {
    const store = new InMemoryUsageStore();
    await store.record([llm('a', 'a1'), llm('b', 'b1'), llm('a', 'a2')]);
    expect(await store.deleteSession('a')).toBe(true);
    expect(store.entries({ sessionId: 'a' })).toEqual([]);
    expect(store.entries()).toEqual([llm('b', 'b1')]);
    expect((await store.getRollup({ runId: 'a2' })).modelCalls).toBe(0);
    expect(await store.deleteSession('a')).toBe(false);
    expect(await store.deleteSession('never')).toBe(false);
    await store.record([llm('a', 'a3')]);
    expect(store.entries({ sessionId: 'a' })).toHaveLength(1);
  });
});
