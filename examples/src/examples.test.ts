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
  it("the lead fans out to five researchers; every fold lands in its own notes[threadId]; the researchers' chunks are printed live from the lead's stream (each thread's text pieces, tagged with its call and depth 1, before its fold and the lead's summary; the first before the last fold); usage includes the children", async () => {
    const { runResearchTeam } = await import('./research-team.js');
    const lines: string[] = [];
    const { state, output, childChunks, modelCalls } = await runResearchTeam((line) => lines.push(line));
    expect(state.notes.map((n) => n.status)).toEqual(['covered', 'covered', 'covered', 'covered', 'covered']);
    expect(state.notes.map((n) => n.finding)).toEqual(['batteries', 'solar', 'wind', 'hydrogen', 'grid storage'].map((t) => `Finding about ${t}: costs fell again this year.`));
    expect(output).toBe('Summary: 5 topics researched.');
    expect(childChunks).toBeGreaterThanOrEqual(15);
    expect(modelCalls).toBe(7);
    // It prints the researchers' chunks live from the lead's stream: each thread's text pieces (tagged with its
    // call and depth 1) spell its finding, before its afterSubAgent line and the lead's summary.
    const summary = lines.indexOf('  lead › Summary: 5 topics researched.');
    expect(summary).toBeGreaterThan(0);
    for (const [threadId, topic] of ['batteries', 'solar', 'wind', 'hydrogen', 'grid storage'].entries()) {
      const prefix = `  ⋯ thread-${threadId} (depth 1) › `;
      const pieces = lines.filter((l) => l.startsWith(prefix));
      expect(pieces.map((l) => l.slice(prefix.length)).join('')).toBe(`Finding about ${topic}: costs fell again this year.`);
      const ended = lines.indexOf(`  ⋯ thread-${threadId} (depth 1) ended`);
      const folded = lines.findIndex((l) => l.startsWith(`  ← thread-${threadId} covered`));
      expect(lines.indexOf(pieces.at(-1) as string)).toBeLessThan(ended);
      expect(ended).toBeLessThan(summary);
      expect(lines.indexOf(pieces[0] as string)).toBeLessThan(folded);
    }
    // Live: the first researcher's text is printed before the last researcher's outcome is folded.
    const lastFold = lines.map((l) => l.startsWith('  ← thread-')).lastIndexOf(true);
    expect(lines.findIndex((l) => l.startsWith('  ⋯ thread-') && l.includes(' › '))).toBeLessThan(lastFold);
  });
});
