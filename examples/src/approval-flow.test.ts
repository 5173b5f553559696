import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { runApprovalFlow, terminalDecider } from './approval-flow.js';

const folders: string[] = [];
afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});
const db = () => {
  const folder = mkdtempSync(join(tmpdir(), 'helix-approval-'));
  folders.push(folder);
  return join(folder, 'approval.db');
};

describe('the approval flow example', () => {
  it('programmatically: a rejection with a reason goes back to the model and the file stays', async () => {
    const lines: string[] = [];
    const result = await runApprovalFlow({ decide: () => ({ decision: 'reject', reason: 'keep drafts' }), dbPath: db(), env: {}, print: (l) => lines.push(l) });
    expect(result.status).toBe('completed');
    expect(String(result.output)).toContain('kept the file');
    expect(String(result.output)).toContain('keep drafts');
    expect(lines[0]).toBe('The agent wants to run delete_file {"path":"notes/old-draft.txt"}');
  });

  it('at the terminal: the person edits the path, and the edited call runs', async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    let shown = '';
    output.on('data', (d: Buffer) => (shown += d.toString()));
    input.end('e\nnotes/todo.txt\n');
    const lines: string[] = [];
    const result = await runApprovalFlow({ decide: terminalDecider(input, output), dbPath: db(), env: {}, print: (l) => lines.push(l) });
    expect(shown).toContain('Approve? [y]es / [e]dit / [n]o');
    expect(lines).toContain('approved with {"path":"notes/todo.txt"}');
    expect(result.status).toBe('completed');
    expect(String(result.output)).toContain('"deleted":"notes/todo.txt"');
  });
});
