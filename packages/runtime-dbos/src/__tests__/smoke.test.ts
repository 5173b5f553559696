import { defineAgent } from '@helix-agents/sdk';
import { createScriptedModel } from '@helix-agents/sdk/testing';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { openPostgresStores } from '@helix-agents/store-postgres';
import { startTestPostgres, type TestPostgres } from '@helix-agents/store-postgres/testing';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DBOSAgentExecutor, launchDBOSWorker, type DBOSWorker } from '../index.js';

let postgres: TestPostgres;
let worker: DBOSWorker;
let pool: pg.Pool;
beforeAll(async () => {
  postgres = await startTestPostgres();
  worker = await launchDBOSWorker({ systemDatabaseUrl: postgres.connectionString.replace(/\/postgres$/, '/dbos_sys'), executorId: 'w1', applicationVersion: 'test' });
  pool = new pg.Pool({ connectionString: postgres.connectionString });
}, 120_000);
afterAll(async () => {
  await worker?.shutdown();
  await pool?.end();
  await postgres?.stop();
});

it('runs an agent as a workflow', async () => {
  const stores = await openPostgresStores({ pool, schema: 's1' });
  const executor = new DBOSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter());
  const events: string[] = [];
  const agent = defineAgent({ name: 'a', llmConfig: { model: createScriptedModel([{ text: 'hello' }]) }, hooks: { onAgentStart: () => void events.push('start'), onAgentComplete: () => void events.push('complete') } });
  const t0 = Date.now();
  const handle = await executor.execute(agent, 'hi');
  const result = await handle.result();
  console.log('took', Date.now() - t0);
  expect(result.status).toBe('completed');
  expect(events).toEqual(['start', 'complete']);
  await executor.close();
  await stores.close();
}, 60_000);
