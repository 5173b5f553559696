// Tool-call paths the mutation run of runtime/tool-calls.ts found untested: finish calls beside other calls,
// a __finish__ call a text agent cannot take, a finishWith result the outputSchema refuses, and a stop that
// lands on a step's calls. Each test names the behaviour it pins.
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { defineTool, InMemoryStateStore, RunSupersededError, type ToolResultMessage } from '../index.js';
import { createGate } from '../testing/index.js';
import { bareTool, counterAgent, deadCounterRun, finish, gatedTool, incrementTool, setup, textAgent, type Counter } from './harness.js';

const toolRows = async (stateStore: ReturnType<typeof setup>['stateStore'], sessionId: string) =>
  (await stateStore.loadSession(sessionId))!.messages.filter((m): m is ToolResultMessage => m.role === 'tool');

const reportTool = defineTool({
  name: 'report',
  description: 'Finish with a report',
  inputSchema: z.object({ text: z.string() }),
  finishWith: true,
  execute: async (input) => ({ answer: input.text }),
});

describe('finishing calls of one step', () => {
  it('with __finish__ and a finishWith tool in one reply, the call the model made first gives the output', async () => {
    for (const [calls, expected] of [
      [[{ name: '__finish__', args: { answer: 'finish-first' }, id: 'f' }, { name: 'report', args: { text: 'report-second' }, id: 'r' }], 'finish-first'],
      [[{ name: 'report', args: { text: 'report-first' }, id: 'r' }, { name: '__finish__', args: { answer: 'finish-second' }, id: 'f' }], 'report-first'],
    ] as const) {
      const { executor } = setup();
      const handle = await executor.execute(counterAgent([{ toolCalls: calls }], { tools: [reportTool] }), 'go');
      const result = await handle.result();
      expect(result.status).toBe('completed');
      expect(result.output).toEqual({ answer: expected });
    }
  });

  it('__finish__ on an agent without outputSchema gets a tool_not_found result saying the agent answers in plain text, and the run goes on', async () => {
    const { executor, stateStore } = setup();
    const agent = textAgent([{ toolCalls: [{ name: '__finish__', args: { answer: 'x' }, id: 'f1' }] }, { text: 'plain answer' }]);
    const handle = await executor.execute(agent, 'go');
    const result = await handle.result();
    expect(result.status).toBe('completed');
    expect(result.output).toBe('plain answer');
    const [row] = await toolRows(stateStore, handle.sessionId);
    expect(row).toMatchObject({ toolCallId: 'f1', toolName: '__finish__', isError: true, errorInfo: { code: 'tool_not_found' } });
    expect(row!.content).toBe('Tool "__finish__" is not available: this agent answers in plain text.');
  });

  it('a call to an unknown tool on an agent without tools lists "(none)" as the available tools', async () => {
    const { executor, stateStore } = setup();
    const agent = textAgent([{ toolCalls: [{ name: 'ghost', args: {}, id: 'g1' }] }, { text: 'ok' }], { tools: [] });
    const handle = await executor.execute(agent, 'go');
    await handle.result();
    const [row] = await toolRows(stateStore, handle.sessionId);
    expect(row!.content).toBe('Unknown tool "ghost". Available tools: (none).');
    expect(row!.errorInfo).toMatchObject({ code: 'tool_not_found', details: { tool: 'ghost' } });
  });

  it('a finishWith result the outputSchema refuses is a tool_invalid_output error for the model naming the tool, and the run goes on', async () => {
    const bad = defineTool({ name: 'bad_report', description: 'Finishes with a wrong shape', inputSchema: z.object({}), finishWith: true, execute: async () => ({ answer: 5 }) });
    const { executor, stateStore } = setup();
    const agent = counterAgent([{ toolCalls: [{ name: 'bad_report', args: {}, id: 'b1' }] }, finish('fallback')], { tools: [bad] });
    const handle = await executor.execute(agent, 'go');
    const result = await handle.result();
    expect(result.output).toEqual({ answer: 'fallback' });
    const [row] = await toolRows(stateStore, handle.sessionId);
    expect(row).toMatchObject({ toolCallId: 'b1', isError: true, errorInfo: { code: 'tool_invalid_output', details: { tool: 'bad_report' } } });
    expect(String(row!.content)).toMatch(/^Tool "bad_report" finishes the run, but its result does not match the agent's outputSchema:\n.+/);
  });

  it('a finishWith tool on an agent without outputSchema finishes the run with its result as it is', async () => {
    const done = defineTool({ name: 'done', description: 'Finish', inputSchema: z.object({}), finishWith: true, execute: async () => 'tool said so' });
    const { executor } = setup();
    const handle = await executor.execute(textAgent([{ toolCalls: [{ name: 'done', args: {}, id: 'd1' }] }], { tools: [done] }), 'go');
    const result = await handle.result();
    expect(result.status).toBe('completed');
    expect(result.output).toBe('tool said so');
    expect(result.exitReason).toBe('finish_with');
  });
});

describe('arguments that do not match the schema', () => {
  it('invalid arguments give a tool_invalid_input result whose message and details name the tool and the schema issues', async () => {
    const { executor, stateStore } = setup();
    const handle = await executor.execute(counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 'two' }, id: 'i1' }] }, finish('x')]), 'go');
    await handle.result();
    const [row] = await toolRows(stateStore, handle.sessionId);
    expect(String(row!.content)).toMatch(/^Invalid arguments for tool "increment":\n.+/);
    expect(row!.errorInfo).toMatchObject({ code: 'tool_invalid_input', details: { tool: 'increment' } });
    const issues = row!.errorInfo?.details?.['issues'];
    expect(Array.isArray(issues) && issues.length > 0).toBe(true);
  });
});

