// A crash-test child process: `run` starts the agent (and may SIGKILL itself at HELIX_CRASH_AT),
// `recover` waits for the dead run's lease to expire, recovers it and prints the result as JSON.
import { JSAgentExecutor, silentLogger, type StateStore, type StreamManager } from '@helix-agents/sdk';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { createCrashAgent } from './agent.js';
import { openTarget } from './targets.js';

const [mode, target, sessionId, sideEffectsFile, hooksFile] = process.argv.slice(2) as [string, string, string, string, string];
const stores: { stateStore: StateStore; streamManager: StreamManager; close(): Promise<void> | void } = await openTarget(target);
const executor = new JSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { logger: silentLogger, leaseMs: 300 });
const agent = createCrashAgent({ sideEffectsFile, hooksFile });

if (mode === 'run') {
  const handle = await executor.execute(agent, 'send the messages', { sessionId, usageStore: stores.stateStore as never });
  const result = await handle.result();
  process.stdout.write(JSON.stringify({ recovered: false, result }));
} else {
  const deadline = Date.now() + 15_000;
  let printed = false;
  while (Date.now() < deadline) {
    const [handle] = await executor.recover({ agents: [agent] });
    if (handle) {
      process.stdout.write(JSON.stringify({ recovered: true, result: await handle.result() }));
      printed = true;
      break;
    }
    const session = await stores.stateStore.loadSession(sessionId);
    const run = session?.currentRunId ? await stores.stateStore.getRun(session.currentRunId) : undefined;
    if (run && run.status !== 'running') {
      process.stdout.write(JSON.stringify({ recovered: false, status: run.status }));
      printed = true;
      break;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  if (!printed) process.stdout.write(JSON.stringify({ recovered: false, status: 'timeout' }));
}
await stores.close();
