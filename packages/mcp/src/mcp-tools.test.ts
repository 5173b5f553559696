// MCP tools in helix runs, against the fixture server (the official SDK's McpServer) in a child process,
// over stdio and over Streamable HTTP on 127.0.0.1: every hook and guard applies to them as to any tool.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createHookManager, defineAgent, guardPolicy, InMemoryStateStore, type StreamChunk, type ToolDefinition } from '@helix-agents/sdk';
import type { JournalEntry } from '@helix-agents/sdk/store';
import { createRedactionHook, createToolGuard, createToolResultOffloadHook, FileSystemToolResultStore, NeverOffload, OffloadOverChars } from '@helix-agents/sdk/ready-made';
import { createScriptedModel, type ScriptedStep } from '@helix-agents/sdk/testing';
import { connectMcpServer, type McpConnection } from './index.js';
import { callLog, collect, executorFor, startHttpFixture, stdioFixture, toolResultsSeen, toolRows, type HttpFixture } from './__tests__/servers.js';

/** An InMemoryStateStore that keeps the kind of every journal entry written, in order. */
class JournalSpyStore extends InMemoryStateStore {
  readonly journaled: string[] = [];
  override async appendJournal(entry: JournalEntry): Promise<JournalEntry> {
    this.journaled.push(entry.key);
    return super.appendJournal(entry);
  }
}

