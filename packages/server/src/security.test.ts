// Security rules of the server (issue 13, item 4): auth on every route, ownership (404 for other users,
// streams included), size limits (413), id validation (400), CORS off unless configured, auth 'none'.
import { afterEach, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { z } from 'zod';
import { defineAgent, defineTool, InMemoryStateStore, InMemoryStreamManager, JSAgentExecutor, silentLogger, type AgentConfig, type Logger } from '@helix-agents/sdk';
import { createScriptedModel } from '@helix-agents/sdk/testing';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import type { OpenAIChatRequestBody, ScriptedOpenAIStep } from '@helix-agents/llm-vercel/testing';
import { bearerAuth, checkId, createHelixApp, ID_PATTERN, serve } from './index.js';
import { as, closeAll, get, post, readEvents, startHarness, userMessage, waitFor, type Harness } from './__tests__/harness.js';

afterEach(closeAll);

const wire = defineTool({ name: 'wire', description: 'Wire money', inputSchema: z.object({ amount: z.number() }), needsApproval: true, execute: async ({ amount }) => ({ sent: amount }) });
const script = (body: OpenAIChatRequestBody): ScriptedOpenAIStep => (body.messages.at(-1)?.['role'] === 'tool' ? { text: 'Done.' } : { text: 'Sending.', toolCalls: [{ name: 'wire', args: { amount: 5 }, id: 'call_wire' }] });
const agents = (model: AgentConfig['llmConfig']['model']) => [defineAgent({ name: 'assistant', llmConfig: { model }, tools: [wire] }) as AgentConfig<unknown, unknown>];

/** Alice's suspended session `alice-1` (waiting on an approval), and its run id. */
async function aliceSession(h: Harness): Promise<string> {
  await readEvents(await post(h, '/api/chat', { id: 'alice-1', messages: [userMessage('Send 5.')] }, 'alice'));
  return (await h.executor.getSession('alice-1'))!.currentRunId!;
}

/** Every route of the app, with a body that would be valid for the owner. */
function routes(sessionId: string, runId: string): { method: 'GET' | 'POST'; path: string; body?: unknown }[] {
  const s = `/api/sessions/${sessionId}`;
  return [
    { method: 'POST', path: '/api/chat', body: { id: sessionId, messages: [userMessage('hi')] } },
    { method: 'GET', path: `/api/chat/${sessionId}/stream` },
    { method: 'POST', path: `/api/chat/${sessionId}/stop`, body: {} },
    { method: 'GET', path: `/api/chat/${sessionId}/messages` },
    { method: 'GET', path: s },
    { method: 'GET', path: `${s}/stream?follow=false` },
    { method: 'GET', path: `${s}/checkpoints` },
    { method: 'GET', path: `${s}/runs/${runId}` },
    { method: 'GET', path: `${s}/runs/${runId}/result?waitMs=0` },
    { method: 'POST', path: `${s}/messages`, body: { message: 'hi' } },
    { method: 'POST', path: `${s}/resume`, body: { mode: 'continue', decisions: [{ toolCallId: 'call_wire', decision: 'approve' }] } },
    { method: 'POST', path: `${s}/approve`, body: { toolCallId: 'call_wire' } },
    { method: 'POST', path: `${s}/reject`, body: { toolCallId: 'call_wire' } },
    { method: 'POST', path: `${s}/tool-results`, body: { toolCallId: 'call_wire', result: 1 } },
    { method: 'POST', path: `${s}/retry`, body: {} },
    { method: 'POST', path: `${s}/rewind`, body: { checkpointId: 'genesis' } },
    { method: 'POST', path: `${s}/stop`, body: {} },
  ];
}

const call = (h: Harness, r: { method: string; path: string; body?: unknown }, headers: Record<string, string>) =>
  fetch(`${h.url}${r.path}`, { method: r.method, headers: { 'content-type': 'application/json', ...headers }, ...(r.body === undefined ? {} : { body: JSON.stringify(r.body) }) });

describe('auth', () => {
  it('createHelixApp refuses to start without an auth option', () => {
    const runtime = new JSAgentExecutor(new InMemoryStateStore(), new InMemoryStreamManager(), new VercelAIAdapter(), { logger: silentLogger });
    const agent = defineAgent({ name: 'a', llmConfig: { model: createScriptedModel([]) } }) as AgentConfig<unknown, unknown>;
    expect(() => createHelixApp({ runtime, agents: [agent] } as never)).toThrow(/needs `auth`/);
    expect(() => createHelixApp({ runtime, agents: [agent], auth: 'yes' } as never)).toThrow(/needs `auth`/);
  });

  it('every route answers 401 with an http_unauthorized AgentErrorInfo without credentials or with a wrong token, and changes nothing', async () => {
    const h = await startHarness({ script: [script], agents });
    const runId = await aliceSession(h);
    const version = (await h.executor.getSession('alice-1'))!.version;
    for (const r of [...routes('alice-1', runId), { method: 'GET' as const, path: '/api/sessions' }, { method: 'POST' as const, path: '/api/sessions', body: { input: 'x' } }, { method: 'GET' as const, path: '/no/such/route' }]) {
      for (const headers of [{} as Record<string, string>, { authorization: 'Bearer wrong-token-0123456789' }, { authorization: 'Basic YWxpY2U6eA==' }, { authorization: 'Bearer constructor' }]) {
        const response = await call(h, r, headers);
        expect(response.status, `${r.method} ${r.path} ${JSON.stringify(headers)}`).toBe(401);
        expect(await response.json()).toMatchObject({ code: 'http_unauthorized', layer: 'transport', retryable: false });
      }
    }
    expect((await h.executor.getSession('alice-1'))!.version).toBe(version);
  });

  it('an auth function may be sync or async; null refuses, an identity is the user', async () => {
    const asyncAuth = async (request: Request) => (await Promise.resolve(request.headers.get('x-user'))) === 'carol' ? { userId: 'carol' } : null;
    const syncAuth = (request: Request) => (request.headers.get('cookie') === 'sid=dave' ? { userId: 'dave' } : null);
    for (const [auth, good, user] of [[asyncAuth, { 'x-user': 'carol' }, 'carol'], [syncAuth, { cookie: 'sid=dave' }, 'dave']] as const) {
      const h = await startHarness({ script: [{ text: 'Hi.' }], app: { auth } });
      expect((await fetch(`${h.url}/api/sessions`)).status).toBe(401);
      const created = await fetch(`${h.url}/api/sessions`, { method: 'POST', headers: { ...good, 'content-type': 'application/json' }, body: JSON.stringify({ input: 'hello', sessionId: `s-${user}` }) });
      expect(created.status).toBe(202);
      const run = await h.executor.getRun(((await created.json()) as { runId: string }).runId);
      expect(run?.options.userId).toBe(user);
    }
  });

  it('bearerAuth: maps tokens to users, compares whole tokens, refuses short tokens and prototype names', async () => {
    expect(() => bearerAuth({ short: 'u' })).toThrow(/at least 16/);
    expect(() => bearerAuth({})).toThrow(/at least one token/);
    const auth = bearerAuth({ 'token-for-alice-000': 'alice', 'token-for-bob-00000': 'bob' });
    const req = (value?: string) => new Request('http://x/', value === undefined ? {} : { headers: { authorization: value } });
    expect(await auth(req('Bearer token-for-alice-000'))).toEqual({ userId: 'alice' });
    expect(await auth(req('bearer token-for-bob-00000'))).toEqual({ userId: 'bob' });
    for (const bad of [undefined, 'Bearer token-for-alice-00', 'Bearer token-for-alice-0000', 'token-for-alice-000', 'Bearer __proto__', 'Bearer toString', 'Bearer  token-for-alice-000']) expect(await auth(req(bad)), String(bad)).toBeNull();
  });
});

describe('ownership', () => {
  it("another user gets the same 404 for every endpoint of a session as for one that does not exist, streams included, and changes nothing", async () => {
    const h = await startHarness({ script: [script, script], agents });
    const runId = await aliceSession(h);
    const version = (await h.executor.getSession('alice-1'))!.version;
    const missing = routes('never-1', runId);
    const others = routes('alice-1', runId);
    for (let i = 0; i < others.length; i++) {
      const label = `${others[i]!.method} ${others[i]!.path}`;
      const theirs = await call(h, others[i]!, as('bob'));
      expect(theirs.status, label).toBe(404);
      const body = (await theirs.json()) as Record<string, unknown>;
      expect(body, label).toMatchObject({ code: 'http_not_found', message: 'No session alice-1.' });
      // POST /api/chat on a new id would create it; every other route answers a missing session alike.
      if (i === 0) continue;
      const none = await call(h, missing[i]!, as('bob'));
      expect(none.status, label).toBe(404);
      expect({ ...((await none.json()) as Record<string, unknown>), message: '' }, label).toEqual({ ...body, message: '' });
    }
    // A cursor does not get around it.
    expect((await get(h, '/api/chat/alice-1/stream', 'bob', { 'last-event-id': '0.0.0' })).status).toBe(404);
    expect((await get(h, '/api/sessions/alice-1/stream', 'bob', { 'last-event-id': '0' })).status).toBe(404);
    expect((await h.executor.getSession('alice-1'))!.version).toBe(version);
    const bobs = (await (await get(h, '/api/sessions', 'bob')).json()) as { sessions: { sessionId: string }[] };
    expect(bobs.sessions).toEqual([]);
    const alices = (await (await get(h, '/api/sessions', 'alice')).json()) as { sessions: { sessionId: string }[] };
    expect(alices.sessions.map((s) => s.sessionId)).toEqual(['alice-1']);
  });

  it('a session the runtime has but nobody claimed through the server is nobody\u2019s: 404, and a chat cannot take it over', async () => {
    const h = await startHarness({ script: [{ text: 'Direct.' }, { text: 'x' }] });
    const agent = defineAgent({ name: 'assistant', llmConfig: { model: createScriptedModel([{ text: 'Direct.' }]) } });
    await (await h.executor.execute(agent, 'hi', { sessionId: 'direct-1' })).result();
    expect((await get(h, '/api/sessions/direct-1', 'alice')).status).toBe(404);
    const taken = await post(h, '/api/chat', { id: 'direct-1', messages: [userMessage('mine now')] }, 'alice');
    expect(taken.status).toBe(404);
    expect((await h.executor.getSession('direct-1'))!.messages).toHaveLength(2);
  });

  it('of two users creating the same new chat id at once, one gets it and the other 404', async () => {
    const h = await startHarness({ script: [{ text: 'One.' }, { text: 'Two.' }] });
    const both = await Promise.all([post(h, '/api/chat', { id: 'contested', messages: [userMessage('a')] }, 'alice'), post(h, '/api/chat', { id: 'contested', messages: [userMessage('b')] }, 'bob')]);
    expect(both.map((r) => r.status).sort()).toEqual([200, 404]);
    for (const r of both) await r.body?.cancel();
    await waitFor(async () => (await h.executor.getSession('contested'))?.messages.length === 2);
  });
});

describe('limits', () => {
  it('a body over the byte limit is refused with 413, with or without a Content-Length, and nothing is created', async () => {
    const h = await startHarness({ script: [{ text: 'x' }], app: { limits: { bodyBytes: 2_000 } } });
    const big = JSON.stringify({ id: 'big-1', messages: [userMessage('y'.repeat(3_000))] });
    const declared = await post(h, '/api/chat', big);
    expect(declared.status).toBe(413);
    expect(await declared.json()).toMatchObject({ code: 'http_payload_too_large', details: { maxBytes: 2_000 } });
    const chunked = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 4; i++) controller.enqueue(new TextEncoder().encode(big.slice(i * 1_000, (i + 1) * 1_000)));
        controller.enqueue(new TextEncoder().encode(big.slice(4_000)));
        controller.close();
      },
    });
    const streamed = await fetch(`${h.url}/api/sessions`, { method: 'POST', headers: { ...as('alice'), 'content-type': 'application/json' }, body: chunked, duplex: 'half' } as RequestInit);
    expect(streamed.status).toBe(413);
    expect(await h.executor.getSession('big-1')).toBeUndefined();
    expect(h.model.requests).toHaveLength(0);
  });

  it('a message over the character limit is refused with 413 on every endpoint that takes one', async () => {
    const h = await startHarness({ script: [{ text: 'Hi.' }], app: { limits: { messageChars: 100 } } });
    const long = 'z'.repeat(101);
    expect((await post(h, '/api/chat', { id: 'long-1', messages: [userMessage(long)] })).status).toBe(413);
    expect((await post(h, '/api/sessions', { input: long })).status).toBe(413);
    await readEvents(await post(h, '/api/chat', { id: 'long-2', messages: [userMessage('z'.repeat(100))] }));
    for (const [path, body] of [['messages', { message: long }], ['resume', { mode: 'with_message', message: long }], ['retry', { message: long }]] as const) {
      const response = await post(h, `/api/sessions/long-2/${path}`, body);
      expect(response.status, path).toBe(413);
      expect(await response.json()).toMatchObject({ code: 'http_payload_too_large', details: { maxChars: 100, length: 101 } });
    }
    expect(h.model.requests).toHaveLength(1);
  });

  it('malformed JSON and bodies of the wrong shape are 400 http_bad_request', async () => {
    const h = await startHarness({ script: [] });
    for (const [path, body] of [['/api/chat', '{not json'], ['/api/chat', { messages: [] }], ['/api/sessions', { input: 5 }], ['/api/sessions', { input: 'x', extra: true }]] as const) {
      const response = await post(h, path, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(await response.json()).toMatchObject({ code: 'http_bad_request' });
    }
  });
});

