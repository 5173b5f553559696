import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JSAgentExecutor, silentLogger } from '@helix-agents/sdk';
import type { StreamChunk } from '@helix-agents/sdk';
import type { BeginRunRequest, StreamChunkInput } from '@helix-agents/sdk/store';
import { createAddLoop } from '@helix-agents/sdk/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { handleOf } from './database.js';
import { openSqliteStores } from './open.js';
import type { SqliteStores } from './open.js';


function delta(runId: string, text: string): StreamChunkInput {
  return { type: 'text_delta', streamId: 'st', agentId: 'st', agentType: 'a', runId, timestamp: 1, stepIndex: 0, delta: text };
}

function begin(sessionId: string, runId: string): BeginRunRequest {
  return { sessionId, runId, agentType: 'agent', signal: 'start', initialState: { n: 0 }, newTurn: { turnId: `t-${runId}`, input: [] }, startedAt: 1, leaseOwner: 'p', leaseMs: 60_000, options: {} };
}

async function readAll(stores: SqliteStores, streamId: string): Promise<StreamChunk[]> {
  const out: StreamChunk[] = [];
  for await (const chunk of stores.streamManager.read(streamId, { follow: false })) out.push(chunk);
  return out;
}

describe('SQLite: a step is one write transaction, its chunks included', () => {
  let dir: string;
  let stores: SqliteStores;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'helix-sqlite-step-'));
    // A long flush interval: only commits write queued chunks, so the count is exact.
    stores = openSqliteStores({ path: join(dir, 'helix.db'), flushIntervalMs: 60_000 });
  });
  afterEach(() => {
    stores.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function runOf(steps: number): Promise<{ transactions: number; sessionId: string }> {
    const executor = new JSAgentExecutor(stores.stateStore, stores.streamManager, createAddLoop(steps).adapter, { logger: silentLogger });
    const before = stores.database.writeTransactions;
    const handle = await executor.execute(createAddLoop(steps).agent, 'go', { usageStore: stores.usageStore });
    const result = await handle.result();
    expect(result.status).toBe('completed');
    expect(result.stepCount).toBe(steps);
    return { transactions: stores.database.writeTransactions - before, sessionId: result.sessionId };
  }

  it('each further step of a run adds exactly one write transaction, and the stream still holds every chunk of every step in order', async () => {
    const short = await runOf(3);
    const long = await runOf(23);
    expect((long.transactions - short.transactions) / 20).toBe(1);
    const chunks = await readAll(stores, long.sessionId);
    expect(chunks.map((c) => c.seq)).toEqual(chunks.map((_, i) => i));
    const types = chunks.map((c) => c.type);
    expect(types[0]).toBe('run_started');
    expect(types.at(-1)).toBe('end');
    expect(types.filter((t) => t === 'step_start')).toHaveLength(23);
    expect(types.filter((t) => t === 'tool_end')).toHaveLength(22);
    // ...and a step's chunks are one row: 20 more steps add 20 rows to the stream, not 20 times its chunks.
    const rows = (sessionId: string): number =>
      handleOf(stores.database).prepare('SELECT count(*) FROM stream_batches b JOIN stream_owners o ON b.key / 4294967296 = o.sk WHERE o.stream_id = ?').pluck().get(sessionId) as number;
    expect(rows(long.sessionId) - rows(short.sessionId)).toBe(20);
    expect(types.slice(1, 6)).toEqual(['step_start', 'actions_requested', 'tool_start', 'tool_end', 'actions_completed']);
  });

  it('a queued chunk is written with the next state commit on the connection, in that commit\'s transaction', async () => {
    await stores.stateStore.beginRun(begin('s', 'r1'));
    const writer = await stores.streamManager.claim('st', 'r1');
    writer.queue!(delta('r1', 'a'));
    writer.queue!(delta('r1', 'b'));
    const before = stores.database.writeTransactions;
    await stores.stateStore.commit({ sessionId: 's', runId: 'r1', epoch: 1, kind: 'step', stepIndex: 0, committedAt: 2 });
    expect(stores.database.writeTransactions - before).toBe(1);
    // A second connection sees them: they are stored, not only in this process.
    const other = openSqliteStores({ path: stores.database.path });
    try {
      const seen: string[] = [];
      for await (const c of other.streamManager.read('st', { follow: false })) if (c.type === 'text_delta') seen.push(c.delta);
      expect(seen).toEqual(['a', 'b']);
    } finally {
      other.close();
    }
  });

  it('a commit reads its fence and its session\'s head in one statement: the step count and version follow the head, and a session whose commits rows are gone (a damaged file) is refused with state_commit_failed', async () => {
    await stores.stateStore.beginRun(begin('s', 'r1'));
    const first = await stores.stateStore.commit({ sessionId: 's', runId: 'r1', epoch: 1, kind: 'step', stepIndex: 0, committedAt: 2 });
    const second = await stores.stateStore.commit({ sessionId: 's', runId: 'r1', epoch: 1, kind: 'step', stepIndex: 1, committedAt: 3 });
    expect(second.version).toBe(first.version + 1);
    // The same step again is refused: the head the read brought knows it is committed.
    await expect(stores.stateStore.commit({ sessionId: 's', runId: 'r1', epoch: 1, kind: 'step', stepIndex: 1, committedAt: 4 })).rejects.toMatchObject({ code: 'state_commit_failed' });
    expect((await stores.stateStore.getRun('r1'))?.stepCount).toBe(2);
    handleOf(stores.database).prepare('DELETE FROM commits').run();
    await expect(stores.stateStore.commit({ sessionId: 's', runId: 'r1', epoch: 1, kind: 'step', stepIndex: 2, committedAt: 5 })).rejects.toThrow(/has no commits; the database is damaged/);
  });

  it('a commit that is refused rolls its transaction back, and the chunks queued before it are still written (on their own)', async () => {
    await stores.stateStore.beginRun(begin('s', 'r1'));
    const writer = await stores.streamManager.claim('st', 'r1');
    writer.queue!(delta('r1', 'kept'));
    await expect(stores.stateStore.commit({ sessionId: 's', runId: 'r1', epoch: 7, kind: 'step', stepIndex: 0, committedAt: 2 })).rejects.toThrow();
    expect(await writer.write(delta('r1', 'after'))).toBe(true);
    expect((await readAll(stores, 'st')).map((c) => (c.type === 'text_delta' ? c.delta : c.type))).toEqual(['kept', 'after']);
  });
});

