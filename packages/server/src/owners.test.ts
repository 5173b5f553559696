// Session ownership that holds across server processes: two real processes claim the same new session
// ids at the same moment for two users, over one SQLite file and over one Postgres; every id ends with
// exactly one owner, both processes are told the same one, and each user's list holds only what it owns.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InMemoryKVStore, type JsonValue, type KVStore } from '@helix-agents/sdk/hooks';
import { openSqliteStores, SqliteKVStore } from '@helix-agents/store-sqlite';
import { PostgresKVStore } from '@helix-agents/store-postgres';
import { startTestPostgres, type TestPostgres } from '@helix-agents/store-postgres/testing';
import { KVSessionOwners } from './index.js';

const here = dirname(fileURLToPath(import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'helix-owners-'));
let postgres: TestPostgres;
beforeAll(async () => {
  postgres = await startTestPostgres();
}, 120_000);
afterAll(async () => {
  await postgres?.stop();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

interface Claimer {
  readonly done: Promise<Record<string, string>>;
  go(): void;
}

function claimer(target: string, userId: string, ids: readonly string[]): Claimer {
  const proc = spawn(process.execPath, ['--conditions=helix-source', '--import', 'tsx', join(here, '__tests__', 'owners-child.ts'), target, userId, ...ids], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const done = new Promise<Record<string, string>>((resolve, reject) => {
    proc.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as Record<string, string>) : reject(new Error(`claimer ${userId} exited ${String(code)}: ${err}`))));
  });
  return { done, go: () => proc.stdin.end('go\n') };
}

/** Waits until both processes have loaded (they block on stdin), then releases them together. */
async function race(target: string, ids: readonly string[]): Promise<[Record<string, string>, Record<string, string>]> {
  const a = claimer(target, 'alice', ids);
  const b = claimer(target, 'bob', [...ids].reverse());
  // Loading tsx and the stores takes a while; a generous pause lets both reach the stdin wait.
  await new Promise((r) => setTimeout(r, 3_000));
  a.go();
  b.go();
  return Promise.all([a.done, b.done]);
}

async function checkOneOwnerEach(kv: KVStore, ids: readonly string[], seen: readonly [Record<string, string>, Record<string, string>]): Promise<void> {
  const owners = new KVSessionOwners(kv);
  const [byAlice, byBob] = seen;
  for (const id of ids) {
    const owner = await owners.ownerOf(id);
    expect(['alice', 'bob'], id).toContain(owner);
    expect(byAlice[id], `what alice's process was told for ${id}`).toBe(owner);
    expect(byBob[id], `what bob's process was told for ${id}`).toBe(owner);
  }
  for (const user of ['alice', 'bob']) {
    const listed = (await owners.list(user, { limit: 1000 })).map((s) => s.sessionId).sort();
    expect(listed, `${user}'s list`).toEqual(ids.filter((id) => byAlice[id] === user).sort());
  }
}

const IDS = Array.from({ length: 60 }, (_, i) => `race-${i}`);

describe('KVSessionOwners across processes', () => {
  it('on one SQLite file: two server processes claiming the same new ids give each id exactly one owner, and both are told the same one', async () => {
    const path = join(dir, 'owners.db');
    openSqliteStores({ path }).close();
    const seen = await race(`sqlite:${path}`, IDS);
    const stores = openSqliteStores({ path });
    try {
      await checkOneOwnerEach(new SqliteKVStore(stores.database), IDS, seen);
    } finally {
      stores.close();
    }
  }, 60_000);

  it('on one Postgres: two server processes claiming the same new ids give each id exactly one owner, and both are told the same one', async () => {
    const seen = await race(`postgres:${postgres.connectionString}`, IDS);
    const pool = new pg.Pool({ connectionString: postgres.connectionString });
    try {
      await checkOneOwnerEach(new PostgresKVStore(pool), IDS, seen);
    } finally {
      await pool.end();
    }
  }, 60_000);
});

describe('setIfAbsent', () => {
  it('keeps the first value of a key and returns it to every later writer, on every kv store (property)', async () => {
    const pool = new pg.Pool({ connectionString: postgres.connectionString });
    const sqlite = openSqliteStores({ path: join(dir, 'kv.db') });
    const stores: Record<string, KVStore> = { memory: new InMemoryKVStore(), sqlite: new SqliteKVStore(sqlite.database), postgres: new PostgresKVStore(pool, { schema: 'kv_prop' }) };
    try {
      let round = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(fc.tuple(fc.constantFrom('a', 'b', 'c'), fc.jsonValue({ maxDepth: 2 })), { minLength: 1, maxLength: 8 }), async (writes) => {
          round++;
          for (const [name, kv] of Object.entries(stores)) {
            const ns = `p${round}`;
            const first = new Map<string, unknown>();
            const answers = await Promise.all(writes.map(([key, value]) => kv.setIfAbsent!(ns, key, value as JsonValue)));
            // Concurrent writers of one key agree on one stored value, the value one of them wrote.
            for (const [i, [key]] of writes.entries()) {
              if (!first.has(key)) first.set(key, answers[i]);
              expect(answers[i], `${name} ${key}`).toEqual(first.get(key));
              expect(writes.some(([k, v]) => k === key && JSON.stringify(JSON.parse(JSON.stringify(v))) === JSON.stringify(answers[i])), `${name} ${key} holds a written value`).toBe(true);
              expect(await kv.get(ns, key)).toEqual(answers[i]);
            }
            // A later write of another value changes nothing.
            for (const key of first.keys()) expect(await kv.setIfAbsent!(ns, key, 'later')).toEqual(first.get(key));
          }
        }),
        { numRuns: 25 },
      );
      expect((await stores['postgres']!.list('p1')).length).toBeGreaterThan(0);
    } finally {
      sqlite.close();
      await pool.end();
    }
  }, 120_000);

  it('PostgresKVStore is a full kv store: get, set, delete and list by prefix in key order', async () => {
    const pool = new pg.Pool({ connectionString: postgres.connectionString });
    const kv = new PostgresKVStore(pool, { schema: 'kv_basic' });
    try {
      expect(await kv.get('n', 'x')).toBeUndefined();
      await kv.set('n', 'b/2', { v: 2 });
      await kv.set('n', 'b/1', [1]);
      await kv.set('n', 'a', null);
      await kv.set('other', 'b/3', 3);
      expect(await kv.get('n', 'a')).toBeNull();
      expect(await kv.list('n', 'b/')).toEqual(['b/1', 'b/2']);
      expect(await kv.list('n')).toEqual(['a', 'b/1', 'b/2']);
      // A prefix is text, not a pattern: `%` and `_` match only themselves.
      await kv.set('n', 'b%', 0);
      expect(await kv.list('n', 'b%')).toEqual(['b%']);
      expect(await kv.delete('n', 'b/1')).toBe(true);
      expect(await kv.delete('n', 'b/1')).toBe(false);
      await kv.set('n', 'b/2', 'replaced');
      expect(await kv.get('n', 'b/2')).toBe('replaced');
      await expect(kv.get('n', '')).rejects.toMatchObject({ code: 'hook_store_invalid_key' });
    } finally {
      await pool.end();
    }
  }, 60_000);
});
