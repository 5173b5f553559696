// The AI SDK UI message stream protocol (issue 13, item 2), read by `ai`'s own parser and chat client.
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { lastAssistantMessageIsCompleteWithApprovalResponses, lastAssistantMessageIsCompleteWithToolCalls, type UIMessage, type UIMessageChunk } from 'ai';
import { defineAgent, defineTool, type AgentConfig } from '@helix-agents/sdk';
import { createGate } from '@helix-agents/sdk/testing';
import type { OpenAIChatRequestBody, ScriptedOpenAIStep } from '@helix-agents/llm-vercel/testing';
import { chunksOf, closeAll, countingReaders, finalMessage, get, post, readEvents, startHarness, streamOf, TestChat, transport, uiChunks, userMessage, waitFor, type Harness } from './__tests__/harness.js';

afterEach(closeAll);

const lookup = defineTool({
  name: 'lookup',
  description: 'Look a word up',
  inputSchema: z.object({ word: z.string() }),
  execute: async ({ word }, ctx) => {
    await ctx.emitCustom('progress', { looked: word });
    return { definition: `${word}: a thing` };
  },
});

// Answers by the prompt, so any number of sessions can run the same conversation.
const lastRole = (body: OpenAIChatRequestBody): unknown => body.messages[body.messages.length - 1]?.['role'];
const lookupScript = (body: OpenAIChatRequestBody): ScriptedOpenAIStep =>
  lastRole(body) === 'tool' ? { textChunks: ['A hook ', 'observes; ', 'an agent acts.'] } : { textChunks: ['Looking ', 'it up.'], toolCalls: [{ name: 'lookup', args: { word: 'hook' }, id: 'call_look' }] };

const withTools = (tools: Parameters<typeof defineAgent>[0]['tools']) => (model: AgentConfig['llmConfig']['model']) => [defineAgent({ name: 'assistant', systemPrompt: 'Help.', llmConfig: { model }, tools }) as AgentConfig<unknown, unknown>];

async function chat(h: Harness, id: string, text: string) {
  return post(h, '/api/chat', { id, messages: [userMessage(text)], trigger: 'submit-message' });
}

const normalize = (chunks: readonly UIMessageChunk[]) => chunks.map((c) => (c.type === 'start' ? { ...c, messageId: 'M' } : c));

