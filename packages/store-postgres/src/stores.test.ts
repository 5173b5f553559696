// Everything that runs in this process against one throwaway cluster (one cluster start for the file):
// the shared conformance suites (each test on a fresh schema; "second" instances are a second pool on the
// same schema, as another process would have), migrations and schema versions, and the stream manager's
// notification and polling paths. The real two-process tests are in two-process.test.ts.
import { runStateStoreConformance, runStreamManagerConformance, runUsageStoreConformance } from '@helix-agents/sdk/conformance';
import { AgentError } from '@helix-agents/sdk';
import type { StreamChunk, StreamManager, UsageStore } from '@helix-agents/sdk';
import type { StateStore } from '@helix-agents/sdk/store';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import {
  migratePostgres,
  openPostgresStores,
  POSTGRES_MIGRATIONS,
  POSTGRES_SCHEMA_VERSION,
  PostgresStateStore,
  PostgresStreamManager,
  type PostgresMigration,
  type PostgresStores,
} from './index.js';
import { useTestPostgres } from './__tests__/cluster.js';
import type { StreamChunkInput } from '@helix-agents/sdk/store';

const cluster = useTestPostgres();
const byStore = new Map<unknown, PostgresStores>();

async function create(): Promise<PostgresStores> {
  const stores = await cluster.open();
  byStore.set(stores.stateStore, stores);
  byStore.set(stores.streamManager, stores);
  return stores;
}

async function second(first: unknown): Promise<PostgresStores> {
  const origin = byStore.get(first);
  if (!origin) throw new Error('unknown first instance');
  const stores = await cluster.open(origin.schema, { side: 'second' });
  byStore.set(stores.stateStore, stores);
  byStore.set(stores.streamManager, stores);
  return stores;
}

async function destroy(instance: unknown): Promise<void> {
  const stores = byStore.get(instance);
  byStore.delete(instance);
  await stores?.close();
}

/** A conformance suite's instances: one of the stores `pick` chooses, on a fresh schema or as a second pool on the first's. */
function instancesOf<T>(pick: (stores: PostgresStores) => T) {
  return {
    create: async (): Promise<T> => pick(await create()),
    destroy,
    createSecond: async (first: T): Promise<T> => pick(await second(first)),
    destroySecond: destroy,
  };
}

runStateStoreConformance({
  name: 'PostgresStateStore',
  ...instancesOf((stores): StateStore => stores.stateStore),
  openNewerSchema: async (first) => {
    const origin = byStore.get(first);
    if (!origin) throw new Error('unknown first instance');
    await origin.pool.query(`INSERT INTO "${origin.schema}".schema_migrations (version, name) VALUES ($1, 'from the future')`, [POSTGRES_SCHEMA_VERSION + 1]);
    const reopened = await openPostgresStores({ connectionString: cluster.postgres.connectionString, schema: origin.schema });
    await reopened.close();
    return reopened;
  },
});

runStreamManagerConformance({ name: 'PostgresStreamManager', ...instancesOf((stores): StreamManager => stores.streamManager) });

runUsageStoreConformance({
  name: 'PostgresStateStore as a UsageStore',
  create: async (): Promise<UsageStore> => (await create()).usageStore,
  destroy,
});

const pools: pg.Pool[] = [];

function newPool(): pg.Pool {
  const pool = new pg.Pool({ connectionString: cluster.postgres.connectionString, max: 2 });
  pools.push(pool);
  return pool;
}

afterAll(async () => {
  await Promise.all(pools.map((p) => p.end()));
});

async function versions(pool: pg.Pool, schema: string): Promise<number[]> {
  const { rows } = await pool.query<{ version: number }>(`SELECT version FROM "${schema}".schema_migrations ORDER BY version`);
  return rows.map((r) => r.version);
}

async function tables(pool: pg.Pool, schema: string): Promise<string[]> {
  const { rows } = await pool.query<{ table_name: string }>(`SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name`, [schema]);
  return rows.map((r) => r.table_name);
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return AgentError.isInstance(error) ? error.code : String(error);
  }
  return 'resolved';
}

