// A small MCP server (the official SDK's McpServer, over stdio) that keeps notes in memory: the server the
// MCP example connects to. Any MCP server works the same way.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const notes = new Map<string, string>([['n1', 'Hooks observe and steer agents.'], ['n2', 'Old draft: delete me.']]);
const server = new McpServer({ name: 'notes', version: '1.0.0' });
const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] });

server.registerTool('search_notes', { description: 'Finds notes containing a word.', inputSchema: { query: z.string() }, annotations: { readOnlyHint: true } }, async ({ query }) =>
  text(JSON.stringify([...notes].filter(([, body]) => body.toLowerCase().includes(query.toLowerCase())).map(([id, body]) => ({ id, body })))),
);
server.registerTool('add_note', { description: 'Adds a note.', inputSchema: { body: z.string().min(1) } }, async ({ body }) => {
  const id = `n${notes.size + 1}`;
  notes.set(id, body);
  return text(`added ${id}`);
});
server.registerTool('delete_note', { description: 'Deletes a note.', inputSchema: { id: z.string() }, annotations: { destructiveHint: true } }, async ({ id }) =>
  notes.delete(id) ? text(`deleted ${id}`) : { ...text(`no note ${id}`), isError: true },
);

await server.connect(new StdioServerTransport());
process.stdin.on('end', () => process.exit(0));
