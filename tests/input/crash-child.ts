// A child process for the input crash test: starts a turn whose input carries an image and a PDF on
// the SQLite file given, and SIGKILLs itself at HELIX_CRASH_AT (after K1 or after K2).
import { defineAgent, JSAgentExecutor, silentLogger } from '@helix-agents/sdk';
import { createScriptedModel } from '@helix-agents/sdk/testing';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { openSqliteStores } from '@helix-agents/store-sqlite';
import { CRASH_INPUT } from './crash-input.js';

const [path, sessionId] = process.argv.slice(2) as [string, string];
const stores = openSqliteStores({ path });
const executor = new JSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { logger: silentLogger, leaseMs: 300 });
const agent = defineAgent({ name: 'vision', llmConfig: { model: createScriptedModel([{ text: 'not reached' }]) } });
const handle = await executor.execute(agent, CRASH_INPUT, { sessionId });
process.stdout.write(JSON.stringify(await handle.result()));
stores.close();
