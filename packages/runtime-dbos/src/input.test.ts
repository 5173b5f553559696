// Issue 13, item 5 on runtime-dbos: a turn input of messages (an image included) goes through the DBOS
// workflow's entry like a string does: the rows are stored as given, and the provider request (real
// @ai-sdk/openai over HTTP) carries the image.
import { createOpenAI } from '@ai-sdk/openai';
import type { ModelMessage } from '@ai-sdk/provider-utils';
import { defineAgent, silentLogger } from '@helix-agents/sdk';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { startScriptedOpenAIServer } from '@helix-agents/llm-vercel/testing';
import { expect, it } from 'vitest';
import { DBOSAgentExecutor } from './index.js';
import { useDBOSHarness } from './__tests__/harness.js';

const harness = useDBOSHarness();
const PNG_BASE64 = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 9]).toString('base64');

it('a DBOS run started with ModelMessages stores the rows as given and sends the image to the provider', async () => {
  const model = await startScriptedOpenAIServer([{ text: 'A PNG.' }]);
  try {
    const stores = await harness.open();
    const provider = createOpenAI({ baseURL: model.baseURL, apiKey: 'test-key' });
    const agent = defineAgent({ name: 'dbos-vision', llmConfig: { model: provider.chat('gpt-test') } });
    const executor = new DBOSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { logger: silentLogger, name: harness.unique('input'), agents: [agent] });
    const input: ModelMessage[] = [
      { role: 'user', content: 'Hello' },
      { role: 'assistant', content: 'Hi.' },
      { role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image', image: Buffer.from(PNG_BASE64, 'base64') }] },
    ];
    const handle = await executor.execute(agent, input, { sessionId: 'dbos-files' });
    expect(await handle.result()).toMatchObject({ status: 'completed', output: 'A PNG.' });
    const session = await stores.stateStore.loadSession('dbos-files');
    expect(session?.messages).toEqual([
      { role: 'user', content: 'Hello' },
      { role: 'assistant', content: 'Hi.' },
      { role: 'user', content: 'What is this?', attachments: [{ type: 'image', mediaType: 'image/png', data: PNG_BASE64 }] },
      { role: 'assistant', content: 'A PNG.' },
    ]);
    const users = model.requests[0]!.messages.filter((m) => m['role'] === 'user');
    expect(users[1]!['content']).toEqual([
      { type: 'text', text: 'What is this?' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_BASE64}` } },
    ]);
  } finally {
    await model.close();
  }
}, 60_000);