describe('a stop that lands on a step', () => {
  it('a stop while a sibling call runs pairs the __finish__ call of the same reply with run_stopped: the run is interrupted, not completed', async () => {
    const { tool: slow, gate, entered } = gatedTool('slow', 'slow done');
    const { executor, stateStore } = setup();
    const agent = counterAgent([{ toolCalls: [{ name: 'slow', args: {}, id: 's1' }, { name: '__finish__', args: { answer: 'x' }, id: 'f1' }] }], { tools: [slow] });
    const handle = await executor.execute(agent, 'go');
    await entered.opened;
    const stopping = handle.stop('enough');
    gate.open();
    const result = await stopping;
    expect(result.status).toBe('interrupted');
    const rows = await toolRows(stateStore, handle.sessionId);
    expect(rows.find((r) => r.toolCallId === 'f1')).toMatchObject({
      isError: true,
      content: 'The run was stopped before "__finish__" finished.',
      errorInfo: { code: 'run_stopped', details: { tool: '__finish__' } },
    });
  });

  it('a stop from an onMessage hook on the model reply pairs each call of that reply with run_stopped; no tool runs', async () => {
    let ran = 0;
    const counted = bareTool('counted', 'counts its runs', () => {
      ran++;
      return 'ran';
    });
    const { executor, stateStore } = setup();
    const box: { stop?: () => Promise<unknown> } = {};
    const agent = counterAgent([{ toolCalls: [{ name: 'counted', args: {}, id: 'c1' }] }, finish('x')], {
      tools: [counted],
      hooks: {
        onMessage: (payload) => {
          if (payload.message.role === 'assistant') void box.stop?.();
        },
      },
    });
    const handle = await executor.execute(agent, 'go');
    box.stop = () => handle.stop('from a hook');
    const result = await handle.result();
    expect(result.status).toBe('interrupted');
    expect(ran).toBe(0);
    const rows = await toolRows(stateStore, handle.sessionId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ toolCallId: 'c1', isError: true, errorInfo: { code: 'run_stopped' } });
  });

  it('a side-effecting call a stop ends keeps no result: its row is run_stopped, its writes are gone and the run is interrupted', async () => {
    const entered = createGate();
    const effect = defineTool({
      name: 'effect',
      description: 'a side effect that honours its abort signal',
      inputSchema: z.object({}),
      sideEffects: true,
      execute: async (_input, ctx) => {
        ctx.updateState<Counter>((d) => void d.log.push('effect-partial'));
        entered.open();
        await new Promise((_resolve, reject) => ctx.abortSignal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }));
        return 'never';
      },
    });
    const { executor, stateStore } = setup();
    const handle = await executor.execute(counterAgent([{ toolCalls: [{ name: 'effect', args: {}, id: 'e1' }] }, finish('x')], { tools: [effect, incrementTool] }), 'go');
    await entered.opened;
    const result = await handle.stop('stop the effect');
    expect(result.status).toBe('interrupted');
    expect((result.state as Counter).log).toEqual([]);
    const rows = await toolRows(stateStore, handle.sessionId);
    expect(rows).toEqual([expect.objectContaining({ toolCallId: 'e1', isError: true, errorInfo: expect.objectContaining({ code: 'run_stopped' }) })]);
  });
});

