// Issue 12 on DBOS: DBOSAgentExecutor journals every model reply (journalModelReplies 'always'), so a step
// a dead worker left uncommitted replays its reply instead of calling the model again (the kill itself is
// tests/crash/dbos-model-replies.test.ts); and the usage of a run (handle.getUsageRollup and the usage
// store) has the same totals on DBOS as on runtime-js for the same run on the same Postgres.
import { z } from 'zod';
import { defineAgent, defineTool, InMemoryUsageStore, JSAgentExecutor, silentLogger, type UsageRollup } from '@helix-agents/sdk';
import type { JournalEntry, StateStore } from '@helix-agents/sdk/store';
import { createScriptedModel } from '@helix-agents/sdk/testing';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { expect, it } from 'vitest';
import { DBOSAgentExecutor } from './index.js';
import { useDBOSHarness } from './__tests__/harness.js';

const harness = useDBOSHarness();

/** An agent with pure tools only (one that fails), two tool steps and a final text; every reply reports usage. */
function pureAgent(name: string) {
  const add = defineTool({ name: 'add', description: 'adds', inputSchema: z.object({ by: z.number() }), execute: ({ by }) => ({ added: by }) });
  const broken = defineTool({
    name: 'broken',
    description: 'fails',
    inputSchema: z.object({}),
    execute: () => {
      throw new Error('no');
    },
  });
  return defineAgent({
    name,
    llmConfig: {
      model: createScriptedModel([
        { toolCalls: [{ name: 'add', args: { by: 1 }, id: 'a1' }, { name: 'broken', args: {}, id: 'b1' }], usage: { inputTokens: 10, outputTokens: 3, cachedInputTokens: 2 } },
        { toolCalls: [{ name: 'add', args: { by: 2 }, id: 'a2' }], usage: { inputTokens: 20, outputTokens: 4 } },
        { text: 'done', usage: { inputTokens: 30, outputTokens: 5, reasoningTokens: 1 } },
      ]),
    },
    tools: [add, broken],
  });
}

/** The store, with every journal entry appended through it kept. */
function journaled<S extends StateStore>(store: S) {
  const entries: JournalEntry[] = [];
  const proxy = new Proxy(store, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (prop === 'appendJournal') return (entry: JournalEntry) => (entries.push(entry), target.appendJournal(entry));
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store: proxy, entries };
}

it("DBOSAgentExecutor journals every model reply (journalModelReplies 'always'): an agent without side-effecting tools writes a model_reply entry per step; runtime-js by default writes none", async () => {
  const dbosStores = await harness.open();
  const onDbos = journaled(dbosStores.stateStore);
  const dbos = new DBOSAgentExecutor(onDbos.store, dbosStores.streamManager, new VercelAIAdapter(), { logger: silentLogger, name: harness.unique('replies') });
  const ran = await (await dbos.execute(pureAgent(harness.unique('pure')), 'go')).result();
  expect(ran.status).toBe('completed');
  const replies = onDbos.entries.filter((e) => e.kind === 'model_reply');
  expect(replies.map((e) => e.key)).toEqual(['model_reply:0', 'model_reply:1', 'model_reply:2']);
  expect(replies.every((e) => e.runId === ran.runId)).toBe(true);
  await dbos.close();

  const jsStores = await harness.open();
  const onJs = journaled(jsStores.stateStore);
  const js = new JSAgentExecutor(onJs.store, jsStores.streamManager, new VercelAIAdapter(), { logger: silentLogger });
  expect((await (await js.execute(pureAgent('pure-js'), 'go')).result()).status).toBe('completed');
  expect(onJs.entries.filter((e) => e.kind === 'model_reply')).toEqual([]);
}, 60_000);

/** A rollup without durations (timings differ between any two runs). */
function totals(rollup: UsageRollup | undefined) {
  if (!rollup) return undefined;
  const byTool = Object.fromEntries(Object.entries(rollup.toolStats.byTool).map(([tool, s]) => [tool, { calls: s.calls, failures: s.failures }]));
  return { tokens: rollup.tokens, modelCalls: rollup.modelCalls, failedModelCalls: rollup.failedModelCalls, toolCalls: rollup.toolStats.totalCalls, toolFailures: rollup.toolStats.failures, byTool };
}

it('getUsageRollup on DBOS gives the same totals as runtime-js for the same run on the same Postgres (tokens, model calls, tool calls and failures), from the handle and from the usage store', async () => {
  const dbosStores = await harness.open();
  const dbos = new DBOSAgentExecutor(dbosStores.stateStore, dbosStores.streamManager, new VercelAIAdapter(), { logger: silentLogger, name: harness.unique('usage') });
  const onDbos = await dbos.execute(pureAgent(harness.unique('usage-agent')), 'go');
  expect((await onDbos.result()).status).toBe('completed');

  const jsStores = await harness.open();
  const js = new JSAgentExecutor(jsStores.stateStore, jsStores.streamManager, new VercelAIAdapter(), { logger: silentLogger });
  const onJs = await js.execute(pureAgent('usage-js'), 'go', { usageStore: jsStores.usageStore });
  expect((await onJs.result()).status).toBe('completed');

  const expected = totals(await onJs.getUsageRollup());
  expect(expected).toEqual({
    tokens: { prompt: 60, completion: 12, total: 72, cached: 2, cacheWrite: 0, reasoning: 1 },
    modelCalls: 3,
    failedModelCalls: 0,
    toolCalls: 3,
    toolFailures: 1,
    byTool: { add: { calls: 2, failures: 0 }, broken: { calls: 1, failures: 1 } },
  });
  expect(totals(await onDbos.getUsageRollup())).toEqual(expected);
  expect(totals(await dbosStores.usageStore.getRollup({ runId: onDbos.runId }))).toEqual(expected);
  expect(totals(await dbosStores.usageStore.getRollup({ sessionId: onDbos.sessionId }))).toEqual(expected);
  await dbos.close();
}, 60_000);

it('DBOSAgentExecutor.deleteSession drops the session\'s entries from its separate usageStore, even on an executor (worker) that never ran the session', async () => {
  const stores = await harness.open();
  const usage = new InMemoryUsageStore();
  const runner = new DBOSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { logger: silentLogger, name: harness.unique('usage-runner'), usageStore: usage });
  const agent = pureAgent(harness.unique('usage-deleted'));
  const gone = await (await runner.execute(agent, 'go')).result();
  const kept = await (await runner.execute(pureAgent(harness.unique('usage-kept')), 'go')).result();
  expect([gone.status, kept.status]).toEqual(['completed', 'completed']);
  const keptEntries = usage.entries({ sessionId: kept.sessionId }).length;
  expect(usage.entries({ sessionId: gone.sessionId }).length).toBeGreaterThan(0);
  const deleter = new DBOSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { logger: silentLogger, name: harness.unique('usage-deleter'), usageStore: usage });
  expect(await deleter.deleteSession(gone.sessionId)).toBe(true);
  expect(usage.entries({ sessionId: gone.sessionId })).toEqual([]);
  expect(usage.entries({ sessionId: kept.sessionId })).toHaveLength(keptEntries);
  expect(await deleter.getSession(gone.sessionId)).toBeUndefined();
  await deleter.close();
  await runner.close();
}, 60_000);
