// The run loop's own decisions (runtime/run-loop.ts), as the fifth mutation run found them loosely
// pinned: the output of a text agent that reaches maxSteps, onExit's payload and a blank continue message,
// the block note of a fail-closed throw in beforeLLMCall, the results of an actions_completed chunk in the
// model's order, and a run that meets maxMessages before a model call.
import { describe, expect, it } from 'vitest';
import { guard, type StreamChunk } from '../index.js';
import { createScriptedModel } from '../testing/index.js';
import { bareTool, counterAgent, finish, incrementTool, setup, textAgent } from './harness.js';

describe('maxSteps on a text agent', () => {
  it('completes with the last assistant text that is not blank, skipping blank replies after it', async () => {
    const agent = textAgent(
      [
        { text: 'working on it', toolCalls: [{ name: 'increment', args: { by: 1 } }] },
        { text: '  ', toolCalls: [{ name: 'increment', args: { by: 1 } }] },
      ],
      { maxSteps: 2 },
    );
    const result = await (await setup().executor.execute(agent, 'go')).result();
    expect(result).toMatchObject({ status: 'completed', exitReason: 'max_steps', output: 'working on it' });
  });

  it('completes with an empty output when no reply had text', async () => {
    const agent = textAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 } }] }], { maxSteps: 1 });
    const result = await (await setup().executor.execute(agent, 'go')).result();
    expect(result).toMatchObject({ status: 'completed', exitReason: 'max_steps', output: '' });
  });
});

describe('onExit', () => {
  it('sees the reason, the output, the step count after this step and the tool call counts; a blank continue message appends no row', async () => {
    const payloads: unknown[] = [];
    let continued = false;
    const agent = textAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 } }] }, { text: 'first' }, { text: 'second' }], {
      hooks: {
        onExit: (p) => {
          payloads.push(p);
          if (continued) return undefined;
          continued = true;
          return { continue: true, message: '   ' };
        },
      },
    });
    const { executor, stateStore } = setup();
    const handle = await executor.execute(agent, 'go');
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'completed', output: 'second' });
    expect(payloads).toEqual([
      { reason: 'text', output: 'first', stepCount: 2, toolCallCounts: { increment: 1 } },
      { reason: 'text', output: 'second', stepCount: 3, toolCallCounts: { increment: 1 } },
    ]);
    const rows = (await stateStore.loadSession(handle.sessionId))!.messages;
    expect(rows.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['go']);
  });

  it('a continue with a message appends it as a user row; a later return without continue ends the run', async () => {
    let n = 0;
    const agent = textAgent([{ text: 'first' }, { text: 'second' }], {
      hooks: { onExit: () => (n++ === 0 ? { continue: true, message: 'check again' } : undefined) },
    });
    const { executor, stateStore } = setup();
    const handle = await executor.execute(agent, 'go');
    expect(await handle.result()).toMatchObject({ status: 'completed', output: 'second' });
    const rows = (await stateStore.loadSession(handle.sessionId))!.messages;
    expect(rows.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['go', 'check again']);
  });
});

describe('the block note of a fail-closed beforeLLMCall', () => {
  it("a fail-closed beforeLLMCall that throws leaves a system note with the throw's message, and the run fails hook_blocked", async () => {
    const agent = textAgent([{ text: 'never' }]);
    const { executor, stateStore } = setup();
    const hooks = {
      beforeLLMCall: guard(
        () => {
          throw new Error('policy service down');
        },
        { onError: 'fail-closed', name: 'policy' },
      ),
    };
    const handle = await executor.execute(agent, 'go', { hooks });
    const result = await handle.result();
    expect(result.error?.code).toBe('hook_blocked');
    const rows = (await stateStore.loadSession(handle.sessionId))!.messages;
    const note = rows.find((m) => m.role === 'system');
    expect(note?.content).toMatch(/^Run blocked by an agent hook: .*policy service down/);
  });

  it('a failure that is not a block leaves no system note', async () => {
    const agent = textAgent([{ error: { status: 401 } }]);
    const { executor, stateStore } = setup();
    const handle = await executor.execute(agent, 'go');
    expect((await handle.result()).status).toBe('failed');
    const rows = (await stateStore.loadSession(handle.sessionId))!.messages;
    expect(rows.some((m) => m.role === 'system')).toBe(false);
  });
});

describe('actions_completed', () => {
  it("lists every result in the model's order with its call id, tool name, output and error flag", async () => {
    const fails = bareTool('fails', 'always throws', () => {
      throw new Error('nope');
    });
    const slow = bareTool('slow', 'answers late', async () => {
      await new Promise((r) => setTimeout(r, 20));
      return 'late';
    });
    const agent = counterAgent(
      [
        {
          toolCalls: [
            { name: 'slow', args: {}, id: 'c1' },
            { name: 'fails', args: {}, id: 'c2' },
            { name: 'increment', args: { by: 2 }, id: 'c3' },
          ],
        },
        finish('x'),
      ],
      { tools: [slow, fails, incrementTool] },
    );
    const { executor, streamManager } = setup();
    const handle = await executor.execute(agent, 'go');
    await handle.result();
    const completed = streamManager.chunks(handle.sessionId).find((c) => c.type === 'actions_completed') as StreamChunk & { results: Record<string, unknown>[] };
    expect(completed.results.map((r) => [r['callId'], r['toolName'], r['isError']])).toEqual([
      ['c1', 'slow', false],
      ['c2', 'fails', true],
      ['c3', 'increment', false],
    ]);
    expect(completed.results[0]).toEqual({ callId: 'c1', toolName: 'slow', output: 'late', isError: false });
  });
});

describe('maxMessages before a model call', () => {
  it('a conversation past maxMessages fails with the limit in its details, without another model call', async () => {
    const model = createScriptedModel([{ toolCalls: [{ name: 'increment', args: { by: 1 } }, { name: 'increment', args: { by: 1 } }] }, { text: 'never' }]);
    const agent = textAgent([], { llmConfig: { model } });
    const { executor } = setup({ executor: { limits: { maxMessages: 3 } } });
    const result = await (await executor.execute(agent, 'go')).result();
    expect(result.status).toBe('failed');
    expect(result.error?.details).toMatchObject({ max: 3 });
    expect(model.callCount).toBe(1);
  });
});
