import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { defineAgent, defineTool, JSAgentExecutor, silentLogger, type AgentResult } from '@helix-agents/sdk';
import { createScriptedModel, type ScriptedStep } from '@helix-agents/sdk/testing';
import { describe, expect, it } from 'vitest';
import { useTempDatabases } from './__tests__/temp-databases.js';
import { openSqliteStores, type SqliteStores } from './open.js';

const temp = useTempDatabases('helix-sqlite-faults-');

// Issue 14 item 13 (SQLite): the file locked by another process past the busy timeout, and a full disk
// (a size-limited tmpfs mounted by the test). Each gives a typed error, the run is recovered, nothing committed is lost.

const PACKAGE = fileURLToPath(new URL('..', import.meta.url));
const LEASE_MS = 300;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Another process holding the database's write lock (BEGIN EXCLUSIVE) until {@link release}. */
function lockInOtherProcess(path: string): Promise<ChildProcess> {
  const script = `
    const Database = require('better-sqlite3');
    const db = new Database(${JSON.stringify(path)}, { timeout: 5000 });
    db.exec('BEGIN EXCLUSIVE');
    process.stdout.write('locked\\n');
    process.stdin.on('data', () => { db.exec('COMMIT'); db.close(); process.exit(0); });`;
  const child = spawn(process.execPath, ['-e', script], { cwd: PACKAGE, stdio: ['pipe', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`the locking process exited with ${String(code)} before locking`)));
    child.stdout!.on('data', (data: Buffer) => {
      if (data.toString().includes('locked')) resolve(child);
    });
  });
}

function release(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.removeAllListeners('exit');
    child.on('exit', () => resolve());
    child.stdin!.write('go\n');
  });
}

function agentWith(name: string, steps: readonly ScriptedStep[], tools: Parameters<typeof defineAgent>[0]['tools'] = []) {
  return defineAgent({ name, llmConfig: { model: createScriptedModel(steps), retry: { initialDelayMs: 1, maxDelayMs: 5 } }, tools });
}

/** An agent that calls `big` once, then answers; it answers from the prompt, so a recovered run finds its next reply. */
function fillerAgent(i: number, big: ReturnType<typeof defineTool>) {
  const step: ScriptedStep = (options) => (options.prompt.at(-1)?.role === 'tool' ? { text: 'done' } : { toolCalls: [{ name: 'big', args: { n: i } }] });
  return defineAgent({ name: 'filler', llmConfig: { model: createScriptedModel([step], { loop: true }), retry: { initialDelayMs: 1, maxDelayMs: 5 } }, tools: [big] });
}

function executorOn(stores: SqliteStores, instanceId: string): JSAgentExecutor {
  return new JSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { logger: silentLogger, leaseMs: LEASE_MS, instanceId });
}

/** Recovers the session's run once its lease has expired, and returns how it ended. */
async function recoverSession(executor: JSAgentExecutor, agents: Parameters<JSAgentExecutor['recover']>[0]['agents'], sessionId: string): Promise<AgentResult | undefined> {
  await sleep(LEASE_MS * 2);
  const handles = await executor.recover({ agents });
  const mine = handles.find((h) => h.sessionId === sessionId);
  return mine === undefined ? undefined : mine.result();
}

function expectTyped(result: AgentResult): void {
  expect(result.status).toBe('failed');
  expect(result.error).toMatchObject({ code: expect.stringMatching(/^[a-z_]+$/), layer: expect.any(String), message: expect.any(String), retryable: expect.any(Boolean) });
}

