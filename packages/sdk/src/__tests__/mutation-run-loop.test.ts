// The run loop's own decisions (runtime/run-loop.ts), as the fifth mutation run found them loosely
// pinned: the output of a text agent that reaches maxSteps, onExit's payload and a blank continue message,
// the block note of a fail-closed throw in beforeLLMCall, the results of an actions_completed chunk in the
// model's order, and a run that meets maxMessages before a model call.
import { describe, expect, it } from 'vitest';
import { guard, InMemoryStateStore, type StreamChunk } from '../index.js';
import type { Commit } from '../store.js';
import { createHookRecorder, createScriptedModel } from '../testing/index.js';
import { bareTool, counterAgent, deadCounterRun, finish, gatedTool, incrementTool, setup, textAgent, throwing } from './harness.js';

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
    expect(note?.content).toBe('Run blocked by an agent hook: policy service down');
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
    expect(result.error).toMatchObject({ code: 'run_too_many_messages', message: 'The conversation is 4 rows long, over the limit of 3 (limits.maxMessages).', details: { count: 4, max: 3 } });
    expect(model.callCount).toBe(1);
  });

  it('a conversation at maxMessages exactly still gets its model call', async () => {
    const model = createScriptedModel([{ toolCalls: [{ name: 'increment', args: { by: 1 } }, { name: 'increment', args: { by: 1 } }] }, { text: 'done' }]);
    const { executor } = setup({ executor: { limits: { maxMessages: 4 } } });
    const result = await (await executor.execute(textAgent([], { llmConfig: { model } }), 'go')).result();
    expect(model.callCount).toBe(2);
    expect(result).toMatchObject({ status: 'completed', output: 'done' });
  });
});

describe('the rows and chunks of a step', () => {
  it('a reply of blanks from a text agent is empty: it is nudged, not taken as the answer', async () => {
    const { executor, stateStore } = setup();
    const handle = await executor.execute(textAgent([{ text: '   ' }, { text: 'real' }]), 'go');
    expect(await handle.result()).toMatchObject({ status: 'completed', output: 'real' });
    const rows = (await stateStore.loadSession(handle.sessionId))!.messages;
    expect(rows[2]).toEqual({ role: 'user', content: 'Your last reply was empty. Continue the task: call a tool, or answer.' });
  });

  it('text from an agent with an outputSchema is answered by a user row asking for __finish__', async () => {
    const { executor, stateStore } = setup();
    const handle = await executor.execute(counterAgent([{ text: 'prose' }, finish('x')]), 'go');
    expect((await handle.result()).status).toBe('completed');
    const rows = (await stateStore.loadSession(handle.sessionId))!.messages;
    expect(rows[2]).toEqual({ role: 'user', content: 'Reply by calling the __finish__ tool with your final output as its arguments.' });
  });

  it('a step without tool calls writes no actions_requested or actions_completed chunk', async () => {
    const { executor, streamManager } = setup();
    const handle = await executor.execute(textAgent([{ text: 'plain' }]), 'go');
    await handle.result();
    const types = streamManager.chunks(handle.sessionId).map((c) => c.type);
    expect(types).not.toContain('actions_requested');
    expect(types).not.toContain('actions_completed');
  });

  it('a step stopped while its calls run writes no actions_completed chunk', async () => {
    const { tool: held, gate, entered } = gatedTool('held', 'done');
    const { executor, streamManager } = setup();
    const handle = await executor.execute(counterAgent([{ toolCalls: [{ name: 'held', args: {} }] }, finish('x')], { tools: [held] }), 'go');
    await entered.opened;
    const stopped = handle.stop();
    gate.open();
    expect((await stopped).status).toBe('interrupted');
    const types = streamManager.chunks(handle.sessionId).map((c) => c.type);
    expect(types).toContain('actions_requested');
    expect(types).not.toContain('actions_completed');
  });

  it("a finishing step's commit is a step checkpoint carrying the output, so a recovery finishes without the model", async () => {
    const commits: Commit[] = [];
    const inner = new InMemoryStateStore();
    const stateStore = new Proxy(inner, {
      get(target, prop) {
        if (prop === 'commit') return (c: Commit) => (commits.push(c), target.commit(c));
        const value: unknown = Reflect.get(target, prop);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const { executor } = setup({ stateStore });
    await (await executor.execute(counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 } }] }, finish('x')]), 'go')).result();
    const steps = commits.filter((c) => c.kind === 'step');
    expect(steps.map((c) => [c.stepIndex, c.checkpoint, c.output])).toEqual([
      [0, 'step', undefined],
      [1, 'step', { answer: 'x' }],
    ]);
  });
});

