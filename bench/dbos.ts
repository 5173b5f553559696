// runtime-dbos against runtime-js on the same Postgres (issue 12 item 6): µs per loop step and runs per
// second for one agent (a tool call per step, then a finish), run one after another and concurrently,
// on DBOSAgentExecutor (each run a DBOS workflow, one workflow step per committed loop step) and on
// JSAgentExecutor over the same Postgres stores. Both sides alternate in rounds within one run, so the
// ratio is comparable even on a noisy machine.
// Run: npm run bench:dbos   (options: --runs 40 --steps 4 --concurrency 8 --rounds 3)
import { z } from 'zod';
import { defineAgent, defineTool, JSAgentExecutor, silentLogger, type AgentRuntime } from '@helix-agents/sdk';
import { createScriptedModel } from '@helix-agents/sdk/testing';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { DBOSAgentExecutor, launchDBOSWorker } from '@helix-agents/runtime-dbos';
import { openPostgresStores } from '@helix-agents/store-postgres';
import { startTestPostgres } from '@helix-agents/store-postgres/testing';
import pg from 'pg';

function arg(name: string, fallback: string): number {
  const i = process.argv.indexOf(`--${name}`);
  return Number(i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback);
}

const RUNS = arg('runs', '40');
const STEPS = arg('steps', '4');
const CONCURRENCY = arg('concurrency', '8');
const ROUNDS = arg('rounds', '3');

const bump = defineTool({ name: 'bump', description: 'adds one', inputSchema: z.object({}), execute: (_input, ctx) => (ctx.updateState<{ n: number }>((d) => void (d.n += 1)), { ok: true }) });
const agent = defineAgent({
  name: 'bench-dbos',
  stateSchema: z.object({ n: z.number().default(0) }),
  tools: [bump],
  hooks: { onAgentStart: () => undefined, afterTool: () => undefined, onAgentComplete: () => undefined },
  llmConfig: {
    model: createScriptedModel(
      [(options) => (options.prompt.filter((m) => m.role === 'assistant').length < STEPS - 1 ? { toolCalls: [{ name: 'bump', args: {} }] } : { text: 'done' })],
      { loop: true, recordCalls: false },
    ),
  },
});

async function measure(runtime: AgentRuntime, concurrency: number): Promise<{ usPerStep: number; runsPerSecond: number }> {
  let next = 0;
  const started = performance.now();
  const lane = async () => {
    while (next < RUNS) {
      next++;
      const result = await (await runtime.execute(agent, 'go')).result();
      if (result.status !== 'completed' || result.stepCount !== STEPS) throw new Error(`run ended ${result.status} after ${result.stepCount} steps`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  const ms = performance.now() - started;
  return { usPerStep: (ms * 1000) / (RUNS * STEPS), runsPerSecond: (RUNS * 1000) / ms };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const postgres = await startTestPostgres({ durable: true });
const pool = new pg.Pool({ connectionString: postgres.connectionString, max: 16 });
const worker = await launchDBOSWorker({ systemDatabaseUrl: `postgres://postgres@127.0.0.1:${postgres.port}/dbos_sys`, executorId: 'bench', applicationVersion: 'bench', logger: silentLogger, logLevel: 'error' });
try {
  const jsStores = await openPostgresStores({ pool, schema: 'bench_js' });
  const dbosStores = await openPostgresStores({ pool, schema: 'bench_dbos' });
  const js = new JSAgentExecutor(jsStores.stateStore, jsStores.streamManager, new VercelAIAdapter(), { logger: silentLogger });
  const dbos = new DBOSAgentExecutor(dbosStores.stateStore, dbosStores.streamManager, new VercelAIAdapter(), { logger: silentLogger });
  // Warm both (connections, JIT, DBOS's first workflow).
  await measure(js, 2);
  await measure(dbos, 2);
  console.log(`Postgres ${postgres.version} (durable settings), ${RUNS} runs of ${STEPS} steps per measurement, ${ROUNDS} rounds, median shown`);
  for (const concurrency of [1, CONCURRENCY]) {
    const rows = { js: [] as { usPerStep: number; runsPerSecond: number }[], dbos: [] as { usPerStep: number; runsPerSecond: number }[] };
    for (let round = 0; round < ROUNDS; round++) {
      rows.js.push(await measure(js, concurrency));
      rows.dbos.push(await measure(dbos, concurrency));
    }
    const jsStep = median(rows.js.map((r) => r.usPerStep));
    const dbosStep = median(rows.dbos.map((r) => r.usPerStep));
    const jsRuns = median(rows.js.map((r) => r.runsPerSecond));
    const dbosRuns = median(rows.dbos.map((r) => r.runsPerSecond));
    console.log(`\nconcurrency ${concurrency}`);
    console.log(`  runtime-js on Postgres   ${jsStep.toFixed(0).padStart(7)} µs/step  ${jsRuns.toFixed(1).padStart(7)} runs/s`);
    console.log(`  runtime-dbos on Postgres ${dbosStep.toFixed(0).padStart(7)} µs/step  ${dbosRuns.toFixed(1).padStart(7)} runs/s`);
    console.log(`  ratio dbos/js            ${(dbosStep / jsStep).toFixed(2).padStart(7)}x per step ${(dbosRuns / jsRuns).toFixed(2).padStart(6)}x runs/s`);
  }
  await js.close();
  await dbos.close();
  await jsStores.close();
  await dbosStores.close();
} finally {
  await worker.shutdown();
  await pool.end();
  await postgres.stop();
}
