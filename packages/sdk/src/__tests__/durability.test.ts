import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { defineTool, InMemoryStateStore, InMemoryStreamManager, JSAgentExecutor, RunSupersededError, silentLogger, type AgentHooks, type HookContext, type Message, type StateStore, type ToolResultMessage } from '../index.js';
import { createGate, createHookRecorder } from '../testing/index.js';
import { bareTool, counterAgent, deadCounterRun, finish, setup, throwing, type Counter } from './harness.js';
import type { Commit } from '../store.js';

const tick = (ms = 5) => new Promise((r) => setTimeout(r, ms));

describe('supersede (section 1.3)', () => {
  it('rule 49 / rule 45: a supersede that lands between onAgentComplete and K5 fires onAgentComplete, then onAgentSuperseded; the run ends superseded', async () => {
    const { executor, stateStore } = setup();
    const log: string[] = [];
    let second: Promise<unknown> | undefined;
    const agent = counterAgent([finish('first'), finish('second')], {
      hooks: {
        onAgentComplete: async (payload, ctx) => {
          log.push(`complete:${(payload.output as { answer: string }).answer}`);
          if (log.length === 1) second = (await executor.execute(agent, 'again', { sessionId: ctx.sessionId })).result();
        },
        onAgentSuperseded: (payload) => void log.push(`superseded:${payload.error.code}`),
      },
    });
    const first = await executor.execute(agent, 'go', { sessionId: 'race' });
    const result = await first.result();
    await second;
    expect(result.status).toBe('superseded');
    expect(log).toEqual(['complete:first', 'superseded:state_run_superseded', 'complete:second']);
    expect((await stateStore.getRun(first.runId))?.status).toBe('superseded');
  });

  it('rules 56–60: a supersede raised inside a tool ends the run at once; started siblings finish unpersisted (their hooks may follow onAgentSuperseded); no later tool starts', async () => {
    const { executor, stateStore } = setup();
    const order: string[] = [];
    const slowGate = createGate();
    const slow = bareTool('slow', 'slow sibling', async (_i, ctx) => {
      await slowGate.opened;
      ctx.updateState<Counter>((d) => void (d.count = 50));
      return 'slow done';
    });
    const fenced = bareTool('fenced', 'a fenced write that finds its run superseded', async (_i, ctx) => {
      await tick();
      throw new RunSupersededError(ctx.sessionId, ctx.runId, 'newer-run');
    });
    const late = bareTool('late', 'starts late', () => void order.push('late:execute'));
    const agent = counterAgent(
      [{ toolCalls: [{ name: 'slow', args: {}, id: 's' }, { name: 'fenced', args: {}, id: 'f' }, { name: 'late', args: {}, id: 'l' }] }, finish('x')],
      {
        tools: [slow, fenced, late],
        hooks: {
          beforeTool: async (payload) => {
            if (payload.toolCall.name === 'late') await tick(40);
          },
          afterTool: (payload) => void order.push(`afterTool:${payload.toolCall.name}`),
          onAgentSuperseded: () => void order.push('onAgentSuperseded'),
          onAgentFail: () => void order.push('onAgentFail'),
        },
      },
    );
    const handle = await executor.execute(agent, 'go');
    const result = await handle.result();
    expect(result.status).toBe('superseded');
    expect(order).toEqual(['onAgentSuperseded']);
    slowGate.open();
    await tick(80);
    expect(order).toEqual(['onAgentSuperseded', 'afterTool:slow']);
    const session = await stateStore.loadSession(handle.sessionId);
    expect((session!.state as Counter).count).toBe(0);
    expect(session!.messages.map((m) => m.role)).toEqual(['user']);
  });

  it('rule 46 / D13: a run that loses its lease is superseded and writes nothing more', async () => {
    const { stateStore, executor } = setup({ executor: { leaseMs: 60 } });
    const rec = createHookRecorder();
    const gate = createGate();
    const wait = bareTool('wait', 'waits', async () => gate.opened.then(() => 'ok'));
    const handle = await executor.execute(counterAgent([{ toolCalls: [{ name: 'wait', args: {} }] }, finish('x')], { tools: [wait] }), 'go', {
      hooks: rec.hooks,
    });
    await tick(10);
    // Another process decides this one is dead and claims the run (its clock is ahead of the lease).
    await stateStore.claimRun(handle.runId, 'other-process', 60_000, Date.now() + 10 * 60_000);
    await tick(60);
    gate.open();
    const result = await handle.result();
    expect(result.status).toBe('superseded');
    expect(rec.of('onAgentSuperseded')).toHaveLength(1);
    expect(rec.of('onAgentFail')).toHaveLength(0);
    expect((await stateStore.loadSession(handle.sessionId))!.stepCount).toBe(0);
  });
});

