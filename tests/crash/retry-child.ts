// A child process of the tool-retry crash test: `run` starts the agent (and may SIGKILL itself at
// HELIX_CRASH_AT); `recover` waits for the dead run's lease, recovers it and prints the result as JSON.
import { JSAgentExecutor, silentLogger } from '@helix-agents/sdk';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { createRetryAgent } from './retry-agent.js';
import { openTarget } from './targets.js';

const [mode, target, sessionId, effectsFile] = process.argv.slice(2) as [string, string, string, string];
const stores = await openTarget(target);
const executor = new JSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { logger: silentLogger, leaseMs: 300 });
const agent = createRetryAgent(effectsFile);

if (mode === 'run') {
  const handle = await executor.execute(agent, 'charge it', { sessionId });
  process.stdout.write(JSON.stringify({ recovered: false, result: await handle.result() }));
} else {
  const deadline = Date.now() + 15_000;
  let printed = false;
  while (Date.now() < deadline && !printed) {
    const [handle] = await executor.recover({ agents: [agent] });
    if (handle) {
      process.stdout.write(JSON.stringify({ recovered: true, result: await handle.result() }));
      printed = true;
    } else await new Promise((r) => setTimeout(r, 100));
  }
  if (!printed) process.stdout.write(JSON.stringify({ recovered: false, status: 'timeout' }));
}
await stores.close();
