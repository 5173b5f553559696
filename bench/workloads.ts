// The workloads the benches time (bench/loop.ts, bench/store.ts) and the smoke test runs untimed
// (bench/smoke.test.ts): a bare hand-written tool loop, helix on each store, the AI SDK's own tool loop,
// and a raw one-row commit on SQLite as the durable floor. Each returns its wall time in ms.
import { createHook } from 'node:async_hooks';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { generateText, stepCountIs, tool } from 'ai';
import { z } from 'zod';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import {
  defineAgent,
  defineTool,
  HOOK_POINTS,
  InMemoryStateStore,
  InMemoryStreamManager,
  JSAgentExecutor,
  silentLogger,
  type AgentHooks,
  type HookPoint,
  type LLMAdapter,
  type LLMStepRequest,
  type StepResult,
  type RetentionPolicy,
  type StateStore,
  type StreamManager,
  type UsageStore,
} from '@helix-agents/sdk';
import { createScriptedModel, type ScriptedStepObject } from '@helix-agents/sdk/testing';
import { openSqliteStores, type SqliteCheckpointMode, type SqliteStores } from '@helix-agents/store-sqlite';
import { openPostgresStores, type PostgresStores } from '@helix-agents/store-postgres';
import { startTestPostgres } from '@helix-agents/store-postgres/testing';

/** Which hooks a helix run has: none, one observer (before/after model and tool), or a no-op on every point. */
export type HookSet = 'none' | 'observer' | 'every-point';

const usage = { promptTokens: 10, completionTokens: 2, totalTokens: 12 };
const callAdd = (n: number): StepResult => ({ ok: true, text: '', toolCalls: [{ id: `c${n}`, name: 'add', arguments: { a: n, b: 1 } }], finishReason: 'tool-calls', usage, model: 'bench' });
const answer: StepResult = { ok: true, text: 'done', toolCalls: [], finishReason: 'stop', usage, model: 'bench' };

/**
 * A zero-latency model as an {@link LLMAdapter}: it calls `add` until the conversation holds `steps - 1`
 * tool results, then answers. It answers at once (no stream, no provider), so what a run costs is the
 * framework's own work.
 */
export class ZeroLatencyAdapter implements LLMAdapter {
  readonly #steps: number;
  constructor(steps: number) {
    this.#steps = steps;
  }
  async generateStep(request: LLMStepRequest): Promise<StepResult> {
    // One user row, then an assistant row and a tool row per step.
    const step = (request.messages.length - 1) / 2;
    return step >= this.#steps - 1 ? answer : callAdd(step);
  }
}

/** A new zod schema of the `add` tool's input (`{ a, b }`): every workload's add tool, and the bare loop's per run. */
const addSchema = () => z.object({ a: z.number(), b: z.number() });

/** The agent every helix variant runs: one `add` tool without side effects. */
function benchAgent(steps: number) {
  const add = defineTool({ name: 'add', description: 'adds two numbers', inputSchema: addSchema(), execute: ({ a, b }) => a + b });
  // The adapter answers; this model is only the agent's declared model.
  return defineAgent({ name: 'bench', llmConfig: { model: createScriptedModel([{ text: 'unused' }]) }, tools: [add], maxSteps: steps + 1 });
}

/** The observer: one handler before and after the model call and the tool call. */
export function observerHooks(): AgentHooks {
  const seen = { count: 0 };
  const note = (): void => {
    seen.count++;
  };
  return { beforeLLMCall: note, afterLLMCall: note, beforeTool: note, afterTool: note };
}

/** A no-op handler on every hook point. */
export function everyPointHooks(): AgentHooks {
  const hooks: Record<string, () => void> = {};
  for (const point of HOOK_POINTS) hooks[point as HookPoint] = () => {};
  return hooks as AgentHooks;
}

function hooksOf(set: HookSet): AgentHooks | undefined {
  return set === 'none' ? undefined : set === 'observer' ? observerHooks() : everyPointHooks();
}

/** The stores a helix executor runs on. */
export interface BenchStores {
  readonly stateStore: StateStore;
  readonly streamManager: StreamManager;
  readonly usageStore?: UsageStore;
  close(): void;
}

