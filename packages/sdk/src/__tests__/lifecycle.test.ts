import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AgentError, defineAgent, defineTool, InMemoryStateStore } from '../index.js';
import { createGate, createHookRecorder, createScriptedModel } from '../testing/index.js';
import { bareTool, collect, counterAgent, finish, recordedRun, setup, textAgent, throwing, type Counter } from './harness.js';
import type { Commit, CommitReceipt } from '../store.js';

describe('lifecycle: how a run ends decides its terminal hooks', () => {
  it('rule 8 / rule 30: a run that completes fires onAgentComplete and no other terminal hook', async () => {
    const { executor } = setup();
    const rec = createHookRecorder();
    const handle = await executor.execute(counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 2 } }] }, finish('two')]), 'count', { hooks: rec.hooks });
    const result = await handle.result();
    expect(result.status).toBe('completed');
    expect(result.output).toEqual({ answer: 'two' });
    expect(result.exitReason).toBe('finish_tool');
    expect(rec.of('onAgentComplete')).toHaveLength(1);
    expect(rec.of('onAgentFail')).toHaveLength(0);
    expect(rec.of('onAgentSuperseded')).toHaveLength(0);
  });

  it('rule 9 / rule 35: a run that fails after its start fires onAgentFail with error, finalState, stepCount, durationMs, recoverable', async () => {
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 } }] }, { error: { status: 401, message: 'bad key' } }]);
    const { result, rec } = await recordedRun(agent);
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('provider_auth');
    const [fail] = rec.of('onAgentFail');
    const payload = fail!.payload as { error: AgentError; finalState: Counter; stepCount: number; durationMs: number; recoverable: boolean };
    expect(AgentError.isInstance(payload.error)).toBe(true);
    expect(payload.error.code).toBe('provider_auth');
    expect(payload.finalState.count).toBe(1);
    expect(payload.stepCount).toBe(1);
    expect(payload.durationMs).toBeGreaterThanOrEqual(0);
    expect(payload.recoverable).toBe(false);
    expect(rec.of('onAgentComplete')).toHaveLength(0);
  });

  it('rules 10, 11, 12, 34: a run that fails at its entry (K1) fires no hook at all and execute() rejects with a typed error', async () => {
    class FailingStore extends InMemoryStateStore {
      override async beginRun(): Promise<never> {
        throw new AgentError('state_commit_failed', 'disk full');
      }
    }
    const { executor } = setup({ stateStore: new FailingStore() });
    const rec = createHookRecorder();
    const agent = counterAgent([finish('x')]);
    await expect(executor.execute(agent, 'go', { hooks: rec.hooks })).rejects.toMatchObject({ info: { code: 'state_commit_failed' } });
    expect(rec.calls).toHaveLength(0);
  });

  it('rule 11: a stream claim failure is an entry failure too: no hook, the run is recorded failed', async () => {
    const { executor, stateStore, streamManager } = setup();
    streamManager.claim = async () => {
      throw new AgentError('stream_closed', 'stream unavailable');
    };
    const rec = createHookRecorder();
    await expect(executor.execute(counterAgent([finish('x')]), 'go', { hooks: rec.hooks, sessionId: 's-entry' })).rejects.toMatchObject({
      info: { code: 'stream_closed' },
    });
    expect(rec.calls).toHaveLength(0);
    const session = await stateStore.loadSession('s-entry');
    const run = await stateStore.getRun(session!.currentRunId!);
    expect(run?.status).toBe('failed');
  });

  it('rule 26: an onAgentStart that throws fails the run and onAgentFail fires exactly once', async () => {
    const agent = counterAgent([finish('x')], { hooks: { onAgentStart: throwing('no start') } });
    const { result, rec } = await recordedRun(agent);
    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({ code: 'hook_failed', layer: 'hook', severity: 'fatal', retryable: false });
    expect(result.error?.details).toMatchObject({ hook: 'onAgentStart' });
    expect(rec.of('onAgentFail')).toHaveLength(1);
    expect(rec.of('beforeLLMCall')).toHaveLength(0);
  });

  it('rule 26 / rule 92: an initial onMessage that throws fails the run and onAgentFail fires exactly once', async () => {
    const agent = counterAgent([finish('x')], { hooks: { onMessage: throwing('bad input') } });
    const { result, rec } = await recordedRun(agent);
    expect(result.status).toBe('failed');
    expect(result.error?.details).toMatchObject({ hook: 'onMessage' });
    expect(rec.of('onAgentFail')).toHaveLength(1);
  });

  it('rules 25, 27, 28: onAgentStart fires once per turn, before the first LLM call, with { agent, input, initialState, startSignal: true }', async () => {
    const { executor } = setup();
    const rec = createHookRecorder();
    const agent = counterAgent([finish('x')]);
    await (await executor.execute(agent, 'hello there', { hooks: rec.hooks, initialState: { count: 5 } })).result();
    const starts = rec.of('onAgentStart');
    expect(starts).toHaveLength(1);
    const payload = starts[0]!.payload as { agent: unknown; input: string; initialState: Counter; startSignal: boolean };
    expect(payload.agent).toBe(agent);
    expect(payload.input).toBe('hello there');
    expect(payload.initialState).toEqual({ count: 5, log: [] });
    expect(payload.startSignal).toBe(true);
    expect(rec.points().indexOf('onAgentStart')).toBeLessThan(rec.points().indexOf('beforeLLMCall'));
  });

  it('rule 31: onAgentComplete fires after a finishWith tool ran its full hook sequence and its output was promoted (D7)', async () => {
    const report = defineTool({
      name: 'report',
      description: 'Finish with a report',
      inputSchema: z.object({ text: z.string() }),
      finishWith: true,
      execute: async (input) => ({ answer: input.text.toUpperCase() }),
    });
    const agent = counterAgent([{ toolCalls: [{ name: 'report', args: { text: 'done' } }] }], { tools: [report] });
    const { result, rec } = await recordedRun(agent);
    expect(result.status).toBe('completed');
    expect(result.output).toEqual({ answer: 'DONE' });
    expect(result.exitReason).toBe('finish_with');
    const points = rec.points();
    expect(points.filter((p) => p === 'beforeTool' || p === 'afterTool')).toEqual(['beforeTool', 'afterTool']);
    expect(points.indexOf('afterTool')).toBeLessThan(points.indexOf('onAgentComplete'));
    expect((rec.of('onAgentComplete')[0]!.payload as { output: unknown }).output).toEqual({ answer: 'DONE' });
  });

  it('D7: __finish__ is internal: it fires no tool hooks', async () => {
    const { rec } = await recordedRun(counterAgent([finish('x')]));
    expect(rec.of('beforeTool')).toHaveLength(0);
    expect(rec.of('afterTool')).toHaveLength(0);
  });

  it('rule 33 / D14: onAgentComplete gets { output, finalState, stepCount, durationMs } with stepCount = completed LLM steps', async () => {
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 } }] }, { toolCalls: [{ name: 'increment', args: { by: 2 } }] }, finish('3')]);
    const { rec } = await recordedRun(agent);
    const payload = rec.of('onAgentComplete')[0]!.payload as { output: unknown; finalState: Counter; stepCount: number; durationMs: number };
    expect(payload.output).toEqual({ answer: '3' });
    expect(payload.finalState.count).toBe(3);
    expect(payload.stepCount).toBe(3);
    expect(typeof payload.durationMs).toBe('number');
  });

  it('an agent without an outputSchema completes on a plain text answer', async () => {
    const { executor } = setup();
    const result = await (await executor.execute(textAgent([{ text: 'The answer is 42.' }]), 'q')).result();
    expect(result).toMatchObject({ status: 'completed', output: 'The answer is 42.', exitReason: 'text', stepCount: 1 });
  });

  it('an invalid __finish__ output goes back to the model as tool_invalid_input and the run goes on', async () => {
    const { executor, stateStore } = setup();
    const agent = counterAgent([{ toolCalls: [{ name: '__finish__', args: { wrong: 1 } }] }, finish('fixed')]);
    const handle = await executor.execute(agent, 'go');
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'completed', output: { answer: 'fixed' }, stepCount: 2 });
    const session = await stateStore.loadSession(handle.sessionId);
    const toolRows = session!.messages.filter((m) => m.role === 'tool');
    expect(toolRows[0]).toMatchObject({ isError: true, errorInfo: { code: 'tool_invalid_input' } });
  });

  it('C10: maxSteps ends a run with an outputSchema with the typed error run_max_steps, and onAgentFail fires', async () => {
    const loop = { toolCalls: [{ name: 'increment', args: { by: 1 } }] };
    const agent = counterAgent([loop, loop, loop, loop], { maxSteps: 3 });
    const { result, rec } = await recordedRun(agent);
    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({ code: 'run_max_steps', layer: 'run', severity: 'fatal', retryable: false });
    expect(result.stepCount).toBe(3);
    expect(rec.of('beforeLLMCall')).toHaveLength(3);
    expect(rec.of('onAgentFail')).toHaveLength(1);
  });

  it('C10: an agent without an outputSchema that reaches maxSteps completes with exitReason max_steps and its last text', async () => {
    const { executor } = setup();
    const step = { text: 'still working', toolCalls: [{ name: 'increment', args: { by: 1 } }] };
    const limited = defineAgent({ name: 'limited', llmConfig: { model: createScriptedModel([step, step]) }, tools: textAgent([]).tools, maxSteps: 2 });
    const r2 = await (await executor.execute(limited, 'go')).result();
    expect(r2).toMatchObject({ status: 'completed', exitReason: 'max_steps', output: 'still working', stepCount: 2 });
  });
});