describe('POST /api/chat', () => {
  it('answers with the UI message stream header and a [DONE], and readUIMessageStream rebuilds the expected message', async () => {
    const h = await startHarness({ script: [lookupScript, lookupScript], agents: withTools([lookup]) });
    const response = await chat(h, 'chat-1', 'What is a hook?');
    expect(response.status).toBe(200);
    expect(response.headers.get('x-vercel-ai-ui-message-stream')).toBe('v1');
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = await readEvents(response);
    expect(events.at(-1)?.data).toBe('[DONE]');
    expect(events.slice(0, -1).every((e) => e.id !== undefined)).toBe(true);
    const message = await finalMessage(streamOf(uiChunks(events)));
    const session = await h.executor.getSession('chat-1');
    expect(message).toEqual({
      id: session!.turn!.turnId,
      role: 'assistant',
      parts: [
        { type: 'step-start' },
        { type: 'text', text: 'Looking it up.', state: 'done' },
        { type: 'tool-lookup', toolCallId: 'call_look', state: 'output-available', input: { word: 'hook' }, output: { definition: 'hook: a thing' } },
        { type: 'data-progress', data: { looked: 'hook' } },
        { type: 'step-start' },
        { type: 'text', text: 'A hook observes; an agent acts.', state: 'done' },
      ],
    });
  });

  it('model reasoning arrives as a reasoning part before the text, read by readUIMessageStream', async () => {
    const h = await startHarness({ api: 'responses', script: [{ reasoningChunks: ['The user ', 'asks about hooks.'], textChunks: ['Hooks ', 'observe.'] }] });
    const response = await chat(h, 'chat-reasoning', 'What do hooks do?');
    expect(response.status).toBe(200);
    const events = await readEvents(response);
    const chunks = uiChunks(events);
    const types = chunks.map((c) => c.type);
    expect(types.filter((t) => t.startsWith('reasoning-'))).toEqual(['reasoning-start', 'reasoning-delta', 'reasoning-delta', 'reasoning-end']);
    expect(types.indexOf('reasoning-end')).toBeLessThan(types.indexOf('text-start'));
    const message = await finalMessage(streamOf(chunks));
    expect(message?.parts).toEqual([
      { type: 'step-start' },
      { type: 'reasoning', id: expect.any(String), text: 'The user asks about hooks.', state: 'done' },
      { type: 'text', text: 'Hooks observe.', state: 'done' },
    ]);
    // A reload shows the same reasoning, kept in the session's assistant row.
    const { messages } = (await (await get(h, '/api/chat/chat-reasoning/messages')).json()) as { messages: UIMessage[] };
    expect(messages[1]?.parts).toEqual([
      { type: 'step-start' },
      { type: 'reasoning', text: 'The user asks about hooks.', state: 'done' },
      { type: 'text', text: 'Hooks observe.', state: 'done' },
    ]);
  });

  it("the AI SDK's own chat transport reads the stream, and the session keeps the conversation", async () => {
    const h = await startHarness({ script: [{ text: 'Hello there.' }] });
    const stream = await transport(h, 'alice').sendMessages({ chatId: 'chat-t', messages: [userMessage('Hi')], trigger: 'submit-message', messageId: undefined, abortSignal: undefined });
    const message = await finalMessage(stream);
    expect(message?.parts).toEqual([{ type: 'step-start' }, { type: 'text', text: 'Hello there.', state: 'done' }]);
    expect((await h.executor.getSession('chat-t'))?.messages).toEqual([{ role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Hello there.' }]);
  });

  it('a failed run ends with a data-helix-error part carrying the AgentErrorInfo, then the protocol error part', async () => {
    const h = await startHarness({ script: [{ status: 400 }] });
    const events = await readEvents(await chat(h, 'chat-err', 'Hi'));
    const chunks = uiChunks(events);
    const errors: Error[] = [];
    let message: UIMessage | undefined;
    const { readUIMessageStream } = await import('ai');
    for await (const m of readUIMessageStream({ stream: streamOf(chunks), onError: (e) => void errors.push(e as Error) })) message = m;
    const data = message?.parts.find((p) => p.type === 'data-helix-error') as { data: { code: string; layer: string; retryable: boolean; hint?: string } } | undefined;
    expect(data?.data).toMatchObject({ code: 'provider_bad_request', layer: 'provider', retryable: false });
    expect(errors).toHaveLength(1);
    expect(chunks.map((c) => c.type).slice(-3)).toEqual(['data-helix-error', 'error', 'finish']);
  });
});

describe('resuming: GET /api/chat/:id/stream', () => {
  it('a disconnect after k events followed by a resume with Last-Event-ID rebuilds exactly the uninterrupted message, for every k', async () => {
    const h = await startHarness({ script: Array.from({ length: 40 }, () => lookupScript), agents: withTools([lookup]) });
    const full = uiChunks(await readEvents(await chat(h, 'whole', 'What is a hook?')));
    const expected = await finalMessage(streamOf(full));
    for (let k = 1; k < full.length; k++) {
      const id = `cut-${k}`;
      const abort = new AbortController();
      const head = await readEvents(await post(h, '/api/chat', { id, messages: [userMessage('What is a hook?')] }, 'alice', { signal: abort.signal }), k, abort);
      const resumed = await readEvents(await get(h, `/api/chat/${id}/stream`, 'alice', { 'last-event-id': head.at(-1)!.id! }));
      expect(resumed.at(-1)?.data).toBe('[DONE]');
      const chunks = [...uiChunks(head), ...uiChunks(resumed)];
      expect(normalize(chunks), `cut after ${k}`).toEqual(normalize(full));
      const turnId = (await h.executor.getSession(id))!.turn!.turnId;
      expect(await finalMessage(streamOf(chunks))).toEqual({ ...expected, id: turnId });
    }
  });

  it('without a cursor, a resume replays the running turn from its start (what useChat expects) and 204 once nothing runs', async () => {
    const gate = createGate();
    const slow = defineTool({ name: 'lookup', description: 'Look up', inputSchema: z.object({ word: z.string() }), execute: async ({ word }) => (await gate.opened, { definition: `${word}: a thing` }) });
    let readers: ReturnType<typeof countingReaders> | undefined;
    const h = await startHarness({ script: [lookupScript, lookupScript, lookupScript, lookupScript], agents: withTools([slow]), runtime: (e) => (readers = countingReaders(e)).runtime });
    const abort = new AbortController();
    const head = await readEvents(await post(h, '/api/chat', { id: 'live', messages: [userMessage('What is a hook?')] }, 'alice', { signal: abort.signal }), 3, abort);
    expect(head).toHaveLength(3);
    // The dropped response let go of its stream reader while the run goes on.
    await waitFor(() => readers!.open() === 0);
    expect((await h.executor.getRun((await h.executor.getSession('live'))!.currentRunId!))?.status).toBe('running');
    const resumed = await get(h, '/api/chat/live/stream');
    expect(resumed.status).toBe(200);
    expect(resumed.headers.get('x-vercel-ai-ui-message-stream')).toBe('v1');
    gate.open();
    const replay = uiChunks(await readEvents(resumed));
    expect(replay[0]).toMatchObject({ type: 'start' });
    const message = await finalMessage(streamOf(replay));
    expect(message?.parts.map((p) => p.type)).toEqual(['step-start', 'text', 'tool-lookup', 'step-start', 'text']);
    expect(message?.parts.at(-1)).toMatchObject({ text: 'A hook observes; an agent acts.' });
    // The AI SDK's transport reads the 204 as "nothing to resume".
    expect((await get(h, '/api/chat/live/stream')).status).toBe(204);
    expect(await transport(h, 'alice').reconnectToStream({ chatId: 'live' })).toBeNull();
  });

  it('a Last-Event-ID that the server did not send is refused with 400 http_invalid_cursor', async () => {
    const h = await startHarness({ script: [{ text: 'Hi.' }] });
    await readEvents(await chat(h, 'cur', 'Hi'));
    for (const bad of ['abc', '1.2', '5.1.0', '0.0.99999', '999.999.0']) {
      const response = await get(h, '/api/chat/cur/stream', 'alice', { 'last-event-id': bad });
      expect(response.status, bad).toBe(400);
      expect(await response.json()).toMatchObject({ code: 'http_invalid_cursor' });
    }
  });
});

describe('GET /api/chat/:id/messages (a reload)', () => {
  it('gives the conversation as UI messages equal to the streamed ones (less data parts), and a reloaded chat client resumes a running turn in place', async () => {
    const gate = createGate();
    const slow = defineTool({ name: 'lookup', description: 'Look up', inputSchema: z.object({ word: z.string() }), execute: async ({ word }) => (await gate.opened, { definition: `${word}: a thing` }) });
    const h = await startHarness({ script: [lookupScript, lookupScript, lookupScript, lookupScript], agents: withTools([lookup]) });
    const streamed = await finalMessage(streamOf(uiChunks(await readEvents(await chat(h, 'hydrate', 'What is a hook?')))));
    const { messages } = (await (await get(h, '/api/chat/hydrate/messages')).json()) as { messages: UIMessage[] };
    expect(messages).toHaveLength(2);
    expect(messages[0]).toMatchObject({ role: 'user', parts: [{ type: 'text', text: 'What is a hook?' }] });
    expect(messages[1]).toEqual({ ...streamed, parts: streamed!.parts.filter((p) => !p.type.startsWith('data-')) });

    // A reload in the middle of a turn: the page gets the messages, then resumes (useChat({ resume: true })).
    const held = await startHarness({ script: [lookupScript, lookupScript, lookupScript, lookupScript], agents: withTools([slow]) });
    const abort = new AbortController();
    await readEvents(await post(held, '/api/chat', { id: 'reload', messages: [userMessage('What is a hook?')] }, 'alice', { signal: abort.signal }), 4, abort);
    await waitFor(async () => (await chunksOf(held, 'reload')).some((c) => c.type === 'tool_start'));
    const initial = ((await (await get(held, '/api/chat/reload/messages')).json()) as { messages: UIMessage[] }).messages;
    const reloaded = new TestChat({ id: 'reload', messages: initial, transport: transport(held, 'alice') });
    const resuming = reloaded.resumeStream();
    gate.open();
    await resuming;
    expect(reloaded.messages).toHaveLength(2);
    expect(reloaded.messages[1]!.parts.map((p) => p.type)).toEqual(['step-start', 'text', 'tool-lookup', 'step-start', 'text']);
    expect(reloaded.messages[1]!.parts.at(-1)).toMatchObject({ text: 'A hook observes; an agent acts.' });
  });
});

describe('answers to a suspended run through POST /api/chat', () => {
  const dangerous = (runs: { count: number }) =>
    defineTool({ name: 'wire', description: 'Wire money', inputSchema: z.object({ amount: z.number() }), needsApproval: true, execute: async ({ amount }) => (runs.count++, { sent: amount }) });
  const wireScript = (body: OpenAIChatRequestBody): ScriptedOpenAIStep => (lastRole(body) === 'tool' ? { text: 'Done.' } : { text: 'Sending.', toolCalls: [{ name: 'wire', args: { amount: 5 }, id: 'call_wire' }] });

  it('an approval round trip with the AI SDK chat client runs the tool exactly once, and a repeated approval is refused', async () => {
    const runs = { count: 0 };
    const h = await startHarness({ script: [wireScript, wireScript], agents: withTools([dangerous(runs)]) });
    const chat = new TestChat({ id: 'approve-1', transport: transport(h, 'alice'), sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses });
    await chat.sendMessage({ text: 'Send 5.' });
    const asked = chat.messages.at(-1)!;
    const part = asked.parts.find((p) => p.type === 'tool-wire') as { state: string; approval?: { id: string } };
    expect(part).toMatchObject({ state: 'approval-requested', approval: { id: 'call_wire' } });
    expect(runs.count).toBe(0);
    await chat.addToolApprovalResponse({ id: part.approval!.id, approved: true });
    await waitFor(() => chat.status === 'ready' && (chat.messages.at(-1)!.parts.at(-1) as { text?: string }).text === 'Done.');
    expect(runs.count).toBe(1);
    expect(chat.messages).toHaveLength(2);
    expect(chat.messages[1]!.parts.find((p) => p.type === 'tool-wire')).toMatchObject({ state: 'output-available', output: { sent: 5 } });
    // The same approval again: the run it answered is gone, nothing runs twice.
    const again = await post(h, '/api/chat', { id: 'approve-1', messages: [{ ...asked, parts: asked.parts.map((p) => (p.type === 'tool-wire' ? { ...p, state: 'approval-responded', approval: { id: 'call_wire', approved: true } } : p)) }] });
    expect(again.status).toBe(409);
    expect(runs.count).toBe(1);
  });

  it('two concurrent approvals of one call: one resumes, the other gets 409, the tool runs once', async () => {
    const runs = { count: 0 };
    const h = await startHarness({ script: [wireScript, wireScript, wireScript], agents: withTools([dangerous(runs)]) });
    const first = uiChunks(await readEvents(await chat(h, 'race', 'Send 5.')));
    const asked = await finalMessage(streamOf(first));
    const approved = { ...asked!, parts: asked!.parts.map((p) => (p.type === 'tool-wire' ? { ...p, state: 'approval-responded', approval: { id: 'call_wire', approved: true } } : p)) };
    const answers = await Promise.all([post(h, '/api/chat', { id: 'race', messages: [approved] }), post(h, '/api/chat', { id: 'race', messages: [approved] })]);
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 409]);
    for (const r of answers) await r.body?.cancel();
    await waitFor(async () => (await h.executor.getRun((await h.executor.getSession('race'))!.currentRunId!))?.status === 'completed');
    expect(runs.count).toBe(1);
  });

  it('a rejection is a tool-output-denied part and the tool does not run', async () => {
    const runs = { count: 0 };
    const h = await startHarness({ script: [wireScript, wireScript], agents: withTools([dangerous(runs)]) });
    const asked = await finalMessage(streamOf(uiChunks(await readEvents(await chat(h, 'deny', 'Send 5.')))));
    const rejected = { ...asked!, parts: asked!.parts.map((p) => (p.type === 'tool-wire' ? { ...p, state: 'approval-responded', approval: { id: 'call_wire', approved: false, reason: 'no' } } : p)) };
    const message = await finalMessage(streamOf(uiChunks(await readEvents(await post(h, '/api/chat', { id: 'deny', messages: [rejected] }))) ), rejected as UIMessage);
    expect(message?.parts.find((p) => p.type === 'tool-wire')).toMatchObject({ state: 'output-denied' });
    expect(runs.count).toBe(0);
    expect(h.model.requests[1]!.messages.find((m) => m['role'] === 'tool')?.['content']).toMatch(/rejected/);
  });

  it('a client tool answered by the chat client (onToolCall + addToolOutput) resumes the run with that output', async () => {
    const color = defineTool({ name: 'pickColor', description: 'Ask the user for a color', inputSchema: z.object({ question: z.string() }) });
    const script = (body: OpenAIChatRequestBody): ScriptedOpenAIStep =>
      lastRole(body) === 'tool' ? { text: `You picked ${String(body.messages.at(-1)!['content'])}.` } : { toolCalls: [{ name: 'pickColor', args: { question: 'Which?' }, id: 'call_color' }] };
    const h = await startHarness({ script: [script, script], agents: withTools([color]) });
    const chat: TestChat = new TestChat({
      id: 'client-tool',
      transport: transport(h, 'alice'),
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithToolCalls,
      onToolCall: ({ toolCall }) => void chat.addToolOutput({ tool: 'pickColor', toolCallId: toolCall.toolCallId, output: 'teal' }),
    });
    await chat.sendMessage({ text: 'Pick a color.' });
    await waitFor(() => chat.status === 'ready' && (chat.messages.at(-1)!.parts.at(-1) as { text?: string }).text !== undefined);
    expect((chat.messages.at(-1)!.parts.at(-1) as { text?: string }).text).toBe('You picked teal.');
    expect(chat.messages.at(-1)!.parts.find((p) => p.type === 'tool-pickColor')).toMatchObject({ state: 'output-available', output: 'teal' });
  });

  it('an assistant message that answers nothing the run waits on is refused with 409', async () => {
    const runs = { count: 0 };
    const h = await startHarness({ script: [wireScript], agents: withTools([dangerous(runs)]) });
    const asked = await finalMessage(streamOf(uiChunks(await readEvents(await chat(h, 'none', 'Send 5.')))));
    const forged = { ...asked!, parts: [{ type: 'tool-wire', toolCallId: 'call_other', state: 'approval-responded', input: {}, approval: { id: 'x', approved: true } }] };
    const response = await post(h, '/api/chat', { id: 'none', messages: [forged] });
    expect(response.status).toBe(409);
    expect(await response.json()).toMatchObject({ code: 'http_nothing_to_answer' });
    expect(runs.count).toBe(0);
  });
});

describe('POST /api/chat/:id/stop', () => {
  it('stops the running run: the stream ends with an abort part and the run is interrupted', async () => {
    const gate = createGate();
    const hold = defineTool({ name: 'lookup', description: 'Look up', inputSchema: z.object({ word: z.string() }), execute: async (_input, ctx) => (await Promise.race([gate.opened, new Promise((r) => ctx.abortSignal.addEventListener('abort', r))]), { ok: true }) });
    const h = await startHarness({ script: [lookupScript, lookupScript], agents: withTools([hold]) });
    const response = await chat(h, 'stop-me', 'Go');
    const reading = readEvents(response);
    await waitFor(async () => (await chunksOf(h, 'stop-me')).some((c) => c.type === 'tool_start'));
    const stop = await post(h, '/api/chat/stop-me/stop', {});
    expect(await stop.json()).toEqual({ stopped: true, status: 'interrupted' });
    gate.open();
    const chunks = uiChunks(await reading);
    expect(chunks.at(-1)).toMatchObject({ type: 'abort' });
    expect((await post(h, '/api/chat/stop-me/stop', {}).then((r) => r.json())) as unknown).toEqual({ stopped: false });
  });
});
