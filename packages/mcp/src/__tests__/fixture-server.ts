// A small MCP server on the official SDK's McpServer, run by the tests as a child process:
//   node --import tsx fixture-server.ts stdio          (speaks MCP on stdin/stdout)
//   node --import tsx fixture-server.ts http           (Streamable HTTP on 127.0.0.1, a free port; prints "listening <port>")
//   node --import tsx fixture-server.ts hostile        (stdio; lists the tools in the JSON file HOSTILE_TOOLS, as they are)
// Every call is appended to the file named by MCP_CALL_LOG as one JSON line, so a test can count how
// often a tool really ran. Over HTTP every request needs `authorization: Bearer <MCP_TOKEN>`.
import { randomUUID } from 'node:crypto';
import { appendFileSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const mode = process.argv[2];
const callLog = process.env['MCP_CALL_LOG'];

function logCall(tool: string, args: unknown): void {
  if (callLog) appendFileSync(callLog, `${JSON.stringify({ tool, args, pid: process.pid })}\n`);
}

const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] });

function buildServer(): McpServer {
  const server = new McpServer({ name: 'fixture', version: '1.0.0' });
  server.registerTool(
    'add',
    {
      description: 'Adds two numbers.',
      inputSchema: { a: z.number(), b: z.number() },
      outputSchema: { sum: z.number() },
      annotations: { readOnlyHint: true },
    },
    async ({ a, b }) => {
      logCall('add', { a, b });
      return { content: [{ type: 'text', text: String(a + b) }], structuredContent: { sum: a + b } };
    },
  );
  server.registerTool('echo', { description: 'Echoes its text.', inputSchema: { text: z.string().min(1) }, annotations: { readOnlyHint: true } }, async ({ text: value }) => {
    logCall('echo', { text: value });
    return text(`echo: ${value}`);
  });
  server.registerTool(
    'write_note',
    { description: 'Writes a note (a side effect).', inputSchema: { path: z.string(), body: z.string() } },
    async ({ path, body }) => {
      logCall('write_note', { path, body });
      return text(`wrote ${body.length} characters to ${path}`);
    },
  );
  server.registerTool('fail', { description: 'Always reports an error.', inputSchema: {} }, async () => {
    logCall('fail', {});
    return { content: [{ type: 'text', text: 'disk full' }], isError: true };
  });
  server.registerTool('secret', { description: 'Returns a credential.', inputSchema: {}, annotations: { readOnlyHint: true } }, async () => {
    logCall('secret', {});
    return text('the key is sk-live-0123456789abcdefghijklmnop, mail ops@example.com');
  });
  server.registerTool('big', { description: 'Returns a long text.', inputSchema: { chars: z.number().int() }, annotations: { readOnlyHint: true } }, async ({ chars }) => {
    logCall('big', { chars });
    return text('x'.repeat(chars));
  });
  server.registerTool('slow', { description: 'Answers after ms milliseconds.', inputSchema: { ms: z.number() }, annotations: { readOnlyHint: true } }, async ({ ms }) => {
    logCall('slow', { ms });
    await new Promise((resolve) => setTimeout(resolve, ms));
    return text(`slept ${ms}`);
  });
  server.registerTool('exit', { description: 'The server dies in the middle of this call.', inputSchema: {} }, async () => {
    logCall('exit', {});
    // Exit once the call is logged, without answering.
    setImmediate(() => process.exit(3));
    return new Promise<never>(() => {});
  });
  // Names a hostile or careless server might advertise.
  server.registerTool('weird.name/ü', { description: 'Has characters a model tool name cannot hold.', inputSchema: {}, annotations: { readOnlyHint: true } }, async () => {
    logCall('weird.name/ü', {});
    return text('weird ran');
  });
  return server;
}

if (mode === 'stdio') {
  await buildServer().connect(new StdioServerTransport());
  // The client went away (closed our stdin): nothing more to serve.
  process.stdin.on('end', () => process.exit(0));
} else if (mode === 'hostile') {
  // The low-level Server: it lists whatever it is told to, names and schemas a careful server would not use.
  const server = new Server({ name: 'hostile', version: '0.0.1' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: JSON.parse(readFileSync(process.env['HOSTILE_TOOLS'] ?? '', 'utf8')) as never[] }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    logCall(request.params.name, request.params.arguments ?? {});
    return text(`${request.params.name} ran`);
  });
  await server.connect(new StdioServerTransport());
  process.stdin.on('end', () => process.exit(0));
} else if (mode === 'http') {
  const token = process.env['MCP_TOKEN'] ?? 'test-token';
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const http = createServer((req, res) => {
    void (async () => {
      if (req.headers.authorization !== `Bearer ${token}`) {
        res.writeHead(401, { 'content-type': 'text/plain' }).end('unauthorized');
        return;
      }
      const id = req.headers['mcp-session-id'];
      let transport = typeof id === 'string' ? sessions.get(id) : undefined;
      if (!transport) {
        if (id !== undefined) {
          res.writeHead(404).end();
          return;
        }
        const created = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (sid) => void sessions.set(sid, created),
          // The client ended its session (DELETE): logged so a test can see it.
          onsessionclosed: (sid) => {
            sessions.delete(sid);
            logCall('#session_closed', {});
          },
        });
        await buildServer().connect(created);
        transport = created;
      }
      await transport.handleRequest(req, res);
    })().catch((error: unknown) => {
      process.stderr.write(`fixture: ${String(error)}\n`);
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  http.listen(0, '127.0.0.1', () => {
    const address = http.address();
    process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : 0}\n`);
  });
} else {
  process.stderr.write('usage: fixture-server.ts stdio|http\n');
  process.exit(64);
}
