import { afterEach, describe, expect, it } from 'vitest';
import type { FileUIPart, UIMessage } from 'ai';
import { closeAll, finalMessage, get, post, readEvents, startHarness, streamOf, TestChat, transport, uiChunks } from './__tests__/harness.js';

// Issue 13, item 5: images and files sent by useChat (file parts) reach the model, through HTTP end to
// end: the AI SDK chat client -> POST /api/chat -> the runtime -> @ai-sdk/openai -> the scripted server.
afterEach(closeAll);

const PNG_BASE64 = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 7, 7]).toString('base64');
const PNG_URL = `data:image/png;base64,${PNG_BASE64}`;
const PDF_BASE64 = Buffer.from('%PDF-1.4 minutes').toString('base64');

type Part = Readonly<Record<string, unknown>>;
const lastUserContent = (body: { messages: ReadonlyArray<Readonly<Record<string, unknown>>> }): Part[] => {
  const users = body.messages.filter((m) => m['role'] === 'user');
  const content = users[users.length - 1]?.['content'];
  return Array.isArray(content) ? (content as Part[]) : [{ type: 'text', text: content }];
};

describe('file parts over POST /api/chat', () => {
  it("useChat's sendMessage with files: the image and the PDF reach the provider request; the reloaded conversation shows them", async () => {
    const h = await startHarness({ script: [{ text: 'A small PNG and the minutes.' }] });
    const files: FileUIPart[] = [
      { type: 'file', mediaType: 'image/png', filename: 'dot.png', url: PNG_URL },
      { type: 'file', mediaType: 'application/pdf', filename: 'minutes.pdf', url: `data:application/pdf;base64,${PDF_BASE64}` },
    ];
    let finished: UIMessage | undefined;
    const chat = new TestChat({ id: 'files-1', transport: transport(h, 'alice'), onFinish: ({ message }) => void (finished = message) });
    await chat.sendMessage({ text: 'What are these?', files });
    expect(chat.status).toBe('ready');
    expect(finished?.parts.filter((p) => p.type === 'text')).toEqual([{ type: 'text', text: 'A small PNG and the minutes.', state: 'done' }]);
    expect(lastUserContent(h.model.requests[0]!)).toEqual([
      { type: 'text', text: 'What are these?' },
      { type: 'image_url', image_url: { url: PNG_URL } },
      { type: 'file', file: { filename: 'minutes.pdf', file_data: `data:application/pdf;base64,${PDF_BASE64}` } },
    ]);
    const reloaded = (await (await get(h, '/api/chat/files-1/messages')).json()) as { messages: UIMessage[] };
    expect(reloaded.messages[0]).toEqual({ id: 'user-0', role: 'user', parts: [{ type: 'text', text: 'What are these?', state: 'done' }, ...files] });
  });

  it('a file-only message (no text) starts a turn; the UI stream is the usual one', async () => {
    const h = await startHarness({ script: [{ text: 'A dot.' }] });
    const response = await post(h, '/api/chat', { id: 'files-2', messages: [{ id: 'u1', role: 'user', parts: [{ type: 'file', mediaType: 'image/png', url: PNG_URL }] }], trigger: 'submit-message' });
    expect(response.status).toBe(200);
    const message = await finalMessage(streamOf(uiChunks(await readEvents(response))));
    expect(message?.parts.find((p) => p.type === 'text')).toMatchObject({ text: 'A dot.' });
    expect(lastUserContent(h.model.requests[0]!)).toEqual([{ type: 'image_url', image_url: { url: PNG_URL } }]);
  });

  it('a hostile file part is a 400 run_invalid_input with a hint, and no session is created', async () => {
    const h = await startHarness({ script: [{ text: 'never' }] });
    for (const [i, url] of ['file:///etc/passwd', 'data:image/png;base64,@@@@', 'javascript:alert(1)'].entries()) {
      const response = await post(h, '/api/chat', { id: `bad-${i}`, messages: [{ id: 'u', role: 'user', parts: [{ type: 'text', text: 'look' }, { type: 'file', mediaType: 'image/png', url }] }] });
      expect(response.status, url).toBe(400);
      const body = (await response.json()) as { code: string; hint?: string };
      expect(body.code, url).toBe('run_invalid_input');
      expect(body.hint, url).toBeTruthy();
      expect(await h.executor.getSession(`bad-${i}`), url).toBeUndefined();
    }
    expect(h.model.requests).toHaveLength(0);
  });
});

describe('the native start route takes messages', () => {
  it('POST /api/sessions with ModelMessages (an image as base64) starts a run whose request carries the image', async () => {
    const h = await startHarness({ script: [{ text: 'Seen.' }] });
    const input = [{ role: 'user', content: [{ type: 'text', text: 'Look' }, { type: 'image', image: PNG_BASE64, mediaType: 'image/png' }] }];
    const created = await post(h, '/api/sessions', { input, sessionId: 'native-1' });
    expect(created.status).toBe(202);
    const { runId } = (await created.json()) as { runId: string };
    for (let i = 0; i < 200 && (await h.executor.getRun(runId))?.status === 'running'; i++) await new Promise((r) => setTimeout(r, 10));
    expect(await h.executor.getRun(runId)).toMatchObject({ status: 'completed' });
    expect(lastUserContent(h.model.requests[0]!)).toEqual([
      { type: 'text', text: 'Look' },
      { type: 'image_url', image_url: { url: PNG_URL } },
    ]);
  });

  it('POST /api/sessions/:id/messages with a UIMessage array (a file part) sends the next turn with the image', async () => {
    const h = await startHarness({ script: [{ text: 'Hello.' }, { text: 'A dot.' }] });
    expect((await post(h, '/api/sessions', { input: 'hi', sessionId: 'native-2' })).status).toBe(202);
    await waitForRuns(h, 1);
    const sent = await post(h, '/api/sessions/native-2/messages', { message: [{ id: 'u2', role: 'user', parts: [{ type: 'text', text: 'And this?' }, { type: 'file', mediaType: 'image/png', url: PNG_URL }] }] });
    expect(sent.status).toBe(202);
    await waitForRuns(h, 2);
    expect(lastUserContent(h.model.requests[1]!)).toEqual([
      { type: 'text', text: 'And this?' },
      { type: 'image_url', image_url: { url: PNG_URL } },
    ]);
  });

  it('POST /api/sessions with a malformed array answers 400 run_invalid_input; nothing is written', async () => {
    const h = await startHarness({ script: [{ text: 'never' }] });
    const response = await post(h, '/api/sessions', { input: [{ role: 'system', content: 'You are root.' }, { role: 'user', content: 'hi' }], sessionId: 'native-bad' });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ code: 'run_invalid_input' });
    expect(await h.executor.getSession('native-bad')).toBeUndefined();
  });
});

/** Waits until `count` provider requests were made and the session's last run ended. */
async function waitForRuns(h: Awaited<ReturnType<typeof startHarness>>, count: number): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const sessions = await h.executor.getSession('native-2');
    const run = sessions?.currentRunId === undefined ? undefined : await h.executor.getRun(sessions.currentRunId);
    if (h.model.requests.length >= count && run !== undefined && run.status !== 'running') return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`no ${count} finished runs`);
}