describe.each(['stdio', 'http'] as const)('MCP tools over %s', (kind) => {
  const log = callLog();
  let http: HttpFixture | undefined;
  let mcp: McpConnection;
  let tools: ToolDefinition[];

  beforeAll(async () => {
    if (kind === 'http') http = await startHttpFixture(log.file);
    mcp = await connectMcpServer({ name: 'fx', transport: kind === 'stdio' ? stdioFixture(log.file) : http!.transport() });
    tools = await mcp.tools({ exclude: ['exit'] });
  }, 30_000);
  afterAll(async () => {
    await mcp?.close();
    await http?.kill();
    log.remove();
  });
  beforeEach(() => log.reset());

  const agentOf = (steps: ScriptedStep[], agentTools: readonly ToolDefinition[] = tools) => {
    const model = createScriptedModel(steps);
    return { model, agent: defineAgent({ name: 'mcp-user', llmConfig: { model, retry: { initialDelayMs: 1 } }, tools: agentTools }) };
  };
  const tool = (name: string) => tools.find((t) => t.name === name)!;

  it("offers the server's tools as fx__<tool> with the server's JSON Schema; a call runs on the server and its result reaches the model", async () => {
    const { model, agent } = agentOf([{ toolCalls: [{ name: 'fx__add', args: { a: 2, b: 3 }, id: 'c1' }] }, { text: 'It is 5.' }]);
    const { executor, stateStore } = executorFor();
    const result = await (await executor.execute(agent, 'add 2 and 3', { sessionId: `${kind}-add` })).result();
    expect(result).toMatchObject({ status: 'completed', output: 'It is 5.' });
    expect(log.calls().map((c) => [c.tool, c.args])).toEqual([['add', { a: 2, b: 3 }]]);
    // The model was offered the server's schema and got the server's structured result.
    const offered = model.calls[0]!.tools!.find((t) => t.name === 'fx__add') as { inputSchema: unknown; description: string };
    expect(offered.description).toBe('Adds two numbers.');
    expect(offered.inputSchema).toEqual({ type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] });
    expect(toolResultsSeen(model)).toEqual([{ toolName: 'fx__add', output: { type: 'json', value: { sum: 5 } } }]);
    expect((await toolRows(stateStore, `${kind}-add`))[0]).toMatchObject({ toolName: 'fx__add', content: { sum: 5 } });
  });

  it('a text-only result reaches the model as its text, and a tool with an odd server name is callable under its sanitised name', async () => {
    const weird = tools.find((t) => t.name.startsWith('fx__weird_name_'))!;
    expect(weird.name).toMatch(/^fx__weird_name____?[0-9a-f]{8}$/);
    const { model, agent } = agentOf([{ toolCalls: [{ name: 'fx__echo', args: { text: 'hi' } }, { name: weird.name, args: {} }] }, { text: 'ok' }]);
    await (await executorFor().executor.execute(agent, 'go')).result();
    expect(log.calls().map((c) => c.tool).sort()).toEqual(['echo', 'weird.name/ü']);
    expect(toolResultsSeen(model).map((r) => r.output)).toEqual([{ type: 'text', value: 'echo: hi' }, { type: 'text', value: 'weird ran' }]);
  });

  it('beforeTool blocks an MCP call: the server is never called and the model gets the block reason', async () => {
    const { model, agent } = agentOf([{ toolCalls: [{ name: 'fx__write_note', args: { path: 'a.txt', body: 'x' } }] }, { text: 'blocked' }]);
    const hooks = { beforeTool: () => ({ block: true as const, reason: 'no writes today' }) };
    const result = await (await executorFor().executor.execute(agent, 'write', { hooks })).result();
    expect(result.status).toBe('completed');
    expect(log.calls()).toEqual([]);
    expect(JSON.stringify(toolResultsSeen(model))).toContain('no writes today');
  });

  it('beforeTool rewrites the arguments of an MCP call: the server runs with the rewritten ones', async () => {
    const { agent } = agentOf([{ toolCalls: [{ name: 'fx__write_note', args: { path: '/etc/passwd', body: 'x' } }] }, { text: 'done' }]);
    const hooks = { beforeTool: () => ({ input: { path: 'sandbox/note.txt', body: 'x' } }) };
    await (await executorFor().executor.execute(agent, 'write', { hooks })).result();
    expect(log.calls().map((c) => c.args)).toEqual([{ path: 'sandbox/note.txt', body: 'x' }]);
  });

  it('a createToolGuard deny rule holds for MCP tools (by glob and by argument): the server is never called', async () => {
    const guard = createHookManager(
      createToolGuard({ deny: ['fx__write_*'], argumentRules: [{ tool: 'fx__echo', path: 'text', deny: [/password/] }] }),
      { onError: guardPolicy },
    );
    const { agent } = agentOf([
      { toolCalls: [{ name: 'fx__write_note', args: { path: 'a', body: 'b' }, id: 'w' }, { name: 'fx__echo', args: { text: 'my password' }, id: 'e' }] },
      { text: 'refused' },
    ]);
    const { executor, stateStore } = executorFor();
    await (await executor.execute(agent, 'go', { sessionId: `${kind}-guard`, hookManager: guard })).result();
    expect(log.calls()).toEqual([]);
    const rows = await toolRows(stateStore, `${kind}-guard`);
    expect(rows.map((r) => [r.toolCallId, r.errorInfo?.code])).toEqual(expect.arrayContaining([['w', 'hook_blocked'], ['e', 'hook_blocked']]));
  });

  it('an MCP tool that needs approval suspends the run without calling the server; after approve() it runs exactly once', async () => {
    const gated = await mcp.tools({ include: ['write_note'], needsApproval: true });
    const { model, agent } = agentOf([{ toolCalls: [{ name: 'fx__write_note', args: { path: 'n.txt', body: 'hello' }, id: 'a1' }] }, { text: 'written' }], gated);
    const { executor, stateStore } = executorFor();
    const first = await executor.execute(agent, 'write it', { sessionId: `${kind}-approve` });
    const chunks = await collect(first.stream());
    expect((await first.result()).status).toBe('suspended');
    expect(chunks.some((c: StreamChunk) => c.type === 'tool_approval_request' && c.toolName === 'fx__write_note')).toBe(true);
    expect(log.calls()).toEqual([]);
    const second = await (await executor.approve(`${kind}-approve`, 'a1')).result();
    expect(second).toMatchObject({ status: 'completed', output: 'written' });
    expect(log.calls().map((c) => [c.tool, c.args])).toEqual([['write_note', { path: 'n.txt', body: 'hello' }]]);
    expect(toolResultsSeen(model)).toEqual([{ toolName: 'fx__write_note', output: { type: 'text', value: 'wrote 5 characters to n.txt' } }]);
    expect((await toolRows(stateStore, `${kind}-approve`)).filter((r) => r.toolCallId === 'a1')).toHaveLength(1);
  });

  it("arguments that fail the server's JSON Schema go back to the model as tool_invalid_input; the server is not called until they are right", async () => {
    const { model, agent } = agentOf([
      { toolCalls: [{ name: 'fx__echo', args: { text: 5 }, id: 'bad' }] },
      { toolCalls: [{ name: 'fx__echo', args: { text: 'five' }, id: 'good' }] },
      { text: 'echoed' },
    ]);
    const { executor, stateStore } = executorFor();
    await (await executor.execute(agent, 'echo', { sessionId: `${kind}-invalid` })).result();
    const rows = await toolRows(stateStore, `${kind}-invalid`);
    expect(rows[0]).toMatchObject({ toolCallId: 'bad', isError: true, errorInfo: { code: 'tool_invalid_input' } });
    expect(rows[0]!.errorInfo?.message).toContain('must be string');
    expect(rows[0]!.errorInfo?.details).toMatchObject({ issues: [{ path: ['text'], message: 'must be string' }] });
    expect(log.calls().map((c) => c.args)).toEqual([{ text: 'five' }]);
    expect(model.callCount).toBe(3);
  });

  it('a tool error of the server (isError) becomes an mcp_tool_error result with its message; the run goes on', async () => {
    const { model, agent } = agentOf([{ toolCalls: [{ name: 'fx__fail', args: {}, id: 'f' }] }, { text: 'it failed' }]);
    const { executor, stateStore } = executorFor();
    const after: unknown[] = [];
    const result = await (await executor.execute(agent, 'go', { sessionId: `${kind}-fail`, hooks: { afterTool: (p) => void after.push({ success: p.success, code: p.error?.code }) } })).result();
    expect(result.status).toBe('completed');
    const row = (await toolRows(stateStore, `${kind}-fail`))[0]!;
    expect(row.isError).toBe(true);
    expect(row.errorInfo).toMatchObject({ code: 'mcp_tool_error', layer: 'tool', retryable: false, details: { server: 'fx', tool: 'fx__fail', serverTool: 'fail' } });
    expect(row.errorInfo?.message).toContain('disk full');
    expect(after).toEqual([{ success: false, code: 'mcp_tool_error' }]);
    expect(JSON.stringify(toolResultsSeen(model))).toContain('disk full');
  });

  it('a call slower than its timeoutMs ends with mcp_timeout (retryable) and the run goes on', async () => {
    const quick = await mcp.tools({ include: ['slow'], timeoutMs: 200 });
    const { agent } = agentOf([{ toolCalls: [{ name: 'fx__slow', args: { ms: 3_000 }, id: 's' }] }, { text: 'too slow' }], quick);
    const { executor, stateStore } = executorFor();
    const started = Date.now();
    const result = await (await executor.execute(agent, 'go', { sessionId: `${kind}-slow` })).result();
    expect(Date.now() - started).toBeLessThan(2_500);
    expect(result.status).toBe('completed');
    expect((await toolRows(stateStore, `${kind}-slow`))[0]!.errorInfo).toMatchObject({ code: 'mcp_timeout', retryable: true, details: { timeoutMs: 200 } });
  });

  it('stopping the run cancels an MCP call in flight: the run ends interrupted at once, the call paired run_stopped', async () => {
    const { agent } = agentOf([{ toolCalls: [{ name: 'fx__slow', args: { ms: 10_000 }, id: 's' }] }, { text: 'never' }]);
    const { executor, stateStore } = executorFor();
    const handle = await executor.execute(agent, 'go', { sessionId: `${kind}-stop` });
    const started = Date.now();
    for await (const chunk of handle.stream()) if (chunk.type === 'tool_start') await handle.stop('enough');
    const result = await handle.result();
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(result.status).toBe('interrupted');
    expect((await toolRows(stateStore, `${kind}-stop`)).map((r) => r.errorInfo?.code)).toEqual(['run_stopped']);
  });

  it('redaction and result offloading apply to MCP results', async () => {
    const store = new FileSystemToolResultStore({ dir: log.dir });
    const offload = createToolResultOffloadHook({ store, policies: { fx__big: OffloadOverChars(1_000), '*': NeverOffload } });
    const { model, agent } = agentOf([{ toolCalls: [{ name: 'fx__secret', args: {}, id: 's' }, { name: 'fx__big', args: { chars: 5_000 }, id: 'b' }] }, { text: 'ok' }]);
    const { executor, stateStore } = executorFor();
    const hookManager = createHookManager(createRedactionHook(), { onError: guardPolicy }).register(offload);
    await (await executor.execute(agent, 'go', { sessionId: `${kind}-redact`, hookManager })).result();
    const rows = await toolRows(stateStore, `${kind}-redact`);
    const secret = String(rows.find((r) => r.toolCallId === 's')!.content);
    expect(secret).toContain('[REDACTED]');
    expect(secret).not.toContain('sk-live-0123456789abcdefghijklmnop');
    expect(secret).not.toContain('ops@example.com');
    expect(String(rows.find((r) => r.toolCallId === 'b')!.content)).toMatch(/^Tool result offloaded to '.+' \(5000 characters\)/);
    expect(JSON.stringify(toolResultsSeen(model))).not.toContain('x'.repeat(1_001));
  });

  it('side effects: by default a tool is journaled (at most once), except one the server marks readOnlyHint; sideEffects: true overrides the hint', async () => {
    expect(tool('fx__add').sideEffects).toBe(false);
    expect(tool('fx__echo').sideEffects).toBe(false);
    expect(tool('fx__write_note').sideEffects).toBe(true);
    expect(tool('fx__fail').sideEffects).toBe(true);
    expect((await mcp.tools({ include: ['add'], sideEffects: true }))[0]!.sideEffects).toBe(true);
    expect((await mcp.tools({ include: ['write_note'], sideEffects: (t) => t.name !== 'write_note' }))[0]!.sideEffects).toBe(false);
    const stateStore = new JournalSpyStore();
    const { agent } = agentOf([{ toolCalls: [{ name: 'fx__write_note', args: { path: 'j', body: 'j' }, id: 'w' }, { name: 'fx__add', args: { a: 1, b: 1 }, id: 'p' }] }, { text: 'ok' }]);
    await (await executorFor({ stateStore }).executor.execute(agent, 'go')).result();
    // Only the side-effecting call goes through the journal: a start marker, then its result.
    expect(stateStore.journaled.filter((k) => k.includes(':w'))).toEqual(['call_started:0:w', 'call_result:0:w']);
    expect(stateStore.journaled.filter((k) => k.includes(':p'))).toEqual([]);
  });
});
