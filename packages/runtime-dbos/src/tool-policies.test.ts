// Issue 16 on DBOS: a dry run (rule 156) is kept with the workflow's run options, so it holds on any
// worker; a request-scoped hookContext (rule 202) is a live object of one process, so DBOSAgentExecutor
// refuses it per call with config_invalid (another worker continuing the run could not have it).
import { z } from 'zod';
import { defineAgent, defineTool, silentLogger, type ToolResultMessage } from '@helix-agents/sdk';
import { createScriptedModel } from '@helix-agents/sdk/testing';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { expect, it } from 'vitest';
import { DBOSAgentExecutor } from './index.js';
import { useDBOSHarness } from './__tests__/harness.js';

const harness = useDBOSHarness();

function setup() {
  const ran: string[] = [];
  const send = defineTool({
    name: 'send',
    description: 'sends',
    inputSchema: z.object({}),
    sideEffects: true,
    execute: () => {
      ran.push('send');
      return 'sent';
    },
  });
  const agent = defineAgent({
    name: harness.unique('dry-agent'),
    llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'send', args: {}, id: 's1' }] }, { text: 'done' }]) },
    tools: [send],
  });
  return { ran, agent };
}

it('rule 156: a dry run on DBOS stubs the side-effecting call and keeps dryRun on the run record', async () => {
  const stores = await harness.open();
  const executor = new DBOSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { logger: silentLogger, name: harness.unique('dry') });
  const { ran, agent } = setup();
  const handle = await executor.execute(agent, 'go', { dryRun: true });
  const result = await handle.result();
  expect(result.status).toBe('completed');
  expect(ran).toEqual([]);
  expect((await stores.stateStore.getRun(result.runId))?.options.dryRun).toBe(true);
  const row = (await stores.stateStore.loadSession(result.sessionId))!.messages.find((m): m is ToolResultMessage => m.role === 'tool');
  expect(row).toMatchObject({ stubbed: true, content: { stubbed: true, tool: 'send' } });
  await executor.close();
}, 60_000);

it('rule 202: DBOSAgentExecutor refuses a per-call hookContext with config_invalid, and writes nothing', async () => {
  const stores = await harness.open();
  const executor = new DBOSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { logger: silentLogger, name: harness.unique('ctx') });
  const { agent } = setup();
  await expect(executor.execute(agent, 'go', { sessionId: 'refused', hookContext: { db: {} } })).rejects.toMatchObject({ info: { code: 'config_invalid', details: { options: ['hookContext'] } } });
  expect(await stores.stateStore.loadSession('refused')).toBeUndefined();
  await executor.close();
}, 60_000);
