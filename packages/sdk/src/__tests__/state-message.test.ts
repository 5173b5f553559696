import { describe, expect, it } from 'vitest';
import type { MessagePayload, StateChangePayload } from '../index.js';
import { createHookRecorder } from '../testing/index.js';
import { counterAgent, finish, recordedRun, setup, throwing, type Counter } from './harness.js';

describe('state and message hooks (section 1.7)', () => {
  it('rule 89: onStateChange gets { previousState, newState, source: tool, toolName } for a tool write', async () => {
    const { rec } = await recordedRun(counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 2 } }] }, finish('x')]));
    const [change] = rec.of('onStateChange');
    const payload = change!.payload as StateChangePayload<Counter>;
    expect(payload.previousState).toEqual({ count: 0, log: [] });
    expect(payload.newState).toEqual({ count: 2, log: ['+2'] });
    expect(payload.source).toBe('tool');
    expect(payload.toolName).toBe('increment');
    expect(payload.patches.length).toBeGreaterThan(0);
  });

  it("rule 89: a hook's write fires onStateChange with source hook and no toolName", async () => {
    const agent = counterAgent([finish('x')], { hooks: { onAgentStart: (_p, ctx) => ctx.updateState((d) => void (d.count = 10)) } });
    const { rec } = await recordedRun(agent);
    const payload = rec.of('onStateChange')[0]!.payload as StateChangePayload<Counter>;
    expect(payload.source).toBe('hook');
    expect(payload.toolName).toBeUndefined();
    expect(payload.newState.count).toBe(10);
  });

  it('D9: writes an onStateChange handler makes are applied but fire no further onStateChange', async () => {
    const { executor } = setup();
    let fired = 0;
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 } }] }, finish('x')], {
      hooks: {
        onStateChange: (_p, ctx) => {
          fired++;
          ctx.updateState((d) => void d.log.push('audited'));
        },
      },
    });
    const result = await (await executor.execute(agent, 'go')).result();
    expect(fired).toBe(1);
    expect(result.state.log).toEqual(['+1', 'audited']);
  });

  it('rules 90, 91: onMessage fires for every appended message, the user input included, with its index', async () => {
    const { executor, stateStore } = setup();
    const rec = createHookRecorder();
    const handle = await executor.execute(counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 } }] }, finish('x')]), 'hi', { hooks: rec.hooks });
    await handle.result();
    const messages = rec.of('onMessage').map((c) => c.payload as MessagePayload);
    expect(messages.map((m) => m.messageIndex)).toEqual([0, 1, 2, 3, 4]);
    expect(messages[0]!.message).toEqual({ role: 'user', content: 'hi' });
    const stored = (await stateStore.loadSession(handle.sessionId))!.messages;
    expect(messages.map((m) => m.message)).toEqual(stored);
  });

  it('rule 90: message indexes continue across turns of one session', async () => {
    const { executor } = setup();
    const rec = createHookRecorder();
    const agent = counterAgent([finish('a'), finish('b')]);
    await (await executor.execute(agent, 'one', { sessionId: 'idx' })).result();
    await (await executor.execute(agent, 'two', { sessionId: 'idx', hooks: rec.hooks })).result();
    expect(rec.of('onMessage').map((c) => (c.payload as MessagePayload).messageIndex)).toEqual([3, 4, 5]);
  });

  it('rule 19 / D1: onAgentStart fires before the initial onMessage; both before the turn start commit and the first model call', async () => {
    const { rec } = await recordedRun(counterAgent([finish('x')]), { points: ['onAgentStart', 'onMessage', 'beforeLLMCall'] });
    expect(rec.points().slice(0, 3)).toEqual(['onAgentStart', 'onMessage', 'beforeLLMCall']);
  });

  it('rules 119, 120: getState is a frozen snapshot and updateState applies an Immer draft', async () => {
    const { executor } = setup();
    let frozen = false;
    let after = -1;
    const agent = counterAgent([finish('x')], {
      hooks: {
        onAgentStart: (_p, ctx) => {
          const s = ctx.getState();
          frozen = Object.isFrozen(s);
          ctx.updateState((draft) => {
            draft.count = 42;
          });
          after = ctx.getState().count;
          expect(s.count).toBe(0);
        },
      },
    });
    await (await executor.execute(agent, 'go')).result();
    expect(frozen).toBe(true);
    expect(after).toBe(42);
  });

  it('rule 129: a step that fails without a stop keeps its afterLLMCall writes; its tools\' writes are dropped (rule 125)', async () => {
    const { executor, stateStore } = setup();
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 5 } }] }], {
      hooks: {
        afterLLMCall: (_p, ctx) => ctx.updateState((d) => void d.log.push('llm-seen')),
        afterTool: throwing('audit down'),
      },
    });
    const handle = await executor.execute(agent, 'go');
    const result = await handle.result();
    expect(result.status).toBe('failed');
    expect(result.state).toEqual({ count: 0, log: ['llm-seen'] });
    const session = await stateStore.loadSession(handle.sessionId);
    expect(session!.state).toEqual({ count: 0, log: ['llm-seen'] });
    // The failed step's rows were never committed.
    expect(session!.messages.map((m) => m.role)).toEqual(['user']);
  });

  it('rules 125, 126, 130: a run interrupted by its abort signal discards the uncommitted step, afterLLMCall writes included, and still writes K5', async () => {
    const { executor, stateStore } = setup();
    const controller = new AbortController();
    const rec = createHookRecorder();
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 } }] }, { ...finish('x'), delayMs: 2_000 }], {
      hooks: {
        afterLLMCall: (_p, ctx) => ctx.updateState((d) => void d.log.push(`llm@${ctx.stepCount}`)),
        beforeLLMCall: (_p, ctx) => {
          if (ctx.stepCount === 1) setTimeout(() => controller.abort(), 10);
        },
      },
    });
    const handle = await executor.execute(agent, 'go', { abortSignal: controller.signal, hooks: rec.hooks });
    const result = await handle.result();
    expect(result.status).toBe('interrupted');
    expect(result.error).toMatchObject({ code: 'run_interrupted', severity: 'info', retryable: true });
    expect(result.state).toEqual({ count: 1, log: ['llm@0', '+1'] });
    const fail = rec.of('onAgentFail');
    expect(fail).toHaveLength(1);
    expect((fail[0]!.payload as { recoverable: boolean }).recoverable).toBe(true);
    expect((await stateStore.getRun(handle.runId))?.status).toBe('interrupted');
    expect((await stateStore.loadSession(handle.sessionId))!.state).toEqual({ count: 1, log: ['llm@0', '+1'] });
  });
});
