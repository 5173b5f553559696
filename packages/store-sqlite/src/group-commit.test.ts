import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunSupersededError } from '@helix-agents/sdk';
import type { Message } from '@helix-agents/sdk';
import type { BeginRunRequest } from '@helix-agents/sdk/store';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStores } from './open.js';
import type { SqliteStores } from './open.js';

function begin(sessionId: string, runId: string): BeginRunRequest {
  return { sessionId, runId, agentType: 'agent', signal: 'start', initialState: { n: 0 }, newTurn: { turnId: `t-${runId}`, input: [] }, startedAt: 1, leaseOwner: 'p', leaseMs: 60_000, options: {} };
}

function row(text: string): Message {
  return { role: 'assistant', content: text };
}

describe('SQLite group commit (commits issued in one tick share one transaction)', () => {
  let dir: string;
  let stores: SqliteStores;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'helix-sqlite-gc-'));
    stores = openSqliteStores({ path: join(dir, 'helix.db') });
  });
  afterEach(() => {
    stores.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('applies them in call order: two steps of one session in one batch, a refused commit between them rolls back alone', async () => {
    const store = stores.stateStore;
    await store.beginRun(begin('a', 'ra'));
    await store.beginRun(begin('b', 'rb-old'));
    await store.beginRun(begin('b', 'rb'));
    const results = await Promise.allSettled([
      store.commit({ sessionId: 'a', runId: 'ra', epoch: 1, kind: 'step', stepIndex: 0, appendMessages: [row('a0')], state: { n: 1 }, checkpoint: 'step', committedAt: 2 }),
      store.commit({ sessionId: 'b', runId: 'rb-old', epoch: 1, kind: 'step', stepIndex: 0, appendMessages: [row('stale')], state: { n: 9 }, committedAt: 2 }),
      store.commit({ sessionId: 'a', runId: 'ra', epoch: 1, kind: 'step', stepIndex: 1, appendMessages: [row('a1'), row('a1b')], state: { n: 2 }, checkpoint: 'step', committedAt: 3 }),
      store.commit({ sessionId: 'a', runId: 'ra', epoch: 1, kind: 'step', stepIndex: 1, appendMessages: [row('dup')], committedAt: 4 }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'rejected']);
    expect(RunSupersededError.isInstance(results[1]?.status === 'rejected' ? results[1].reason : undefined)).toBe(true);
    expect(results[0]).toMatchObject({ value: { version: 2, messageCount: 1 } });
    expect(results[2]).toMatchObject({ value: { version: 3, messageCount: 3 } });
    expect(await store.loadSession('a')).toMatchObject({ messages: [row('a0'), row('a1'), row('a1b')], state: { n: 2 }, stepCount: 2, version: 3 });
    expect((await store.listCheckpoints('a')).map((c) => c.messageCount)).toEqual([1, 3]);
    expect(await store.loadSession('b')).toMatchObject({ messages: [], state: { n: 0 } });
  });

  it('a commit still queued when the database closes is applied before the connection goes', async () => {
    const path = join(dir, 'helix.db');
    await stores.stateStore.beginRun(begin('a', 'ra'));
    const pending = stores.stateStore.commit({ sessionId: 'a', runId: 'ra', epoch: 1, kind: 'step', stepIndex: 0, appendMessages: [row('last')], committedAt: 2 });
    stores.close();
    await expect(pending).resolves.toMatchObject({ messageCount: 1 });
    stores = openSqliteStores({ path });
    expect((await stores.stateStore.loadSession('a'))?.messages).toEqual([row('last')]);
  });
});