describe('the terminal commit (section 1.2)', () => {
  it('rules 36, 37, 38: terminal hooks run while the run is live, then one terminal commit (checkpoint kind state) with the status, then the stream end', async () => {
    const { executor, stateStore, streamManager } = setup();
    let statusDuringHook: string | undefined;
    const agent = counterAgent([finish('x')], {
      hooks: {
        onAgentComplete: async (_p, ctx) => {
          statusDuringHook = (await stateStore.getRun(ctx.runId))?.status;
        },
      },
    });
    const handle = await executor.execute(agent, 'go');
    const chunks: string[] = [];
    for await (const chunk of handle.stream()) {
      if (chunk.type === 'end') chunks.push(`end:${(await stateStore.getRun(handle.runId))?.status}`);
    }
    await handle.result();
    expect(statusDuringHook).toBe('running');
    expect(chunks).toEqual(['end:completed']);
    const checkpoints = await stateStore.listCheckpoints(handle.sessionId);
    expect(checkpoints.at(-1)?.kind).toBe('state');
    expect(streamManager.chunks(handle.sessionId).at(-1)?.type).toBe('end');
  });

  it('rule 38: the terminal commit is written on failure too', async () => {
    const { executor, stateStore } = setup();
    const handle = await executor.execute(counterAgent([{ error: { status: 401 } }]), 'go');
    await handle.result();
    expect((await stateStore.getRun(handle.runId))?.status).toBe('failed');
    expect((await stateStore.listCheckpoints(handle.sessionId)).at(-1)?.kind).toBe('state');
  });

  it('rule 39 / C8: onAgentComplete writes land in the terminal commit; onAgentFail writes are dropped', async () => {
    const { executor, stateStore } = setup();
    const ok = counterAgent([finish('x')], {
      hooks: { onAgentComplete: (_p, ctx) => ctx.updateState((d) => void d.log.push('completed')) },
    });
    const h1 = await executor.execute(ok, 'go');
    expect((await h1.result()).state.log).toEqual(['completed']);
    expect(((await stateStore.loadSession(h1.sessionId))!.state as Counter).log).toEqual(['completed']);

    const bad = counterAgent([{ error: { status: 401 } }], {
      hooks: { onAgentFail: (_p, ctx) => ctx.updateState((d) => void d.log.push('failed')) },
    });
    const h2 = await executor.execute(bad, 'go');
    expect((await h2.result()).state.log).toEqual([]);
    expect(((await stateStore.loadSession(h2.sessionId))!.state as Counter).log).toEqual([]);
  });

  it('rule 42 / C5: a throwing onAgentComplete has its partial writes dropped, the run stays completed and the end frame carries no state', async () => {
    const { executor, stateStore, streamManager, logger } = setup();
    const rec = createHookRecorder();
    const agent = counterAgent([finish('x')], {
      hooks: {
        onAgentComplete: (_p, ctx) => {
          ctx.updateState((d) => void d.log.push('partial'));
          throw new Error('metrics down');
        },
      },
    });
    const handle = await executor.execute(agent, 'go', { hooks: rec.hooks });
    const result = await handle.result();
    expect(result.status).toBe('completed');
    expect(result.state.log).toEqual([]);
    expect(rec.of('onAgentFail')).toHaveLength(0);
    expect(((await stateStore.loadSession(handle.sessionId))!.state as Counter).log).toEqual([]);
    const end = streamManager.chunks(handle.sessionId).at(-1)!;
    expect(end.type).toBe('end');
    expect('state' in end).toBe(false);
    expect(logger.lines.some((l) => l.includes('metrics down'))).toBe(true);
  });

  it('C5 strictTerminalHooks: a throwing onAgentComplete fails the run and onAgentFail follows it', async () => {
    const { executor } = setup({ executor: { strictTerminalHooks: true } });
    const log: string[] = [];
    const agent = counterAgent([finish('x')], {
      hooks: {
        onAgentComplete: () => {
          log.push('complete');
          throw new Error('strict');
        },
        onAgentFail: (payload) => void log.push(`fail:${payload.error.code}`),
      },
    });
    const result = await (await executor.execute(agent, 'go')).result();
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('hook_failed');
    expect(log).toEqual(['complete', 'fail:hook_failed']);
  });

  it('rules 43, 44, 45: when the terminal commit fails, onAgentFail fires after onAgentComplete, the run ends failed and the complete writes are not persisted', async () => {
    class TerminalFails extends InMemoryStateStore {
      failed = 0;
      override async commit(commit: Commit): Promise<CommitReceipt> {
        if (commit.kind === 'terminal' && commit.runStatus === 'completed') {
          this.failed++;
          throw new Error('disk full');
        }
        return super.commit(commit);
      }
    }
    const store = new TerminalFails();
    const { executor, streamManager } = setup({ stateStore: store });
    const rec = createHookRecorder();
    const agent = counterAgent([finish('x')], {
      hooks: { onAgentComplete: (_p, ctx) => ctx.updateState((d) => void d.log.push('complete-write')) },
    });
    const handle = await executor.execute(agent, 'go', { hooks: rec.hooks });
    const result = await handle.result();
    expect(store.failed).toBe(1);
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('state_commit_failed');
    expect(rec.points().filter((p) => p === 'onAgentComplete' || p === 'onAgentFail')).toEqual(['onAgentComplete', 'onAgentFail']);
    const session = await store.loadSession(handle.sessionId);
    expect((session!.state as Counter).log).toEqual([]);
    expect((await store.getRun(handle.runId))?.status).toBe('failed');
    const last = streamManager.chunks(handle.sessionId).at(-1)!;
    expect(last).toMatchObject({ type: 'error', status: 'failed' });
  });
});

