import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DefaultChatTransport, readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai';
import { startChatServer } from './chat-server.js';

const folder = mkdtempSync(join(tmpdir(), 'helix-chat-server-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

async function last(stream: ReadableStream<UIMessageChunk>, message?: UIMessage): Promise<UIMessage> {
  let out: UIMessage | undefined;
  for await (const m of readUIMessageStream({ stream, ...(message ? { message } : {}) })) out = m;
  return structuredClone(out!);
}

describe('the chat server example', () => {
  it('serves useChat: a tool turn, an approval round trip, and its sessions after a restart', async () => {
    const dbPath = join(folder, 'chat.db');
    const server = await startChatServer({ port: 0, dbPath, token: 'example-token-0123456789', env: {} });
    const transport = new DefaultChatTransport<UIMessage>({ api: `${server.url}/api/chat`, headers: { authorization: `Bearer ${server.token}` } });
    const send = (chatId: string, messages: UIMessage[]) => transport.sendMessages({ chatId, messages, trigger: 'submit-message', messageId: undefined, abortSignal: undefined });
    try {
      const weather = await last(await send('c1', [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'What is the weather?' }] }]));
      expect(weather.parts.find((p) => p.type === 'tool-get_weather')).toMatchObject({ state: 'output-available', output: { city: 'Lisbon', forecast: 'sunny' } });
      expect(weather.parts.at(-1)).toMatchObject({ type: 'text', text: 'Done: {"city":"Lisbon","forecast":"sunny","celsius":21}.' });

      const asked = await last(await send('c2', [{ id: 'u2', role: 'user', parts: [{ type: 'text', text: 'Please mail the team' }] }]));
      const email = asked.parts.find((p) => p.type === 'tool-send_email') as { state: string; approval?: { id: string } };
      expect(email.state).toBe('approval-requested');
      const approved: UIMessage = { ...asked, parts: asked.parts.map((p) => (p.type === 'tool-send_email' ? ({ ...p, state: 'approval-responded', approval: { id: email.approval!.id, approved: true } } as UIMessage['parts'][number]) : p)) };
      const done = await last(await send('c2', [approved]), approved);
      expect(done.parts.find((p) => p.type === 'tool-send_email')).toMatchObject({ state: 'output-available', output: { sent: true } });
      expect(await fetch(`${server.url}/api/sessions`).then((r) => r.status)).toBe(401);
    } finally {
      await server.close();
    }
    const again = await startChatServer({ port: 0, dbPath, token: 'example-token-0123456789', env: {} });
    try {
      const list = (await (await fetch(`${again.url}/api/sessions`, { headers: { authorization: `Bearer ${again.token}` } })).json()) as { sessions: { sessionId: string }[] };
      expect(list.sessions.map((s) => s.sessionId)).toEqual(['c2', 'c1']);
    } finally {
      await again.close();
    }
  });
});
