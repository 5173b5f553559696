import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { useTempDatabases } from './__tests__/temp-databases.js';
import { openSqliteStores } from './open.js';

const CHILD = fileURLToPath(new URL('./__tests__/stop-child.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const temp = useTempDatabases('helix-sqlite-stop-');

describe('a stop asked for by another process, through the SQLite store', () => {
  it("the process running the run (a real child process) stops it at its next lease renewal: onAgentFail(run_interrupted) fires there, the run ends interrupted with the request on it", async () => {
    const path = temp.path();
    const proc = spawn(process.execPath, ['--conditions=helix-source', '--import', 'tsx', CHILD, path, 'far-away'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    proc.stderr.on('data', (data: Buffer) => (err += data.toString()));
    const runId = await new Promise<string>((resolve, reject) => {
      proc.stdout.on('data', (data: Buffer) => {
        out += data.toString();
        const match = /^started (\S+)$/m.exec(out);
        if (match) resolve(match[1]!);
      });
      proc.on('exit', (code) => reject(new Error(`the child exited (${String(code)}) before it started: ${err}`)));
    });
    const exited = new Promise<number | null>((resolve) => proc.on('exit', resolve));
    const here = openSqliteStores({ path, busyTimeoutMs: 10_000 });
    try {
      expect((await here.stateStore.getRun(runId))?.status).toBe('running');
      const asked = await here.stateStore.requestStop(runId, { reason: 'stopped from another process', requestedAt: Date.now() });
      expect(asked?.stopRequest?.reason).toBe('stopped from another process');
      const code = await exited;
      expect(code, err + out).toBe(0);
      const reported = JSON.parse(out.trim().split('\n').at(-1) ?? '') as { status: string; code?: string; fails: string[]; pid: number };
      expect(reported).toMatchObject({ status: 'interrupted', code: 'run_interrupted', fails: ['run_interrupted'] });
      expect(reported.pid).not.toBe(process.pid);
      expect(await here.stateStore.getRun(runId)).toMatchObject({ status: 'interrupted', stopRequest: { reason: 'stopped from another process' } });
    } finally {
      if (proc.exitCode === null) proc.kill('SIGKILL');
      here.close();
    }
  }, 30_000);
});
