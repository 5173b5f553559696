// Issue 12 item 5: two DBOS worker processes share one Postgres. Worker A starts a run and SIGKILLs
// itself at a named crash point; worker B, already serving, sees A's heartbeat stop, resumes A's pending
// workflow, and finishes the run. The test checks that the run finished on B within 15 s of the kill,
// that no committed step was lost or doubled, that side-effecting tools ran at most once, and that there
// was exactly one start signal and one terminal hook. And for an agent without side-effecting tools,
// killed before a step's commit: B replays the step's model reply (journalModelReplies 'always'), it
// does not call the model again.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunRecord, SessionSnapshot } from '@helix-agents/sdk';
import { openPostgresStores, type PostgresStores } from '@helix-agents/store-postgres';
import { startTestPostgres, type TestPostgres } from '@helix-agents/store-postgres/testing';
import type { HookLogLine } from './agent.js';
import type { ModelCallLine } from './reply-agent.js';
import { canonical, canonicalState, lines } from './compare.js';

const here = dirname(fileURLToPath(import.meta.url));
/** The crash points (with the occurrence to die at): after K1, in onAgentStart, in a model call, in a side-effecting tool, before K3, in onAgentComplete, before K5. */
const CRASH_POINTS = ['after_k1', 'in_on_agent_start', 'in_model_call@2', 'in_tool', 'before_k3@2', 'in_on_agent_complete', 'before_k5'] as const;
const TAKEOVER_BUDGET_MS = 15_000;

interface Worker {
  readonly proc: ChildProcess;
  readonly ready: Promise<void>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr(): string;
}

