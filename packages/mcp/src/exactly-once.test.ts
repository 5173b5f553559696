// A process SIGKILLed after an MCP call ran and before its step was committed (HELIX_CRASH_AT=before_k3),
// then recovered in another process on the same SQLite file: a side-effecting MCP tool (the default) is
// not called again, its journaled result is replayed; a tool the server marks read-only is pure and
// simply runs again.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { JSAgentExecutor, silentLogger, type AgentHandle, type ToolResultMessage } from '@helix-agents/sdk';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { openSqliteStores } from '@helix-agents/store-sqlite';
import { connectMcpServer, type McpConnection } from './index.js';
import { crashAgent, CRASH_LEASE_MS } from './__tests__/crash-agent.js';
import { callLog, stdioFixture } from './__tests__/servers.js';

// Each test starts real processes (a server, or a child that crashes): allow for a busy machine.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

const here = join(import.meta.dirname, '__tests__');

function crashingChild(args: string[]): Promise<{ signal: NodeJS.Signals | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    // One node process (not `tsx file.ts`, which would start a second one that the SIGKILL misses).
    const proc = spawn(process.execPath, ['--conditions=helix-source', '--import', 'tsx', join(here, 'crash-child.ts'), ...args], {
      env: { ...process.env, HELIX_CRASH_AT: 'before_k3' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    proc.on('error', reject);
    proc.on('close', (_code, signal) => resolve({ signal, stderr }));
  });
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function crashAndRecover(serverTool: 'write_note' | 'echo') {
  const log = callLog();
  cleanups.push(() => log.remove());
  const db = join(log.dir, 'helix.db');
  const sessionId = `crash-${serverTool}`;
  const crashed = await crashingChild([db, sessionId, log.file, serverTool]);
  expect(crashed.signal, crashed.stderr).toBe('SIGKILL');
  const ranBeforeCrash = log.calls().length;

  const stores = openSqliteStores({ path: db });
  cleanups.push(() => stores.close());
  const executor = new JSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { logger: silentLogger, leaseMs: CRASH_LEASE_MS });
  const mcp: McpConnection = await connectMcpServer({ name: 'fx', transport: stdioFixture(log.file) });
  cleanups.push(() => mcp.close());
  const tools = await mcp.tools({ include: [serverTool] });
  const agent = crashAgent(tools, serverTool, 'recover', tools[0]!.sideEffects);
  let handle: AgentHandle | undefined;
  for (const deadline = Date.now() + 10_000; !handle && Date.now() < deadline; ) {
    [handle] = await executor.recover({ agents: [agent] });
    if (!handle) await new Promise((r) => setTimeout(r, 100));
  }
  expect(handle, 'the dead run was recovered').toBeDefined();
  const result = await handle!.result();
  const rows = ((await stores.stateStore.loadSession(sessionId))?.messages ?? []).filter((m): m is ToolResultMessage => m.role === 'tool');
  return { ranBeforeCrash, calls: log.calls(), result, rows, tools };
}

describe('MCP calls across a crash (SQLite, SIGKILL before the step commit)', () => {
  it('a side-effecting MCP tool (the default) ran once before the crash and is not called again: the recovered run replays its journaled result', async () => {
    const { ranBeforeCrash, calls, result, rows, tools } = await crashAndRecover('write_note');
    expect(tools[0]!.sideEffects).toBe(true);
    expect(ranBeforeCrash).toBe(1);
    expect(calls.map((c) => c.tool)).toEqual(['write_note']);
    expect(result).toMatchObject({ status: 'completed', output: 'done' });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ toolCallId: 'call-1', toolName: 'fx__write_note', content: 'wrote 2 characters to once.txt' });
  });

  it('a tool the server marks readOnlyHint is pure: the recovered run calls it again (at least once, as for any pure tool)', async () => {
    const { ranBeforeCrash, calls, result, rows, tools } = await crashAndRecover('echo');
    expect(tools[0]!.sideEffects).toBe(false);
    expect(ranBeforeCrash).toBe(1);
    expect(calls.map((c) => c.tool)).toEqual(['echo', 'echo']);
    expect(calls[0]!.pid).not.toBe(calls[1]!.pid);
    expect(result).toMatchObject({ status: 'completed', output: 'done' });
    expect(rows.map((r) => r.content)).toEqual(['echo: once']);
  });
});
