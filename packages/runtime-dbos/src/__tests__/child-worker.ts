// A DBOS worker in a child process, for tests that need a second process:
//   hold <sysdb> <executorId>                    launch and stay up until stdin closes (prints "ready"), then leave
//   suspend <sysdb> <executorId> <stores> <schema> <session> <effects>
//                                                start the approval agent's run, wait for its suspension,
//                                                print the suspension as JSON, shut down cleanly
//   slow <sysdb> <executorId> <stores> <schema> <session> <hooks>
//                                                start the slow agent's run, print its result when it ends
//   ask <sysdb> <executorId> <stores> <schema> <session>
//                                                start the client-tool agent's run, wait for its suspension,
//                                                print it as JSON, shut down cleanly
import { silentLogger } from '@helix-agents/sdk';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { openPostgresStores } from '@helix-agents/store-postgres';
import { DBOSAgentExecutor, launchDBOSWorker } from '../index.js';
import { createApprovalAgent, createClientToolAgent, createSlowAgent } from './approval-agent.js';

const [mode, systemDatabaseUrl, executorId, storesUrl, schema, sessionId, effectsFile] = process.argv.slice(2) as [string, string, string, string, string, string, string];
try {
  const worker = await launchDBOSWorker({ systemDatabaseUrl, executorId, applicationVersion: 'test', heartbeatMs: 200, deadAfterMs: 1000, logger: silentLogger, logLevel: 'error' });
  if (mode === 'hold') {
    process.stdout.write('ready\n');
    process.stdin.resume();
    process.stdin.on('end', () => void worker.shutdown().finally(() => process.exit(0)));
  } else if (mode === 'slow') {
    const stores = await openPostgresStores({ connectionString: storesUrl, schema });
    const executor = new DBOSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { logger: silentLogger });
    const result = await (await executor.execute(createSlowAgent(effectsFile), 'wait', { sessionId })).result();
    process.stdout.write(`${JSON.stringify({ status: result.status, error: result.error?.code })}\n`);
    await executor.close();
    await worker.shutdown();
    await stores.close();
  } else {
    const stores = await openPostgresStores({ connectionString: storesUrl, schema });
    const executor = new DBOSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { logger: silentLogger });
    const agent = mode === 'ask' ? createClientToolAgent() : createApprovalAgent(effectsFile);
    const result = await (await executor.execute(agent, mode === 'ask' ? 'ask me' : 'deploy it', { sessionId })).result();
    process.stdout.write(`${JSON.stringify({ status: result.status, pending: result.suspension?.pending.map((p) => p.toolCallId) })}\n`);
    await executor.close();
    await worker.shutdown();
    await stores.close();
  }
} catch (error) {
  process.stdout.write(`${JSON.stringify({ error: (error as { info?: unknown }).info ?? String(error) })}\n`);
  process.exitCode = 3;
}