describe('calls past maxToolCallsPerStep, failures among parallel calls', () => {
  it('calls past the limit get tool_calls_exceeded with their 1-based position, and a __finish__ that did run still finishes the run', async () => {
    const { executor, stateStore } = setup();
    const agent = counterAgent(
      [{ toolCalls: [{ name: '__finish__', args: { answer: 'first' }, id: 'f' }, { name: 'increment', args: { by: 1 }, id: 'i2' }, { name: 'increment', args: { by: 1 }, id: 'i3' }] }],
      { limits: { maxToolCallsPerStep: 1 } },
    );
    const handle = await executor.execute(agent, 'go');
    const result = await handle.result();
    expect(result.status).toBe('completed');
    expect(result.output).toEqual({ answer: 'first' });
    expect((result.state as Counter).count).toBe(0);
    const rows = await toolRows(stateStore, handle.sessionId);
    expect(rows.filter((r) => r.errorInfo?.code === 'tool_calls_exceeded').map((r) => [r.toolCallId, r.errorInfo?.details?.['position'], r.errorInfo?.details?.['total']])).toEqual([
      ['i2', 2, 3],
      ['i3', 3, 3],
    ]);
  });

  it('a __finish__ with invalid arguments beside a regular call gets tool_invalid_input and the run finishes at the next step', async () => {
    const { executor, stateStore } = setup();
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 }, id: 'i1' }, { name: '__finish__', args: { answer: 7 }, id: 'f1' }] }, finish('second try')]);
    const handle = await executor.execute(agent, 'go');
    const result = await handle.result();
    expect(result.status).toBe('completed');
    expect(result.output).toEqual({ answer: 'second try' });
    expect((result.state as Counter).count).toBe(1);
    expect((await toolRows(stateStore, handle.sessionId)).find((r) => r.toolCallId === 'f1')?.errorInfo?.code).toBe('tool_invalid_input');
  });

  it('a run-ending hook failure in one of two parallel calls fails the run with that hook error', async () => {
    const { executor } = setup();
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 }, id: 'a' }, { name: 'increment', args: { by: 2 }, id: 'b' }] }, finish('x')], {
      hooks: {
        afterTool: (payload) => {
          if (payload.toolCall.id === 'b') throw new Error('afterTool refuses b');
        },
      },
    });
    const handle = await executor.execute(agent, 'go');
    const result = await handle.result();
    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({ code: 'hook_failed', details: { hook: 'afterTool' } });
  });

  it('a tool that throws the supersede error of some other run gets a tool_failed result; its own run goes on', async () => {
    const foreign = bareTool('foreign', 'throws another run\'s supersede', () => {
      throw new RunSupersededError('other-session', 'other-run', 'newer-run');
    });
    const { executor, stateStore } = setup();
    const handle = await executor.execute(counterAgent([{ toolCalls: [{ name: 'foreign', args: {}, id: 'x1' }] }, finish('went on')], { tools: [foreign] }), 'go');
    const result = await handle.result();
    expect(result.status).toBe('completed');
    expect(result.output).toEqual({ answer: 'went on' });
    expect((await toolRows(stateStore, handle.sessionId))[0]).toMatchObject({ toolCallId: 'x1', isError: true });
  });
});

