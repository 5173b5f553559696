// A crash-test child: runs an agent whose first step calls one MCP tool of the fixture server (over
// stdio) on a SQLite store; HELIX_CRASH_AT=before_k3 makes it SIGKILL itself after the call ran and
// before the step commit. The test recovers the run in its own process.
//   node --conditions=helix-source --import tsx crash-child.ts <db> <sessionId> <call log> <server tool>
import { JSAgentExecutor, silentLogger } from '@helix-agents/sdk';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { openSqliteStores } from '@helix-agents/store-sqlite';
import { connectMcpServer } from '../index.js';
import { crashAgent, CRASH_LEASE_MS } from './crash-agent.js';
import { stdioFixture } from './servers.js';

const [db, sessionId, logFile, serverTool] = process.argv.slice(2) as [string, string, string, string];
const stores = openSqliteStores({ path: db });
const executor = new JSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { logger: silentLogger, leaseMs: CRASH_LEASE_MS });
const mcp = await connectMcpServer({ name: 'fx', transport: stdioFixture(logFile) });
const agent = crashAgent(await mcp.tools({ include: [serverTool] }), serverTool, 'first');
const result = await (await executor.execute(agent, 'go', { sessionId })).result();
process.stdout.write(JSON.stringify(result));
await mcp.close();
stores.close();