describe('stop (section 1.10, C6)', () => {
  it('rule 14 / rules 125–130 / C6: stop() keeps the calls whose results are recorded, pairs the rest run_stopped, discards afterLLMCall writes, writes K5 and fires onAgentFail(run_interrupted)', async () => {
    const { executor, stateStore, streamManager } = setup();
    const rec = createHookRecorder();
    const quick = bareTool('quick', 'finishes before the stop', (_i, ctx) => {
      ctx.updateState<Counter>((d) => void d.log.push('quick'));
      return 'quick done';
    });
    const stuck = bareTool('stuck', 'honours its abort signal', async (_i, ctx) => {
      ctx.updateState<Counter>((d) => void d.log.push('stuck-partial'));
      await new Promise((_r, reject) => ctx.abortSignal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }));
      return 'never';
    });
    const agent = counterAgent([{ toolCalls: [{ name: 'quick', args: {}, id: 'q' }, { name: 'stuck', args: {}, id: 's' }] }, finish('x')], {
      tools: [quick, stuck],
      hooks: { afterLLMCall: (_p, ctx) => ctx.updateState((d) => void d.log.push('llm')) },
    });
    const handle = await executor.execute(agent, 'go', { hooks: rec.hooks });
    await tick(20);
    const result = await handle.stop('user pressed stop');
    expect(result.status).toBe('interrupted');
    expect(result.error).toMatchObject({ code: 'run_interrupted', severity: 'info', retryable: true });
    expect((result.state as Counter).log).toEqual(['quick']);
    expect(rec.of('onAgentFail')).toHaveLength(1);
    expect((rec.of('onAgentFail')[0]!.payload as { recoverable: boolean }).recoverable).toBe(true);
    const session = await stateStore.loadSession(handle.sessionId);
    expect((session!.state as Counter).log).toEqual(['quick']);
    const tools = session!.messages.filter((m): m is ToolResultMessage => m.role === 'tool');
    expect(tools.find((m) => m.toolCallId === 'q')).toMatchObject({ content: 'quick done' });
    expect(tools.find((m) => m.toolCallId === 's')).toMatchObject({ isError: true, errorInfo: { code: 'run_stopped' } });
    expect((await stateStore.getRun(handle.runId))?.status).toBe('interrupted');
    expect(streamManager.chunks(handle.sessionId).at(-1)).toMatchObject({ type: 'error', status: 'interrupted' });
  });

  it('rule 130 / rule 23: a stopped run keeps the turn\'s original start writes', async () => {
    const { executor, stateStore } = setup();
    const agent = counterAgent([{ ...finish('x'), delayMs: 1_000 }], {
      hooks: { onAgentStart: (_p, ctx) => ctx.updateState((d) => void d.log.push('started')) },
    });
    const handle = await executor.execute(agent, 'go');
    await tick(20);
    await handle.interrupt();
    expect(((await stateStore.loadSession(handle.sessionId))!.state as Counter).log).toEqual(['started']);
  });
});