describe('onExit returns', () => {
  it('an object without continue: true (a hostile return) ends the run', async () => {
    for (const value of [{}, { continue: 'yes' }, { continue: 1, message: 'more' }]) {
      const agent = textAgent([{ text: 'first' }, { text: 'second' }], { hooks: { onExit: (() => value) as never } });
      expect(await (await setup().executor.execute(agent, 'go')).result()).toMatchObject({ status: 'completed', output: 'first' });
    }
  });

  it("a continue is audited as decision continue, with its message as the reason when it has one", async () => {
    let n = 0;
    const agent = textAgent([{ text: 'a' }, { text: 'b' }, { text: 'c' }], {
      hooks: { onExit: () => (++n === 1 ? { continue: true, message: 'more please' } : n === 2 ? { continue: true } : undefined) },
    });
    const { executor, streamManager } = setup();
    const handle = await executor.execute(agent, 'go');
    await handle.result();
    const decisions = streamManager.chunks(handle.sessionId).filter((c) => c.type === 'hook_decision' && c.hookPoint === 'onExit') as (StreamChunk & { decision: string; reason?: string })[];
    expect(decisions.map((d) => [d.decision, d.reason])).toEqual([
      ['continue', 'more please'],
      ['continue', undefined],
    ]);
    expect('reason' in decisions[1]!).toBe(false);
  });
});

describe('which failures leave a block note', () => {
  it('a fail-run beforeLLMCall throw (hook_failed) and a fail-closed onAgentStart throw leave no system note', async () => {
    for (const hooks of [
      { beforeLLMCall: guard(throwing('judge down'), { onError: 'fail-run', name: 'judge' }) },
      { onAgentStart: guard(throwing('setup down'), { onError: 'fail-closed', name: 'setup' }) },
    ]) {
      const { executor, stateStore } = setup();
      const handle = await executor.execute(textAgent([{ text: 'never' }]), 'go', { hooks: hooks as never });
      expect((await handle.result()).status).toBe('failed');
      const rows = (await stateStore.loadSession(handle.sessionId))!.messages;
      expect(rows.some((m) => m.role === 'system')).toBe(false);
    }
  });
});

describe('a recovered run that fails', () => {
  it('fires onAgentFail when its start signal fired before the crash (a committed step, or a committed turn start)', async () => {
    for (const committedStep of [true, false]) {
      const store = new InMemoryStateStore();
      const dead = await deadCounterRun(store);
      await store.commit({ ...dead, kind: 'turn_start', appendMessages: [{ role: 'user', content: 'go' }], committedAt: Date.now() });
      if (committedStep) await store.commit({ ...dead, kind: 'step', stepIndex: 0, appendMessages: [{ role: 'assistant', content: 'thinking' }, { role: 'user', content: 'go on' }], committedAt: Date.now() });
      const rec = createHookRecorder();
      const { executor } = setup({ stateStore: store });
      const [handle] = await executor.recover({ agents: [counterAgent([{ error: { status: 401 } }], { hooks: rec.hooks })] });
      expect((await handle!.result()).status).toBe('failed');
      expect(rec.of('onAgentFail')).toHaveLength(1);
      expect(rec.of('onAgentStart')).toHaveLength(0);
    }
  });
});

