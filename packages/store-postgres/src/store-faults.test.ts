import pg from 'pg';
import { z } from 'zod';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { defineAgent, defineTool, JSAgentExecutor, silentLogger, type AgentResult } from '@helix-agents/sdk';
import { createScriptedModel, type ScriptedStep } from '@helix-agents/sdk/testing';
import { describe, expect, it } from 'vitest';
import { useTestPostgres } from './__tests__/cluster.js';
import { expectRecoveredSecondTurn } from './__tests__/recovered-turn.js';
import type { PostgresStores } from './index.js';

// Issue 14 item 13 (Postgres): a backend killed mid-commit (pg_terminate_backend while the commit waits
// on a lock). The run gets a typed error or a transparent retry, is recovered, and nothing committed is lost.

const cluster = useTestPostgres();
const LEASE_MS = 300;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function executorOn(stores: PostgresStores, instanceId: string): JSAgentExecutor {
  return new JSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { logger: silentLogger, leaseMs: LEASE_MS, instanceId });
}

/** Calls `lock` once, then answers from the prompt (so a recovered run finds its next reply). */
function lockingAgent(lockTool: ReturnType<typeof defineTool>) {
  const step: ScriptedStep = (options) => (options.prompt.at(-1)?.role === 'tool' ? { text: 'turn two' } : { toolCalls: [{ name: 'lock', args: {} }] });
  return defineAgent({ name: 'pg-faults', llmConfig: { model: createScriptedModel([step], { loop: true }), retry: { initialDelayMs: 1, maxDelayMs: 5 } }, tools: [lockTool] });
}

describe('Postgres store faults', () => {
  it.each([
    ['the step commit', ['messages', 'steps']],
    ['a stream write', ['chunks']],
  ])('a backend killed mid-statement (%s): a typed error or a transparent retry, the run recovered, nothing committed lost', async (_what, locked) => {
    const schema = cluster.schemaName('faults');
    const stores = await cluster.open(schema);
    const admin = new pg.Client({ connectionString: cluster.postgres.connectionString });
    await admin.connect();
    const killed: number[] = [];
    try {
      const executor = executorOn(stores, 'first');
      const firstAgent = defineAgent({ name: 'pg-faults', llmConfig: { model: createScriptedModel([{ text: 'turn one' }]) } });
      expect((await (await executor.execute(firstAgent, 'hello', { sessionId: 's1' })).result()).status).toBe('completed');

      let watcher: Promise<void> | undefined;
      const lockTool = defineTool({
        name: 'lock',
        description: 'Locks tables, then kills the backends that wait on the lock',
        inputSchema: z.object({}),
        execute: async () => {
          if (watcher !== undefined) return 'already';
          await admin.query('BEGIN');
          await admin.query(`LOCK TABLE ${locked.map((t) => `"${schema}"."${t}"`).join(', ')} IN ACCESS EXCLUSIVE MODE`);
          watcher = (async () => {
            const killer = new pg.Client({ connectionString: cluster.postgres.connectionString });
            await killer.connect();
            try {
              // Every backend that blocks on the lock is in the middle of a statement of the commit path.
              for (let i = 0; i < 200 && killed.length === 0; i++) {
                const waiting = await killer.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()");
                for (const { pid } of waiting.rows) {
                  await killer.query('SELECT pg_terminate_backend($1)', [pid]);
                  killed.push(pid);
                }
                if (killed.length === 0) await sleep(10);
              }
            } finally {
              await admin.query('ROLLBACK');
              await killer.end();
            }
          })();
          return 'locked';
        },
      });
      const agent = lockingAgent(lockTool);
      const second = await (await executor.execute(agent, 'again', { sessionId: 's1' })).result();
      await watcher;
      expect(killed.length).toBeGreaterThan(0);

      let final: AgentResult = second;
      if (second.status !== 'completed') {
        // A typed error; the run is then recovered by a fresh executor once its lease expired.
        expect(second.status).toBe('failed');
        expect(second.error).toMatchObject({ code: expect.stringMatching(/^[a-z_]+$/), layer: expect.any(String), retryable: expect.any(Boolean) });
        await sleep(LEASE_MS * 2);
        const recoverer = executorOn(stores, 'recoverer').registerAgent(agent);
        const mine = (await recoverer.recover({ agents: [agent] })).find((h) => h.sessionId === 's1');
        if (mine !== undefined) final = await mine.result();
        else {
          // The run recorded its failure (the kill hit a write it could not make, the end was written
          // after the lock went away): the error is retryable, and retry() runs the turn again.
          expect(second.error?.retryable).toBe(true);
          expect((await stores.stateStore.getRun(second.runId))?.status).toBe('failed');
          final = await (await recoverer.retry('s1')).result();
        }
      }
      await expectRecoveredSecondTurn(stores, final);
      console.log(`pg fault (${_what}): killed backends ${killed.join(', ')}; first outcome ${second.status}${second.error ? ` (${second.error.code}: ${second.error.message})` : ''}`);
    } finally {
      await admin.end();
      await stores.close();
    }
  }, 60_000);
});