/** Fresh in-memory stores (with a retention policy when given). */
export function memoryStores(retention?: RetentionPolicy): BenchStores & { readonly stateStore: InMemoryStateStore; prune(): Promise<unknown> } {
  const stateStore = new InMemoryStateStore(retention ? { retention } : {});
  const streamManager = new InMemoryStreamManager(retention ? { retention } : {});
  return { stateStore, streamManager, prune: () => Promise.all([stateStore.prune(), streamManager.prune()]), close: () => streamManager.close() };
}

/**
 * SQLite stores on a fresh file in a temporary folder (removed on close). With `pageSize` the file is made
 * with pages of that many bytes before the stores open it (SQLite keeps a file's page size).
 */
export function sqliteStores(synchronous: 'NORMAL' | 'FULL', flushIntervalMs?: number, checkpoint?: SqliteCheckpointMode, readCaches?: boolean, pageSize?: number): BenchStores & { readonly sqlite: SqliteStores } {
  const dir = mkdtempSync(join(tmpdir(), 'helix-bench-'));
  const path = join(dir, 'helix.db');
  if (pageSize !== undefined) {
    const made = new BetterSqlite3(path);
    made.pragma(`page_size = ${pageSize}`);
    // The size is fixed by the first write: an empty table made and dropped.
    made.exec('CREATE TABLE page_size_made (x); DROP TABLE page_size_made');
    made.close();
  }
  const sqlite = openSqliteStores({
    path,
    synchronous,
    ...(flushIntervalMs === undefined ? {} : { flushIntervalMs }),
    ...(checkpoint === undefined ? {} : { checkpoint }),
    ...(readCaches === undefined ? {} : { readCaches }),
  });
  return {
    sqlite,
    stateStore: sqlite.stateStore,
    streamManager: sqlite.streamManager,
    usageStore: sqlite.usageStore,
    close() {
      sqlite.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Postgres stores on a throwaway durable cluster (fsync, synchronous commit and full-page writes on),
 * started for this bench, beside the floor: one 1 KB row INSERT per transaction (autocommit) on the same
 * pool. `statements` counts the statements the stores' pool sent. Stop it with `close()`.
 */
export async function postgresStores(): Promise<BenchStores & { readonly postgres: PostgresStores; statements(): number; rawCommits(count: number): Promise<number>; closeAll(): Promise<void> }> {
  const cluster = await startTestPostgres({ durable: true });
  const postgres = await openPostgresStores({ connectionString: cluster.connectionString, schema: 'bench' });
  await postgres.pool.query('CREATE TABLE bench.bench_rows (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, body text NOT NULL)');
  let statements = 0;
  const pool = postgres.pool as unknown as { query: (...args: unknown[]) => Promise<unknown> };
  const query = pool.query.bind(pool);
  pool.query = (...args: unknown[]) => {
    statements++;
    return query(...args);
  };
  const body = 'r'.repeat(1024);
  const insert = { name: 'bench_rows_insert', text: 'INSERT INTO bench.bench_rows (body) VALUES ($1)', values: [body] };
  return {
    postgres,
    stateStore: postgres.stateStore,
    streamManager: postgres.streamManager,
    usageStore: postgres.usageStore,
    statements: () => statements,
    /** `count` one-row transactions, one after another; returns ms. */
    async rawCommits(count: number): Promise<number> {
      const started = performance.now();
      for (let i = 0; i < count; i++) await query(insert);
      return performance.now() - started;
    },
    close: () => {},
    async closeAll(): Promise<void> {
      await postgres.close();
      await cluster.stop();
    },
  };
}

/** The median of `values` (the mean of the two middle ones for an even count); the benches' one summary of repeated timings. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The sessions the helix benches started in this process: each run's id is new, whichever bench runs it. */
let benchSessions = 0;

/** A helix executor on `stores` with the zero-latency adapter (or, with `aiSdkAdapter`, the AI SDK adapter on a scripted model). */
export function helixBench(stores: BenchStores, steps: number, options: { hooks?: HookSet; aiSdkAdapter?: boolean; deleteSessions?: boolean } = {}) {
  const adapter = options.aiSdkAdapter ? new VercelAIAdapter() : new ZeroLatencyAdapter(steps);
  const executor = new JSAgentExecutor(stores.stateStore, stores.streamManager, adapter, { logger: silentLogger });
  const agent = options.aiSdkAdapter
    ? defineAgent({ ...benchAgent(steps), llmConfig: { model: scriptedAddModel(steps) } })
    : benchAgent(steps);
  const hooks = hooksOf(options.hooks ?? 'observer');
  /**
   * One run of `steps` steps; returns its wall time in ms. With `deleteSessions` the run's session is deleted
   * after it, inside the timing (the store then keeps no history, as the bare loop keeps none).
   */
  async function run(): Promise<number> {
    const started = performance.now();
    const sessionId = `bench-${benchSessions++}`;
    const handle = await executor.execute(agent, 'go', { sessionId, ...(hooks ? { hooks } : {}), ...(stores.usageStore ? { usageStore: stores.usageStore } : {}) });
    const result = await handle.result();
    if (options.deleteSessions) await executor.deleteSession(sessionId);
    const elapsed = performance.now() - started;
    if (result.status !== 'completed' || result.stepCount !== steps) throw new Error(`helix run ended ${result.status} after ${result.stepCount} steps${result.error ? `: ${result.error.code} ${result.error.message} ${JSON.stringify(result.error.details)}` : ""}`);
    return elapsed;
  }
  /** `runs` runs at once; returns the wall time of all of them in ms. */
  async function concurrent(runs: number): Promise<number> {
    const started = performance.now();
    await Promise.all(Array.from({ length: runs }, () => run()));
    return performance.now() - started;
  }
  return { executor, agent, run, concurrent };
}

/** The AI SDK scripted model behind both the AI SDK adapter variant and generateText: `add` steps-1 times, then an answer. */
function scriptedAddModel(steps: number) {
  const call: ScriptedStepObject = { toolCalls: [{ name: 'add', args: { a: 1, b: 1 } }], usage: { inputTokens: 10, outputTokens: 2 } };
  const done: ScriptedStepObject = { text: 'done', usage: { inputTokens: 10, outputTokens: 1 } };
  return createScriptedModel([(_options, callIndex) => (callIndex % steps === steps - 1 ? done : call)], { loop: true, recordCalls: false });
}

/** The AI SDK's own tool loop (generateText with tools and stopWhen) on a zero-latency scripted model; returns ms. */
export async function generateTextRun(steps: number): Promise<number> {
  const model = scriptedAddModel(steps);
  const started = performance.now();
  const result = await generateText({
    model,
    prompt: 'go',
    tools: { add: tool({ description: 'adds two numbers', inputSchema: addSchema(), execute: async ({ a, b }) => a + b }) },
    stopWhen: stepCountIs(steps),
  });
  const elapsed = performance.now() - started;
  if (result.steps.length !== steps) throw new Error(`generateText ran ${result.steps.length} steps`);
  return elapsed;
}

interface BareMessage {
  readonly role: string;
  readonly content: unknown;
}

/** The bare loop's schema when it is made once for every run (`schemaOnce`), as helix's agent makes its tool's once. */
const ADD_SCHEMA = addSchema();

/**
 * The floor: a hand-written tool loop doing the same work with nothing around it. An async model call
 * (the same replies as {@link ZeroLatencyAdapter}), the observer before and after the model and the
 * tool, the tool's input checked by its zod schema, the tool call awaited, the rows appended. Each run makes
 * its schema anew (the floor the issue's targets were set against), which costs about 55 µs a run here: zod
 * compiles an object schema at its first parse. With `schemaOnce` the runs share one schema.
 */
export async function bareRun(steps: number, options: { schemaOnce?: boolean } = {}): Promise<number> {
  const adapter = new ZeroLatencyAdapter(steps);
  const schema = options.schemaOnce ? ADD_SCHEMA : addSchema();
  const execute = async ({ a, b }: { a: number; b: number }): Promise<number> => a + b;
  let seen = 0;
  const observe = (): void => {
    seen++;
  };
  const controller = new AbortController();
  const started = performance.now();
  const messages: BareMessage[] = [{ role: 'user', content: 'go' }];
  for (let step = 0; step < steps; step++) {
    observe();
    const reply = await adapter.generateStep({ model: undefined as never, systemPrompt: undefined, messages: messages as never, tools: [], modelParameters: {}, abortSignal: controller.signal });
    observe();
    if (!reply.ok) throw new Error('bare loop: the model failed');
    messages.push({ role: 'assistant', content: reply.toolCalls.length > 0 ? reply.toolCalls : reply.text });
    for (const call of reply.toolCalls) {
      observe();
      const output = await execute(schema.parse(call.arguments));
      observe();
      messages.push({ role: 'tool', content: { callId: call.id, output } });
    }
  }
  const elapsed = performance.now() - started;
  if (seen === 0 || messages.length !== steps * 2) throw new Error(`bare loop ended with ${messages.length} rows`);
  return elapsed;
}

/** `runs` bare loops at once; returns ms. */
export async function bareConcurrent(runs: number, steps: number): Promise<number> {
  const started = performance.now();
  await Promise.all(Array.from({ length: runs }, () => bareRun(steps)));
  return performance.now() - started;
}

/** The durable floor: one 1 KB row per transaction on a fresh SQLite file with the given `synchronous`. */
export function rawSqliteCommits(synchronous: 'NORMAL' | 'FULL') {
  const dir = mkdtempSync(join(tmpdir(), 'helix-bench-raw-'));
  const db = new BetterSqlite3(join(dir, 'raw.db'));
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous}`);
  db.exec('CREATE TABLE bench_rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL)');
  const insert = db.prepare('INSERT INTO bench_rows (body) VALUES (?)');
  const body = 'r'.repeat(1024);
  return {
    /** `count` one-row transactions; returns ms. */
    commits(count: number): number {
      const started = performance.now();
      for (let i = 0; i < count; i++) insert.run(body);
      return performance.now() - started;
    },
    close(): void {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Options of {@link retainedHeapMb}. */
export interface RetainedHeapOptions {
  /**
   * Runs (their sessions deleted or kept like the measured ones) before the "before" figure: 1 measures
   * against a process that ran once (the JIT still compiling); 200 against a warm one, whose compiled code,
   * feedback and hidden classes exist already. Default 1.
   */
  readonly warmupRuns?: number;
  /** One signal passed to every run's execute (as a server-wide shutdown signal would be). */
  readonly abortSignal?: AbortSignal;
  /** Called after the full collection before and after the measured runs (bench/heap.ts writes a heap snapshot there). */
  readonly onCollected?: (moment: 'before' | 'after') => void;
}

/** Runs a full collection twice (needs `--expose-gc`, or `exposeGc()` first). */
function fullGc(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc');
  gc();
  gc();
}

/**
 * Retained heap after `runs` runs of `steps` steps on fresh in-memory stores, with each session deleted
 * after its run (or kept, with `keep`), pruned after each run when a retention policy is given. Needs
 * `--expose-gc`. Returns the heap growth in MB (`heapUsed`, after a full collection) over the measured runs,
 * against the heap after `warmupRuns` runs.
 */
export async function retainedHeapMb(runs: number, steps: number, keep: boolean, retention?: RetentionPolicy, options: RetainedHeapOptions = {}): Promise<number> {
  const stores = memoryStores(retention);
  const bench = helixBench(stores, steps);
  let next = 0;
  const once = async (): Promise<void> => {
    const sessionId = `heap-${next++}`;
    const handle = await bench.executor.execute(bench.agent, 'go', { sessionId, ...(options.abortSignal ? { abortSignal: options.abortSignal } : {}) });
    await handle.result();
    if (!keep) await bench.executor.deleteSession(sessionId);
    // With a policy, prune as a timer would (here after every run).
    if (retention) await stores.prune();
  };
  for (let i = 0; i < (options.warmupRuns ?? 1); i++) await once();
  fullGc();
  options.onCollected?.('before');
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < runs; i++) await once();
  fullGc();
  const after = process.memoryUsage().heapUsed;
  options.onCollected?.('after');
  stores.close();
  return (after - before) / (1024 * 1024);
}

/** The log bytes of one frame (a 4 KB page and its 24-byte header) on a database with the default page size. */
const WAL_FRAME_BYTES = 4096 + 24;

/**
 * Pages a helix step writes to SQLite's log (the write-ahead log's frames: every page a transaction dirties
 * is one), beside a raw 1 KB row commit: counted, not timed, so a loaded machine cannot blur it. Both run
 * with checkpoints off while they are counted; the step figure is over `runs` further rounds of `concurrent`
 * runs of `steps` steps at once (their starts and ends included; runs at once share transactions, as group
 * commit does).
 */
export async function walPagesPerStep(synchronous: 'NORMAL' | 'FULL', steps = 100, runs = 5, concurrent = 1): Promise<{ step: number; raw: number }> {
  const stores = sqliteStores(synchronous, undefined, 'inline');
  const dir = mkdtempSync(join(tmpdir(), 'helix-wal-'));
  const raw = new BetterSqlite3(join(dir, 'raw.db'));
  const path = stores.sqlite.database.path;
  const walBytes = (file: string): number => statSync(`${file}-wal`).size;
  try {
    const bench = helixBench(stores, steps);
    const round = (): Promise<number> => (concurrent === 1 ? bench.run() : bench.concurrent(concurrent));
    await round();
    // A reader whose snapshot is the file without a log keeps every checkpoint from copying a frame (or
    // starting the log again) while it is open, so the log's size counts every page the runs write.
    const reader = new BetterSqlite3(path);
    reader.pragma('wal_checkpoint(TRUNCATE)');
    reader.exec('BEGIN');
    reader.prepare('SELECT count(*) FROM sessions').pluck().get();
    const before = walBytes(path);
    for (let i = 0; i < runs; i++) await round();
    const step = (walBytes(path) - before) / WAL_FRAME_BYTES / (runs * steps * concurrent);
    reader.exec('COMMIT');
    reader.close();
    raw.pragma('journal_mode = WAL');
    raw.pragma(`synchronous = ${synchronous}`);
    raw.pragma('wal_autocheckpoint = 0');
    raw.exec('CREATE TABLE bench_rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL)');
    raw.pragma('wal_checkpoint(TRUNCATE)');
    const insert = raw.prepare('INSERT INTO bench_rows (body) VALUES (?)');
    const body = 'r'.repeat(1024);
    const commits = 1_000;
    for (let i = 0; i < commits; i++) insert.run(body);
    return { step, raw: walBytes(join(dir, 'raw.db')) / WAL_FRAME_BYTES / commits };
  } finally {
    raw.close();
    stores.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Rows a SQLite file retains after `runs` runs in ONE session (a long chat: the first run has `steps`
 * steps, each later turn answers at once as the conversation already holds them; pruned after
 * every run as a timer would), with and without a retention policy: the checkpoints, journal entries and
 * stream chunks the policy bounds, and the commits and messages that grow with the conversation.
 */
export async function retainedSqliteRows(runs: number, steps: number, retention?: RetentionPolicy): Promise<Record<'checkpoints' | 'journal' | 'chunks' | 'commits' | 'messages', number>> {
  const dir = mkdtempSync(join(tmpdir(), 'helix-rows-'));
  const sqlite = openSqliteStores({ path: join(dir, 'helix.db'), ...(retention ? { retention } : {}) });
  try {
    const executor = new JSAgentExecutor(sqlite.stateStore, sqlite.streamManager, new ZeroLatencyAdapter(steps), { logger: silentLogger });
    const agent = benchAgent(steps);
    for (let i = 0; i < runs; i++) {
      const handle = i === 0 ? await executor.execute(agent, 'go', { sessionId: 'rows' }) : await executor.send('rows', 'go');
      await handle.result();
      await sqlite.prune();
    }
    const raw = new BetterSqlite3(sqlite.database.path, { readonly: true });
    try {
      const count = (sql: string): number => raw.prepare(sql).pluck().get() as number;
      return {
        checkpoints: count('SELECT count(*) FROM commits WHERE checkpoint IS NOT NULL'),
        journal: count('SELECT count(*) FROM journal'),
        chunks: count('SELECT coalesce(sum(key % 4294967296 - first_seq + 1), 0) FROM stream_batches'),
        commits: count('SELECT count(*) FROM commits'),
        messages: count('SELECT coalesce(sum(json_array_length(messages)), 0) FROM commits'),
      };
    } finally {
      raw.close();
    }
  } finally {
    sqlite.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The promises created while `run` runs, counted with an async_hooks PROMISE hook (a figure the load of a
 * shared machine cannot blur); `onPromise` is called for each, in the frame that made it.
 */
export async function promisesDuring(run: () => Promise<unknown>, onPromise?: () => void): Promise<number> {
  let total = 0;
  const hook = createHook({
    init(_id, type) {
      if (type !== 'PROMISE') return;
      total++;
      onPromise?.();
    },
  });
  hook.enable();
  try {
    await run();
  } finally {
    hook.disable();
  }
  return total;
}