describe('Postgres migrations', () => {
  it('run twice: the second run applies nothing and changes nothing', async () => {
    const pool = newPool();
    const schema = cluster.schemaName('m');
    expect(await migratePostgres(pool, { schema })).toEqual({ from: 0, to: POSTGRES_SCHEMA_VERSION, applied: POSTGRES_MIGRATIONS.map((m) => m.version) });
    const before = await tables(pool, schema);
    expect(before).toEqual(['checkpoints', 'chunks', 'journal', 'messages', 'runs', 'schema_migrations', 'sessions', 'steps', 'streams', 'usage']);
    expect(await migratePostgres(pool, { schema })).toEqual({ from: POSTGRES_SCHEMA_VERSION, to: POSTGRES_SCHEMA_VERSION, applied: [] });
    expect(await tables(pool, schema)).toEqual(before);
    expect(await versions(pool, schema)).toEqual(POSTGRES_MIGRATIONS.map((m) => m.version));
  });

  it('run by several connections at once: one applies, the others wait for it and apply nothing', async () => {
    const schema = cluster.schemaName('m');
    const results = await Promise.all([newPool(), newPool(), newPool(), newPool()].map((pool) => migratePostgres(pool, { schema })));
    expect(results.filter((r) => r.applied.length > 0)).toHaveLength(1);
    expect(results.every((r) => r.to === POSTGRES_SCHEMA_VERSION)).toBe(true);
    expect(await versions(newPool(), schema)).toEqual(POSTGRES_MIGRATIONS.map((m) => m.version));
  });

  it('a migration appended later is applied on top of an existing database, keeping its rows', async () => {
    const pool = newPool();
    const schema = cluster.schemaName('m');
    const stores = await openPostgresStores({ pool, schema });
    await stores.stateStore.beginRun({ sessionId: 's1', runId: 'r1', agentType: 'a', signal: 'start', initialState: { kept: true }, newTurn: { turnId: 't', input: [] }, startedAt: 1, leaseOwner: 'p', leaseMs: 10, options: {} });
    await stores.close();
    const next: PostgresMigration = { version: POSTGRES_SCHEMA_VERSION + 1, name: 'an index from the future', statements: (s) => [`CREATE INDEX runs_by_session ON ${s}.runs (session_id)`] };
    expect(await migratePostgres(pool, { schema, migrations: [...POSTGRES_MIGRATIONS, next] })).toMatchObject({ from: POSTGRES_SCHEMA_VERSION, applied: [next.version] });
    expect(await versions(pool, schema)).toEqual([...POSTGRES_MIGRATIONS.map((m) => m.version), next.version]);
    const { rows } = await pool.query(`SELECT state::text AS state FROM "${schema}".sessions`);
    expect(rows).toEqual([{ state: '{"kept":true}' }]);
  });

  it('a failing migration leaves nothing behind (DDL is transactional)', async () => {
    const pool = newPool();
    const schema = cluster.schemaName('m');
    await migratePostgres(pool, { schema });
    const broken: PostgresMigration = {
      version: POSTGRES_SCHEMA_VERSION + 1,
      name: 'half a migration',
      statements: (s) => [`CREATE TABLE ${s}.half (id integer)`, `ALTER TABLE ${s}.no_such_table ADD COLUMN x integer`],
    };
    expect(await codeOf(migratePostgres(pool, { schema, migrations: [...POSTGRES_MIGRATIONS, broken] }))).toBe('state_commit_failed');
    expect(await tables(pool, schema)).not.toContain('half');
    expect(await versions(pool, schema)).toEqual(POSTGRES_MIGRATIONS.map((m) => m.version));
  });

  it('a database written by a newer version is refused with state_schema_too_new, and left as it was', async () => {
    const pool = newPool();
    const schema = cluster.schemaName('m');
    await migratePostgres(pool, { schema });
    await pool.query(`INSERT INTO "${schema}".schema_migrations (version, name) VALUES ($1, 'newer')`, [POSTGRES_SCHEMA_VERSION + 1]);
    expect(await codeOf(migratePostgres(pool, { schema }))).toBe('state_schema_too_new');
    expect(await codeOf(openPostgresStores({ connectionString: cluster.postgres.connectionString, schema }))).toBe('state_schema_too_new');
    expect(await versions(pool, schema)).toEqual([...POSTGRES_MIGRATIONS.map((m) => m.version), POSTGRES_SCHEMA_VERSION + 1]);
  });

  it('a row written by a newer version is refused on read by a process that opened the schema before the upgrade', async () => {
    const pool = newPool();
    const schema = cluster.schemaName('m');
    const stores = await openPostgresStores({ pool, schema });
    await stores.stateStore.beginRun({ sessionId: 's1', runId: 'r1', agentType: 'a', signal: 'start', initialState: {}, newTurn: { turnId: 't', input: [] }, startedAt: 1, leaseOwner: 'p', leaseMs: 10, options: {} });
    expect(await stores.stateStore.loadSession('s1')).toBeDefined();
    await pool.query(`UPDATE "${schema}".sessions SET record_version = $1`, [POSTGRES_SCHEMA_VERSION + 1]);
    await pool.query(`UPDATE "${schema}".runs SET record_version = $1`, [POSTGRES_SCHEMA_VERSION + 1]);
    expect(await codeOf(stores.stateStore.loadSession('s1'))).toBe('state_schema_too_new');
    expect(await codeOf(stores.stateStore.getRun('r1'))).toBe('state_schema_too_new');
    await stores.close();
  });

  it('schemas are independent: two stores on one database do not see each other', async () => {
    const pool = newPool();
    const a = await openPostgresStores({ pool, schema: cluster.schemaName('m') });
    const b = await openPostgresStores({ pool, schema: cluster.schemaName('m') });
    await a.stateStore.beginRun({ sessionId: 's1', runId: 'r1', agentType: 'a', signal: 'start', initialState: { in: 'a' }, newTurn: { turnId: 't', input: [] }, startedAt: 1, leaseOwner: 'p', leaseMs: 10, options: {} });
    expect(await b.stateStore.loadSession('s1')).toBeUndefined();
    expect((await a.stateStore.loadSession('s1'))?.state).toEqual({ in: 'a' });
    await Promise.all([a.close(), b.close()]);
  });
});

