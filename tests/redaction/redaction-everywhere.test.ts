// Issue 14 item 3, the places the first test (packages/tracing-otel/src/redaction-everywhere.test.ts) did
// not search: a secret planted in the input, a tool argument, a tool result, a tool error, the state, the
// output and a run's error is found in none of the checkpoints (listed, loaded, restored), the journal
// (a side-effecting tool's call and the model reply that asked for it), the run records, the usage store,
// the Langfuse exporter's requests, the OTel spans (attributes, events and status) and a real SQLite
// database behind createRedactingStores (every table, and the raw bytes of the file and its WAL).
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { createHookManager, defineAgent, defineTool, JSAgentExecutor, silentLogger, type StateStore, type StreamChunk } from '@helix-agents/sdk';
import type { JournalEntry } from '@helix-agents/sdk/store';
import { createHookDispatcher, defineHook, mountHook, type SessionEvent } from '@helix-agents/sdk/hooks';
import { createRedactingStores, createRedactingTracerProvider, createRedactionHook } from '@helix-agents/sdk/ready-made';
import { createScriptedModel, type ScriptedStep } from '@helix-agents/sdk/testing';
import { openSqliteStores } from '@helix-agents/store-sqlite';
import { createOtelHooks } from '@helix-agents/tracing-otel';
import { createLangfuseHooks } from '@helix-agents/tracing-langfuse';
import { startOtlpSink } from '../../packages/tracing-langfuse/src/__tests__/otlp-sink.js';

const SECRETS = {
  input: 'sk-input0000AAAABBBBCCCCDDDDEEEE',
  argument: 'sk-argument0000AAAABBBBCCCCDDDD',
  result: 'sk-result0000AAAABBBBCCCCDDDDEE',
  toolError: 'sk-toolerror000AAAABBBBCCCCDDDD',
  state: 'sk-state0000AAAABBBBCCCCDDDDEEEE',
  output: 'sk-output0000AAAABBBBCCCCDDDDEE',
  runError: 'sk-runerror0000AAAABBBBCCCCDDDD',
};

/** Which secrets `text` holds, as `kind in where`. */
function leaksIn(where: string, text: string): string[] {
  return Object.entries(SECRETS).flatMap(([kind, secret]) => (text.includes(secret) ? [`${kind} in ${where}`] : []));
}
const leaks = (where: string, value: unknown): string[] => leaksIn(where, JSON.stringify(value) ?? '');
/** A table's rows with BLOB columns as text (JSON.stringify would turn a Buffer into an array of numbers). */
const readable = (rows: unknown[]): unknown[] => rows.map((row) => Object.fromEntries(Object.entries(row as Record<string, unknown>).map(([k, v]) => [k, Buffer.isBuffer(v) ? v.toString('latin1') : v])));

