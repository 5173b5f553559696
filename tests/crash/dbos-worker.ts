// A DBOS worker process of the two-worker kill matrix: launches DBOS with its own executor id, makes a
// DBOSAgentExecutor over the Postgres stores with the crash agent, and then either starts one run
// (`start`: it may SIGKILL itself at HELIX_CRASH_AT) or serves (`serve`: it takes over dead workers' runs).
// `start-reply` starts the reply agent instead (no side-effecting tool; model calls logged to
// <dir>/model-calls.jsonl), whose session's input is its session id.
import { silentLogger } from '@helix-agents/sdk';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { DBOSAgentExecutor, launchDBOSWorker } from '@helix-agents/runtime-dbos';
import { openPostgresStores } from '@helix-agents/store-postgres';
import { join } from 'node:path';
import { createCrashAgent } from './agent.js';
import { createReplyAgent } from './reply-agent.js';

const [mode, systemDatabaseUrl, storesUrl, executorId, sessionId, dir] = process.argv.slice(2) as [string, string, string, string, string, string];
const worker = await launchDBOSWorker({ systemDatabaseUrl, executorId, applicationVersion: 'kill-matrix', heartbeatMs: 200, deadAfterMs: 1000, logger: silentLogger, logLevel: 'error' });
const stores = await openPostgresStores({ connectionString: storesUrl });
// Files per session: the serving worker continues runs of many sessions.
const agent = createCrashAgent({ filesFor: (id) => ({ sideEffectsFile: join(dir, `${id}.effects.jsonl`), hooksFile: join(dir, `${id}.hooks.jsonl`) }) });
const replyAgent = createReplyAgent(join(dir, 'model-calls.jsonl'));
const executor = new DBOSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { logger: silentLogger, leaseMs: 2000, agents: [agent, replyAgent] });
process.stdout.write(`ready ${executorId}\n`);

if (mode === 'start' || mode === 'start-reply') {
  const handle = mode === 'start' ? await executor.execute(agent, 'send the messages', { sessionId }) : await executor.execute(replyAgent, sessionId, { sessionId });
  const result = await handle.result();
  process.stdout.write(`${JSON.stringify({ result: result.status })}\n`);
  await worker.shutdown();
  await stores.close();
} else {
  // Serve until the test stops us (SIGTERM).
  process.on('SIGTERM', () => {
    void worker.shutdown().finally(() => process.exit(0));
  });
  setInterval(() => undefined, 60_000);
}