describe('refused calls beside a finishing call', () => {
  it('an unknown tool and a schema-refused call in the reply that also calls __finish__: each gets its error row, __finish__ gets { ok: true }, and the run completes', async () => {
    const { executor, stateStore } = setup();
    const agent = counterAgent([{ toolCalls: [{ name: 'ghost', args: {}, id: 'g1' }, { name: 'increment', args: { by: 'x' }, id: 'i1' }, { name: '__finish__', args: { answer: 'done' }, id: 'f1' }] }]);
    const handle = await executor.execute(agent, 'go');
    const result = await handle.result();
    expect(result.status).toBe('completed');
    expect(result.output).toEqual({ answer: 'done' });
    const codes = (await toolRows(stateStore, handle.sessionId)).map((r) => [r.toolCallId, r.errorInfo?.code]);
    expect(codes).toEqual([
      ['g1', 'tool_not_found'],
      ['i1', 'tool_invalid_input'],
      ['f1', undefined],
    ]);
    expect((await toolRows(stateStore, handle.sessionId)).find((r) => r.toolCallId === 'f1')?.content).toEqual({ ok: true });
  });
});

describe('calls that wait: client tools and approvals', () => {
  it('a client tool call (no execute) writes its tool_start chunk with the call\'s id, name and arguments, then the run suspends on it', async () => {
    const ask = defineTool({ name: 'ask_user', description: 'answered by the client', inputSchema: z.object({ q: z.string() }) });
    const { executor, streamManager } = setup();
    const handle = await executor.execute(counterAgent([{ toolCalls: [{ name: 'ask_user', args: { q: 'why' }, id: 'a1' }] }], { tools: [ask] }), 'go');
    expect((await handle.result()).status).toBe('suspended');
    expect(streamManager.chunks(handle.sessionId).filter((c) => c.type === 'tool_start')).toEqual([
      expect.objectContaining({ type: 'tool_start', toolCallId: 'a1', toolName: 'ask_user', arguments: { q: 'why' } }),
    ]);
  });

  it('needsApproval as a function asks for approval only for the inputs it returns true for', async () => {
    let ran = 0;
    const pay = defineTool({
      name: 'pay',
      description: 'pays an amount',
      inputSchema: z.object({ amount: z.number() }),
      needsApproval: (input) => input.amount > 100,
      execute: async (input) => (ran++, { paid: input.amount }),
    });
    for (const [amount, status, runs] of [
      [5, 'completed', 1],
      [500, 'suspended', 0],
    ] as const) {
      ran = 0;
      const { executor, streamManager } = setup();
      const handle = await executor.execute(counterAgent([{ toolCalls: [{ name: 'pay', args: { amount }, id: 'p1' }] }, finish('x')], { tools: [pay] }), 'go');
      expect((await handle.result()).status).toBe(status);
      expect(ran).toBe(runs);
      expect(streamManager.chunks(handle.sessionId).some((c) => c.type === 'tool_approval_request')).toBe(status === 'suspended');
    }
  });
});