function worker(args: readonly string[], crashAt?: string): Worker {
  // One process (node --import tsx), so that the SIGKILL of its pid kills the process that writes.
  const proc = spawn(process.execPath, ['--conditions=helix-source', '--import', 'tsx', join(here, 'dbos-worker.ts'), ...args], {
    env: { ...process.env, HELIX_CRASH_AT: crashAt ?? '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let onReady!: () => void;
  const ready = new Promise<void>((resolve) => (onReady = resolve));
  proc.stdout?.on('data', (d: Buffer) => {
    stdout += d.toString();
    if (stdout.includes('ready ')) onReady();
  });
  proc.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.on('close', (code, signal) => resolve({ code, signal })));
  return { proc, ready, exited, stderr: () => stderr };
}

describe('DBOS two-worker kill matrix on Postgres', () => {
  let postgres: TestPostgres;
  let stores: PostgresStores;
  let dir = '';
  let systemDatabaseUrl = '';
  let storesUrl = '';
  let survivor: Worker;
  let reference: { session: SessionSnapshot; run: RunRecord };

  const files = (sessionId: string) => ({ effects: join(dir, `${sessionId}.effects.jsonl`), hooks: join(dir, `${sessionId}.hooks.jsonl`) });
  const args = (mode: string, executorId: string, sessionId: string) => [mode, systemDatabaseUrl, storesUrl, executorId, sessionId, dir];
  /** The session's current run once it is no longer running, polled until `deadline`. */
  const settled = async (sessionId: string, deadline: number): Promise<{ session: SessionSnapshot; run: RunRecord } | undefined> => {
    while (Date.now() < deadline) {
      const session = await stores.stateStore.loadSession(sessionId);
      const run = session?.currentRunId ? await stores.stateStore.getRun(session.currentRunId) : undefined;
      if (session && run && run.status !== 'running') return { session: (await stores.stateStore.loadSession(sessionId))!, run };
      await new Promise((r) => setTimeout(r, 100));
    }
    return undefined;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'helix-dbos-kill-'));
    postgres = await startTestPostgres();
    systemDatabaseUrl = `postgres://postgres@127.0.0.1:${postgres.port}/dbos_sys`;
    storesUrl = postgres.connectionString;
    stores = await openPostgresStores({ connectionString: storesUrl });
    // The uncrashed reference, on a worker of its own.
    const alone = worker(args('start', 'reference', 'reference'));
    expect((await alone.exited).code, alone.stderr()).toBe(0);
    reference = (await settled('reference', Date.now() + 10_000))!;
    survivor = worker(args('serve', 'survivor', 'unused'));
    await survivor.ready;
  }, 180_000);

  afterAll(async () => {
    survivor?.proc.kill('SIGTERM');
    await survivor?.exited;
    await stores?.close();
    await postgres?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('the uncrashed reference run completes with three committed steps', () => {
    expect(reference.run.status).toBe('completed');
    expect(reference.session.stepCount).toBe(3);
    expect(lines<{ to: string }>(files('reference').effects).map((e) => e.to)).toEqual(['alice', 'bob']);
  });

  it.each(CRASH_POINTS)('worker A is SIGKILLed at %s; worker B finishes the run', async (crashAt) => {
    const sessionId = `kill-${crashAt.replace('@', '-')}`;
    const doomed = worker(args('start', `a-${sessionId}`, sessionId), crashAt);
    const death = await doomed.exited;
    const killedAt = Date.now();
    expect(death.signal, doomed.stderr()).toBe('SIGKILL');

    const done = await settled(sessionId, killedAt + TAKEOVER_BUDGET_MS);
    expect(done, `the run did not finish within ${TAKEOVER_BUDGET_MS} ms of the kill; survivor: ${survivor.stderr()}`).toBeDefined();
    const { session, run } = done!;
    const hooks = lines<HookLogLine>(files(sessionId).hooks);
    const effects = lines<{ pid: number; key: string; to: string }>(files(sessionId).effects);
    const doomedPid = doomed.proc.pid;
    const survivorPid = survivor.proc.pid;

    // The run finished, on the survivor (it holds the run's last lease; its hooks ran there, but for a
    // death before K5, where onAgentComplete's recorded outcome is replayed), and nothing committed was
    // lost or doubled.
    expect(run.status).toBe('completed');
    expect(run.leaseOwner).toContain(`:${survivorPid}:`);
    expect(hooks.some((h) => h.pid === survivorPid)).toBe(crashAt !== 'before_k5');
    expect(hooks.every((h) => h.pid === doomedPid || h.pid === survivorPid)).toBe(true);
    expect(session.stepCount).toBe(reference.session.stepCount);

    // Side-effecting tools ran at most once per call.
    expect(new Set(effects.map((e) => e.key)).size).toBe(effects.length);
    expect(effects.map((e) => e.to).sort()).toEqual(['alice', 'bob']);
    if (crashAt === 'in_tool') {
      // The worker died after the effect and before its result was recorded: the call is not run
      // again; the model gets tool_interrupted for it, so the send's state write is not there.
      const row = session.messages.find((m) => m.role === 'tool' && m.toolCallId === 's0_send');
      expect(JSON.stringify(row)).toContain('tool_interrupted');
      expect((session.state as { log: string[] }).log).not.toContain('sent alice');
    } else {
      expect(canonical(session.messages)).toEqual(canonical(reference.session.messages));
      expect(canonicalState(session.state)).toEqual(canonicalState(reference.session.state));
    }

    // Exactly one start signal and one terminal hook; owed start work only when the signal fired uncommitted.
    const starts = hooks.filter((h) => h.point === 'onAgentStart' && h.phase === 'start');
    expect(starts.filter((h) => h.startSignal === true)).toHaveLength(1);
    expect(starts.filter((h) => h.startSignal === false)).toHaveLength(crashAt === 'in_on_agent_start' ? 1 : 0);
    expect(hooks.filter((h) => h.point === 'onAgentComplete' && h.phase === 'done')).toHaveLength(1);
    expect(hooks.filter((h) => h.point === 'onAgentFail' || h.point === 'onAgentSuperseded')).toHaveLength(0);
    // The survivor claimed the run with the next epoch, fencing out anything the dead worker left in flight.
    expect(run.epoch).toBe(2);
  }, 90_000);

  it("worker A is SIGKILLed before K3 of an agent without side-effecting tools; worker B replays the step's journaled model reply (journalModelReplies 'always') instead of calling the model again", async () => {
    const sessionId = 'kill-reply-before_k3';
    const doomed = worker(args('start-reply', `a-${sessionId}`, sessionId), 'before_k3');
    expect((await doomed.exited).signal, doomed.stderr()).toBe('SIGKILL');
    const done = await settled(sessionId, Date.now() + TAKEOVER_BUDGET_MS);
    expect(done, `the run did not finish within ${TAKEOVER_BUDGET_MS} ms of the kill; survivor: ${survivor.stderr()}`).toBeDefined();
    const { session, run } = done!;
    expect(run.status).toBe('completed');
    expect(run.leaseOwner).toContain(`:${survivor.proc.pid}:`);
    // One model call per step in all: step 0's on A (its reply replayed on B), step 1's on B.
    const calls = lines<ModelCallLine>(join(dir, 'model-calls.jsonl')).filter((c) => c.input === sessionId);
    expect(calls.map((c) => [c.turn, c.pid])).toEqual([
      [0, doomed.proc.pid],
      [1, survivor.proc.pid],
    ]);
    // The committed reply of step 0 is the one A got; B ran its (pure) tool again with it.
    const first = session.messages.find((m) => m.role === 'assistant');
    expect(first?.role === 'assistant' ? first.toolCalls?.[0]?.arguments : undefined).toEqual({ text: `asked in ${doomed.proc.pid}` });
    expect(session.state).toEqual({ notes: [`asked in ${doomed.proc.pid}`] });
    expect(session.stepCount).toBe(2);
  }, 90_000);
});
