// A sub-agent crash-test process: `run` starts the lead (which fans out to two children in this process
// and may SIGKILL itself at HELIX_CRASH_AT); `recover` waits for the dead runs' leases to expire,
// recovers the lead and its children, and prints the lead's result as JSON.
import { JSAgentExecutor, silentLogger, type AgentResult } from '@helix-agents/sdk';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { createTree } from './tree-agent.js';
import { openTarget } from './targets.js';

const [mode, target, sessionId, hooksFile] = process.argv.slice(2) as [string, string, string, string];
const stores = await openTarget(target);
const executor = new JSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { logger: silentLogger, leaseMs: 300 });
const { lead, researcher } = createTree(hooksFile);

async function leadResult(): Promise<{ recovered: boolean; result?: AgentResult; status?: string }> {
  if (mode === 'run') return { recovered: false, result: await (await executor.execute(lead, 'research two topics', { sessionId })).result() };
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const handles = await executor.recover({ agents: [lead, researcher] });
    const mine = handles.find((h) => h.sessionId === sessionId);
    if (mine) {
      const result = await mine.result();
      await Promise.all(handles.map((h) => h.result()));
      return { recovered: true, result };
    }
    const session = await stores.stateStore.loadSession(sessionId);
    const run = session?.currentRunId ? await stores.stateStore.getRun(session.currentRunId) : undefined;
    // Only children were left to recover, or nothing at all: the lead ended before the crash.
    if (run && run.status !== 'running' && handles.length === 0) return { recovered: false, status: run.status };
    await new Promise((r) => setTimeout(r, 100));
  }
  return { recovered: false, status: 'timeout' };
}

process.stdout.write(JSON.stringify(await leadResult()));
await executor.close();
await stores.close();
