// The native API (issue 13, item 3): sessions, streams from an offset as SSE, every runtime entry, and
// errors as JSON AgentErrorInfo with fitting HTTP statuses.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, defineTool, InMemoryUsageStore, type AgentConfig, type StreamChunk } from '@helix-agents/sdk';
import { createGate } from '@helix-agents/sdk/testing';
import { openSqliteStores, SqliteKVStore } from '@helix-agents/store-sqlite';
import type { OpenAIChatRequestBody, ScriptedOpenAIStep } from '@helix-agents/llm-vercel/testing';
import { KVSessionOwners, type SessionDetails } from './index.js';
import { chunksOf, closeAll, countingReaders, waitFor, get, post, readEvents, startHarness, type Harness } from './__tests__/harness.js';

afterEach(closeAll);
const dir = mkdtempSync(join(tmpdir(), 'helix-server-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const lastRole = (body: OpenAIChatRequestBody): unknown => body.messages.at(-1)?.['role'];
const counter = { wire: 0 };
const wire = defineTool({ name: 'wire', description: 'Wire money', inputSchema: z.object({ amount: z.number() }), needsApproval: true, execute: async ({ amount }, ctx) => (counter.wire++, ctx.updateState<{ sent: number }>((d) => void (d.sent += amount)), { sent: amount }) });
const ask = defineTool({ name: 'ask', description: 'Ask the user', inputSchema: z.object({ q: z.string() }) });
const wireScript = (body: OpenAIChatRequestBody): ScriptedOpenAIStep => (lastRole(body) === 'tool' ? { text: `Done: ${String(body.messages.at(-1)!['content'])}` } : { toolCalls: [{ name: 'wire', args: { amount: 5 }, id: 'call_wire' }] });
const agents = (model: AgentConfig['llmConfig']['model']) => [
  defineAgent({ name: 'banker', llmConfig: { model }, tools: [wire, ask], stateSchema: z.object({ sent: z.number().default(0) }) }) as AgentConfig<unknown, unknown>,
  defineAgent({ name: 'echo', llmConfig: { model } }) as AgentConfig<unknown, unknown>,
];

interface Started {
  sessionId: string;
  runId: string;
  streamId: string;
  streamFrom: number;
}
const json = async <T>(response: Response, status: number): Promise<T> => {
  expect(response.status, await response.clone().text()).toBe(status);
  return (await response.json()) as T;
};
const result = (h: Harness, s: Started) => get(h, `/api/sessions/${s.sessionId}/runs/${s.runId}/result`).then((r) => json<{ status: string; output?: unknown; state?: unknown; error?: { code: string } }>(r, 200));

describe('sessions', () => {
  it('start, wait for the result, read the session (state, messages, runs, pending calls, usage) and list it', async () => {
    counter.wire = 0;
    const h = await startHarness({ script: [wireScript, wireScript], agents, app: { usageStore: new InMemoryUsageStore() } });
    const started = await json<Started>(await post(h, '/api/sessions', { input: 'Send 5.', sessionId: 'bank-1', tags: ['t1'] }), 202);
    expect(started).toMatchObject({ sessionId: 'bank-1', streamId: 'bank-1', streamFrom: 0 });
    expect(await result(h, started)).toMatchObject({ status: 'suspended' });
    const suspended = await json<SessionDetails>(await get(h, '/api/sessions/bank-1'), 200);
    expect(suspended).toMatchObject({ agentType: 'banker', status: 'suspended', state: { sent: 0 }, pendingCalls: [{ toolCallId: 'call_wire', toolName: 'wire', kind: 'approval', input: { amount: 5 } }] });
    const approved = await json<Started>(await post(h, '/api/sessions/bank-1/approve', { toolCallId: 'call_wire' }), 202);
    expect(await result(h, approved)).toMatchObject({ status: 'completed', output: 'Done: {"sent":5}', state: { sent: 5 } });
    expect(counter.wire).toBe(1);
    const details = await json<SessionDetails>(await get(h, '/api/sessions/bank-1'), 200);
    expect(details.runs.map((r) => [r.runId, r.status])).toEqual([[started.runId, 'suspended'], [approved.runId, 'completed']]);
    expect(details.runs[0]!.options).toMatchObject({ userId: 'alice', tags: ['t1'] });
    expect(details.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(details.pendingCalls).toEqual([]);
    expect(details.usage).toMatchObject({ inputTokens: 10, outputTokens: 5 });
    expect(details.usageRollup?.modelCalls).toBe(2);
    const list = await json<{ sessions: { sessionId: string; agentType: string; status: string }[] }>(await get(h, '/api/sessions'), 200);
    expect(list.sessions).toEqual([expect.objectContaining({ sessionId: 'bank-1', agentType: 'banker', status: 'completed' })]);
  });

  it('lists the newest first, in pages', async () => {
    const h = await startHarness({ script: Array.from({ length: 5 }, () => ({ text: 'ok' })), agents });
    for (let i = 0; i < 5; i++) await result(h, await json<Started>(await post(h, '/api/sessions', { input: 'hi', sessionId: `p-${i}`, agent: 'echo' }), 202));
    const page1 = await json<{ sessions: { sessionId: string }[]; next?: string }>(await get(h, '/api/sessions?limit=2'), 200);
    expect(page1.sessions.map((s) => s.sessionId)).toEqual(['p-4', 'p-3']);
    const page2 = await json<{ sessions: { sessionId: string }[]; next?: string }>(await get(h, `/api/sessions?limit=2&before=${page1.next!}`), 200);
    expect(page2.sessions.map((s) => s.sessionId)).toEqual(['p-2', 'p-1']);
    expect((await get(h, '/api/sessions?limit=0')).status).toBe(400);
    expect((await get(h, '/api/sessions?limit=1000')).status).toBe(400);
  });

  it('with KVSessionOwners on SQLite, ownership survives a restart of the app', async () => {
    const path = join(dir, 'owners.db');
    const first = openSqliteStores({ path });
    const h1 = await startHarness({ script: [{ text: 'ok' }], agents, stores: { state: first.stateStore, stream: first.streamManager }, app: { owners: new KVSessionOwners(new SqliteKVStore(first.database)) } });
    await result(h1, await json<Started>(await post(h1, '/api/sessions', { input: 'hi', sessionId: 'kept-1', agent: 'echo' }), 202));
    await closeAll();
    first.close();
    const second = openSqliteStores({ path });
    try {
      const h2 = await startHarness({ script: [], agents, stores: { state: second.stateStore, stream: second.streamManager }, app: { owners: new KVSessionOwners(new SqliteKVStore(second.database)) } });
      expect((await json<SessionDetails>(await get(h2, '/api/sessions/kept-1'), 200)).messages).toHaveLength(2);
      expect((await get(h2, '/api/sessions/kept-1', 'bob')).status).toBe(404);
      expect((await json<{ sessions: { sessionId: string }[] }>(await get(h2, '/api/sessions'), 200)).sessions.map((s) => s.sessionId)).toEqual(['kept-1']);
      await closeAll();
    } finally {
      second.close();
    }
  });
});

describe('GET /api/sessions/:id/stream', () => {
  it('reads the session stream from an offset as SSE (id = seq), from ?from or after Last-Event-ID, and ends with done', async () => {
    const h = await startHarness({ script: [{ textChunks: ['a', 'b', 'c'] }, { textChunks: ['d', 'e'] }], agents });
    const s1 = await json<Started>(await post(h, '/api/sessions', { input: 'one', sessionId: 'st-1', agent: 'echo' }), 202);
    await result(h, s1);
    const s2 = await json<Started>(await post(h, '/api/sessions/st-1/messages', { message: 'two' }), 202);
    await result(h, s2);
    const all = await chunksOf(h, 'st-1');
    expect(s2.streamFrom).toBe(all.find((c) => c.runId === s2.runId)!.seq);
    const events = await readEvents(await get(h, '/api/sessions/st-1/stream?from=3&follow=false'));
    expect(events.at(-1)).toEqual({ event: 'done', data: JSON.stringify({ nextSeq: all.length }) });
    const read = events.slice(0, -1);
    expect(read.map((e) => e.id)).toEqual(all.slice(3).map((c) => String(c.seq)));
    expect(read.map((e) => JSON.parse(e.data) as StreamChunk)).toEqual(all.slice(3));
    const after = await readEvents(await get(h, '/api/sessions/st-1/stream?follow=false', 'alice', { 'last-event-id': '5' }));
    expect(after[0]?.id).toBe('6');
    const onlyRun = await readEvents(await get(h, `/api/sessions/st-1/stream?run=${s2.runId}`));
    expect(onlyRun.slice(0, -1).map((e) => (JSON.parse(e.data) as StreamChunk).runId)).toEqual(all.filter((c) => c.runId === s2.runId).map(() => s2.runId));
    expect((await get(h, '/api/sessions/st-1/stream?from=-1')).status).toBe(400);
    expect((await get(h, '/api/sessions/st-1/stream', 'alice', { 'last-event-id': '1.2.3' })).status).toBe(400);
    expect((await get(h, '/api/sessions/st-1/stream?follow=maybe')).status).toBe(400);
  });

  it('follows a live run, and a client that goes away releases its reader', async () => {
    const gate = createGate();
    const hold = defineTool({ name: 'hold', description: 'Hold', inputSchema: z.object({}), execute: async () => (await gate.opened, 'held') });
    const script = (body: OpenAIChatRequestBody): ScriptedOpenAIStep => (lastRole(body) === 'tool' ? { text: 'Released.' } : { toolCalls: [{ name: 'hold', args: {}, id: 'call_hold' }] });
    let readers: ReturnType<typeof countingReaders> | undefined;
    const h = await startHarness({ script: [script, script], agents: (model) => [defineAgent({ name: 'holder', llmConfig: { model }, tools: [hold] }) as AgentConfig<unknown, unknown>], runtime: (e) => (readers = countingReaders(e)).runtime });
    const started = await json<Started>(await post(h, '/api/sessions', { input: 'go', sessionId: 'live-1' }), 202);
    const gone = new AbortController();
    const early = await get(h, '/api/sessions/live-1/stream', 'alice');
    const partial = await readEvents(early, 2, gone);
    expect(partial).toHaveLength(2);
    await waitFor(() => readers!.open() === 0);
    const following = readEvents(await get(h, `/api/sessions/live-1/stream?run=${started.runId}`));
    await waitFor(() => readers!.open() === 1);
    gate.open();
    const events = await following;
    expect(events.at(-1)?.event).toBe('done');
    expect(JSON.parse(events.at(-2)!.data)).toMatchObject({ type: 'end', output: 'Released.' });
    await waitFor(() => readers!.open() === 0);
  });
});

describe('entries', () => {
  it('reject answers permission_denied to the model and the tool does not run; tool-results answers a client tool', async () => {
    counter.wire = 0;
    const askScript = (body: OpenAIChatRequestBody): ScriptedOpenAIStep => (lastRole(body) === 'tool' ? { text: `Got ${String(body.messages.at(-1)!['content'])}` } : { toolCalls: [{ name: 'ask', args: { q: 'color?' }, id: 'call_ask' }] });
    const h = await startHarness({ script: [wireScript, wireScript, askScript, askScript], agents });
    const s = await json<Started>(await post(h, '/api/sessions', { input: 'Send 5.', sessionId: 'rej-1' }), 202);
    await result(h, s);
    const rejected = await json<Started>(await post(h, '/api/sessions/rej-1/reject', { toolCallId: 'call_wire', reason: 'too much' }), 202);
    expect(await result(h, rejected)).toMatchObject({ status: 'completed' });
    expect(counter.wire).toBe(0);
    expect(JSON.stringify(h.model.requests[1]!.messages.at(-1))).toMatch(/rejected.*too much/);
    const c = await json<Started>(await post(h, '/api/sessions', { input: 'Ask me.', sessionId: 'client-1' }), 202);
    expect(await result(h, c)).toMatchObject({ status: 'suspended' });
    const answered = await json<Started>(await post(h, '/api/sessions/client-1/tool-results', { toolCallId: 'call_ask', result: 'teal' }), 202);
    expect(await result(h, answered)).toMatchObject({ status: 'completed', output: 'Got teal' });
  });

  it('resume with decisions, retry a failed run, rewind to a checkpoint, stop a running run', async () => {
    counter.wire = 0;
    const gate = createGate();
    const h = await startHarness({ script: [wireScript, wireScript, { status: 400 }, { text: 'Retried.' }, { text: 'Rewound.' }, { toolCalls: [{ name: 'hold', args: {}, id: 'call_hold' }] }], agents: (model) => [
      ...agents(model),
      defineAgent({ name: 'holder', llmConfig: { model }, tools: [defineTool({ name: 'hold', description: 'Hold', inputSchema: z.object({}), execute: async (_i, ctx) => (await Promise.race([gate.opened, new Promise((r) => ctx.abortSignal.addEventListener('abort', r))]), 'held') })] }) as AgentConfig<unknown, unknown>,
    ] });
    const s = await json<Started>(await post(h, '/api/sessions', { input: 'Send 5.', sessionId: 'all-1' }), 202);
    await result(h, s);
    const resumed = await json<Started>(await post(h, '/api/sessions/all-1/resume', { mode: 'continue', decisions: [{ toolCallId: 'call_wire', decision: 'approve' }] }), 202);
    expect(await result(h, resumed)).toMatchObject({ status: 'completed' });
    expect(counter.wire).toBe(1);
    // A failed turn, retried.
    const failing = await json<Started>(await post(h, '/api/sessions/all-1/messages', { message: 'Again?' }), 202);
    expect(await result(h, failing)).toMatchObject({ status: 'failed', error: { code: 'provider_bad_request' } });
    const retried = await json<Started>(await post(h, '/api/sessions/all-1/retry', {}), 202);
    expect(await result(h, retried)).toMatchObject({ status: 'completed', output: 'Retried.' });
    // Rewind to the genesis checkpoint: the conversation starts over.
    const { checkpoints } = await json<{ checkpoints: { checkpointId: string }[] }>(await get(h, '/api/sessions/all-1/checkpoints'), 200);
    expect(checkpoints.length).toBeGreaterThan(0);
    const rewound = await json<Started>(await post(h, '/api/sessions/all-1/rewind', { checkpointId: 'genesis' }), 202);
    await result(h, rewound);
    expect((await json<SessionDetails>(await get(h, '/api/sessions/all-1'), 200)).messages.map((m) => m.content)).toEqual(['Again?', 'Rewound.']);
    // Stop a run held in a tool.
    const held = await json<Started>(await post(h, '/api/sessions', { input: 'hold', sessionId: 'hold-1', agent: 'holder' }), 202);
    await new Promise((r) => setTimeout(r, 50));
    const stopped = await json<{ stopped: boolean; result?: { status: string } }>(await post(h, '/api/sessions/hold-1/stop', { reason: 'enough' }), 200);
    expect(stopped).toMatchObject({ stopped: true, result: { status: 'interrupted' } });
    expect(await result(h, held)).toMatchObject({ status: 'interrupted', error: { code: 'run_interrupted' } });
    expect(await json(await post(h, '/api/sessions/hold-1/stop', {}), 200)).toEqual({ stopped: false });
    gate.open();
  });

  it('errors are JSON AgentErrorInfo with fitting statuses', async () => {
    const h = await startHarness({ script: [wireScript, { text: 'ok' }], agents });
    await result(h, await json<Started>(await post(h, '/api/sessions', { input: 'Send 5.', sessionId: 'err-1' }), 202));
    const cases: [string, unknown, number, string][] = [
      ['/api/sessions/err-1/approve', { toolCallId: 'call_nope' }, 409, 'tool_call_not_pending'],
      ['/api/sessions/err-1/tool-results', { toolCallId: 'call_wire', result: 1 }, 409, 'tool_call_not_pending'],
      ['/api/sessions/err-1/retry', {}, 409, 'session_not_retryable'],
      ['/api/sessions/err-1/rewind', { checkpointId: 'cp-nope' }, 404, 'state_not_found'],
      ['/api/sessions', { input: 'x', agent: 'nobody' }, 400, 'http_unknown_agent'],
      ['/api/sessions', { input: 'x', sessionId: 'err-1', agent: 'echo' }, 400, 'http_unknown_agent'],
      ['/api/sessions', { input: 'x', initialState: { sent: 'lots' } }, 400, 'run_invalid_input'],
    ];
    for (const [path, body, status, code] of cases) {
      const info = await json<{ code: string; layer: string; severity: string; message: string; retryable: boolean }>(await post(h, path, body), status);
      expect(info, path).toMatchObject({ code });
      expect(typeof info.message).toBe('string');
      expect(['provider', 'tool', 'run', 'hook', 'permission', 'transport']).toContain(info.layer);
    }
    await result(h, await json<Started>(await post(h, '/api/sessions/err-1/approve', { toolCallId: 'call_wire' }), 202));
    const info = await json<{ code: string }>(await post(h, '/api/sessions/err-1/approve', { toolCallId: 'call_wire' }), 409);
    expect(info.code).toBe('session_not_suspended');
    expect(await json(await get(h, '/api/sessions/err-1/runs/run-nope'), 404)).toMatchObject({ code: 'http_not_found' });
  });

  it('with signed approvals, the server signs the owner\u2019s decisions; without a signer they are refused with 403', async () => {
    counter.wire = 0;
    const signedApp = await startHarness({ script: [wireScript, wireScript], agents, executor: { approvalSecret: 'secret-0123456789' }, app: { signApproval: (...a) => signedApp.executor.signApproval(...a) } });
    const s = await json<Started>(await post(signedApp, '/api/sessions', { input: 'Send 5.', sessionId: 'sig-1' }), 202);
    await result(signedApp, s);
    expect(await result(signedApp, await json<Started>(await post(signedApp, '/api/sessions/sig-1/approve', { toolCallId: 'call_wire' }), 202))).toMatchObject({ status: 'completed' });
    const unsigned = await startHarness({ script: [wireScript], agents, executor: { approvalSecret: 'secret-0123456789' } });
    await result(unsigned, await json<Started>(await post(unsigned, '/api/sessions', { input: 'Send 5.', sessionId: 'sig-2' }), 202));
    expect(await json(await post(unsigned, '/api/sessions/sig-2/approve', { toolCallId: 'call_wire' }), 403)).toMatchObject({ code: 'approval_invalid_signature' });
    expect(counter.wire).toBe(1);
  });
});