describe('SQLite: queued chunks without a commit', () => {
  let dir: string;
  let stores: SqliteStores;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'helix-sqlite-queue-'));
    stores = openSqliteStores({ path: join(dir, 'helix.db'), flushIntervalMs: 5, pollIntervalMs: 5 });
  });
  afterEach(() => {
    stores.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a chunk queued during a long step reaches a reader on another connection within the flush interval', async () => {
    const writer = await stores.streamManager.claim('st', 'r1');
    const other = openSqliteStores({ path: stores.database.path, pollIntervalMs: 5 });
    try {
      const controller = new AbortController();
      const seen: string[] = [];
      const reading = (async () => {
        for await (const c of other.streamManager.read('st', { signal: controller.signal })) {
          if (c.type === 'text_delta') seen.push(c.delta);
          if (seen.length === 1) controller.abort();
        }
      })();
      writer.queue!(delta('r1', 'live'));
      const started = Date.now();
      while (seen.length === 0 && Date.now() - started < 5_000) await new Promise((r) => setTimeout(r, 5));
      controller.abort();
      await reading;
      expect(seen).toEqual(['live']);
    } finally {
      other.close();
    }
  });

  it('a chunk queued after a commit took the pending writes is written by the timer still armed from before, once it is a flush interval old (not before, and not lost)', async () => {
    stores.close();
    stores = openSqliteStores({ path: join(dir, 'helix.db'), flushIntervalMs: 50 });
    await stores.stateStore.beginRun(begin('s', 'r1'));
    const writer = await stores.streamManager.claim('st', 'r1');
    // 'a' arms the timer; the commit writes 'a' and leaves the timer armed.
    writer.queue!(delta('r1', 'a'));
    await stores.stateStore.commit({ sessionId: 's', runId: 'r1', epoch: 1, kind: 'step', stepIndex: 0, committedAt: 2 });
    await new Promise((r) => setTimeout(r, 30));
    writer.queue!(delta('r1', 'b'));
    const queuedAt = performance.now();
    // Read on another connection: a read on this one would write what is pending first.
    const other = openSqliteStores({ path: stores.database.path });
    try {
      const deltas = async (): Promise<string[]> => (await readAll(other, 'st')).flatMap((c) => (c.type === 'text_delta' ? [c.delta] : []));
      // The timer fires about 20 ms after 'b' was queued: 'b' is not due yet, so it waits for the rest of its interval.
      await new Promise((r) => setTimeout(r, 30));
      if (performance.now() - queuedAt < 49) expect(await deltas()).toEqual(['a']);
      const started = Date.now();
      while ((await deltas()).length < 2 && Date.now() - started < 5_000) await new Promise((r) => setTimeout(r, 5));
      expect(await deltas()).toEqual(['a', 'b']);
    } finally {
      other.close();
    }
  });

  it('a queued chunk of a writer that lost the stream to another connection is dropped, and the writer no longer owns it', async () => {
    const old = await stores.streamManager.claim('st', 'r1');
    const other = openSqliteStores({ path: stores.database.path });
    try {
      const next = await other.streamManager.claim('st', 'r2');
      old.queue!(delta('r1', 'stale'));
      expect(await next.write(delta('r2', 'fresh'))).toBe(true);
      await new Promise((r) => setTimeout(r, 30));
      expect(old.owned).toBe(false);
      expect(await old.write(delta('r1', 'stale too'))).toBe(false);
      expect((await readAll(stores, 'st')).map((c) => [c.seq, c.type === 'text_delta' ? c.delta : c.type])).toEqual([[0, 'fresh']]);
    } finally {
      other.close();
    }
  });
});
