// Where the test harness runs Postgres from: an installation inside a private (0700) folder, as a
// checkout under a root user's home or `mktemp -d` has, must still start (issue 15, item 1).
import { execFile } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { embeddedBinaries, postgresUser, reachableBinaries, startTestPostgres } from './test-postgres.js';

const exec = promisify(execFile);
const cleanup: string[] = [];

afterAll(async () => {
  for (const path of cleanup) await rm(path, { recursive: true, force: true });
});

/** A copy of the embedded installation inside a fresh 0700 folder. */
async function privateInstall(): Promise<{ readonly folder: string; readonly install: string }> {
  const folder = await mkdtemp(join(tmpdir(), 'helix-private-'));
  cleanup.push(folder);
  const install = join(folder, 'checkout', 'native');
  await exec('mkdir', ['-p', join(folder, 'checkout')]);
  await exec('cp', ['-a', (await embeddedBinaries()).install, install]);
  expect((await stat(folder)).mode & 0o777).toBe(0o700);
  return { folder, install };
}

describe('the test harness from a private folder', () => {
  it('runs the binaries in place when the server runs as this user, and from a reachable copy when root runs it as another user', async () => {
    const { folder, install } = await privateInstall();
    const binaries = { initdb: join(install, 'bin', 'initdb'), postgres: join(install, 'bin', 'postgres'), version: 'private-test', install };
    const runAs = await postgresUser();
    const placed = await reachableBinaries(binaries, runAs);
    if (runAs === undefined) {
      // Not root: the server runs as this user, who can reach the folder.
      expect(placed).toEqual(binaries);
      return;
    }
    cleanup.push(placed.install);
    expect(placed.postgres.startsWith(folder)).toBe(false);
    expect(placed.postgres.startsWith(tmpdir())).toBe(true);
    // The server's user runs the copy (it could not run the original: EACCES).
    await expect(exec(binaries.postgres, ['--version'], runAs)).rejects.toThrow(/EACCES/);
    const { stdout } = await exec(placed.postgres, ['--version'], runAs);
    expect(stdout).toMatch(/PostgreSQL/);
    // Root owns the copy and nobody else can write it; a second call reuses it.
    const copied = await stat(placed.install);
    expect(copied.uid).toBe(0);
    expect(copied.mode & 0o022).toBe(0);
    expect(await reachableBinaries(binaries, runAs)).toEqual(placed);
  });

  it('starts a cluster from binaries inside a private folder', async () => {
    const { folder, install } = await privateInstall();
    const runAs = await postgresUser();
    const server = await startTestPostgres({ binDir: join(install, 'bin') });
    try {
      const client = new pg.Client({ connectionString: server.connectionString });
      await client.connect();
      try {
        const result = await client.query<{ one: number }>('SELECT 1 AS one');
        expect(result.rows[0]?.one).toBe(1);
      } finally {
        await client.end();
      }
      const executable = await exec('readlink', [`/proc/${server.pid}/exe`]);
      // As root the server runs from the copy; otherwise from the private folder itself.
      expect(executable.stdout.trim().startsWith(folder)).toBe(runAs === undefined);
      if (runAs !== undefined) cleanup.push(join(executable.stdout.trim(), '..', '..'));
    } finally {
      await server.stop();
    }
  });
});
