import { defineAgent, JSAgentExecutor, silentLogger } from '@helix-agents/sdk';
import type { LLMAdapter, LLMStepRequest, StepResult, StreamChunk } from '@helix-agents/sdk';
import { createScriptedModel } from '@helix-agents/sdk/testing';
import { describe, expect, it } from 'vitest';
import { useTempDatabases } from './__tests__/temp-databases.js';
import { openSqliteStores } from './open.js';

const temp = useTempDatabases('helix-sqlite-exec-');

/** A model that answers every call with one text reply (the test is about persistence, not the model). */
class EchoAdapter implements LLMAdapter {
  calls = 0;
  async generateStep(request: LLMStepRequest): Promise<StepResult> {
    this.calls++;
    const last = request.messages.at(-1);
    const text = `echo: ${typeof last?.content === 'string' ? last.content : ''}`;
    request.onTextDelta?.(text);
    return { ok: true, text, toolCalls: [], finishReason: 'stop', model: 'echo', usage: { promptTokens: 7, completionTokens: 3, totalTokens: 10 } };
  }
}

describe('JSAgentExecutor over the SQLite stores', () => {
  it('runs a turn, and a fresh process (a new connection) finds its conversation, checkpoints, stream and usage', async () => {
    const path = temp.path();
    const agent = defineAgent({ name: 'echo', llmConfig: { model: createScriptedModel([]) } });
    const first = openSqliteStores({ path });
    const executor = new JSAgentExecutor(first.stateStore, first.streamManager, new EchoAdapter(), { logger: silentLogger });
    const handle = await executor.execute(agent, 'hello', { sessionId: 's1', usageStore: first.usageStore });
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'completed', output: 'echo: hello' });
    first.close();

    const second = openSqliteStores({ path });
    try {
      const session = await second.stateStore.loadSession('s1');
      expect(session?.messages).toEqual([
        { role: 'user', content: 'hello' },
        expect.objectContaining({ role: 'assistant', content: 'echo: hello' }),
      ]);
      expect(session?.turn).toMatchObject({ startCommitted: true, inputMessageIndex: 0 });
      const run = await second.stateStore.getRun(session!.currentRunId!);
      expect(run).toMatchObject({ status: 'completed', stepCount: 1 });
      const checkpoints = await second.stateStore.listCheckpoints('s1');
      expect(checkpoints.map((c) => c.kind)).toContain('step');
      expect((await second.stateStore.getRollup({ sessionId: 's1' })).modelCalls).toBe(1);
      const chunks: StreamChunk[] = [];
      for await (const chunk of second.streamManager.read('s1', { follow: false })) chunks.push(chunk);
      expect(chunks.map((c) => c.seq)).toEqual(chunks.map((_, i) => i));
      expect(chunks[0]?.type).toBe('run_started');
      expect(chunks.at(-1)?.type).toBe('end');
    } finally {
      second.close();
    }
  });
});
