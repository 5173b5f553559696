import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { StreamChunk } from '@helix-agents/sdk';
import { describe, expect, it } from 'vitest';
import { beginRequest } from './__tests__/begin-request.js';
import { useTempDatabases } from './__tests__/temp-databases.js';
import { SQLITE_SCHEMA_VERSION } from './migrations.js';
import { openSqliteStores } from './open.js';

const CHILD = fileURLToPath(new URL('./__tests__/two-process-child.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const STEPS = 200;

interface ChildResult {
  readonly role: string;
  readonly claimed?: boolean;
  readonly applied?: number[];
  readonly shared?: { committed?: number; refusedAt?: number; supersededRunId?: string; sawCommits?: number; tornReads?: number; reads?: number };
}

/** Runs the child script in ONE node process (no npx/tsx wrapper process) and parses its JSON line. */
function child(path: string, role: 'a' | 'b' | 'open'): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ['--conditions=helix-source', '--import', 'tsx', CHILD, path, role, String(STEPS)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    proc.stdout.on('data', (data: Buffer) => (out += data.toString()));
    proc.stderr.on('data', (data: Buffer) => (err += data.toString()));
    proc.on('error', reject);
    proc.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`child ${role} exited with ${String(code)}: ${err}`));
      try {
        resolve(JSON.parse(out.trim().split('\n').at(-1) ?? '') as ChildResult);
      } catch {
        reject(new Error(`child ${role} printed no result: ${out} ${err}`));
      }
    });
  });
}

/**
 * Starts a child that commits steps until it is SIGKILLed, once its WAL checkpoints have run in the
 * background thread for `afterBackground` commits; resolves with the commits it reported.
 */
function crashAfter(path: string, afterBackground: number): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ['--conditions=helix-source', '--import', 'tsx', CHILD, path, 'crash', '0'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    const reported: number[] = [];
    let backgroundAt: number | undefined;
    let buffer = '';
    let err = '';
    proc.stdout.on('data', (data: Buffer) => {
      buffer += data.toString();
      const lines = buffer.split('\n');
      buffer = lines.pop() ?? '';
      for (const line of lines) {
        if (line.startsWith('committed ')) reported.push(Number(line.slice(10)));
        if (line.startsWith('background ')) backgroundAt = reported.length;
      }
      if (backgroundAt !== undefined && reported.length >= backgroundAt + afterBackground && proc.exitCode === null && !proc.killed) proc.kill('SIGKILL');
      // A child whose checkpoint thread never starts is not left committing forever.
      if (backgroundAt === undefined && reported.length > 5_000 && !proc.killed) {
        proc.kill('SIGKILL');
        reject(new Error('the crash child never reported its checkpoint thread running'));
      }
    });
    proc.stderr.on('data', (data: Buffer) => (err += data.toString()));
    proc.on('error', reject);
    proc.on('exit', (_code, signal) => (signal === 'SIGKILL' ? resolve(reported) : reject(new Error(`the crash child ended without being killed: ${err}`))));
  });
}

