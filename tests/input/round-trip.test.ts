// Issue 13, item 5: any valid message array given to execute() is stored as the turn's input rows and
// comes back unchanged from a SQLite file and from Postgres, read through fresh store connections.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import type { ModelMessage } from '@ai-sdk/provider-utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineAgent, JSAgentExecutor, silentLogger, type Message, type MessageAttachment, type StateStore, type StreamManager } from '@helix-agents/sdk';
import { createScriptedModel } from '@helix-agents/sdk/testing';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { openSqliteStores } from '@helix-agents/store-sqlite';
import { openPostgresStores } from '@helix-agents/store-postgres';
import { startTestPostgres, type TestPostgres } from '@helix-agents/store-postgres/testing';

const folder = mkdtempSync(join(tmpdir(), 'helix-input-rt-'));
let postgres: TestPostgres | undefined;
beforeAll(async () => {
  postgres = await startTestPostgres();
}, 120_000);
afterAll(async () => {
  await postgres?.stop();
  rmSync(folder, { recursive: true, force: true });
});

/** A generated turn: the ModelMessages given to execute() and the rows the store must hold. */
interface Case {
  readonly input: ModelMessage[];
  readonly rows: Message[];
}

// Any text, lone surrogates included (JSON escapes them, so they survive the stores).
const text = fc.string({ unit: 'binary', maxLength: 40 });
const nonBlank = text.filter((t) => t.trim() !== '');
const json = fc.json({ maxDepth: 2 }).map((t) => JSON.parse(t) as unknown);
const mediaType = fc.constantFrom('image/png', 'image/jpeg', 'application/pdf', 'text/plain', 'audio/wav');

/** An attachment in one of the shapes the AI SDK takes, and what is stored for it. */
const attachment = fc
  .record({
    mediaType,
    filename: fc.option(fc.string({ minLength: 1, maxLength: 30 }), { nil: undefined }),
    bytes: fc.uint8Array({ maxLength: 64 }),
    url: fc.option(fc.webUrl({ validSchemes: ['http', 'https'] }), { nil: undefined }),
    shape: fc.constantFrom('bytes', 'base64', 'dataUrl', 'arrayBuffer'),
  })
  .map(({ mediaType, filename, bytes, url, shape }) => {
    const base64 = Buffer.from(bytes).toString('base64');
    const data = url !== undefined ? new URL(url) : shape === 'bytes' ? bytes : shape === 'base64' ? base64 : shape === 'dataUrl' ? `data:${mediaType};base64,${base64}` : bytes.slice().buffer;
    const isImage = mediaType.startsWith('image/');
    const named = filename === undefined ? {} : { filename };
    const part = isImage ? { type: 'image' as const, image: data, mediaType } : { type: 'file' as const, data, mediaType, ...named };
    const stored: MessageAttachment = url !== undefined ? { type: isImage ? 'image' : 'file', mediaType, ...(isImage ? {} : named), url: new URL(url).href } : { type: isImage ? 'image' : 'file', mediaType, ...(isImage ? {} : named), data: base64 };
    return { part, stored };
  });

const userTurn = fc.record({ texts: fc.array(text, { minLength: 1, maxLength: 2 }), files: fc.array(attachment, { maxLength: 3 }), plain: fc.boolean() }).filter(({ texts, files }) => files.length > 0 || texts.join('\n').trim() !== '');
const user = userTurn.map(({ texts, files, plain }): Case => {
  const content = texts.join('\n');
  if (plain && files.length === 0) return { input: [{ role: 'user', content }], rows: [{ role: 'user', content }] };
  const input: ModelMessage = { role: 'user', content: [...texts.map((t) => ({ type: 'text' as const, text: t })), ...files.map((f) => f.part)] };
  return { input: [input], rows: [{ role: 'user', content, ...(files.length === 0 ? {} : { attachments: files.map((f) => f.stored) }) }] };
});