const folder = mkdtempSync(join(tmpdir(), 'helix-redaction-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/**
 * A state store that keeps every argument it is given (what the redacting wrapper lets through to the
 * real store), and reads the run's journal back just before each commit (which drops the entries it covers).
 */
function recording<S extends StateStore>(store: S) {
  const written: { readonly method: string; readonly args: unknown[] }[] = [];
  const journals: JournalEntry[][] = [];
  const proxy = new Proxy(store, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        written.push({ method: String(prop), args });
        if (prop === 'commit') journals.push([...(await target.loadJournal((args[0] as { runId: string }).runId))]);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store: proxy, written, journals };
}

/** The model: a tool step on a user turn, then the final text once the tools answered. */
const script: ScriptedStep = (o) => {
  const last = o.prompt.at(-1);
  if (last?.role === 'tool') return { text: `Done: ${SECRETS.output}`, usage: { inputTokens: 30, outputTokens: 5 } };
  return {
    toolCalls: [
      { name: 'lookup', args: { key: `use ${SECRETS.argument}` }, id: 'k1' },
      { name: 'breaks', args: { key: 'x' }, id: 'k2' },
    ],
    usage: { inputTokens: 20, outputTokens: 4 },
  };
};

describe('redaction covers checkpoints, journal, run records, usage, Langfuse and a SQLite file (issue 14, item 3)', () => {
  it('input, argument, result, tool error, state, output and run error: in no checkpoint, journal entry, run record, usage row, Langfuse request, span (attributes, events, status), SQLite table, nor the raw database and WAL bytes', async () => {
    const path = join(folder, 'helix.db');
    const sqlite = openSqliteStores({ path });
    const spy = recording(sqlite.stateStore);
    const redacted = createRedactingStores({ stateStore: spy.store, streamManager: sqlite.streamManager });
    const executor = new JSAgentExecutor(redacted.stateStore, redacted.streamManager, new VercelAIAdapter(), { logger: silentLogger });
    const events: SessionEvent[] = [];
    const dispatcher = createHookDispatcher({ source: executor, hooks: [mountHook('spy', defineHook({ events: { '*': (event) => void events.push(event) } }))], logger: silentLogger });
    const exporter = new InMemorySpanExporter();
    const otel = createOtelHooks({ tracerProvider: createRedactingTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })), captureContent: true });
    const sink = await startOtlpSink();
    const langfuse = createLangfuseHooks({ publicKey: 'pk-lf-test', secretKey: 'sk-lf-test', baseUrl: sink.url, exportMode: 'immediate', redact: true });

    let toolSaw: string | undefined;
    const lookup = defineTool({
      name: 'lookup',
      description: 'Looks a key up (it writes to an outside system, so its result is journaled)',
      inputSchema: z.object({ key: z.string() }),
      sideEffects: true,
      execute: async (input, ctx) => {
        toolSaw = input.key;
        ctx.updateState<{ note?: string }>((draft) => {
          draft.note = `token ${SECRETS.state}`;
        });
        return `found ${SECRETS.result}`;
      },
    });
    const breaks = defineTool({
      name: 'breaks',
      description: 'Fails, naming a secret in its error',
      inputSchema: z.object({ key: z.string() }),
      execute: () => {
        throw new Error(`cannot use ${SECRETS.toolError}`);
      },
    });
    const agent = defineAgent({
      name: 'redacted',
      stateSchema: z.object({ note: z.string().optional() }),
      llmConfig: { model: createScriptedModel([script], { loop: true }) },
      tools: [lookup, breaks],
    });
    const hookManager = createHookManager(createRedactionHook()).register(otel.hooks).register(langfuse.hooks);
    const usageStore = redacted.stateStore;

    const handle = await executor.execute(agent, `my key is ${SECRETS.input}`, { hookManager, usageStore });
    const result = await handle.result();
    expect(result.status).toBe('completed');
    expect(toolSaw).toBe(`use ${SECRETS.argument}`);
    const sessionId = handle.sessionId;

    // Restore the checkpoint of the tool step: the restored run starts from redacted state and conversation.
    const checkpoints = await executor.listCheckpoints(sessionId);
    const stepCheckpoint = checkpoints.find((c) => c.kind === 'step' && c.stepCount === 1)!;
    expect(stepCheckpoint).toBeDefined();
    const restored = await executor.resume(sessionId, { mode: 'from_checkpoint', checkpointId: stepCheckpoint.checkpointId, hookManager, usageStore });
    expect((await restored.result()).status).toBe('completed');

    // A run that fails, its error naming a secret (the provider's message).
    const failing = defineAgent({ name: 'failing', llmConfig: { model: createScriptedModel([{ error: { status: 400, message: `invalid key ${SECRETS.runError}` } }]), retry: { maxAttempts: 1 } } });
    const failed = await executor.execute(failing, 'go', { hookManager, usageStore });
    const failedResult = await failed.result();
    expect(failedResult.status).toBe('failed');
    expect(failedResult.error?.message).toContain(SECRETS.runError);

    await dispatcher.idle();
    await langfuse.flush();

    const runIds = [handle.runId, restored.runId, failed.runId];
    const runs = await Promise.all(runIds.map((id) => executor.getRun(id)));
    expect(runs.map((r) => r?.status)).toEqual(['completed', 'completed', 'failed']);
    const loaded = await Promise.all(checkpoints.map((c) => sqlite.stateStore.loadCheckpoint(sessionId, c.checkpointId)));
    const chunks: StreamChunk[] = [];
    for (const id of [sessionId, failed.sessionId]) for await (const chunk of sqlite.streamManager.read(id, { follow: false })) chunks.push(chunk);
    const rollups = await Promise.all([...runIds.map((runId) => sqlite.usageStore.getRollup({ runId })), sqlite.usageStore.getRollup({ sessionId })]);

    // Every table of the database, through a connection of its own, then the raw bytes of the file and its WAL.
    const reader = new BetterSqlite3(path, { readonly: true });
    const tables = (reader.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((t) => t.name);
    const rows = Object.fromEntries(tables.map((t) => [t, readable(reader.prepare(`SELECT * FROM "${t}"`).all())]));
    reader.close();
    const files = [path, `${path}-wal`].filter((f) => existsSync(f));

    const found = [
      ...spy.written.flatMap((w, i) => leaks(`argument of ${w.method} (call ${i})`, w.args)),
      ...leaks('listCheckpoints', checkpoints),
      ...loaded.flatMap((c) => leaks(`checkpoint ${c?.kind}@${c?.stepCount}`, c)),
      ...leaks('restored session', await executor.getSession(sessionId)),
      ...spy.journals.flatMap((j) => leaks('journal', j)),
      ...runs.flatMap((r) => leaks(`run ${r?.runId}`, r)),
      ...leaks('usage rollups', rollups),
      ...chunks.flatMap((c) => leaks(`${c.type} chunk`, c)),
      ...leaks('subscriber events', events),
      ...exporter.getFinishedSpans().flatMap((s) => leaks(`span ${s.name}`, { attributes: s.attributes, events: s.events, status: s.status, name: s.name })),
      ...leaks('Langfuse spans', sink.spans),
      ...tables.flatMap((t) => leaks(`table ${t}`, rows[t])),
      ...files.flatMap((f) => leaksIn(`raw bytes of ${f.slice(folder.length + 1)}`, readFileSync(f).toString('latin1'))),
    ];
    expect(found).toEqual([]);

    // The places searched hold what they should, so an empty search means redacted, not missing.
    expect(spy.journals.flat().map((e) => e.kind)).toEqual(expect.arrayContaining(['model_reply', 'call_started', 'call_result']));
    expect(JSON.stringify(spy.journals)).toContain('[REDACTED]');
    expect(checkpoints.map((c) => c.kind)).toEqual(expect.arrayContaining(['turn_start', 'step']));
    expect(JSON.stringify(loaded)).toContain('[REDACTED]');
    expect(runs[0]?.output).toBe('Done: [REDACTED]');
    expect(runs[2]?.error?.message).toContain('[REDACTED]');
    expect(rollups.at(-1)?.tokens.total).toBeGreaterThan(0);
    expect(rollups.at(-1)?.toolStats.byTool).toHaveProperty('lookup');
    expect(tables).toEqual(expect.arrayContaining(['sessions', 'runs', 'commits', 'journal', 'usage', 'stream_batches']));
    expect(files).toContain(`${path}-wal`);
    expect(readFileSync(`${path}-wal`).toString('latin1')).toContain('[REDACTED]');
    expect(sink.spans.length).toBeGreaterThan(0);
    expect(sink.errors).toEqual([]);
    expect(exporter.getFinishedSpans().some((s) => s.status.message?.includes('[REDACTED]'))).toBe(true);

    await langfuse.shutdown();
    await sink.close();
    sqlite.close();
  });
});
