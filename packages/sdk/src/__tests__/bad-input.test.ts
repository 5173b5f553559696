import { describe, expect, it } from 'vitest';

import { defineAgent, type AgentHooks } from '../index.js';
import { createScriptedModel } from '../testing/index.js';
import { setup, textAgent } from './harness.js';

// Issue 14: bad input gets a typed error, never a silent acceptance.

describe('defineAgent hooks (issue 14, item 8)', () => {
  it('a misspelled hook point in defineAgent({ hooks }) throws a ConfigError listing the valid points', () => {
    const hooks = { onAgentCompleted: () => {} } as unknown as AgentHooks;
    expect(() => defineAgent({ name: 'typo', llmConfig: { model: createScriptedModel([{ text: 'x' }]) }, hooks })).toThrow(
      expect.objectContaining({ info: expect.objectContaining({ code: 'config_invalid', message: expect.stringContaining('Valid hook points: ') }) }),
    );
    expect(() => defineAgent({ name: 'ok', llmConfig: { model: createScriptedModel([{ text: 'x' }]) }, hooks: { onAgentComplete: () => {} } })).not.toThrow();
  });
});

describe('session ids (issue 14, item 5)', () => {
  it('an empty session id, or one over 256 characters, is refused with run_invalid_input on every entry', async () => {
    const { executor, stateStore } = setup();
    const agent = textAgent([{ text: 'hi' }, { text: 'hi' }]);
    executor.registerAgent(agent as never);
    const long = 'x'.repeat(257);
    for (const bad of ['', long]) {
      const refused = { info: expect.objectContaining({ code: 'run_invalid_input', retryable: false }) };
      await expect(executor.execute(agent, 'go', { sessionId: bad })).rejects.toMatchObject(refused);
      await expect(executor.execute(agent, 'go', { sessionId: 'fine', parentSessionId: bad })).rejects.toMatchObject(refused);
      await expect(executor.send(bad, 'go')).rejects.toMatchObject(refused);
      await expect(executor.resume(bad, { mode: 'continue' })).rejects.toMatchObject(refused);
      await expect(executor.submitToolResult(bad, 'c', 1)).rejects.toMatchObject(refused);
      await expect(executor.approve(bad, 'c')).rejects.toMatchObject(refused);
      await expect(executor.reject(bad, 'c')).rejects.toMatchObject(refused);
      await expect(executor.retry(bad)).rejects.toMatchObject(refused);
      await expect(executor.stop(bad)).rejects.toMatchObject(refused);
      await expect(executor.getSession(bad)).rejects.toMatchObject(refused);
      await expect(executor.listCheckpoints(bad)).rejects.toMatchObject(refused);
      expect(() => executor.readStream(bad)).toThrow(expect.objectContaining(refused));
    }
    expect(await stateStore.loadSession('')).toBeUndefined();
    const ok = await executor.execute(agent, 'go', { sessionId: 'y'.repeat(256) });
    expect((await ok.result()).status).toBe('completed');
  });
});
