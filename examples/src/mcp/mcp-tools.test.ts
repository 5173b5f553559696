import { describe, expect, it } from 'vitest';
import { runMcpExample } from './mcp-tools.js';

describe('the MCP example (npm run example:mcp)', () => {
  it('searches the notes server, is blocked by the tool guard on delete_note, and adds a note after approval', async () => {
    const lines: string[] = [];
    const result = await runMcpExample((line) => lines.push(line), {});
    expect(result.status).toBe('completed');
    expect(lines[0]).toContain('search_notes -> notes__search_notes');
    expect(lines).toContain('  notes__search_notes: "[{\\"id\\":\\"n1\\",\\"body\\":\\"Hooks observe and steer agents.\\"}]"');
    expect(lines.find((l) => l.startsWith('  notes__delete_note:'))).toContain("is on the tool guard's deny list");
    expect(lines).toContain('  approval asked for notes__add_note {"body":"MCP tools obey helix hooks."}: approved');
    expect(lines).toContain('  notes__add_note: "added n3"');
  }, 60_000);
});