describe('a side-effecting call a dead process started', () => {
  it('is not run again on recovery: its row is a tool_interrupted error saying its outcome is unknown, naming the tool, without onMessage, and the run goes on', async () => {
    let sends = 0;
    const send = defineTool({ name: 'send', description: 'sends an email', inputSchema: z.object({ to: z.string() }), sideEffects: true, execute: () => ++sends });
    const store = new InMemoryStateStore();
    const dead = await deadCounterRun(store, { sessionId: 'crashed' });
    await store.commit({ ...dead, kind: 'turn_start', appendMessages: [{ role: 'user', content: 'go' }], committedAt: Date.now() });
    const reply = { ok: true, text: '', finishReason: 'tool-calls', model: 'scripted-model', toolCalls: [{ id: 'b', name: 'send', arguments: { to: 'y' } }] };
    await store.appendJournal({ ...dead, stepIndex: 0, kind: 'model_reply', key: 'model_reply:0', data: { reply, patches: [] }, at: Date.now() });
    await store.appendJournal({ ...dead, stepIndex: 0, kind: 'call_started', key: 'call_started:0:b', data: {}, at: Date.now() });
    const { executor } = setup({ stateStore: store });
    const heard: string[] = [];
    const onMessage = (p: { message: { role: string } }) => void heard.push(p.message.role);
    const [handle] = await executor.recover({ agents: [counterAgent([finish('done')], { tools: [send], hooks: { onMessage } })] });
    const result = await handle!.result();
    expect(result.status).toBe('completed');
    expect(sends).toBe(0);
    // The interrupted row is the dead process's, replayed: onMessage fires for the new step's rows only.
    expect(heard.filter((r) => r === 'tool')).toHaveLength(1);
    const [row] = await toolRows(store, 'crashed');
    expect(row).toMatchObject({
      toolCallId: 'b',
      isError: true,
      content: 'Tool "send" was interrupted: its outcome is unknown and it was not run again.',
      errorInfo: { code: 'tool_interrupted', details: { tool: 'send' } },
    });
  });
});

describe('a pure call a dead process started', () => {
  it('runs again on recovery (only side-effecting calls are at most once): its result row and state write are there', async () => {
    const store = new InMemoryStateStore();
    const dead = await deadCounterRun(store, { sessionId: 'crashed-pure' });
    await store.commit({ ...dead, kind: 'turn_start', appendMessages: [{ role: 'user', content: 'go' }], committedAt: Date.now() });
    const reply = { ok: true, text: '', finishReason: 'tool-calls', model: 'scripted-model', toolCalls: [{ id: 'p', name: 'increment', arguments: { by: 4 } }] };
    await store.appendJournal({ ...dead, stepIndex: 0, kind: 'model_reply', key: 'model_reply:0', data: { reply, patches: [] }, at: Date.now() });
    await store.appendJournal({ ...dead, stepIndex: 0, kind: 'call_started', key: 'call_started:0:p', data: {}, at: Date.now() });
    const { executor } = setup({ stateStore: store });
    const [handle] = await executor.recover({ agents: [counterAgent([finish('done')])] });
    const result = await handle!.result();
    expect(result.status).toBe('completed');
    expect((result.state as Counter).count).toBe(4);
    expect((await toolRows(store, 'crashed-pure')).filter((r) => r.toolCallId === 'p')).toEqual([expect.objectContaining({ content: { ok: true, by: 4 } })]);
  });
});

describe('a finishing call\'s result and its duration', () => {
  it('a finishWith result too large to store does not finish the run: the call gets tool_result_too_large and the model is asked again', async () => {
    const big = defineTool({ name: 'big_report', description: 'Finish with a long answer', inputSchema: z.object({}), finishWith: true, execute: async () => ({ answer: 'x'.repeat(500) }) });
    const { executor, stateStore } = setup();
    const agent = counterAgent([{ toolCalls: [{ name: 'big_report', args: {}, id: 'b1' }] }, finish('short')], { tools: [big], limits: { maxToolResultChars: 200 } });
    const handle = await executor.execute(agent, 'go');
    const result = await handle.result();
    expect(result.status).toBe('completed');
    expect(result.output).toEqual({ answer: 'short' });
    expect((await toolRows(stateStore, handle.sessionId)).find((r) => r.toolCallId === 'b1')?.errorInfo?.code).toBe('tool_result_too_large');
  });

  it('a call\'s durationMs (afterTool payload, tool_end chunk) is the time its body took: at least its wait, at most the whole run', async () => {
    const slow = bareTool('slow', 'waits 30 ms', async () => {
      await new Promise((resolve) => setTimeout(resolve, 30));
      return 'ok';
    });
    const durations: number[] = [];
    const { executor, streamManager } = setup();
    const began = performance.now();
    const handle = await executor.execute(counterAgent([{ toolCalls: [{ name: 'slow', args: {} }] }, finish('x')], { tools: [slow], hooks: { afterTool: (p) => void durations.push(p.durationMs) } }), 'go');
    await handle.result();
    const wall = performance.now() - began;
    const end = streamManager.chunks(handle.sessionId).find((c) => c.type === 'tool_end') as { durationMs: number };
    for (const d of [durations[0]!, end.durationMs]) {
      expect(d).toBeGreaterThanOrEqual(25);
      expect(d).toBeLessThanOrEqual(wall);
    }
  });
});

