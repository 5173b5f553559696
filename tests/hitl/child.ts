// Starts the agent on a SQLite file, lets it suspend at its first boundary, prints the session and exits.
import { JSAgentExecutor, silentLogger } from '@helix-agents/sdk';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { openSqliteStores } from '@helix-agents/store-sqlite';
import { createRestartAgent } from './agent.js';

const stores = openSqliteStores({ path: process.argv[2]! });
const executor = new JSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { logger: silentLogger });
const result = await (await executor.execute(createRestartAgent(), 'email bob', { sessionId: 'restart' })).result();
process.stdout.write(JSON.stringify({ status: result.status, pending: result.suspension?.pending.map((p) => p.toolCallId), pid: process.pid }));
stores.close();
