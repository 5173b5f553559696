import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AgentError } from '@helix-agents/sdk';
import BetterSqlite3 from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { beginRequest } from './__tests__/begin-request.js';
import { useTempDatabases } from './__tests__/temp-databases.js';
import { DEFAULT_SQLITE_PATH, handleOf, SqliteDatabase } from './database.js';
import { migrateSqlite, SQLITE_MIGRATIONS, SQLITE_RECORD_VERSION, SQLITE_SCHEMA_VERSION, sqliteSchemaVersion } from './migrations.js';
import { openSqliteStores } from './open.js';

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return AgentError.isInstance(error) ? error.code : String(error);
  }
  return undefined;
}

describe('SQLite schema and migrations', () => {
  const temp = useTempDatabases('helix-sqlite-mig-');

  it('the migration list is numbered 1..n without gaps', () => {
    expect(SQLITE_MIGRATIONS.map((m) => m.version)).toEqual(SQLITE_MIGRATIONS.map((_, i) => i + 1));
    expect(SQLITE_SCHEMA_VERSION).toBe(SQLITE_MIGRATIONS.length);
  });

  it('migrations are safe to run twice: the second run applies nothing and keeps the data', async () => {
    const path = temp.path();
    const first = openSqliteStores({ path });
    expect(first.database.appliedMigrations).toEqual(SQLITE_MIGRATIONS.map((m) => m.version));
    await first.stateStore.beginRun(beginRequest('s1', 'r1', { initialState: { kept: true } }));
    first.close();
    const raw = new BetterSqlite3(path);
    expect(migrateSqlite(raw)).toEqual([]);
    expect(migrateSqlite(raw)).toEqual([]);
    expect(sqliteSchemaVersion(raw)).toBe(SQLITE_SCHEMA_VERSION);
    expect(raw.prepare('SELECT count(*) FROM helix_migrations').pluck().get()).toBe(SQLITE_MIGRATIONS.length);
    raw.close();
    const second = openSqliteStores({ path });
    expect(second.database.appliedMigrations).toEqual([]);
    expect((await second.stateStore.loadSession('s1'))?.state).toEqual({ kept: true });
    second.close();
  });

  it('a later migration appended to the list is applied on the next open, once', () => {
    const path = temp.path();
    SqliteDatabase.open({ path }).close();
    const raw = new BetterSqlite3(path);
    const next = [...SQLITE_MIGRATIONS, { version: SQLITE_SCHEMA_VERSION + 1, name: 'test column', sql: 'ALTER TABLE sessions ADD COLUMN extra TEXT' }];
    expect(migrateSqlite(raw, next).map((m) => m.version)).toEqual([SQLITE_SCHEMA_VERSION + 1]);
    expect(migrateSqlite(raw, next)).toEqual([]);
    // ...and this (older) code now refuses the file.
    expect(codeOf(() => migrateSqlite(raw))).toBe('state_schema_too_new');
    raw.close();
  });

  it('a database written by a newer schema version is refused with state_schema_too_new, and left untouched', () => {
    const path = temp.path();
    SqliteDatabase.open({ path }).close();
    const raw = new BetterSqlite3(path);
    raw.prepare('INSERT INTO helix_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(SQLITE_SCHEMA_VERSION + 1, 'future', 0);
    raw.close();
    let error: unknown;
    try {
      openSqliteStores({ path });
    } catch (caught) {
      error = caught;
    }
    expect(AgentError.isInstance(error) && error.info).toMatchObject({
      code: 'state_schema_too_new',
      severity: 'fatal',
      retryable: false,
      details: { found: SQLITE_SCHEMA_VERSION + 1, supported: SQLITE_SCHEMA_VERSION },
    });
    const check = new BetterSqlite3(path);
    expect(sqliteSchemaVersion(check)).toBe(SQLITE_SCHEMA_VERSION + 1);
    check.close();
  });

  it('a session or run record stamped by a newer version is refused on read', async () => {
    const path = temp.path();
    const stores = openSqliteStores({ path });
    await stores.stateStore.beginRun(beginRequest('s1', 'r1'));
    const raw = new BetterSqlite3(path);
    raw.prepare('UPDATE sessions SET record_version = ?').run(SQLITE_RECORD_VERSION + 1);
    raw.prepare('UPDATE runs SET record_version = ?').run(SQLITE_RECORD_VERSION + 1);
    raw.close();
    await expect(stores.stateStore.loadSession('s1')).rejects.toMatchObject({ code: 'state_schema_too_new' });
    await expect(stores.stateStore.getRun('r1')).rejects.toMatchObject({ code: 'state_schema_too_new' });
    await expect(stores.stateStore.commit({ sessionId: 's1', runId: 'r1', epoch: 1, kind: 'step', stepIndex: 0, committedAt: 2 })).rejects.toMatchObject({ code: 'state_schema_too_new' });
    stores.close();
  });

  it('synchronous FULL is applied and works; NORMAL is the default; the file is in WAL mode', async () => {
    const path = temp.path();
    const full = openSqliteStores({ path, synchronous: 'FULL' });
    const raw = new BetterSqlite3(path);
    expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
    raw.close();
    expect(full.database.synchronous).toBe('FULL');
    await full.stateStore.beginRun(beginRequest('s1', 'r1'));
    await full.stateStore.commit({ sessionId: 's1', runId: 'r1', epoch: 1, kind: 'step', stepIndex: 0, appendMessages: [{ role: 'assistant', content: 'durable' }], committedAt: 2 });
    full.close();
    const reopened = openSqliteStores({ path });
    expect(reopened.database.synchronous).toBe('NORMAL');
    expect((await reopened.stateStore.loadSession('s1'))?.messages).toEqual([{ role: 'assistant', content: 'durable' }]);
    reopened.close();
  });

  it('a file that is not a database is refused with an AgentError', () => {
    const path = temp.path();
    writeFileSync(path, 'this is not a SQLite file, but it is long enough to look like one to the header check...'.repeat(20));
    expect(codeOf(() => SqliteDatabase.open({ path }))).toBe('state_commit_failed');
  });

  it('the default path is .helix/helix.db under the working directory, folder created', () => {
    const dir = temp.folder();
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      const stores = openSqliteStores();
      expect(stores.database.path).toBe(join(dir, DEFAULT_SQLITE_PATH));
      stores.close();
      expect(existsSync(join(dir, '.helix', 'helix.db'))).toBe(true);
    } finally {
      process.chdir(cwd);
    }
  });

  it('migration 5 on a version-4 file: its batch rows (chunks stored whole) read as before, the chunks written after them are packed, and the stream goes on in order', async () => {
    const path = temp.path();
    const raw = new BetterSqlite3(path);
    raw.pragma('journal_mode = WAL');
    migrateSqlite(raw, SQLITE_MIGRATIONS.slice(0, 4));
    const whole = (seq: number, text: string) => ({ type: 'text_delta', stepIndex: 0, delta: text, streamId: 'st', agentId: 'st', agentType: 'a', runId: 'r1', timestamp: seq }) as const;
    raw.prepare("INSERT INTO stream_owners (stream_id, run_id, next_seq) VALUES ('st', 'r1', 0)").run();
    // The version-4 format: one row of whole chunks, keyed sk * 2^32 + its last seq.
    raw.prepare("INSERT INTO stream_batches (key, first_seq, run_id, bodies) SELECT sk * 4294967296 + 1, 0, 'r1', ? FROM stream_owners WHERE stream_id = 'st'").run(JSON.stringify([whole(0, 'a'), whole(1, 'b')]));
    raw.close();
    const stores = openSqliteStores({ path });
    try {
      expect(stores.database.appliedMigrations).toEqual([5, 6]);
      const read = async (): Promise<unknown[]> => {
        const out: unknown[] = [];
        for await (const c of stores.streamManager.read('st', { follow: false })) out.push(c);
        return out;
      };
      expect(await read()).toEqual([0, 1].map((seq) => ({ ...whole(seq, seq === 0 ? 'a' : 'b'), seq })));
      const writer = await stores.streamManager.claim('st', 'r1');
      expect(writer.startSeq).toBe(2);
      expect(await writer.write(whole(2, 'c'))).toBe(true);
      expect(await read()).toEqual(['a', 'b', 'c'].map((delta, seq) => ({ ...whole(seq, delta), seq })));
      const rows = handleOf(stores.database).prepare('SELECT bodies, shared FROM stream_batches ORDER BY key').all() as { bodies: string; shared: string | null }[];
      expect(rows[0]!.shared).toBeNull();
      // Written by this version: the row's own stream and run, so only the agent type (schema version 6).
      expect(JSON.parse(rows[1]!.shared!)).toEqual(['a']);
      expect(rows[1]!.bodies).not.toContain('"runId"');
    } finally {
      stores.close();
    }
  });

  it('migration 4 moves the chunks of a version-3 database into stream_batches: same seqs and bodies, and the next chunk follows them', async () => {
    const path = temp.path();
    const raw = new BetterSqlite3(path);
    raw.pragma('journal_mode = WAL');
    migrateSqlite(raw, SQLITE_MIGRATIONS.slice(0, 3));
    const chunk = (seq: number, text: string) =>
      JSON.stringify({ type: 'text_delta', streamId: 'st', agentId: 'st', agentType: 'a', runId: 'r1', timestamp: seq, stepIndex: 0, delta: text });
    raw.prepare("INSERT INTO stream_owners (stream_id, run_id, next_seq) VALUES ('st', 'r1', 3)").run();
    const insert = raw.prepare("INSERT INTO stream_chunks (stream_id, seq, run_id, body) VALUES ('st', ?, 'r1', ?)");
    ['a', 'b', 'c'].forEach((text, seq) => insert.run(seq, chunk(seq, text)));
    raw.close();
    const stores = openSqliteStores({ path });
    try {
      expect(stores.database.appliedMigrations).toEqual([4, 5, 6]);
      const read = async (): Promise<{ seq: number; delta?: string }[]> => {
        const out: { seq: number; delta?: string }[] = [];
        for await (const c of stores.streamManager.read('st', { follow: false })) out.push(c as { seq: number; delta?: string });
        return out;
      };
      expect((await read()).map((c) => [c.seq, c.delta])).toEqual([
        [0, 'a'],
        [1, 'b'],
        [2, 'c'],
      ]);
      const writer = await stores.streamManager.claim('st', 'r1');
      expect(writer.startSeq).toBe(3);
      expect(await writer.write({ type: 'text_delta', streamId: 'st', agentId: 'st', agentType: 'a', runId: 'r1', timestamp: 9, stepIndex: 0, delta: 'd' })).toBe(true);
      expect((await read()).map((c) => [c.seq, c.delta])).toEqual([
        [0, 'a'],
        [1, 'b'],
        [2, 'c'],
        [3, 'd'],
      ]);
      const tables = handleOf(stores.database).prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all();
      expect(tables).toContain('stream_batches');
      expect(tables).not.toContain('stream_chunks');
    } finally {
      stores.close();
    }
  });

  it('migration 4 moves a version-3 session\'s messages into its first commits row: the conversation, its checkpoints and a rewind across the moved rows read as before', async () => {
    const path = temp.path();
    const rows = (tag: string, n: number) => Array.from({ length: n }, (_, i) => ({ role: 'assistant' as const, content: `${tag}${i}` }));
    const step = (stepIndex: number, messages: { role: 'assistant'; content: string }[], n: number) =>
      ({ sessionId: 's1', runId: 'r1', epoch: 1, kind: 'step', stepIndex, appendMessages: messages, state: { n }, checkpoint: 'step', committedAt: 2 + stepIndex }) as const;
    const first = openSqliteStores({ path });
    await first.stateStore.beginRun(beginRequest('s1', 'r1', { initialState: { n: 0 } }));
    const turnStart = await first.stateStore.commit({ sessionId: 's1', runId: 'r1', epoch: 1, kind: 'turn_start', appendMessages: [{ role: 'user', content: 'hello' }], checkpoint: 'turn_start', committedAt: 1 });
    const step0 = await first.stateStore.commit(step(0, rows('a', 2), 1));
    const step1 = await first.stateStore.commit(step(1, rows('b', 2), 2));
    await first.stateStore.commit({ sessionId: 's1', runId: 'r1', epoch: 1, kind: 'terminal', runStatus: 'completed', committedAt: 9 });
    const conversation = (await first.stateStore.loadSession('s1'))!.messages;
    first.close();
    // Back to the version-3 layout: messages as rows of their own, chunks in stream_chunks.
    const raw = new BetterSqlite3(path);
    raw.exec(`
      CREATE TABLE messages (id INTEGER PRIMARY KEY, sid INTEGER NOT NULL, idx INTEGER NOT NULL, body TEXT NOT NULL);
      CREATE UNIQUE INDEX messages_by_session ON messages (sid, idx);
      INSERT INTO messages (sid, idx, body) SELECT c.sid, c.messages_at + j.key, j.value FROM commits c, json_each(c.messages) j WHERE c.messages IS NOT NULL ORDER BY c.version, j.key;
      ALTER TABLE commits DROP COLUMN messages;
      ALTER TABLE commits DROP COLUMN messages_at;
      DROP TABLE stream_batches;
      CREATE TABLE stream_chunks (stream_id TEXT NOT NULL, seq INTEGER NOT NULL, run_id TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (stream_id, seq)) WITHOUT ROWID;
      CREATE TABLE stream_owners_3 (stream_id TEXT PRIMARY KEY, run_id TEXT NOT NULL, next_seq INTEGER NOT NULL) WITHOUT ROWID;
      INSERT INTO stream_owners_3 SELECT stream_id, run_id, next_seq FROM stream_owners;
      DROP TABLE stream_owners;
      ALTER TABLE stream_owners_3 RENAME TO stream_owners;
      CREATE INDEX commits_checkpoints ON commits (sid, version) WHERE checkpoint IS NOT NULL;
      DELETE FROM helix_migrations WHERE version >= 4;
    `);
    expect(raw.prepare('SELECT count(*) FROM messages').pluck().get()).toBe(5);
    raw.close();
    const stores = openSqliteStores({ path });
    try {
      expect(stores.database.appliedMigrations).toEqual([4, 5, 6]);
      expect((await stores.stateStore.loadSession('s1'))?.messages).toEqual(conversation);
      expect((await stores.stateStore.loadCheckpoint('s1', step0.checkpointId!))?.messages).toEqual(conversation.slice(0, 3));
      expect((await stores.stateStore.loadCheckpoint('s1', turnStart.checkpointId!))?.messages).toEqual(conversation.slice(0, 1));
      // The rewind cuts inside the first row, which now holds all five messages.
      // A retry of the turn (no new turn) from the step-0 checkpoint.
      const { newTurn: _none, ...retry } = beginRequest('s1', 'r2', { signal: 'retry' });
      const { session } = await stores.stateStore.beginRun({ ...retry, restoreCheckpointId: step0.checkpointId! });
      expect(session).toMatchObject({ state: { n: 1 }, messages: conversation.slice(0, 3) });
      expect(await stores.stateStore.loadCheckpoint('s1', step1.checkpointId!)).toBeUndefined();
      const receipt = await stores.stateStore.commit({ sessionId: 's1', runId: 'r2', epoch: 1, kind: 'step', stepIndex: 0, appendMessages: rows('c', 1), checkpoint: 'step', committedAt: 20 });
      expect(receipt.messageCount).toBe(4);
      expect((await stores.stateStore.loadSession('s1'))?.messages).toEqual([...conversation.slice(0, 3), ...rows('c', 1)]);
      const tables = handleOf(stores.database).prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all();
      expect(tables).not.toContain('messages');
    } finally {
      stores.close();
    }
  });
});