describe('SQLite store faults', () => {
  it('the file locked by another process past the busy timeout: a typed error, the run recovered, nothing committed lost', async () => {
    const path = temp.path();
    const stores = openSqliteStores({ path, busyTimeoutMs: 100 });
    let locker: ChildProcess | undefined;
    try {
      const executor = executorOn(stores, 'first');
      const first = await (await executor.execute(agentWith('a', [{ text: 'turn one' }]), 'hello', { sessionId: 's1' })).result();
      expect(first.status).toBe('completed');

      const lockTool = defineTool({
        name: 'lock',
        description: 'Has another process lock the database',
        inputSchema: z.object({}),
        execute: async () => {
          if (locker === undefined) locker = await lockInOtherProcess(path);
          return 'locked';
        },
      });
      const agent = agentWith('a', [{ toolCalls: [{ name: 'lock', args: {}, id: 'l1' }] }, { text: 'turn two' }], [lockTool]);
      const started = Date.now();
      const second = await (await executor.execute(agent, 'again', { sessionId: 's1' })).result();
      // The step commit waited the busy timeout, then failed with a typed error.
      expect(Date.now() - started).toBeGreaterThanOrEqual(100);
      expectTyped(second);
      // Whichever write hit the lock first (the stream's or the state's) names it.
      expect(['state_commit_failed', 'stream_closed']).toContain(second.error?.code);
      expect(second.error?.message).toMatch(/database is locked/);

      await release(locker!);
      // The run stays recoverable: a fresh executor claims it once its lease expires and finishes it.
      const recovered = await recoverSession(executorOn(stores, 'recoverer'), [agent], 's1');
      const session = await stores.stateStore.loadSession('s1');
      const texts = session!.messages.map((m) => (m.role === 'user' || m.role === 'assistant' ? m.content : m.role));
      // Turn one is intact whatever happened to turn two.
      expect(texts.slice(0, 2)).toEqual(['hello', 'turn one']);
      expect(texts).toContain('again');
      expect(recovered?.status).toBe('completed');
      expect(texts.at(-1)).toBe('turn two');
    } finally {
      if (locker !== undefined && locker.exitCode === null) locker.kill();
      stores.close();
    }
  }, 30_000);

  const canMount = process.getuid?.() === 0 && spawnSync('mount', ['--version']).status === 0;

  it('a full disk (a 2 MiB tmpfs): a typed error, the session goes on once space is freed (the run recovered, or stored failed and a new turn), nothing committed lost', async () => {
    expect(canMount, 'this test mounts a tmpfs and needs root').toBe(true);
    const mnt = join(temp.folder(), 'small');
    mkdirSync(mnt);
    const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', mnt]);
    expect(mounted.status, mounted.stderr.toString()).toBe(0);
    const stores = openSqliteStores({ path: join(mnt, 'helix.db') });
    try {
      const big = defineTool({ name: 'big', description: 'A big result', inputSchema: z.object({ n: z.number() }), execute: async ({ n }) => `${n}:${'x'.repeat(48 * 1024)}` });
      const executor = executorOn(stores, 'first');
      const completed: string[] = [];
      let failed: AgentResult | undefined;
      for (let i = 0; i < 200 && failed === undefined; i++) {
        const agent = fillerAgent(i, big);
        const result = await (await executor.execute(agent, `fill ${i}`, { sessionId: `s${i}` })).result();
        if (result.status === 'completed') completed.push(`s${i}`);
        else failed = result;
      }
      expect(failed, 'the disk never filled up').toBeDefined();
      expectTyped(failed!);
      expect(failed!.error?.code).toBe('state_commit_failed');
      expect(completed.length).toBeGreaterThan(3);

      // The operator frees space: the file system grows.
      expect(spawnSync('mount', ['-o', 'remount,size=16m', mnt]).status).toBe(0);

      for (const sessionId of completed) {
        const session = await stores.stateStore.loadSession(sessionId);
        expect(session?.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
      }
      // The step commit that met the full disk failed. If the run's end still fit (it is small), the run is
      // stored as failed with that error and the session goes on with a new turn; if not, the run is still
      // running in the store, and a recovery finishes it.
      const stored = await stores.stateStore.getRun(failed!.runId);
      if (stored?.status === 'running') {
        const recovered = await recoverSession(executorOn(stores, 'recoverer'), [fillerAgent(-1, big)], failed!.sessionId);
        expect(recovered?.status).toBe('completed');
      } else {
        expect(stored?.status).toBe('failed');
        expect(stored?.error?.code).toBe('state_commit_failed');
        const again = await (await executorOn(stores, 'again').execute(fillerAgent(-1, big), 'fill again', { sessionId: failed!.sessionId })).result();
        expect(again.status).toBe('completed');
      }
      const session = await stores.stateStore.loadSession(failed!.sessionId);
      expect(session?.messages.at(-1)).toMatchObject({ role: 'assistant' });
    } finally {
      stores.close();
      spawnSync('umount', ['-l', mnt]);
    }
  }, 60_000);
});
