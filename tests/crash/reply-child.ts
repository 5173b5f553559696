// A child process of the model-reply journaling crash test: `run` starts the reply agent (and may SIGKILL
// itself at HELIX_CRASH_AT), `recover` recovers the dead run once its lease expired and prints the result.
// The executor journals model replies as the last argument says (`always` or `side-effects`).
import { JSAgentExecutor, silentLogger, type ModelReplyJournaling, type UsageStore } from '@helix-agents/sdk';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { createReplyAgent } from './reply-agent.js';
import { openTarget } from './targets.js';

const [mode, target, sessionId, callsFile, journal] = process.argv.slice(2) as [string, string, string, string, ModelReplyJournaling];
const stores = await openTarget(target);
const usageStore = stores.stateStore as unknown as UsageStore;
const executor = new JSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { logger: silentLogger, leaseMs: 300, journalModelReplies: journal });
const agent = createReplyAgent(callsFile);

if (mode === 'run') {
  const handle = await executor.execute(agent, 'note something', { sessionId, usageStore });
  process.stdout.write(JSON.stringify({ result: await handle.result() }));
} else {
  const deadline = Date.now() + 15_000;
  let handle;
  while (!handle && Date.now() < deadline) {
    [handle] = await executor.recover({ agents: [agent], usageStore });
    if (!handle) await new Promise((r) => setTimeout(r, 100));
  }
  process.stdout.write(JSON.stringify(handle ? { result: await handle.result() } : { status: 'timeout' }));
}
await stores.close();
