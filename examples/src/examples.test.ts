import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCompleteExample } from './complete-example.js';
import { PATTERNS, runPattern } from './patterns/run.js';

// An environment without provider settings, so the examples play their scripts whatever the machine has
// set, and a database of its own.
const folder = mkdtempSync(join(tmpdir(), 'helix-demo-'));
const scriptedEnv: NodeJS.ProcessEnv = { HELIX_DB: join(folder, 'demo.db') };
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('examples run on the scripted model', () => {
  it('the Complete Example (the demo) shows hooks, streamed text, the output and the usage rollup', async () => {
    let out = '';
    const { result, usage } = await runCompleteExample((t) => (out += t), scriptedEnv);
    expect(result.status).toBe('completed');
    expect(result.output?.sources).toHaveLength(3);
    expect(result.state.searchCount).toBe(3);
    expect(out).toMatch(/\[hook\] \[session-\w+\] Starting research agent/);
    expect(out).toContain('store: SQLite at');
    expect(out).toContain('model> Let me start with the basics.');
    expect(out).toMatch(/\[hook\] \[session-\w+\] search: OK/);
    expect(out).toContain('[hook] State updated by tool');
    expect(out).toContain('Completed in 3 steps');
    expect(out).toContain('Final output:');
    expect(out).toMatch(/Stream \(session [\w-]+\): \d+ chunks recorded \(1 run_started/);
    expect(usage?.toolStats.totalCalls).toBe(3);
    expect(out).toContain(`Usage: ${usage?.tokens.total} tokens`);
  });

  it.each(PATTERNS)('the %s pattern runs', async (name) => {
    const run = await runPattern(name, () => {}, scriptedEnv);
    if (name === 'rate-limit') {
      expect(run.result.status).toBe('failed');
      expect(run.result.error?.code).toBe('hook_failed');
      expect(run.result.error?.message).toContain('Rate limit exceeded');
    } else {
      expect(run.result.status).toBe('completed');
    }
    if (name === 'logging') expect(run.lines.filter((l) => l.startsWith('DEBUG Tool completed'))).toHaveLength(3);
    if (name === 'metrics') expect(run.lines).toContain('counter agent.steps: 3');
    if (name === 'custom-events') expect(run.lines.filter((l) => l.startsWith('custom tool.executed'))).toHaveLength(3);
    if (name === 'timing') expect(run.lines.filter((l) => l.startsWith('search: '))).toHaveLength(3);
  });
});

describe('the research team example (sub-agents)', () => {
  it('the lead fans out to five researchers; every fold lands in its own notes[threadId]; child chunks stream live in the lead\'s stream; usage includes the children', async () => {
    const { runResearchTeam } = await import('./research-team.js');
    const { state, output, childChunks, modelCalls } = await runResearchTeam();
    expect(state.notes.map((n) => n.status)).toEqual(['covered', 'covered', 'covered', 'covered', 'covered']);
    expect(state.notes.map((n) => n.finding)).toEqual(['batteries', 'solar', 'wind', 'hydrogen', 'grid storage'].map((t) => `Finding about ${t}: costs fell again this year.`));
    expect(output).toBe('Summary: 5 topics researched.');
    expect(childChunks).toBeGreaterThanOrEqual(15);
    expect(modelCalls).toBe(7);
  });
});
