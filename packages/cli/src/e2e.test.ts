import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fileBucket } from '@helix-agents/sdk/hooks';
import { SqliteDatabase, SqliteFileStore } from '@helix-agents/store-sqlite';
import { afterAll, describe, expect, it } from 'vitest';

// The CLI exactly as `npx helix` runs it: one node process on bin/helix.js (no build, no npx wrapper).
const BIN = fileURLToPath(new URL('../bin/helix.js', import.meta.url));
const BROKEN = fileURLToPath(new URL('../test-fixtures/broken', import.meta.url));

interface Ran {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function helix(args: readonly string[], cwd: string): Promise<Ran> {
  const env = { ...process.env };
  // Always the scripted model, whatever the machine has configured.
  delete env['OPENAI_API_KEY'];
  delete env['OPENAI_BASE_URL'];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (data: Buffer) => (stdout += data.toString()));
    child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const root = mkdtempSync(join(tmpdir(), 'helix-e2e-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

// The two tests run side by side: each is mostly a node process starting up.
describe.concurrent('helix end to end, in child processes', { timeout: 60_000 }, () => {
  it('rules 181, 182, 183: init → validate → info --json → run, outside the repo (the project borrows the CLI packages)', async () => {
    const dir = join(root, 'my-bot');
    const init = await helix(['init', dir], root);
    expect(init.stderr).toBe('');
    expect(init.code).toBe(0);
    expect(init.stdout).toContain('hooks/memory.ts');

    const validate = await helix(['validate', '--dir', '.'], dir);
    expect(validate.code).toBe(0);
    expect(validate.stdout).toContain('0 errors, 0 warnings (1 agent, 1 hook in');

    const info = await helix(['info', '--dir', '.', '--json'], dir);
    expect(info.code).toBe(0);
    const parsed = JSON.parse(info.stdout) as { agents: { name: string; tools: string[]; hooks: string[] }[] };
    expect(parsed.agents).toEqual([expect.objectContaining({ name: 'assistant', tools: ['clock'], hooks: ['memory'] })]);

    // A hook that fails, to see the serve log line.
    writeFileSync(
      join(dir, 'hooks', 'pager.ts'),
      "import { defineHook } from '@helix-agents/sdk/hooks';\n\nexport default defineHook({ events: { 'turn.completed'() { throw new Error('pager offline'); } } });\n",
    );
    const run = await helix(['run', '--dir', '.', '--message', 'What time is it?'], dir);
    expect(run.code, run.stderr).toBe(0);
    // stdout is a pipe here: plain progress lines.
    expect(run.stdout).toContain('[tool] clock started {"timeZone":"UTC"}');
    expect(run.stdout).toMatch(/\[tool\] clock ok \(\d+ ms\)/);
    expect(run.stdout).toContain('You said: "What time is it?"');
    expect(run.stdout).toContain('[hook] memory · turn.completed ok');
    expect(run.stdout).toMatch(/\[run\] completed in .* · 2 steps · 280 in \/ 60 out tokens · .* · session \S+\n$/);
    expect(run.stderr).toMatch(/ error hook "pager" handler for turn\.completed threw: pager offline\n/);
    expect(run.stderr).not.toContain('\x1b[');

    // The journal hook wrote the transcript to the session's durable files in .helix/helix.db.
    const sessionId = /session (\S+)\n$/.exec(run.stdout)![1]!;
    const db = SqliteDatabase.open({ path: join(dir, '.helix', 'helix.db') });
    try {
      const journal = await new SqliteFileStore(db).read(fileBucket('assistant', sessionId, 'session'), 'journal.md');
      const text = new TextDecoder().decode(journal?.data);
      expect(text).toContain('**user:** What time is it?');
      expect(text).toMatch(/- `clock` returned \{"timeZone":"UTC","now":".+"\}/);
      expect(text).toContain('**assistant:** I looked at the clock');
    } finally {
      db.close();
    }
  });

  it('rule 179: validate on a broken project lists every error and warning and exits 1', async () => {
    const result = await helix(['validate', '--dir', BROKEN], root);
    expect(result.code).toBe(1);
    const lines = result.stdout.trim().split('\n');
    expect(lines.filter((l) => l.startsWith('error '))).toHaveLength(6);
    expect(lines.filter((l) => l.startsWith('warning '))).toEqual(['warning hooks/empty.ts: hook "empty" has an empty events map; it is skipped']);
    expect(lines.at(-1)).toMatch(/^6 errors, 1 warning \(1 agent, 1 hook in /);
  });
});