const assistant = fc
  .record({ content: text, reasoning: fc.option(nonBlank, { nil: undefined }), calls: fc.array(fc.record({ name: fc.constantFrom('search', 'read', 'write'), args: json, result: json, error: fc.boolean() }), { maxLength: 2 }), salt: fc.nat() })
  .map(({ content, reasoning, calls, salt }): Case => {
    const ids = calls.map((_, i) => `call-${salt}-${i}`);
    const input: ModelMessage[] = [
      {
        role: 'assistant',
        content: [...(reasoning === undefined ? [] : [{ type: 'reasoning' as const, text: reasoning }]), { type: 'text' as const, text: content }, ...calls.map((c, i) => ({ type: 'tool-call' as const, toolCallId: ids[i]!, toolName: c.name, input: c.args }))],
      },
    ];
    const rows: Message[] = [{ role: 'assistant', content, ...(calls.length === 0 ? {} : { toolCalls: calls.map((c, i) => ({ id: ids[i]!, name: c.name, arguments: c.args })) }), ...(reasoning === undefined ? {} : { reasoning }) }];
    if (calls.length > 0) {
      input.push({ role: 'tool', content: calls.map((c, i) => ({ type: 'tool-result' as const, toolCallId: ids[i]!, toolName: c.name, output: c.error ? { type: 'error-json' as const, value: c.result as never } : { type: 'json' as const, value: c.result as never } })) });
      calls.forEach((c, i) => rows.push({ role: 'tool', toolCallId: ids[i]!, toolName: c.name, content: c.result ?? null, ...(c.error ? { isError: true } : {}) }));
    }
    return { input, rows };
  });

// Call ids are unique within a turn: the salt makes each assistant's ids its own.
const conversation = fc.tuple(fc.array(fc.oneof(user, assistant), { maxLength: 4 }), user).map(([history, last]): Case => {
  const parts = [...history.map((c, k) => renumber(c, k)), last];
  return { input: parts.flatMap((c) => c.input), rows: parts.flatMap((c) => c.rows) };
});

function renumber(c: Case, k: number): Case {
  const re = (id: string) => `${id}-${k}`;
  const input = c.input.map((m): ModelMessage => {
    if (m.role === 'assistant' && Array.isArray(m.content)) return { ...m, content: m.content.map((p) => (p.type === 'tool-call' ? { ...p, toolCallId: re(p.toolCallId) } : p)) };
    if (m.role === 'tool') return { ...m, content: m.content.map((p) => (p.type === 'tool-result' ? { ...p, toolCallId: re(p.toolCallId) } : p)) };
    return m;
  });
  const rows = c.rows.map((r): Message => (r.role === 'assistant' && r.toolCalls ? { ...r, toolCalls: r.toolCalls.map((t) => ({ ...t, id: re(t.id) })) } : r.role === 'tool' ? { ...r, toolCallId: re(r.toolCallId) } : r));
  return { input, rows };
}

interface Stores {
  readonly stateStore: StateStore;
  readonly streamManager: StreamManager;
  close(): Promise<void> | void;
}

async function roundTrips(open: () => Promise<Stores>): Promise<void> {
  let n = 0;
  await fc.assert(
    fc.asyncProperty(conversation, async ({ input, rows }) => {
      const sessionId = `rt-${n++}`;
      const writer = await open();
      try {
        const agent = defineAgent({ name: 'rt', llmConfig: { model: createScriptedModel([{ text: 'ok' }]) } });
        const executor = new JSAgentExecutor(writer.stateStore, writer.streamManager, new VercelAIAdapter(), { logger: silentLogger });
        expect(await (await executor.execute(agent, input, { sessionId })).result()).toMatchObject({ status: 'completed' });
      } finally {
        await writer.close();
      }
      const reader = await open();
      try {
        const session = await reader.stateStore.loadSession(sessionId);
        expect(session?.messages.slice(0, rows.length)).toEqual(rows);
        expect(session?.messages[rows.length]).toEqual({ role: 'assistant', content: 'ok' });
      } finally {
        await reader.close();
      }
    }),
    { numRuns: 40 },
  );
}

describe('property: a valid message array round-trips through the store unchanged', () => {
  it('SQLite (a fresh connection on the file reads the rows back)', () => roundTrips(async () => openSqliteStores({ path: join(folder, 'rt.db') })), 120_000);
  it('Postgres (a fresh pool reads the rows back)', () => roundTrips(async () => openPostgresStores({ connectionString: postgres!.connectionString })), 120_000);
});