function delta(streamId: string, runId: string, text: string): StreamChunkInput {
  return { type: 'text_delta', streamId, agentId: streamId, agentType: 'agent', runId, timestamp: 1, stepIndex: 0, delta: text };
}

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The backends listening on a channel (their last query was the LISTEN). */
async function listeners(pool: pg.Pool, channel: string): Promise<number[]> {
  const { rows } = await pool.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE query LIKE 'LISTEN %' AND query LIKE $1`, [`%${channel}%`]);
  return rows.map((r) => r.pid);
}

/** A pool that counts the queries sent through `query`. */
function countingPool(pool: pg.Pool): { pool: pg.Pool; count: () => number } {
  let count = 0;
  const proxy = new Proxy(pool, {
    get(target, key, receiver) {
      if (key === 'query') {
        return (...args: unknown[]) => {
          count++;
          return (target.query as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      const value: unknown = Reflect.get(target, key, receiver);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { pool: proxy, count: () => count };
}

describe('PostgresStateStore: one-statement commits under contention', () => {
  it('commits to one session racing from two pools queue on its row lock: none torn, none lost, indexes gap-free', { timeout: 120_000 }, async () => {
    const schema = cluster.schemaName('race');
    const a = await cluster.open(schema);
    const b = await cluster.open(schema, { side: 'second' });
    await a.stateStore.beginRun({ sessionId: 's', runId: 'r', agentType: 'a', signal: 'start', initialState: { n: 0 }, newTurn: { turnId: 't', input: [] }, startedAt: 1, leaseOwner: 'p', leaseMs: 60_000, options: {} });
    const commits = 120;
    const rowsOf = (step: number) => [0, 1, 2].map((k) => ({ role: 'assistant' as const, content: `${step}:${k}` }));
    const receipts = await Promise.all(
      Array.from({ length: commits }, (_, step) =>
        (step % 2 === 0 ? a : b).stateStore.commit({ sessionId: 's', runId: 'r', epoch: 1, kind: 'step', stepIndex: step, appendMessages: rowsOf(step), state: { n: step }, checkpoint: 'step', committedAt: step }),
      ),
    );
    // Each commit saw the count its predecessors left: the receipts count 3, 6, ... in some order.
    expect(receipts.map((r) => r.messageCount).sort((x, y) => x - y)).toEqual(Array.from({ length: commits }, (_, i) => 3 * (i + 1)));
    const session = await b.stateStore.loadSession('s');
    expect(session?.messages).toHaveLength(3 * commits);
    expect(session?.stepCount).toBe(commits);
    const order: number[] = [];
    for (let i = 0; i < 3 * commits; i += 3) {
      const step = Number((session?.messages[i]?.content as string).split(':')[0]);
      expect(session?.messages.slice(i, i + 3)).toEqual(rowsOf(step));
      order.push(step);
    }
    expect([...order].sort((x, y) => x - y)).toEqual(Array.from({ length: commits }, (_, i) => i));
    // The last commit to land wrote the state; every checkpoint is a whole-commit prefix with its commit's state.
    expect(session?.state).toEqual({ n: order.at(-1) });
    const checkpoints = await a.stateStore.listCheckpoints('s');
    expect(checkpoints.map((c) => c.messageCount)).toEqual(order.map((_, i) => 3 * (i + 1)));
    const middle = await a.stateStore.loadCheckpoint('s', checkpoints[59]!.checkpointId);
    expect(middle?.state).toEqual({ n: order[59] });
    expect(middle?.messages).toEqual(session?.messages.slice(0, 180));
    const { rows } = await a.pool.query<{ n: number; max: number }>(`SELECT count(*)::int AS n, max(idx) AS max FROM "${schema}".messages`);
    expect(rows[0]).toEqual({ n: 3 * commits, max: 3 * commits - 1 });
    await Promise.all([a.close(), b.close()]);
  });
});

describe('PostgresStateStore: commits decide from the header the store kept', () => {
  const begin = (runId: string, signal: 'start' | 'resumed' = 'start') => ({
    sessionId: 's',
    runId,
    agentType: 'a',
    signal,
    initialState: { n: 0 },
    newTurn: { turnId: `t-${runId}`, input: [] },
    startedAt: 1,
    leaseOwner: 'p',
    leaseMs: 60_000,
    options: {},
  });
  const step = (runId: string, stepIndex: number) => ({ sessionId: 's', runId, epoch: 1, kind: 'step' as const, stepIndex, appendMessages: [{ role: 'assistant' as const, content: `${runId}:${stepIndex}` }], state: { n: stepIndex + 1 }, committedAt: stepIndex });

  it('a step commit is one statement (one round trip) once the store knows the session', async () => {
    const pool = newPool();
    const stores = await openPostgresStores({ pool, schema: cluster.schemaName('rt') });
    const counting = countingPool(pool);
    const store = new PostgresStateStore(counting.pool, { schema: stores.schema });
    // K1 runs in a transaction on a pooled client (not counted here); it leaves the header the commits decide from.
    await store.beginRun(begin('r1'));
    const before = counting.count();
    for (let i = 0; i < 5; i++) await store.commit(step('r1', i));
    expect(counting.count() - before).toBe(5);
    expect(await stores.stateStore.loadSession('s')).toMatchObject({ stepCount: 5, state: { n: 5 }, version: 6 });
    await stores.close();
  });

  it('a kept header gone stale writes nothing: the refusal comes from the rules, from fresh records', async () => {
    const pool = newPool();
    const stores = await openPostgresStores({ pool, schema: cluster.schemaName('stale') });
    const first = new PostgresStateStore(pool, { schema: stores.schema });
    await first.beginRun(begin('r1'));
    await first.commit(step('r1', 0));
    // Another instance takes the session over; `first` still keeps the header of version 2.
    await stores.stateStore.beginRun(begin('r2'));
    expect(await codeOf(first.commit(step('r1', 1)))).toBe('state_run_superseded');
    expect(await stores.stateStore.loadSession('s')).toMatchObject({ currentRunId: 'r2', stepCount: 1, state: { n: 1 }, version: 3 });
    expect((await stores.stateStore.loadSession('s'))?.messages).toHaveLength(1);
    // And a header that is stale but whose commit is still allowed lands after the fresh read: r2 commits through `first`.
    await stores.stateStore.commit(step('r2', 0));
    await first.commit(step('r2', 1));
    expect(await stores.stateStore.loadSession('s')).toMatchObject({ stepCount: 3, version: 5, messages: [{ content: 'r1:0' }, { content: 'r2:0' }, { content: 'r2:1' }] });
    await stores.close();
  });
});

describe('PostgresStreamManager: notifications and polling', () => {
  it('a following reader sleeps: idle, it queries once per poll interval, not in a loop', async () => {
    const pool = newPool();
    const stores = await openPostgresStores({ pool, schema: cluster.schemaName('st') });
    const counting = countingPool(pool);
    const manager = new PostgresStreamManager(counting.pool, { schema: stores.schema, pollIntervalMs: 200 });
    const controller = new AbortController();
    const chunks: StreamChunk[] = [];
    const reading = (async () => {
      for await (const chunk of manager.read('idle', { signal: controller.signal })) chunks.push(chunk);
    })();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    // A first read, then about one per 200 ms: a spinning reader would have made thousands.
    expect(counting.count()).toBeGreaterThanOrEqual(2);
    expect(counting.count()).toBeLessThanOrEqual(8);
    const writer = await stores.streamManager.claim('idle', 'r1');
    const before = counting.count();
    await writer.write(delta('idle', 'r1', 'wake'));
    await until('the chunk', () => chunks.length === 1);
    controller.abort();
    await reading;
    expect(counting.count() - before).toBeLessThanOrEqual(3);
    await manager.close();
    await stores.close();
  });

  it('a reader keeps receiving when its LISTEN connection is killed, and listening resumes', async () => {
    const pool = newPool();
    const schema = cluster.schemaName('st');
    const reader = await openPostgresStores({ pool, schema, pollIntervalMs: 100 });
    const writerStores = await cluster.open(schema, { side: 'second' });
    const writer = await writerStores.streamManager.claim('s', 'r1');
    const chunks: StreamChunk[] = [];
    const reading = (async () => {
      for await (const chunk of reader.streamManager.read('s', { untilRunEnds: 'r1' })) chunks.push(chunk);
    })();
    await until('the reader to listen', async () => (await listeners(pool, reader.streamManager.channel)).length === 1);
    await writer.write(delta('s', 'r1', 'a'));
    await until('the first chunk', () => chunks.length === 1);
    const [killed] = await listeners(pool, reader.streamManager.channel);
    await pool.query('SELECT pg_terminate_backend($1)', [killed]);
    await writer.write(delta('s', 'r1', 'b'));
    await until('the chunk written while not listening', () => chunks.length === 2);
    await until('listening again on a new connection', async () => {
      const now = await listeners(pool, reader.streamManager.channel);
      return now.length === 1 && now[0] !== killed;
    });
    await writer.write({ type: 'end', streamId: 's', agentId: 's', agentType: 'agent', runId: 'r1', timestamp: 1, output: null });
    await reading;
    expect(chunks.map((c) => [c.seq, c.type])).toEqual([
      [0, 'text_delta'],
      [1, 'text_delta'],
      [2, 'end'],
    ]);
    await Promise.all([reader.close(), writerStores.close()]);
  });

  it('closing the manager ends its following readers', async () => {
    const stores = await cluster.open(undefined, { pollIntervalMs: 60_000 });
    const reading = (async () => {
      const out: StreamChunk[] = [];
      for await (const chunk of stores.streamManager.read('quiet')) out.push(chunk);
      return out;
    })();
    await new Promise((resolve) => setTimeout(resolve, 100));
    await stores.close();
    expect(await reading).toEqual([]);
  });

  it('the first instance\'s writer learns of a claim made by another instance while it follows the stream', async () => {
    const schema = cluster.schemaName('st');
    const first = await cluster.open(schema);
    const second = await cluster.open(schema, { side: 'second' });
    const controller = new AbortController();
    const reading = (async () => {
      for await (const chunk of first.streamManager.read('s', { signal: controller.signal })) void chunk;
    })();
    // Notifications sent before LISTEN is active are not delivered: wait until the reader listens.
    await until('the reader to listen', async () => (await listeners(first.pool, first.streamManager.channel)).length === 1);
    const old = await first.streamManager.claim('s', 'r1');
    expect(old.owned).toBe(true);
    await second.streamManager.claim('s', 'r2');
    await until('the notification of the newer claim', () => !old.owned);
    expect(await old.write(delta('s', 'r1', 'late'))).toBe(false);
    controller.abort();
    await reading;
    await Promise.all([first.close(), second.close()]);
  });
});
