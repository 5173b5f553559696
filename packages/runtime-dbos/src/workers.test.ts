// Workers and processes (issue 12, items 3 and 4): an executor id held by a live worker is refused to a
// second one and free again once the first leaves; a run suspended in one process (which then exits) is
// approved from another process and finishes there, its tool run exactly once; a client tool's result
// submitted from another process resumes the run there.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { silentLogger } from '@helix-agents/sdk';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { afterAll, expect, it } from 'vitest';
import { DBOSAgentExecutor } from './index.js';
import { createApprovalAgent, createClientToolAgent } from './__tests__/approval-agent.js';
import { useDBOSHarness } from './__tests__/harness.js';

const here = dirname(fileURLToPath(import.meta.url));
const harness = useDBOSHarness();
const dir = mkdtempSync(join(tmpdir(), 'helix-dbos-workers-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function childWorker(args: readonly string[]) {
  const proc = spawn(process.execPath, ['--conditions=helix-source', '--import', 'tsx', join(here, '__tests__', 'child-worker.ts'), ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let ready!: () => void;
  const isReady = new Promise<void>((resolve) => (ready = resolve));
  proc.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
    if (stdout.includes('\n')) ready();
  });
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.on('close', (code) => resolve(code)));
  return { proc, isReady, exited, out: () => stdout, err: () => stderr };
}

it('a second live worker with the same executor id is refused with worker_id_in_use; once the first leaves, the id is free', async () => {
  const first = childWorker(['hold', harness.systemDatabaseUrl, 'shared-id']);
  await first.isReady;
  expect(first.out()).toContain('ready');
  const second = childWorker(['hold', harness.systemDatabaseUrl, 'shared-id']);
  expect(await second.exited, second.err()).toBe(3);
  expect(JSON.parse(second.out())).toMatchObject({ error: { code: 'worker_id_in_use', retryable: false } });
  first.proc.stdin.end();
  expect(await first.exited).toBe(0);
  const third = childWorker(['hold', harness.systemDatabaseUrl, 'shared-id']);
  await third.isReady;
  expect(third.out()).toContain('ready');
  third.proc.stdin.end();
  expect(await third.exited).toBe(0);
}, 60_000);

it('a run suspended for approval in one process, which then exits, is approved from another process and completes there; the tool runs exactly once', async () => {
  const schema = harness.unique('approve');
  const stores = await harness.open(schema);
  const effects = join(dir, 'deploy.jsonl');
  const suspender = childWorker(['suspend', harness.systemDatabaseUrl, 'suspender', harness.postgres.connectionString, schema, 'deploy-1', effects]);
  expect(await suspender.exited, suspender.err()).toBe(0);
  expect(JSON.parse(suspender.out())).toEqual({ status: 'suspended', pending: ['d1'] });
  expect(existsSync(effects)).toBe(false);

  // This process (a worker of its own) answers: a new run, a new workflow, here.
  const executor = new DBOSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { logger: silentLogger, name: harness.unique('approver'), agents: [createApprovalAgent(effects)] });
  const result = await (await executor.approve('deploy-1', 'd1')).result();
  expect(result).toMatchObject({ status: 'completed', output: 'deployed' });
  const ran = readFileSync(effects, 'utf8').trim().split('\n');
  expect(ran).toHaveLength(1);
  expect(JSON.parse(ran[0]!)).toMatchObject({ pid: process.pid, target: 'prod' });
  await executor.close();
}, 60_000);

it("a run suspended on a client tool in one process, which then exits, resumes in another process with the result submitted there (submitToolResult), and completes with it", async () => {
  const schema = harness.unique('client');
  const stores = await harness.open(schema);
  const asker = childWorker(['ask', harness.systemDatabaseUrl, 'asker', harness.postgres.connectionString, schema, 'ask-1', '']);
  expect(await asker.exited, asker.err()).toBe(0);
  expect(JSON.parse(asker.out())).toEqual({ status: 'suspended', pending: ['q1'] });
  const suspendedRun = (await stores.stateStore.loadSession('ask-1'))!.currentRunId;

  const executor = new DBOSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { logger: silentLogger, name: harness.unique('answerer'), agents: [createClientToolAgent()] });
  expect(await executor.pendingCalls('ask-1')).toEqual([expect.objectContaining({ toolCallId: 'q1', kind: 'client', input: { question: 'which colour?' } })]);
  const handle = await executor.submitToolResult('ask-1', 'q1', 'blue');
  const result = await handle.result();
  expect(result).toMatchObject({ status: 'completed', output: 'the user said "blue"' });
  // A new run (a workflow of its own, on this worker) delivered the answer as the call's result.
  expect(handle.runId).not.toBe(suspendedRun);
  expect((await stores.stateStore.getRun(handle.runId))?.leaseOwner).toContain(`:${process.pid}:`);
  const rows = (await stores.stateStore.loadSession('ask-1'))!.messages.filter((m) => m.role === 'tool');
  expect(rows).toEqual([expect.objectContaining({ toolCallId: 'q1', content: 'blue' })]);
  await executor.close();
}, 60_000);

it('stop() from a process that does not run the run cancels its workflow; the worker running it ends the run interrupted, and onAgentFail fires with run_interrupted', async () => {
  const schema = harness.unique('stop');
  const stores = await harness.open(schema);
  const hooks = join(dir, 'slow.jsonl');
  const runner = childWorker(['slow', harness.systemDatabaseUrl, 'runner', harness.postgres.connectionString, schema, 'slow-1', hooks]);
  // Wait until the child's tool is running.
  const deadline = Date.now() + 30_000;
  while (!(existsSync(hooks) && readFileSync(hooks, 'utf8').includes('beforeTool')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  const executor = new DBOSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { logger: silentLogger, name: harness.unique('stopper') });
  const started = Date.now();
  const stopped = await executor.stop('slow-1');
  expect(stopped, `runner: ${runner.out()} ${runner.err()}`).toMatchObject({ status: 'interrupted', sessionId: 'slow-1' });
  expect(Date.now() - started).toBeLessThan(10_000);
  expect(await runner.exited, runner.err()).toBe(0);
  expect(JSON.parse(runner.out())).toMatchObject({ status: 'interrupted' });
  const points = readFileSync(hooks, 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as { point: string }).point);
  expect(points).toContain('onAgentFail:run_interrupted');
  expect(points).not.toContain('onAgentComplete');
  // Nothing runs on the session any more: a second stop finds nothing.
  expect(await executor.stop('slow-1')).toBeUndefined();
  await executor.close();
}, 60_000);
