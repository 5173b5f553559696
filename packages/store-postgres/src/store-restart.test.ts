import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { z } from 'zod';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { defineAgent, defineTool, JSAgentExecutor, silentLogger, type AgentResult } from '@helix-agents/sdk';
import { createScriptedModel, type ScriptedStep } from '@helix-agents/sdk/testing';
import { describe, expect, it } from 'vitest';
import { expectRecoveredSecondTurn } from './__tests__/recovered-turn.js';
import { openPostgresStores } from './index.js';
import { startTestPostgres } from './testing/index.js';

// Issue 14 item 13 (Postgres): the server restarted (fast shutdown, then started again on the same data
// folder and port) while a run is in a tool. The run gets a typed error or a transparent retry, is
// recovered, and nothing committed is lost.

const LEASE_MS = 300;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const alive = (pid: number) => existsSync(`/proc/${pid}`);

interface Postmaster {
  readonly pid: number;
  readonly argv: readonly string[];
  readonly uid: number;
  readonly gid: number;
}

function postmaster(pid: number): Postmaster {
  const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((a) => a !== '');
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]);
  const gid = Number(/^Gid:\s+(\d+)/m.exec(status)?.[1]);
  return { pid, argv, uid, gid };
}

/** Fast shutdown (SIGINT), then the same command line again; resolves with the new postmaster once it accepts connections. */
async function restart(server: Postmaster, connectionString: string, folder: string): Promise<Postmaster> {
  process.kill(server.pid, 'SIGINT');
  for (let i = 0; i < 500 && alive(server.pid); i++) await sleep(10);
  expect(alive(server.pid)).toBe(false);
  const logFd = openSync(join(folder, 'restarted.log'), 'a');
  const child = spawn(server.argv[0]!, server.argv.slice(1), { stdio: ['ignore', logFd, logFd], uid: server.uid, gid: server.gid, env: { ...process.env, LC_ALL: 'C' } });
  closeSync(logFd);
  for (let i = 0; i < 1000; i++) {
    const probe = new pg.Client({ connectionString });
    try {
      await probe.connect();
      await probe.end();
      return postmaster(child.pid!);
    } catch {
      await sleep(20);
    }
  }
  throw new Error('Postgres did not come back');
}

describe('Postgres restarted under a running run', () => {
  it('a typed error or a transparent retry, the run recovered, nothing committed lost', async () => {
    const postgres = await startTestPostgres();
    let server = postmaster(postgres.pid);
    const stores = await openPostgresStores({ connectionString: postgres.connectionString, schema: 'restart', maxConnections: 4 });
    try {
      const executorOn = (instanceId: string) => new JSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { logger: silentLogger, leaseMs: LEASE_MS, instanceId });
      const executor = executorOn('first');
      const firstAgent = defineAgent({ name: 'pg-restart', llmConfig: { model: createScriptedModel([{ text: 'turn one' }]) } });
      expect((await (await executor.execute(firstAgent, 'hello', { sessionId: 's1' })).result()).status).toBe('completed');

      let restarts = 0;
      const restartTool = defineTool({
        name: 'restart',
        description: 'Restarts the database server',
        inputSchema: z.object({}),
        execute: async () => {
          if (restarts++ === 0) server = await restart(server, postgres.connectionString, postgres.folder);
          return 'restarted';
        },
      });
      const step: ScriptedStep = (options) => (options.prompt.at(-1)?.role === 'tool' ? { text: 'turn two' } : { toolCalls: [{ name: 'restart', args: {} }] });
      const agent = defineAgent({ name: 'pg-restart', llmConfig: { model: createScriptedModel([step], { loop: true }), retry: { initialDelayMs: 1, maxDelayMs: 5 } }, tools: [restartTool] });

      const second = await (await executor.execute(agent, 'again', { sessionId: 's1' })).result();
      expect(restarts).toBe(1);
      expect(server.pid).not.toBe(postgres.pid);
      let final: AgentResult = second;
      if (second.status !== 'completed') {
        expect(second.status).toBe('failed');
        expect(second.error).toMatchObject({ code: expect.stringMatching(/^[a-z_]+$/), layer: expect.any(String), retryable: expect.any(Boolean) });
        await sleep(LEASE_MS * 2);
        const recoverer = executorOn('recoverer').registerAgent(agent);
        const mine = (await recoverer.recover({ agents: [agent] })).find((h) => h.sessionId === 's1');
        if (mine !== undefined) final = await mine.result();
        else {
          expect(second.error?.retryable).toBe(true);
          final = await (await recoverer.retry('s1')).result();
        }
      }
      console.log(`pg restart: first outcome ${second.status}${second.error ? ` (${second.error.code}: ${second.error.message})` : ''}; final ${final.status}`);
      await expectRecoveredSecondTurn(stores, final);
    } finally {
      await stores.close();
      // The restarted postmaster is ours to stop; the harness stops the one it started and removes the folder.
      if (server.pid !== postgres.pid && alive(server.pid)) {
        process.kill(server.pid, 'SIGQUIT');
        for (let i = 0; i < 500 && alive(server.pid); i++) await sleep(10);
      }
      await postgres.stop();
    }
  }, 120_000);
});
