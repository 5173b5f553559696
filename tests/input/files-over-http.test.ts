// Issue 13, item 5: images and files given to execute() reach the provider's HTTP request as image and
// file parts (real @ai-sdk/openai over HTTP to a scripted server), are stored durably in SQLite (a new
// process's stores reload them into the next request), and a URL is passed on, never fetched by helix.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOpenAI } from '@ai-sdk/openai';
import type { ModelMessage } from '@ai-sdk/provider-utils';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { defineAgent, JSAgentExecutor, silentLogger, type Message } from '@helix-agents/sdk';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { startScriptedOpenAIServer, type ScriptedOpenAIServer } from '@helix-agents/llm-vercel/testing';
import { openSqliteStores } from '@helix-agents/store-sqlite';

const folder = mkdtempSync(join(tmpdir(), 'helix-input-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

let model: ScriptedOpenAIServer | undefined;
let imageHost: Server | undefined;
afterEach(async () => {
  await model?.close();
  await new Promise<void>((resolve) => (imageHost ? imageHost.close(() => resolve()) : resolve()));
  model = undefined;
  imageHost = undefined;
});

const PNG = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);
const PNG_BASE64 = Buffer.from(PNG).toString('base64');
const PDF_BASE64 = Buffer.from('%PDF-1.4 fake').toString('base64');

/** A host that counts the requests it gets: helix must never fetch an attachment URL itself. */
async function startImageHost(): Promise<{ url: string; hits: () => number }> {
  let hits = 0;
  imageHost = createServer((_req, res) => {
    hits++;
    res.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.from(PNG));
  });
  await new Promise<void>((resolve) => imageHost!.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(imageHost.address() as AddressInfo).port}/cat.png`, hits: () => hits };
}

function agentOn(server: ScriptedOpenAIServer) {
  const provider = createOpenAI({ baseURL: server.baseURL, apiKey: 'test-key' });
  return defineAgent({ name: 'vision', systemPrompt: 'Describe images.', llmConfig: { model: provider.chat('gpt-test') } });
}

type Part = Readonly<Record<string, unknown>>;
function userParts(body: { messages: ReadonlyArray<Readonly<Record<string, unknown>>> }): Part[][] {
  return body.messages.filter((m) => m['role'] === 'user').map((m) => (Array.isArray(m['content']) ? (m['content'] as Part[]) : [{ type: 'text', text: m['content'] }]));
}

describe('images and files in the provider request (real @ai-sdk/openai over HTTP)', () => {
  it('bytes, a data URL, an http URL and a PDF reach the request as image_url and file parts; the URL is not fetched by helix', async () => {
    const host = await startImageHost();
    model = await startScriptedOpenAIServer([{ text: 'Two cats and a PDF.' }]);
    const stores = openSqliteStores({ path: join(folder, 'request.db') });
    try {
      const executor = new JSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { logger: silentLogger });
      const input: ModelMessage[] = [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in these?' },
            { type: 'image', image: PNG },
            { type: 'image', image: `data:image/png;base64,${PNG_BASE64}` },
            { type: 'image', image: new URL(host.url) },
            { type: 'file', data: PDF_BASE64, mediaType: 'application/pdf', filename: 'spec.pdf' },
          ],
        },
      ];
      const result = await (await executor.execute(agentOn(model), input)).result();
      expect(result).toMatchObject({ status: 'completed', output: 'Two cats and a PDF.' });
      const [parts] = userParts(model.requests[0]!);
      expect(parts).toEqual([
        { type: 'text', text: 'What is in these?' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_BASE64}` } },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_BASE64}` } },
        { type: 'image_url', image_url: { url: host.url } },
        { type: 'file', file: { filename: 'spec.pdf', file_data: `data:application/pdf;base64,${PDF_BASE64}` } },
      ]);
      // The provider got the URL to fetch; helix (and the AI SDK under it) did not fetch it.
      expect(host.hits()).toBe(0);
    } finally {
      stores.close();
    }
  });

  it('a session reopened from the SQLite file reloads the image rows: the next turn sends the image again', async () => {
    model = await startScriptedOpenAIServer([{ text: 'A cat.' }, { text: 'Still a cat.' }]);
    const path = join(folder, 'reload.db');
    const input: ModelMessage[] = [{ role: 'user', content: [{ type: 'text', text: 'What is it?' }, { type: 'image', image: PNG, mediaType: 'image/png' }] }];
    const first = openSqliteStores({ path });
    let stored: readonly Message[];
    try {
      const executor = new JSAgentExecutor(first.stateStore, first.streamManager, new VercelAIAdapter(), { logger: silentLogger });
      const handle = await executor.execute(agentOn(model), input, { sessionId: 'cat' });
      expect(await handle.result()).toMatchObject({ status: 'completed' });
      stored = (await first.stateStore.loadSession('cat'))!.messages;
    } finally {
      first.close();
    }
    const second = openSqliteStores({ path });
    try {
      const reloaded = await second.stateStore.loadSession('cat');
      expect(reloaded?.messages).toEqual(stored);
      expect(reloaded?.messages[0]).toEqual({ role: 'user', content: 'What is it?', attachments: [{ type: 'image', mediaType: 'image/png', data: PNG_BASE64 }] });
      const executor = new JSAgentExecutor(second.stateStore, second.streamManager, new VercelAIAdapter(), { logger: silentLogger, agents: [agentOn(model)] });
      expect(await (await executor.send('cat', 'Are you sure?')).result()).toMatchObject({ status: 'completed', output: 'Still a cat.' });
      const [earlier, latest] = userParts(model.requests[1]!);
      expect(earlier).toEqual([
        { type: 'text', text: 'What is it?' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_BASE64}` } },
      ]);
      expect(latest).toEqual([{ type: 'text', text: 'Are you sure?' }]);
    } finally {
      second.close();
    }
  });
});