describe('two processes on one SQLite file', () => {
  const temp = useTempDatabases('helix-sqlite-2p-');

  it('a process SIGKILLed while committing (its WAL checkpoints running in the background thread) loses no commit it saw resolve, and leaves no partial one', { timeout: 60_000 }, async () => {
    const path = temp.path();
    const reported = await crashAfter(path, 400);
    // The thread starts after a few hundred write transactions; the kill comes 400 commits after it did.
    expect(reported.length).toBeGreaterThanOrEqual(600);
    const stores = openSqliteStores({ path });
    try {
      const session = await stores.stateStore.loadSession('crash');
      const steps = session?.stepCount ?? 0;
      // Every reported commit is there; at most the one in flight when the kill landed is there too.
      expect(steps).toBeGreaterThanOrEqual(reported.length);
      expect(steps).toBeLessThanOrEqual(reported.length + 1);
      expect(session?.state).toEqual({ n: steps });
      expect(session?.messages).toEqual(Array.from({ length: steps * 3 }, (_, k) => ({ role: 'assistant', content: `c/${Math.floor(k / 3)}:${k % 3}` })));
      expect((await stores.stateStore.listCheckpoints('crash')).map((c) => c.stepCount)).toEqual(Array.from({ length: steps }, (_, k) => k + 1));
      expect(await stores.stateStore.getRun('crash-run')).toMatchObject({ status: 'running', stepCount: steps });
    } finally {
      stores.close();
    }
  });

  it('two processes opening a new file at once migrate it exactly once', { timeout: 60_000 }, async () => {
    const path = temp.path();
    const results = await Promise.all([child(path, 'open'), child(path, 'open')]);
    const applied = results.flatMap((r) => r.applied ?? []);
    expect(applied.sort()).toEqual(Array.from({ length: SQLITE_SCHEMA_VERSION }, (_, i) => i + 1));
  });

  it('commit through the fence concurrently: nothing is lost or torn, the superseded process writes nothing more', { timeout: 120_000 }, async () => {
    const path = temp.path();
    const setup = openSqliteStores({ path });
    // An orphan: a running run whose lease expired long ago; both processes will try to recover it.
    await setup.stateStore.beginRun(beginRequest('orphan', 'orphan-run', { startedAt: 0, leaseOwner: 'dead', leaseMs: 1 }));
    setup.close();

    const [a, b] = await Promise.all([child(path, 'a'), child(path, 'b')]);
    const stores = openSqliteStores({ path });
    try {
      const { stateStore, streamManager } = stores;
      // Exactly one process recovered the orphan, and its epoch moved once.
      expect([a.claimed, b.claimed].filter(Boolean)).toHaveLength(1);
      expect(await stateStore.getRun('orphan-run')).toMatchObject({ epoch: 2, leaseOwner: a.claimed ? 'process-a' : 'process-b' });

      // Every step of each process's own sessions is there, in order, with a checkpoint each.
      for (const role of ['a', 'b']) {
        for (let s = 0; s < 3; s++) {
          const sessionId = `${role}-${s}`;
          const session = await stateStore.loadSession(sessionId);
          const expected = [];
          for (let i = 0; i < STEPS; i++) for (let j = 0; j < 3; j++) expected.push({ role: 'assistant', content: `${sessionId}/${i}:${j}` });
          expect(session).toMatchObject({ stepCount: STEPS, state: { n: STEPS } });
          expect(session?.messages).toEqual(expected);
          expect(await stateStore.listCheckpoints(sessionId)).toHaveLength(STEPS);
        }
      }

      // The shared session: a's committed steps, then b's, and nothing of a after the takeover.
      const committedByA = a.shared?.committed ?? -1;
      expect(a.shared?.refusedAt).toBe(committedByA);
      expect(b.shared?.supersededRunId).toBe('shared-a');
      expect(b.shared?.tornReads).toBe(0);
      expect(b.shared?.reads).toBeGreaterThan(0);
      expect(committedByA).toBeGreaterThanOrEqual(b.shared?.sawCommits ?? Number.POSITIVE_INFINITY);
      const shared = await stateStore.loadSession('shared');
      const expected = [];
      for (let i = 0; i < committedByA; i++) for (let j = 0; j < 3; j++) expected.push({ role: 'assistant', content: `a/${i}:${j}` });
      for (let i = 0; i < 5; i++) for (let j = 0; j < 3; j++) expected.push({ role: 'assistant', content: `b/${i}:${j}` });
      expect(shared?.messages).toEqual(expected);
      expect(shared).toMatchObject({ currentRunId: 'shared-b', stepCount: committedByA + 5, state: { n: committedByA, by: 'a' } });
      expect(await stateStore.getRun('shared-a')).toMatchObject({ status: 'superseded', stepCount: committedByA });

      // The shared stream: a's chunks, then b's, gap-free; nothing of a after b's claim.
      const chunks: StreamChunk[] = [];
      for await (const chunk of streamManager.read('shared', { follow: false })) chunks.push(chunk);
      expect(chunks.map((c) => c.seq)).toEqual(chunks.map((_, i) => i));
      const deltas = chunks.map((c) => (c.type === 'text_delta' ? c.delta : c.type));
      // a writes its chunk just after its commit, so b's claim may land between the two: a's last chunk may be missing.
      const fromA = deltas.filter((d) => d.startsWith('a')).length;
      expect([committedByA - 1, committedByA]).toContain(fromA);
      expect(deltas).toEqual([...Array.from({ length: fromA }, (_, i) => `a${i}`), ...Array.from({ length: 5 }, (_, i) => `b${i}`)]);
    } finally {
      stores.close();
    }
  });
});
