import { describe, expect, it } from 'vitest';

import { openSqliteStores } from '@helix-agents/store-sqlite';
import { createHookManager, defineAgent, type AgentError, type AgentHooks, type ToolResultMessage } from '../index.js';
import { createScriptedModel } from '../testing/index.js';
import { bareTool, collect, incrementTool, setup, textAgent } from './harness.js';

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

describe('unserializable tool results (issue 14, item 6)', () => {
  const circular: Record<string, unknown> = { a: 1 };
  circular['self'] = circular;
  const bad: Record<string, unknown> = { bigint: { n: 10n }, circular, function: { f: () => 1 } };
  it.each(Object.keys(bad))('a result with a %s becomes a tool_invalid_output result for the model; the run goes on and nothing unserializable is stored or streamed', async (kind) => {
    const { executor, stateStore, streamManager } = setup();
    const tool = bareTool('weird', 'returns something odd', () => bad[kind]);
    const agent = textAgent([{ toolCalls: [{ name: 'weird', args: {}, id: 'w1' }] }, { text: 'recovered' }], { tools: [tool] });
    const handle = await executor.execute(agent, 'go', { sessionId: `unser-${kind}` });
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'completed', output: 'recovered' });
    const session = await stateStore.loadSession(`unser-${kind}`);
    const row = session!.messages.find((m): m is ToolResultMessage => m.role === 'tool')!;
    expect(row).toMatchObject({ isError: true, errorInfo: { code: 'tool_invalid_output', layer: 'tool' } });
    const chunks = await collect(streamManager.read(`unser-${kind}`, { follow: false }));
    const end = chunks.find((c) => c.type === 'tool_end');
    expect(end).toMatchObject({ success: false, error: { code: 'tool_invalid_output' } });
    expect(() => JSON.stringify(chunks)).not.toThrow();
    expect(typeof row.content).toBe('string');
  });
});

describe('two executes at once on one session (issue 14, item 7)', () => {
  it.each(['memory', 'sqlite'] as const)('on %s the loser gets a non-retryable state_run_superseded naming the winner; the winner completes', async (kind) => {
    const wired = kind === 'memory' ? setup() : setup({ stateStore: openSqliteStores({ path: ':memory:' }).stateStore });
    const agent = textAgent([{ text: 'a' }, { text: 'b' }]);
    const settled = await Promise.allSettled([wired.executor.execute(agent, 'one', { sessionId: 'race' }), wired.executor.execute(agent, 'two', { sessionId: 'race' })]);
    const winners = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const losers = settled.flatMap((s) => (s.status === 'rejected' ? [s.reason as AgentError] : []));
    expect(winners).toHaveLength(1);
    expect(losers).toHaveLength(1);
    const winner = winners[0]!;
    const info = losers[0]!.info;
    expect(info).toMatchObject({ code: 'state_run_superseded', retryable: false, details: { currentRunId: winner.runId } });
    expect(info.message).toContain(winner.runId);
    expect((await winner.result()).status).toBe('completed');
    expect((await wired.stateStore.loadSession('race'))?.currentRunId).toBe(winner.runId);
  });
});

describe('state that violates the stateSchema (issue 14, item 4)', () => {
  it("a tool's invalid write becomes a state_invalid error result for that call; its writes are dropped and the run goes on", async () => {
    const { executor, stateStore } = setup();
    const corrupt = bareTool('corrupt', 'writes a string into the counter', (_input, ctx) => {
      ctx.updateState<{ count: unknown; log: string[] }>((d) => {
        d.log.push('corrupt ran');
        d.count = 'many';
      });
      return 'ok';
    });
    const agent = textAgent([{ toolCalls: [{ name: 'corrupt', args: {}, id: 'c1' }, { name: 'increment', args: { by: 2 }, id: 'c2' }] }, { text: 'done' }], { tools: [corrupt, incrementTool] });
    const result = await (await executor.execute(agent, 'go', { sessionId: 'state-1' })).result();
    expect(result.status).toBe('completed');
    const session = await stateStore.loadSession('state-1');
    expect(session!.state).toEqual({ count: 2, log: ['+2'] });
    const row = session!.messages.find((m): m is ToolResultMessage => m.role === 'tool' && m.toolCallId === 'c1')!;
    expect(row).toMatchObject({ isError: true, errorInfo: { code: 'state_invalid' } });
  });

  it("a hook's invalid write follows the hook's error policy: fail-run fails the run, fail-open drops the write; nothing invalid is committed", async () => {
    const hooks = { afterLLMCall: (_p: unknown, ctx: { updateState(u: (d: { count: unknown }) => void): void }) => ctx.updateState((d) => void (d.count = null)) } as unknown as AgentHooks;
    const failing = setup();
    const failed = await (await failing.executor.execute(textAgent([{ text: 'a' }]), 'go', { sessionId: 'state-2', hooks })).result();
    expect(failed.status).toBe('failed');
    expect((await failing.stateStore.loadSession('state-2'))!.state).toEqual({ count: 0, log: [] });
    const open = setup();
    const kept = await (await open.executor.execute(textAgent([{ text: 'a' }]), 'go', { sessionId: 'state-3', hookManager: createHookManager(hooks, { onError: 'fail-open' }) })).result();
    expect(kept.status).toBe('completed');
    expect((await open.stateStore.loadSession('state-3'))!.state).toEqual({ count: 0, log: [] });
  });
});