describe('a call that leaves an invalid state', () => {
  it('its state_invalid result says the writes were dropped, is a tool-layer error and names the tool and the schema issues', async () => {
    const corrupt = bareTool('corrupt', 'writes a string into the counter', (_input, ctx) => {
      ctx.updateState<{ count: unknown }>((d) => {
        d.count = 'many';
      });
      return 'ok';
    });
    const { executor, stateStore } = setup();
    const handle = await executor.execute(counterAgent([{ toolCalls: [{ name: 'corrupt', args: {}, id: 'c1' }] }, finish('x')], { tools: [corrupt] }), 'go');
    expect(((await handle.result()).state as Counter).count).toBe(0);
    const [row] = await toolRows(stateStore, handle.sessionId);
    expect(row!.content).toBe('Tool "corrupt" wrote a state that does not match the agent\'s stateSchema; its writes were dropped.');
    expect(row!.errorInfo).toMatchObject({ code: 'state_invalid', layer: 'tool', details: { tool: 'corrupt' } });
    const issues = row!.errorInfo?.details?.['issues'];
    expect(Array.isArray(issues) && issues.length > 0).toBe(true);
  });
});

describe('results that cannot be stored', () => {
  it('a result the tool\'s outputSchema refuses is tool_invalid_output naming the tool', async () => {
    const typed = defineTool({ name: 'typed', description: 'returns a wrong shape', inputSchema: z.object({}), outputSchema: z.object({ n: z.number() }), execute: async () => ({ n: 'one' }) as never });
    const { executor, stateStore } = setup();
    const handle = await executor.execute(counterAgent([{ toolCalls: [{ name: 'typed', args: {}, id: 't1' }] }, finish('x')], { tools: [typed] }), 'go');
    await handle.result();
    const [row] = await toolRows(stateStore, handle.sessionId);
    expect(String(row!.content)).toMatch(/^Tool "typed" returned an invalid result:\n.+/);
    expect(row!.errorInfo).toMatchObject({ code: 'tool_invalid_output', details: { tool: 'typed' } });
  });

  it('a result that is not JSON (a BigInt) is tool_invalid_output with the problem named in its message and details, and a hint', async () => {
    const bigint = bareTool('bigint', 'returns a BigInt', () => ({ n: 10n }));
    const { executor, stateStore } = setup();
    const handle = await executor.execute(counterAgent([{ toolCalls: [{ name: 'bigint', args: {}, id: 'n1' }] }, finish('x')], { tools: [bigint] }), 'go');
    await handle.result();
    const [row] = await toolRows(stateStore, handle.sessionId);
    const problem = row!.errorInfo?.details?.['problem'];
    expect(typeof problem === 'string' && problem.length > 0).toBe(true);
    expect(row!.content).toBe(`Tool "bigint" returned a result that cannot be serialized as JSON (${String(problem)}).`);
    expect(row!.errorInfo).toMatchObject({ code: 'tool_invalid_output', hint: 'Return JSON values only: no BigInt, functions, symbols or circular objects.', details: { tool: 'bigint' } });
  });
});
