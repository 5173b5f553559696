// A steering return holds under every error policy: the policy only decides what a *throw* does (C1), never
// whether a returned { block }, { input }, { messages }, { result } or { continue } is honoured.
import { describe, expect, it } from 'vitest';
import { guard, type HookErrorPolicy, type Message, type ToolResultMessage } from '../index.js';
import { createHookRecorder, createScriptedModel } from '../testing/index.js';
import { counterAgent, finish, setup, textAgent } from './harness.js';

const NON_TOOL_POLICIES: readonly HookErrorPolicy[] = ['fail-run', 'fail-open', 'fail-closed'];
const TOOL_POLICIES: readonly HookErrorPolicy[] = [...NON_TOOL_POLICIES, 'block-tool'];

describe('beforeLLMCall steering under each error policy', () => {
  for (const policy of NON_TOOL_POLICIES) {
    it(`rule 216 / D11 / C1: a beforeLLMCall { block } registered with onError '${policy}' holds: no model call, hook_blocked`, async () => {
      const { executor } = setup();
      const model = createScriptedModel([{ text: 'never' }]);
      const rec = createHookRecorder({ points: ['afterLLMCall', 'onAgentFail', 'onAgentComplete'] });
      const agent = textAgent([], { llmConfig: { model } });
      const blocker = guard(() => ({ block: true as const, reason: 'budget spent' }), { onError: policy });
      const handle = await executor.execute(agent, 'go', { hooks: { ...rec.hooks, beforeLLMCall: blocker } });
      const result = await handle.result();
      expect(model.calls).toHaveLength(0);
      expect(result.status).toBe('failed');
      expect(result.error).toMatchObject({ code: 'hook_blocked', layer: 'hook', details: { reason: 'budget spent' } });
      expect(rec.points()).toEqual(['onAgentFail']);
    });

    it(`rule 216 / C4 / C1: a beforeLLMCall { messages } registered with onError '${policy}' is what the provider sees`, async () => {
      const { executor } = setup();
      const model = createScriptedModel([{ text: 'ok' }]);
      const agent = textAgent([], { llmConfig: { model } });
      const rewrite = guard(
        (p: { messages: readonly Message[] }) => ({ messages: [...p.messages, { role: 'user', content: 'policy-note-42' } as Message] }),
        { onError: policy },
      );
      const result = await (await executor.execute(agent, 'go', { hooks: { beforeLLMCall: rewrite } })).result();
      expect(result.status).toBe('completed');
      expect(JSON.stringify(model.calls[0]!.prompt)).toContain('policy-note-42');
    });
  }
});

describe('beforeTool and afterTool steering under each error policy', () => {
  for (const policy of TOOL_POLICIES) {
    it(`rule 218 / C13 / D4 / C1: a beforeTool { block } registered with onError '${policy}' holds: the tool never runs`, async () => {
      const { executor, stateStore } = setup();
      const rec = createHookRecorder({ points: ['afterTool'] });
      const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 5 }, id: 'c1' }] }, finish('x')]);
      const blocker = guard(() => ({ block: true as const, reason: 'not today' }), { onError: policy });
      const handle = await executor.execute(agent, 'go', { hooks: { ...rec.hooks, beforeTool: blocker } });
      const result = await handle.result();
      expect(result.status).toBe('completed');
      expect(result.state.count).toBe(0);
      const row = (await stateStore.loadSession(handle.sessionId))!.messages.find((m): m is ToolResultMessage => m.role === 'tool')!;
      expect(row).toMatchObject({ isError: true, errorInfo: { code: 'hook_blocked' } });
      expect(String(row.content)).toContain('not today');
      expect(rec.of('afterTool')[0]!.payload).toMatchObject({ blocked: true, success: false });
    });

    it(`rule 218 / C1: a beforeTool { input } registered with onError '${policy}' replaces the arguments`, async () => {
      const { executor } = setup();
      const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 5 } }] }, finish('x')]);
      const rewrite = guard(() => ({ input: { by: 2 } }), { onError: policy });
      const result = await (await executor.execute(agent, 'go', { hooks: { beforeTool: rewrite } })).result();
      expect(result.state.count).toBe(2);
    });
  }

  for (const policy of NON_TOOL_POLICIES) {
    it(`rule 221 / C1: an afterTool { result } registered with onError '${policy}' replaces the stored result`, async () => {
      const { executor, stateStore } = setup();
      const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 } }] }, finish('x')]);
      const rewrite = guard(() => ({ result: { summary: 'short' } }), { onError: policy });
      const handle = await executor.execute(agent, 'go', { hooks: { afterTool: rewrite } });
      await handle.result();
      const row = (await stateStore.loadSession(handle.sessionId))!.messages.find((m): m is ToolResultMessage => m.role === 'tool')!;
      expect(row.content).toEqual({ summary: 'short' });
    });
  }
});

describe('onExit steering under each error policy', () => {
  for (const policy of NON_TOOL_POLICIES) {
    it(`rule 200 / D6 / C1: an onExit { continue: true } registered with onError '${policy}' keeps the run going`, async () => {
      const { executor } = setup();
      let exits = 0;
      const agent = textAgent([{ text: 'first' }, { text: 'second' }]);
      const keepGoing = guard(() => (++exits === 1 ? { continue: true as const, message: 'once more' } : undefined), { onError: policy });
      const result = await (await executor.execute(agent, 'go', { hooks: { onExit: keepGoing } })).result();
      expect(result).toMatchObject({ status: 'completed', output: 'second', stepCount: 2 });
      expect(exits).toBe(2);
    });
  }
});
