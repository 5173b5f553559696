// `helix sessions` and `helix sessions show ID` (issue 15, item 9).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { io, runOptions } from './__tests__/cli-harness.js';
import { runCli } from './cli.js';
import { runCommand, type RunOptions } from './run.js';
import { printSessionDetails, type SessionDetails } from './sessions.js';

const root = mkdtempSync(join(tmpdir(), 'helix-sessions-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const options = (database: string, overrides: Partial<RunOptions> = {}): RunOptions => runOptions('first message', database, overrides);

describe('helix sessions', () => {
  it('lists the sessions of a project store and shows one: runs, transcript, hook decisions, usage', async () => {
    const project = join(root, 'project');
    const database = join(project, '.helix', 'helix.db');
    const first = io();
    expect(await runCommand(options(database), first.io)).toBe(0);
    const sessionId = /session (\S+)\n$/.exec(first.stdout())?.[1] ?? '';
    expect(await runCommand(options(database, { session: sessionId, message: 'second message' }), io().io)).toBe(0);
    expect(await runCommand(options(database, { agent: 'flaky' }), io().io)).toBe(1);

    const list = io();
    expect(await runCli(['sessions', '--dir', project], list.io), list.stderr()).toBe(0);
    const lines = list.stdout().trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^\S+ {2}flaky {2}1 run {2}failed {2}\d{4}-/);
    expect(lines[1]).toMatch(new RegExp(`^${sessionId} {2}helper {2}2 runs {2}completed {2}\\d{4}-`));

    const json = io();
    expect(await runCli(['sessions', '--dir', project, '--json'], json.io)).toBe(0);
    expect(JSON.parse(json.stdout())).toEqual([
      expect.objectContaining({ agent: 'flaky', runs: 1, status: 'failed' }),
      expect.objectContaining({ sessionId, agent: 'helper', runs: 2, status: 'completed' }),
    ]);

    const show = io();
    expect(await runCli(['sessions', 'show', sessionId, '--dir', project], show.io), show.stderr()).toBe(0);
    const text = show.stdout();
    expect(text).toContain(`session ${sessionId} (agent "helper")`);
    expect(text.match(/ {2}\S+ {2}completed {2}\w+ {2}2 steps/g)).toHaveLength(2);
    expect(text).toContain('  user: first message\n');
    expect(text).toContain('  assistant -> echo {"text":"first message"}\n');
    expect(text).toContain('  tool echo: ');
    expect(text).toContain('  user: second message\n');
    expect(text).toContain('hook decisions: none');
    expect(text).toMatch(/usage: 4 model calls \(0 failed\), \d+ in \/ \d+ out tokens, 2 tool calls \(0 failed\)/);
  });

  it('prints hook decisions; a missing store or session and a bad subcommand are clear errors', async () => {
    const out: string[] = [];
    const details: SessionDetails = {
      sessionId: 's1',
      agent: 'a',
      runs: [],
      messages: [],
      hookDecisions: [{ type: 'hook_decision', hookPoint: 'beforeTool', hookName: 'guard', decision: 'block', reason: 'not allowed', durationMs: 2, streamId: 's1', agentId: 's1', agentType: 'a', runId: 'r1', timestamp: 0, seq: 0 }],
      usage: { tokens: { prompt: 0, completion: 0, total: 0, cached: 0, cacheWrite: 0, reasoning: 0 }, modelCalls: 0, failedModelCalls: 0, toolStats: { totalCalls: 0, failures: 0, byTool: {} } },
    };
    printSessionDetails(details, { write: (t: string) => void out.push(t) });
    expect(out.join('')).toContain('  beforeTool guard: block (not allowed) 2 ms\n');

    const missing = io();
    expect(await runCli(['sessions', '--dir', join(root, 'nothing-here')], missing.io)).toBe(66);
    expect(missing.stderr()).toContain('No helix store at');
    const bad = io();
    expect(await runCli(['sessions', 'drop', 'x', '--dir', root], bad.io)).toBe(64);
  });
});