describe('the commit model K1, K2, K3, K5', () => {
  it('commits K2 (turn start) before the first model call and one K3 per step, each fenced by the run id', async () => {
    class Recording extends InMemoryStateStore {
      readonly kinds: string[] = [];
      override async commit(commit: Commit): Promise<CommitReceipt> {
        this.kinds.push(commit.kind + (commit.stepIndex === undefined ? '' : `#${commit.stepIndex}`));
        return super.commit(commit);
      }
    }
    const store = new Recording();
    const { executor } = setup({ stateStore: store });
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 } }] }, finish('x')], {
      hooks: { beforeLLMCall: () => void store.kinds.push('model') },
    });
    const handle = await executor.execute(agent, 'go');
    await handle.result();
    expect(store.kinds).toEqual(['turn_start', 'model', 'step#0', 'model', 'step#1', 'terminal']);
    const session = await store.loadSession(handle.sessionId);
    expect(session!.turn?.startCommitted).toBe(true);
    expect(session!.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'tool']);
    expect(await store.listCheckpoints(handle.sessionId)).toHaveLength(4);
  });

  it('rule 20: onAgentStart writes land in the turn start commit, so they survive a failure in the first model call', async () => {
    const { executor, stateStore } = setup();
    const agent = counterAgent([{ error: { status: 401 } }], {
      hooks: { onAgentStart: (_p, ctx) => ctx.updateState((d) => void d.log.push('started')) },
    });
    const handle = await executor.execute(agent, 'go');
    const result = await handle.result();
    expect(result.status).toBe('failed');
    const checkpoints = await stateStore.listCheckpoints(handle.sessionId);
    const turnStart = await stateStore.loadCheckpoint(handle.sessionId, checkpoints[0]!.checkpointId);
    expect(turnStart?.kind).toBe('turn_start');
    expect((turnStart!.state as Counter).log).toEqual(['started']);
    expect(turnStart!.messages).toEqual([{ role: 'user', content: 'go' }]);
  });

  it('a second execute() on a session starts a new turn on the committed conversation and state', async () => {
    const { executor } = setup();
    const model = createScriptedModel([{ toolCalls: [{ name: 'increment', args: { by: 1 } }] }, { text: 'one' }, { text: 'two' }]);
    const agent = textAgent([], { llmConfig: { model } });
    const first = await (await executor.execute(agent, 'first', { sessionId: 'chat' })).result();
    expect(first.output).toBe('one');
    const second = await (await executor.execute(agent, 'second', { sessionId: 'chat' })).result();
    expect(second.output).toBe('two');
    expect(second.state.count).toBe(1);
    const lastPrompt = model.calls.at(-1)!.prompt;
    expect(lastPrompt.filter((m) => m.role === 'user')).toHaveLength(2);
  });

  it('an initial state that does not match the stateSchema is refused at entry with run_invalid_input and no hook', async () => {
    const { executor } = setup();
    const rec = createHookRecorder();
    await expect(executor.execute(counterAgent([finish('x')]), 'go', { hooks: rec.hooks, initialState: { count: 'many' } })).rejects.toMatchObject({
      info: { code: 'run_invalid_input' },
    });
    expect(rec.calls).toHaveLength(0);
  });

  it('rules 46, 47, 48, 49: a run superseded by a newer execute() on the same session fires onAgentSuperseded only and writes nothing more', async () => {
    const { executor, stateStore, streamManager } = setup();
    const recA = createHookRecorder();
    const gate = createGate();
    const slow = bareTool('slow', 'waits', async (_input, ctx) => {
      await gate.opened;
      ctx.updateState<Counter>((d) => void (d.count = 99));
      return 'late';
    });
    const agentA = counterAgent([{ toolCalls: [{ name: 'slow', args: {} }] }, finish('a')], { tools: [slow] });
    const a = await executor.execute(agentA, 'first', { sessionId: 'busy', hooks: recA.hooks });
    await new Promise((r) => setTimeout(r, 20));
    const b = await executor.execute(counterAgent([finish('b')]), 'second', { sessionId: 'busy' });
    expect((await b.result()).status).toBe('completed');
    gate.open();
    const resultA = await a.result();
    expect(resultA.status).toBe('superseded');
    expect(resultA.error?.code).toBe('state_run_superseded');
    expect(recA.of('onAgentSuperseded')).toHaveLength(1);
    expect(recA.of('onAgentComplete')).toHaveLength(0);
    expect(recA.of('onAgentFail')).toHaveLength(0);
    expect(((await stateStore.loadSession('busy'))!.state as Counter).count).toBe(0);
    const aChunksAfterClaim = streamManager.chunks('busy').filter((c) => c.runId === a.runId && c.type === 'tool_end');
    expect(aChunksAfterClaim).toHaveLength(0);
    expect(await collect(a.stream())).not.toContainEqual(expect.objectContaining({ type: 'end' }));
  });
});
