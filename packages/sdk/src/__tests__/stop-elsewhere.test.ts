import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, defineTool, InMemoryStateStore, InMemoryStreamManager, JSAgentExecutor, silentLogger } from '../index.js';
import { createGate, createScriptedModel } from '../testing/index.js';

// executor.stop(sessionId) for a run another process runs: a stop request in the shared store, acted on by
// the process holding the run's lease at its next renewal (rule: stop reaches a run wherever it runs).

it('stop() on a process that does not run the session stops the run where it runs: the holder ends it interrupted at its next lease renewal', async () => {
  const store = new InMemoryStateStore();
  const streams = new InMemoryStreamManager();
  const holder = new JSAgentExecutor(store, streams, new VercelAIAdapter(), { logger: silentLogger, leaseMs: 300 });
  const other = new JSAgentExecutor(store, streams, new VercelAIAdapter(), { logger: silentLogger, leaseMs: 300 });
  const entered = createGate();
  const failed: string[] = [];
  const wait = defineTool({
    name: 'wait',
    description: 'waits until the run is stopped',
    inputSchema: z.object({}),
    execute: (_input, ctx) =>
      new Promise((resolve) => {
        entered.open();
        ctx.abortSignal.addEventListener('abort', () => resolve({ stopped: true }));
      }),
  });
  const agent = defineAgent({
    name: 'waiter',
    tools: [wait],
    llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'wait', args: {}, id: 'w1' }] }, { text: 'never' }]) },
    hooks: { onAgentFail: ({ error }) => void failed.push(error.code) },
  });
  const handle = await holder.execute(agent, 'wait', { sessionId: 'elsewhere-1' });
  await entered.opened;
  const stopped = await other.stop('elsewhere-1', 'stopped by an operator');
  expect(stopped?.status).toBe('interrupted');
  expect((await handle.result()).status).toBe('interrupted');
  expect(failed).toEqual(['run_interrupted']);
  expect((await store.getRun(handle.runId))?.status).toBe('interrupted');
  // Nothing runs there any more.
  expect(await other.stop('elsewhere-1')).toBeUndefined();
});
