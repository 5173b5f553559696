// Issue 13, item 5: a turn whose input carries an image and a PDF survives a SIGKILL after its run-start
// commit (K1: the rows live only in the turn record) and after its turn-start commit (K2): a fresh
// process recovers the run from the SQLite file, and the provider request (real @ai-sdk/openai over
// HTTP) carries the image and the file exactly once.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createOpenAI } from '@ai-sdk/openai';
import { afterAll, describe, expect, it } from 'vitest';
import { defineAgent, JSAgentExecutor, silentLogger, type AgentHandle, type Message } from '@helix-agents/sdk';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { startScriptedOpenAIServer } from '@helix-agents/llm-vercel/testing';
import { openSqliteStores } from '@helix-agents/store-sqlite';
import { runChild } from '../crash/compare.js';
import { CRASH_PDF_BASE64, CRASH_PNG_BASE64 } from './crash-input.js';

const here = dirname(fileURLToPath(import.meta.url));
const folder = mkdtempSync(join(tmpdir(), 'helix-input-crash-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const expectedRows: Message[] = [
  { role: 'user', content: 'Hello' },
  { role: 'assistant', content: 'Hi, send the files.' },
  {
    role: 'user',
    content: 'Here they are.',
    attachments: [
      { type: 'image', mediaType: 'image/png', data: CRASH_PNG_BASE64 },
      { type: 'file', mediaType: 'application/pdf', filename: 'crash.pdf', data: CRASH_PDF_BASE64 },
    ],
  },
];

describe('a turn with files, killed and recovered (SQLite, a fresh process)', () => {
  it.each(['after_k1', 'after_k2'])('SIGKILL %s: the recovered run sends the image and the PDF once and stores the rows unchanged', async (crashAt) => {
    const path = join(folder, `${crashAt}.db`);
    const crashed = await runChild(join(here, 'crash-child.ts'), [path, 'files'], crashAt);
    expect(crashed.signal, crashed.stderr).toBe('SIGKILL');

    const model = await startScriptedOpenAIServer([{ text: 'An image and a PDF.' }]);
    const stores = openSqliteStores({ path });
    try {
      const provider = createOpenAI({ baseURL: model.baseURL, apiKey: 'test-key' });
      const agent = defineAgent({ name: 'vision', llmConfig: { model: provider.chat('gpt-test') } });
      const executor = new JSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { logger: silentLogger });
      let handle: AgentHandle | undefined;
      for (let i = 0; i < 100 && handle === undefined; i++) {
        [handle] = await executor.recover({ agents: [agent] });
        if (handle === undefined) await new Promise((r) => setTimeout(r, 50));
      }
      expect(await handle!.result()).toMatchObject({ status: 'completed', output: 'An image and a PDF.' });
      expect(model.requests).toHaveLength(1);
      const users = model.requests[0]!.messages.filter((m) => m['role'] === 'user');
      expect(users).toHaveLength(2);
      expect(users[1]!['content']).toEqual([
        { type: 'text', text: 'Here they are.' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${CRASH_PNG_BASE64}` } },
        { type: 'file', file: { filename: 'crash.pdf', file_data: `data:application/pdf;base64,${CRASH_PDF_BASE64}` } },
      ]);
      const session = await stores.stateStore.loadSession('files');
      expect(session?.messages).toEqual([...expectedRows, { role: 'assistant', content: 'An image and a PDF.' }]);
    } finally {
      stores.close();
      await model.close();
    }
  }, 60_000);
});