describe('recovery of a run whose process died (memory store, simulated crash points)', () => {
  const input: Message[] = [{ role: 'user', content: 'go' }];
  const deadRun = (store: InMemoryStateStore, runId = 'dead-run') => deadCounterRun(store, { sessionId: 'crashed', runId, recorded: { userId: 'u1' } });

  it('after K1: the recovered run fires its start signal (onAgentStart startSignal true) once and completes', async () => {
    const store = new InMemoryStateStore();
    await deadRun(store);
    const { executor } = setup({ stateStore: store });
    const rec = createHookRecorder();
    const agent = counterAgent([finish('done')], { hooks: rec.hooks });
    const [handle] = await executor.recover({ agents: [agent] });
    const result = await handle!.result();
    expect(result.status).toBe('completed');
    expect(rec.of('onAgentStart').map((c) => (c.payload as { startSignal: boolean }).startSignal)).toEqual([true]);
    expect((await store.getRun('dead-run'))?.epoch).toBe(2);
  });

  it('rules 21, 22: inside onAgentStart (marker staged, no K2): the owed start work runs with startSignal false and onMessage re-fires for the input', async () => {
    const store = new InMemoryStateStore();
    const dead = await deadRun(store);
    await store.appendJournal({ ...dead, stepIndex: 0, kind: 'start_signal', key: 'start_signal', data: {}, at: Date.now() });
    const { executor } = setup({ stateStore: store });
    const rec = createHookRecorder();
    const [handle] = await executor.recover({ agents: [counterAgent([finish('done')], { hooks: rec.hooks })] });
    expect((await handle!.result()).status).toBe('completed');
    expect(rec.of('onAgentStart').map((c) => (c.payload as { startSignal: boolean }).startSignal)).toEqual([false]);
    expect(rec.of('onMessage')[0]!.payload).toMatchObject({ message: { role: 'user', content: 'go' }, messageIndex: 0 });
  });

  it('rule 23: after K2 the recovered run never runs the start work again and keeps its writes', async () => {
    const store = new InMemoryStateStore();
    const dead = await deadRun(store);
    await store.commit({ ...dead, kind: 'turn_start', appendMessages: input, state: { count: 0, log: ['started'] }, checkpoint: 'turn_start', committedAt: Date.now() });
    const { executor } = setup({ stateStore: store });
    const rec = createHookRecorder();
    const [handle] = await executor.recover({ agents: [counterAgent([finish('done')], { hooks: rec.hooks })] });
    const result = await handle!.result();
    expect((result.state as Counter).log).toEqual(['started']);
    expect(rec.of('onAgentStart')).toHaveLength(0);
    expect(rec.of('onMessage').map((c) => (c.payload as { message: Message }).message.role)).toEqual(['assistant', 'tool']);
  });

  it('a committed step is never redone: the recovered run continues from the last committed step', async () => {
    const store = new InMemoryStateStore();
    const dead = await deadRun(store);
    await store.commit({ ...dead, kind: 'turn_start', appendMessages: input, committedAt: Date.now() });
    const step0: Message[] = [
      { role: 'assistant', content: '', toolCalls: [{ id: 'c0', name: 'increment', arguments: { by: 1 } }] },
      { role: 'tool', toolCallId: 'c0', toolName: 'increment', content: { ok: true, by: 1 } },
    ];
    await store.commit({ ...dead, kind: 'step', stepIndex: 0, appendMessages: step0, state: { count: 1, log: ['+1'] }, checkpoint: 'step', committedAt: Date.now() });
    const { executor } = setup({ stateStore: store });
    const rec = createHookRecorder();
    const [handle] = await executor.recover({ agents: [counterAgent([finish('done')], { hooks: rec.hooks })] });
    const result = await handle!.result();
    expect(result).toMatchObject({ status: 'completed', stepCount: 2, output: { answer: 'done' } });
    expect((result.state as Counter).count).toBe(1);
    expect(rec.of('beforeLLMCall').map((c) => c.stepCount)).toEqual([1]);
  });

  it('a finishing step was committed: only the terminal work is left (onAgentComplete, K5)', async () => {
    const store = new InMemoryStateStore();
    const dead = await deadRun(store);
    await store.commit({ ...dead, kind: 'turn_start', appendMessages: input, committedAt: Date.now() });
    await store.commit({ ...dead, kind: 'step', stepIndex: 0, output: { answer: 'early' }, appendMessages: [{ role: 'assistant', content: 'x' }], committedAt: Date.now() });
    const { executor } = setup({ stateStore: store });
    const rec = createHookRecorder();
    const [handle] = await executor.recover({ agents: [counterAgent([], { hooks: rec.hooks })] });
    const result = await handle!.result();
    expect(result).toMatchObject({ status: 'completed', output: { answer: 'early' } });
    expect(rec.of('beforeLLMCall')).toHaveLength(0);
    expect(rec.of('onAgentComplete')).toHaveLength(1);
  });

  it('a terminal hook outcome recorded before K5 is replayed, not called again', async () => {
    const store = new InMemoryStateStore();
    const dead = await deadRun(store);
    await store.commit({ ...dead, kind: 'turn_start', appendMessages: input, committedAt: Date.now() });
    await store.commit({ ...dead, kind: 'step', stepIndex: 0, output: { answer: 'x' }, committedAt: Date.now() });
    await store.appendJournal({
      ...dead,
      stepIndex: 1,
      kind: 'terminal_hook',
      key: 'terminal_hook',
      data: { output: { answer: 'x' }, exitReason: 'finish_tool', endCarriesState: true, patches: [{ op: 'replace', path: ['count'], value: 9 }] },
      at: Date.now(),
    });
    const { executor } = setup({ stateStore: store });
    const rec = createHookRecorder();
    const [handle] = await executor.recover({ agents: [counterAgent([], { hooks: rec.hooks })] });
    const result = await handle!.result();
    expect(result.status).toBe('completed');
    expect((result.state as Counter).count).toBe(9);
    expect(rec.of('onAgentComplete')).toHaveLength(0);
    expect(((await store.loadSession('crashed'))!.state as Counter).count).toBe(9);
  });

  it('a side-effecting tool whose result was journaled is replayed, not run again; one that only started is not run again (tool_interrupted)', async () => {
    let sends = 0;
    const send = defineTool({ name: 'send', description: 'sends an email', inputSchema: z.object({ to: z.string() }), sideEffects: true, execute: () => ++sends });
    const store = new InMemoryStateStore();
    const dead = await deadRun(store);
    await store.commit({ ...dead, kind: 'turn_start', appendMessages: input, committedAt: Date.now() });
    const reply = { ok: true, text: '', finishReason: 'tool-calls', model: 'scripted-model', toolCalls: [{ id: 'a', name: 'send', arguments: { to: 'x' } }, { id: 'b', name: 'send', arguments: { to: 'y' } }] };
    await store.appendJournal({ ...dead, stepIndex: 0, kind: 'model_reply', key: 'model_reply:0', data: { reply, patches: [] }, at: Date.now() });
    await store.appendJournal({ ...dead, stepIndex: 0, kind: 'call_started', key: 'call_started:0:a', data: {}, at: Date.now() });
    await store.appendJournal({
      ...dead,
      stepIndex: 0,
      kind: 'call_result',
      key: 'call_result:0:a',
      data: { message: { role: 'tool', toolCallId: 'a', toolName: 'send', content: 1 }, patches: [{ op: 'replace', path: ['count'], value: 1 }], success: true, durationMs: 3 },
      at: Date.now(),
    });
    await store.appendJournal({ ...dead, stepIndex: 0, kind: 'call_started', key: 'call_started:0:b', data: {}, at: Date.now() });
    const { executor } = setup({ stateStore: store });
    const rec = createHookRecorder();
    const [handle] = await executor.recover({ agents: [counterAgent([finish('done')], { tools: [send], hooks: rec.hooks })] });
    const result = await handle!.result();
    expect(result.status).toBe('completed');
    expect(sends).toBe(0);
    expect((result.state as Counter).count).toBe(1);
    expect(rec.of('beforeTool')).toHaveLength(0);
    const rows = (await store.loadSession('crashed'))!.messages.filter((m): m is ToolResultMessage => m.role === 'tool');
    expect(rows.find((m) => m.toolCallId === 'a')?.content).toBe(1);
    expect(rows.find((m) => m.toolCallId === 'b')?.errorInfo?.code).toBe('tool_interrupted');
    expect(await store.loadJournal('dead-run')).toEqual([]);
  });

  it('a run whose lease has not expired is not recovered, and one run is claimed by one process only', async () => {
    const store = new InMemoryStateStore();
    await store.beginRun({
      sessionId: 'alive', runId: 'alive-run', agentType: 'counter', signal: 'start', initialState: {}, newTurn: { turnId: 't', input },
      startedAt: Date.now(), leaseOwner: 'alive-process', leaseMs: 60_000, options: {},
    });
    await deadRun(store);
    const a = setup({ stateStore: store }).executor;
    const b = setup({ stateStore: store }).executor;
    const agent = counterAgent([finish('a'), finish('b')]);
    const [fromA, fromB] = await Promise.all([a.recover({ agents: [agent] }), b.recover({ agents: [agent] })]);
    expect(fromA.length + fromB.length).toBe(1);
    expect([...fromA, ...fromB][0]!.runId).toBe('dead-run');
  });
});

