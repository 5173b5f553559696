import { createOpenAI } from '@ai-sdk/openai';
import { createProviderRegistry, customProvider } from 'ai';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, defineAgent, InMemoryStateStore, InMemoryStreamManager, JSAgentExecutor, silentLogger, type BeforeLLMCallPayload, type ModelRegistry } from '@helix-agents/sdk';
import { VercelAIAdapter } from './index.js';
import { startScriptedOpenAIServer, type ScriptedOpenAIServer } from './testing/index.js';

// Issue 15, item 7: `model: 'provider:model'` resolved through a provider registry the user gives the
// executor, here the AI SDK's createProviderRegistry over the real @ai-sdk/openai chat provider pointed
// at a scripted server on 127.0.0.1.
let server: ScriptedOpenAIServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function wired(providers?: ModelRegistry) {
  server = await startScriptedOpenAIServer([{ text: 'Hello from the registry.' }, { text: 'Second turn.' }]);
  const local = createOpenAI({ baseURL: server.baseURL, apiKey: 'test' });
  // Local servers speak the chat API: the registry maps the id to the provider's chat model.
  const registry = createProviderRegistry({ local: customProvider({ languageModels: { 'gpt-test': local.chat('gpt-test') } }) });
  const stateStore = new InMemoryStateStore();
  const executor = new JSAgentExecutor(stateStore, new InMemoryStreamManager(), new VercelAIAdapter(), { logger: silentLogger, ...(providers === undefined ? { providers: registry } : { providers }) });
  return { server, stateStore, executor };
}

describe('model ids through a provider registry', () => {
  it("an agent with model 'local:gpt-test' runs on the registry's model, over HTTP, turn after turn", async () => {
    const { server, executor } = await wired();
    const seen: Pick<BeforeLLMCallPayload, 'model' | 'provider'>[] = [];
    const agent = defineAgent({ name: 'greeter', llmConfig: { model: 'local:gpt-test' }, hooks: { beforeLLMCall: (p) => void seen.push({ model: p.model, provider: p.provider }) } });
    const first = await (await executor.execute(agent, 'Hi', { sessionId: 'reg' })).result();
    expect(first).toMatchObject({ status: 'completed', output: 'Hello from the registry.' });
    const second = await (await executor.send('reg', 'Again')).result();
    expect(second).toMatchObject({ status: 'completed', output: 'Second turn.' });
    expect(server.requests.map((r) => r.model)).toEqual(['gpt-test', 'gpt-test']);
    expect(seen).toEqual([
      { model: 'gpt-test', provider: 'openai.chat' },
      { model: 'gpt-test', provider: 'openai.chat' },
    ]);
  });

  it.each([
    ['an unknown provider', 'remote:gpt-test', 'remote:gpt-test'],
    ['an unknown model', 'local:gpt-nope', 'local:gpt-nope'],
  ])('%s is a ConfigError naming the id; the entry is refused and nothing is written', async (_what, id, named) => {
    const { server, stateStore, executor } = await wired();
    const agent = defineAgent({ name: 'greeter', llmConfig: { model: id } });
    const refused = executor.execute(agent, 'Hi', { sessionId: 'bad-model' });
    await expect(refused).rejects.toBeInstanceOf(ConfigError);
    await expect(refused).rejects.toMatchObject({ info: { code: 'config_invalid', message: expect.stringContaining(named), details: { agent: 'greeter', model: id } } });
    expect(await stateStore.loadSession('bad-model')).toBeUndefined();
    expect(server.requests).toHaveLength(0);
  });

  it('a model id on an executor without a registry is a ConfigError that says how to give one', async () => {
    const executor = new JSAgentExecutor(new InMemoryStateStore(), new InMemoryStreamManager(), new VercelAIAdapter(), { logger: silentLogger });
    await expect(executor.execute(defineAgent({ name: 'greeter', llmConfig: { model: 'local:gpt-test' } }), 'Hi')).rejects.toMatchObject({
      info: { code: 'config_invalid', message: expect.stringContaining('createProviderRegistry') },
    });
  });

  it('a registry that returns something other than a language model is a ConfigError; an empty model id is refused by defineAgent', async () => {
    const { executor } = await wired({ languageModel: () => ({}) as never });
    await expect(executor.execute(defineAgent({ name: 'greeter', llmConfig: { model: 'x:y' } }), 'Hi')).rejects.toMatchObject({ info: { code: 'config_invalid', message: expect.stringContaining('no language model') } });
    expect(() => defineAgent({ name: 'greeter', llmConfig: { model: '  ' } })).toThrow(ConfigError);
  });
});
