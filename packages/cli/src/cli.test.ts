import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileBucket, kvNamespace } from '@helix-agents/sdk/hooks';
import { SqliteDatabase, SqliteFileStore, SqliteKVStore } from '@helix-agents/store-sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { fixture, io, runOptions } from './__tests__/cli-harness.js';
import { runCli } from './cli.js';
import { runCommand, type RunOptions } from './run.js';


const folders: string[] = [];
afterEach(() => {
  for (const dir of folders.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'helix-cli-'));
  folders.push(dir);
  return dir;
}

describe('helix: clear errors and exit codes', () => {
  it.each([
    [['validate', '--bogus'], 64, "Unknown option '--bogus'"],
    [['launch'], 64, 'Unknown command "launch"'],
    [['run', '--dir', '.'], 64, 'helix run needs --message'],
    [['run', '--message', 'hi', '--model', 'gpt'], 64, '--model must be one of auto, scripted, openai, agent'],
    [['run', '--message', 'hi', '--hook-wait', 'soon'], 64, '--hook-wait must be a whole number'],
    [['validate', '--dir', '/nonexistent/helix-project'], 66, 'The project folder /nonexistent/helix-project does not exist'],
    [['info', '--dir', '/nonexistent/helix-project', '--json'], 66, 'does not exist'],
  ])('%j exits %i', async (argv, code, message) => {
    const t = io();
    expect(await runCli(argv, t.io)).toBe(code);
    expect(t.stderr()).toContain(message);
    expect(t.stderr()).not.toMatch(/\n\s+at /);
  });

  it('no command prints the usage and exits 64; --help exits 0', async () => {
    const none = io();
    expect(await runCli([], none.io)).toBe(64);
    expect(none.stdout()).toContain('Usage: helix <command>');
    const help = io();
    expect(await runCli(['run', '--help'], help.io)).toBe(0);
  });

  it.each([['--help'], ['validate', '--help'], ['info', '--help']])("%j says validate and info import the project's modules and so run its code", async (...argv) => {
    const t = io();
    expect(await runCli(argv, t.io)).toBe(0);
    const usage = t.stdout();
    expect(usage).toMatch(/validate \[--dir \.\] \[--json\][^\n]*\n[^\n]*imports the project's modules, so runs their code/);
    expect(usage).toMatch(/info \[--dir \.\] \[--json\][^\n]*imports the project's modules,\s+so runs their code/);
    expect(usage).toContain("validate, info, run and dev import the project's modules");
    expect(usage).toContain('Use them only on projects you trust.');
  });

  it('init refuses a folder that already has agents/ or hooks/', async () => {
    const t = io();
    expect(await runCli(['init', fixture('valid')], t.io)).toBe(1);
    expect(t.stderr()).toContain('already has agents and hooks/');
  });

  it('run with several agents and no --agent asks for one (64); an unknown --agent too', async () => {
    const t = io();
    expect(await runCli(['run', '--dir', fixture('valid'), '--message', 'hi'], t.io)).toBe(64);
    expect(t.stderr()).toContain('pick one with --agent <name>');
    const u = io();
    expect(await runCli(['run', '--dir', fixture('valid'), '--agent', 'nobody', '--message', 'hi'], u.io)).toBe(64);
    expect(u.stderr()).toContain('No agent "nobody"');
  });

  it('rule 179: validate and run refuse a project with discovery errors (exit 1), listing them all', async () => {
    const t = io();
    expect(await runCli(['validate', '--dir', fixture('broken'), '--json'], t.io)).toBe(1);
    const report = JSON.parse(t.stdout()) as { ok: boolean; diagnostics: { code: string }[] };
    expect(report.ok).toBe(false);
    expect(report.diagnostics).toHaveLength(7);
    const r = io();
    expect(await runCli(['run', '--dir', fixture('broken'), '--message', 'hi'], r.io)).toBe(1);
    expect(r.stderr()).toContain('error   hooks/plain.ts: the default export must be defineHook(...)');
  });
});

describe('helix run (in process, SQLite in a temporary folder)', () => {
  const base = (database: string, overrides: Partial<RunOptions> = {}): RunOptions => runOptions('please explode', database, overrides);

  it('rules 172, 183: streams the turn, logs a throwing hook on stderr, and keeps hook kv and files durable across runs', async () => {
    const database = join(tempDir(), 'helix.db');
    const first = io();
    expect(await runCommand(base(database), first.io)).toBe(0);
    const stdout = first.stdout();
    expect(stdout).toContain('[tool] echo started {"text":"please explode"}');
    expect(stdout).toMatch(/\[tool\] echo ok \(\d+ ms\)/);
    expect(stdout).toContain('You said please explode');
    expect(stdout).toContain('[hook] memory · turn.completed threw: journal exploded on purpose');
    expect(stdout).toMatch(/\[run\] completed in \d+ ms · 2 steps · 22 in \/ 6 out tokens · \d+ hook calls, 1 threw · session \S+/);
    expect(first.stderr()).toMatch(/error hook "memory" handler for turn\.completed threw: journal exploded on purpose\n/);
    expect(first.stderr()).toContain('on the scripted model playing agents/helper.script.json; hooks: audit/usage, memory, ops__pager, ops__metrics');
    const sessionId = /session (\S+)\n$/.exec(stdout)?.[1];
    expect(sessionId).toBeDefined();

    // A second turn of the same session, in a new "process" (the store is closed and opened again).
    const second = io();
    expect(await runCommand(base(database, { session: sessionId!, message: 'calmly' }), second.io)).toBe(0);
    expect(second.stdout()).toContain('You said calmly');
    expect(second.stderr()).not.toContain('threw');

    const db = SqliteDatabase.open({ path: database });
    try {
      expect(await new SqliteKVStore(db).get(kvNamespace('helper'), 'tokens')).toBe(12);
      const journal = await new SqliteFileStore(db).read(fileBucket('helper', sessionId!, 'session'), 'journal.md');
      expect(new TextDecoder().decode(journal?.data)).toBe('You said please explode\nYou said calmly\n');
    } finally {
      db.close();
    }
  });

  it('a failed turn exits 1 and shows why; --model openai without a key is a usage error; the default script answers', async () => {
    const database = join(tempDir(), 'helix.db');
    const failed = io();
    expect(await runCommand(base(database, { agent: 'flaky' }), failed.io)).toBe(1);
    expect(failed.stdout()).toMatch(/\[run\] failed after \d+ ms: .*Incorrect API key provided\. · 0 steps/);
    expect(failed.stderr()).toContain('failed in');
    expect(await runCommand(base(database, { agent: 'triage', model: 'openai' }), io().io).catch((e: unknown) => e)).toMatchObject({ code: 'cli_model_unavailable' });
    const scripted = io();
    expect(await runCommand(base(database, { agent: 'triage', message: 'hello' }), scripted.io)).toBe(0);
    expect(scripted.stdout()).toContain('This is the scripted model: it echoes your message (hello).');
  });
});
