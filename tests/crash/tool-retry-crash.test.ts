// Rule 157 across a crash: a side-effecting tool's retries happen inside its one journaled call, so a
// process killed between two tries, or inside a retry after its effect, is recovered without running
// the call again: the tries before the crash are all there are, and the call gets `tool_interrupted`.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolResultMessage } from '@helix-agents/sdk';
import { lines, runChild } from './compare.js';
import type { TryLine } from './retry-agent.js';
import { openTarget, type TargetStores } from './targets.js';

const here = dirname(fileURLToPath(import.meta.url));

describe('tool retries across a SIGKILL (sqlite)', () => {
  let dir = '';
  let target = '';
  let stores: TargetStores;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'helix-retry-crash-'));
    target = `sqlite:${join(dir, 'retry.db')}`;
    stores = await openTarget(target);
  });

  afterAll(async () => {
    await stores?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function scenario(sessionId: string, crashAt: string | undefined) {
    const effects = join(dir, `${sessionId}.jsonl`);
    const args = [target, sessionId, effects];
    const crashed = await runChild(join(here, 'retry-child.ts'), ['run', ...args], crashAt);
    const recovered = crashAt ? await runChild(join(here, 'retry-child.ts'), ['recover', ...args]) : crashed;
    const session = await stores.stateStore.loadSession(sessionId);
    const row = session?.messages.find((m): m is ToolResultMessage => m.role === 'tool' && m.toolName === 'charge');
    const run = session?.currentRunId ? await stores.stateStore.getRun(session.currentRunId) : undefined;
    return { crashed, recovered, tries: lines<TryLine>(effects), row, run };
  }

  it('rule 157: uncrashed, the failed first try is retried once and the call succeeds', async () => {
    const o = await scenario('reference', undefined);
    expect(o.crashed.code, o.crashed.stderr).toBe(0);
    expect(o.tries.map((t) => t.attempt)).toEqual([1, 2]);
    expect(o.row?.content).toEqual({ charged: true });
    expect(o.run?.status).toBe('completed');
  }, 60_000);

  it.each([
    ['between two tries', 'before_tool_retry', 1],
    ['inside the retry, after its effect', 'in_tool@2', 2],
  ])('rule 157: a SIGKILL %s never runs the side-effecting call again after recovery', async (_what, crashAt, triesBefore) => {
    const o = await scenario(`crash-${crashAt.replace('@', '-')}`, crashAt);
    expect(o.crashed.signal, o.crashed.stderr).toBe('SIGKILL');
    expect(o.recovered.code, o.recovered.stderr).toBe(0);
    expect((JSON.parse(o.recovered.stdout) as { recovered: boolean }).recovered).toBe(true);
    // The tries are those of the process that died: the recovering process ran none.
    expect(o.tries).toHaveLength(triesBefore);
    expect(new Set(o.tries.map((t) => t.pid)).size).toBe(1);
    expect(o.row?.errorInfo?.code).toBe('tool_interrupted');
    expect(o.run?.status).toBe('completed');
  }, 60_000);
});
