// Two DBOS workers and a client on one Postgres. The client asks worker A to run an agent, follows the
// run's stream, and SIGKILLs worker A in the middle of the run; worker B notices that A's heartbeat
// stopped, resumes A's workflow, and finishes the run from its last committed step.
// Run: npm run example:dbos-workers   (an embedded Postgres, scripted model; nothing leaves the machine)
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { defineAgent, defineTool, silentLogger } from '@helix-agents/sdk';
import { createScriptedModel } from '@helix-agents/sdk/testing';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { DBOSAgentExecutor, launchDBOSWorker } from '@helix-agents/runtime-dbos';
import { openPostgresStores } from '@helix-agents/store-postgres';
import { startTestPostgres } from '@helix-agents/store-postgres/testing';

const STEPS = 5;

/** The agent every worker registers: each step calls a slow tool that counts, then it answers. */
export const counter = defineAgent({
  name: 'counter',
  stateSchema: z.object({ counted: z.array(z.number()).default([]) }),
  tools: [
    defineTool({
      name: 'count',
      description: 'counts one more (slowly)',
      inputSchema: z.object({ n: z.number() }),
      execute: async ({ n }, ctx) => {
        await new Promise((resolve) => setTimeout(resolve, 400));
        ctx.updateState<{ counted: number[] }>((d) => void d.counted.push(n));
        return { counted: n };
      },
    }),
  ],
  hooks: {
    afterTool: ({ toolCall }) => console.log(`  [worker ${process.env['WORKER_NAME']} pid ${process.pid}] counted ${JSON.stringify(toolCall.arguments)}`),
    onAgentComplete: () => console.log(`  [worker ${process.env['WORKER_NAME']} pid ${process.pid}] onAgentComplete`),
  },
  llmConfig: {
    model: createScriptedModel(
      [(options) => {
        const done = options.prompt.filter((m) => m.role === 'assistant').length;
        return done < STEPS ? { toolCalls: [{ name: 'count', args: { n: done + 1 }, id: `count-${done + 1}` }] } : { text: `counted to ${STEPS}` };
      }],
      { loop: true, recordCalls: false },
    ),
  },
});

/** A worker process: DBOS with its own executor id, and a DBOSAgentExecutor with the agent. */
async function runWorker(): Promise<void> {
  const name = process.env['WORKER_NAME'] ?? 'worker';
  const worker = await launchDBOSWorker({
    systemDatabaseUrl: process.env['SYSTEM_DATABASE_URL'] ?? '',
    executorId: name,
    applicationVersion: 'example-1',
    heartbeatMs: 250,
    deadAfterMs: 1500,
    logger: silentLogger,
    logLevel: 'error',
  });
  const stores = await openPostgresStores({ connectionString: process.env['DATABASE_URL'] ?? '' });
  const executor = new DBOSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { logger: silentLogger, agents: [counter] });
  process.on('message', (message: { execute?: string }) => {
    if (!message.execute) return;
    void executor.execute(counter, 'count for me', { sessionId: message.execute }).then((handle) => process.send?.({ started: handle.runId }));
  });
  process.on('disconnect', () => void worker.shutdown().finally(() => process.exit(0)));
  process.send?.({ ready: name });
}

function startWorker(name: string, env: Record<string, string>): Promise<ChildProcess> {
  const child = fork(fileURLToPath(import.meta.url), ['worker'], { env: { ...process.env, ...env, WORKER_NAME: name }, execArgv: process.execArgv });
  return new Promise((resolve) => child.on('message', (m: { ready?: string }) => m.ready && resolve(child)));
}

/** The client: starts the workers, asks A for a run, kills A mid-run, and watches B finish it. */
async function runClient(): Promise<void> {
  const postgres = await startTestPostgres();
  const env = { DATABASE_URL: postgres.connectionString, SYSTEM_DATABASE_URL: `postgres://postgres@127.0.0.1:${postgres.port}/dbos_sys` };
  const stores = await openPostgresStores({ connectionString: postgres.connectionString });
  try {
    console.log('starting worker A and worker B');
    const a = await startWorker('A', env);
    const b = await startWorker('B', env);
    const sessionId = 'count-1';
    a.send({ execute: sessionId });
    let killed = false;
    for await (const chunk of stores.streamManager.read(sessionId, {})) {
      // After the second count has ended (the third step is under way), worker A dies.
      if (chunk.type === 'tool_end' && chunk.toolCallId === 'count-2' && !killed) {
        console.log(`client: SIGKILL worker A (pid ${a.pid}) in the middle of the run`);
        a.kill('SIGKILL');
        killed = true;
      }
      if (chunk.type === 'end' || chunk.type === 'error') break;
    }
    const session = await stores.stateStore.loadSession(sessionId);
    const run = session?.currentRunId ? await stores.stateStore.getRun(session.currentRunId) : undefined;
    console.log(`client: run ${run?.status} with output ${JSON.stringify(run?.output)}; state ${JSON.stringify(session?.state)}${run?.error ? `; error ${run.error.code}: ${run.error.message}` : ""}`);
    console.log(`client: the run's last lease holder was ${run?.leaseOwner} (worker B is pid ${b.pid}); steps committed: ${run?.stepCount}`);
    b.disconnect();
    await new Promise((resolve) => b.on('exit', resolve));
  } finally {
    await stores.close();
    await postgres.stop();
  }
}

if (process.argv[2] === 'worker') await runWorker();
else await runClient();
