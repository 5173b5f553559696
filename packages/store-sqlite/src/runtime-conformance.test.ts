// The runtime conformance suite on runtime-js over the SQLite stores (a fresh database file per
// scenario), and the check that every scenario's trace on SQLite equals its trace on the in-memory stores.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { InMemoryStateStore, InMemoryStreamManager } from '@helix-agents/sdk';
import { describeRuntimeConformance, jsRuntimeFactory, runRuntimeScenario, runtimeScenarios, type ConformanceStores } from '@helix-agents/sdk/conformance';
import { describe, expect, it } from 'vitest';
import { openSqliteStores } from './open.js';

function sqliteStores(): ConformanceStores {
  const folder = mkdtempSync(join(tmpdir(), 'helix-runtime-conformance-'));
  const stores = openSqliteStores({ path: join(folder, 'helix.db') });
  return {
    stateStore: stores.stateStore,
    streamManager: stores.streamManager,
    close: () => {
      stores.close();
      rmSync(folder, { recursive: true, force: true });
    },
  };
}

const sqlite = jsRuntimeFactory({ llmAdapter: new VercelAIAdapter(), openStores: sqliteStores });
const memory = jsRuntimeFactory({
  llmAdapter: new VercelAIAdapter(),
  openStores: () => ({ stateStore: new InMemoryStateStore(), streamManager: new InMemoryStreamManager(), close: () => undefined }),
});

describeRuntimeConformance('JSAgentExecutor on the SQLite stores', sqlite);

describe('runtime traces: SQLite equals memory for every scenario', () => {
  for (const scenario of runtimeScenarios) {
    it(scenario.name, async () => {
      const onMemory = await runRuntimeScenario(scenario, memory);
      const onSqlite = await runRuntimeScenario(scenario, sqlite);
      expect(onSqlite.trace).toEqual(onMemory.trace);
      // Two empty traces (a factory that failed on both) would be equal too.
      expect(onMemory.trace.runs.length).toBeGreaterThan(0);
    }, 60_000);
  }
});