describe('ids', () => {
  it('checkId accepts exactly the ids of ID_PATTERN (property)', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 140 }), fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,130}$/)), (value) => {
        const valid = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/.test(value);
        if (valid) expect(checkId(value, 'id')).toBe(value);
        else expect(() => checkId(value, 'id')).toThrow(expect.objectContaining({ code: 'http_invalid_id' }));
      }),
    );
    for (const bad of ['.', '..', '../x', 'a/b', '', 'x'.repeat(129), 'a b', 'é', '-a']) expect(ID_PATTERN.test(bad), bad).toBe(false);
  });

  it('invalid ids in paths and bodies are refused with 400 http_invalid_id before anything runs', async () => {
    const h = await startHarness({ script: [] });
    // ('..' never reaches a route: URLs are normalized before routing.)
    const bad = ['a%2Fb', 'x'.repeat(129), '%C3%A9', 'a%20b', '-x', 'a%00b'];
    for (const id of bad) {
      for (const path of [`/api/chat/${id}/stream`, `/api/sessions/${id}`, `/api/sessions/${id}/stream`]) {
        const response = await get(h, path);
        expect(response.status, path).toBe(400);
        expect(await response.json()).toMatchObject({ code: 'http_invalid_id' });
      }
    }
    for (const id of ['..', 'a/b', 'x'.repeat(129), 'é', '', 7]) {
      const response = await post(h, '/api/chat', { id, messages: [userMessage('hi')] });
      expect(response.status, String(id)).toBe(400);
      expect(((await response.json()) as { code: string }).code).toMatch(/^http_(invalid_id|bad_request)$/);
      expect((await post(h, '/api/sessions', { input: 'x', sessionId: id })).status).toBe(400);
    }
    expect(h.model.requests).toHaveLength(0);
  });
});