describe('hook idempotency keys (issue 3 item 5)', () => {
  it('every hook context carries an idempotency key (run, step, call, hook) and the attempt number', async () => {
    const { executor } = setup();
    const keys: string[] = [];
    const attempts = new Set<number>();
    const capture = (_p: unknown, ctx: HookContext) => {
      keys.push(ctx.idempotencyKey);
      attempts.add(ctx.attempt);
    };
    const handle = await executor.execute(counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 }, id: 'c1' }] }, finish('x')]), 'go', {
      hooks: { onAgentStart: capture, beforeTool: capture, afterTool: capture, afterLLMCall: capture },
    });
    await handle.result();
    const r = handle.runId;
    expect(keys).toEqual([`${r}:0:-:onAgentStart`, `${r}:0:-:afterLLMCall`, `${r}:0:c1:beforeTool`, `${r}:0:c1:afterTool`, `${r}:1:-:afterLLMCall`]);
    expect([...attempts]).toEqual([1]);
  });
});

describe('recovery of resumed, retried and approved work (review regressions)', () => {
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  /** A store whose process "dies": one kind of commit never returns and lease renewals fail. */
  function dying(store: InMemoryStateStore, dieAt: (c: Commit) => boolean): StateStore {
    return new Proxy(store, {
      get(target, prop) {
        if (prop === 'commit') return (c: Commit) => (dieAt(c) ? new Promise(() => {}) : target.commit(c));
        if (prop === 'renewLease') return () => Promise.reject(new Error('network down'));
        const value: unknown = Reflect.get(target, prop);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
  }
  let sends = 0;
  const send = defineTool({ name: 'send', description: 'sends', inputSchema: z.object({ to: z.string() }), sideEffects: true, needsApproval: true, execute: () => ++sends });
  const pay = defineTool({ name: 'pay', description: 'pays', inputSchema: z.object({}), finishWith: true, needsApproval: true, execute: () => ({ answer: 'paid' }) });
  const agentOf = (steps: Parameters<typeof counterAgent>[0], hooks?: AgentHooks<Counter, { answer: string }>) =>
    counterAgent(steps, { tools: [send, pay], ...(hooks ? { hooks } : {}), llmConfig: { ...counterAgent([]).llmConfig, model: counterAgent(steps).llmConfig.model, retry: { maxAttempts: 1 } } });

  it('an approved side-effecting call that ran before a crash is replayed, not run again', async () => {
    sends = 0;
    const store = new InMemoryStateStore();
    const a = new JSAgentExecutor(dying(store, (c) => c.kind === 'resume'), new InMemoryStreamManager(), new VercelAIAdapter(), { logger: silentLogger, leaseMs: 60 });
    const first = await a.execute(agentOf([{ toolCalls: [{ name: 'send', args: { to: 'x' } }] }, finish('n')]), 'go', { sessionId: 'r1' });
    const pending = (await first.result()).suspension!.pending[0]!;
    await a.approve('r1', pending.toolCallId);
    await sleep(250);
    const b = new JSAgentExecutor(store, new InMemoryStreamManager(), new VercelAIAdapter(), { logger: silentLogger });
    const [handle] = await b.recover({ agents: [agentOf([finish('x')])] });
    expect((await handle!.result()).status).toBe('completed');
    expect(sends).toBe(1);
  });

  it('a finishWith answer delivered by approval completes a recovered run without another model call', async () => {
    const store = new InMemoryStateStore();
    const a = new JSAgentExecutor(dying(store, (c) => c.kind === 'terminal'), new InMemoryStreamManager(), new VercelAIAdapter(), { logger: silentLogger, leaseMs: 60 });
    const first = await a.execute(agentOf([{ toolCalls: [{ name: 'pay', args: {} }] }]), 'go', { sessionId: 'r2' });
    await a.approve('r2', (await first.result()).suspension!.pending[0]!.toolCallId);
    await sleep(250);
    const rec = createHookRecorder();
    const b = new JSAgentExecutor(store, new InMemoryStreamManager(), new VercelAIAdapter(), { logger: silentLogger });
    const [handle] = await b.recover({ agents: [agentOf([finish('model-again')], rec.hooks)] });
    expect((await handle!.result()).output).toEqual({ answer: 'paid' });
    expect(rec.of('beforeLLMCall')).toHaveLength(0);
  });

  it('a recovered retry run fires onAgentRetry once in all and appends its message once', async () => {
    const store = new InMemoryStateStore();
    const retries: string[] = [];
    const agent = agentOf([{ error: { status: 401 } }, { toolCalls: [{ name: 'increment', args: { by: 1 } }] }, finish('never')], { onAgentRetry: (ctx) => void retries.push(ctx.runId) });
    const a = new JSAgentExecutor(dying(store, (c) => c.kind === 'step' && c.stepIndex === 1), new InMemoryStreamManager(), new VercelAIAdapter(), { logger: silentLogger, leaseMs: 60, agents: [agent] });
    expect((await (await a.execute(agent, 'go', { sessionId: 'r3' })).result()).status).toBe('failed');
    await a.retry('r3', { message: 'try again' });
    await sleep(250);
    const b = new JSAgentExecutor(store, new InMemoryStreamManager(), new VercelAIAdapter(), { logger: silentLogger });
    const [handle] = await b.recover({ agents: [agentOf([finish('done')], { onAgentRetry: (ctx) => void retries.push(ctx.runId) })] });
    expect((await handle!.result()).status).toBe('completed');
    expect(retries).toHaveLength(1);
    const users = (await store.loadSession('r3'))!.messages.filter((m) => m.role === 'user').map((m) => m.content);
    expect(users).toEqual(['go', 'try again']);
  });

  it('two concurrent approvals of one call: the first delivers it, the second is refused with state_conflict (checked inside K1)', async () => {
    sends = 0;
    const store = new InMemoryStateStore();
    let begins = 0;
    const slow = new Proxy(store, {
      get(target, prop) {
        if (prop === 'beginRun') return async (r: Parameters<InMemoryStateStore['beginRun']>[0]) => ((++begins === 3 ? await sleep(10) : undefined), target.beginRun(r));
        const value: unknown = Reflect.get(target, prop);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const executor = new JSAgentExecutor(slow, new InMemoryStreamManager(), new VercelAIAdapter(), { logger: silentLogger });
    const first = await executor.execute(agentOf([{ toolCalls: [{ name: 'send', args: { to: 'x' } }] }, finish('a')]), 'go', { sessionId: 'r4' });
    const id = (await first.result()).suspension!.pending[0]!.toolCallId;
    const [ok, refused] = await Promise.allSettled([executor.approve('r4', id), executor.approve('r4', id)]);
    expect(ok.status).toBe('fulfilled');
    expect(refused).toMatchObject({ status: 'rejected', reason: { info: { code: 'state_conflict' } } });
    await (ok as PromiseFulfilledResult<Awaited<ReturnType<typeof executor.approve>>>).value.result();
    expect(sends).toBe(1);
  });

  it('a failure in the start work persists none of its writes (the start commit never landed)', async () => {
    const { executor, stateStore } = setup();
    const agent = counterAgent([finish('x')], {
      hooks: {
        onAgentStart: (_p, ctx) => ctx.updateState((d) => void (d.count = 7)),
        onMessage: throwing('bad input'),
      },
    });
    const handle = await executor.execute(agent, 'go');
    expect((await handle.result()).status).toBe('failed');
    expect(((await stateStore.loadSession(handle.sessionId))!.state as Counter).count).toBe(0);
  });
});
