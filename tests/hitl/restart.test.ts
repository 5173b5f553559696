// Issue 5: a suspension survives a process restart. A child process runs the agent until it suspends
// and exits; this process (another one) answers from the SQLite file alone, twice, and the run completes.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { JSAgentExecutor, silentLogger, type AgentHooks } from '@helix-agents/sdk';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { openSqliteStores } from '@helix-agents/store-sqlite';
import { createRestartAgent, sent } from './agent.js';

const here = dirname(fileURLToPath(import.meta.url));
const folder = mkdtempSync(join(tmpdir(), 'helix-restart-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('suspension across a process restart (SQLite)', () => {
  it('a client-tool suspension written by one process is answered by another; the approval that follows too', () => runScenario(), 60_000);
});

async function runScenario(): Promise<void> {
  const path = join(folder, 'restart.db');
  const out = execFileSync(process.execPath, ['--conditions=helix-source', '--import', 'tsx', join(here, 'child.ts'), path], { encoding: 'utf8' });
  const child = JSON.parse(out) as { status: string; pending: string[]; pid: number };
  expect(child).toMatchObject({ status: 'suspended', pending: ['ask'] });
  expect(child.pid).not.toBe(process.pid);

  const stores = openSqliteStores({ path });
  try {
    const signals: string[] = [];
    const hooks: AgentHooks = {
      onAgentStart: () => void signals.push('start'),
      onAgentResumed: (ctx) => void signals.push(`resumed:${ctx.previousRunId === '' ? 'none' : 'set'}`),
    };
    const executor = new JSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { logger: silentLogger, agents: [createRestartAgent()] });
    const afterAnswer = await (await executor.submitToolResult('restart', 'ask', 'bob', { hooks })).result();
    expect(afterAnswer).toMatchObject({ status: 'suspended', suspension: { reason: 'client_tool', pending: [{ toolCallId: 'mail', kind: 'approval' }] } });
    const done = await (await executor.approve('restart', 'mail', { hooks })).result();
    expect(done).toMatchObject({ status: 'completed', output: 'Sent.' });
    expect(sent).toEqual(['bob@example.com']);
    expect(signals).toEqual(['resumed:set', 'resumed:set']);
    const session = await stores.stateStore.loadSession('restart');
    expect(session?.resumeCount).toBe(2);
    expect(session?.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'tool', 'assistant']);
  } finally {
    stores.close();
  }
}