describe('CORS', () => {
  it('is off unless configured: no Access-Control headers, and a preflight is not let through', async () => {
    const h = await startHarness({ script: [] });
    const response = await get(h, '/api/sessions', 'alice', { origin: 'https://evil.example' });
    expect(response.status).toBe(200);
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
    const preflight = await fetch(`${h.url}/api/chat`, { method: 'OPTIONS', headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } });
    expect(preflight.status).toBe(401);
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('when configured, allows the listed origins only', async () => {
    const h = await startHarness({ script: [], app: { cors: { origins: ['https://app.example'] } } });
    const preflight = await fetch(`${h.url}/api/chat`, { method: 'OPTIONS', headers: { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' } });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://app.example');
    const allowed = await get(h, '/api/sessions', 'alice', { origin: 'https://app.example' });
    expect(allowed.headers.get('access-control-allow-origin')).toBe('https://app.example');
    const other = await get(h, '/api/sessions', 'alice', { origin: 'https://evil.example' });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe("auth: 'none'", () => {
  it('binds 127.0.0.1 only, warns, and serves every request as the user local', async () => {
    const warnings: string[] = [];
    const logger: Logger = { ...silentLogger, warn: (m) => void warnings.push(m) };
    const runtime = new JSAgentExecutor(new InMemoryStateStore(), new InMemoryStreamManager(), new VercelAIAdapter(), { logger: silentLogger });
    const agent = defineAgent({ name: 'a', llmConfig: { model: createScriptedModel([{ text: 'Hello.' }]) } }) as AgentConfig<unknown, unknown>;
    const app = createHelixApp({ runtime, agents: [agent], auth: 'none', logger });
    await expect(serve(app, { port: 0, hostname: '0.0.0.0' })).rejects.toThrow(/only serves 127\.0\.0\.1/);
    expect(warnings).toEqual([]);
    const server = await serve(app, { port: 0 });
    try {
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(/auth is 'none'/);
      const created = await fetch(`${server.url}/api/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ input: 'hi', sessionId: 'local-1' }) });
      expect(created.status).toBe(202);
      expect((await runtime.getRun(((await created.json()) as { runId: string }).runId))?.options.userId).toBe('local');
    } finally {
      await server.close();
    }
  });
});
