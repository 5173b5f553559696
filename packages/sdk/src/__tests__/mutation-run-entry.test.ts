// The run launcher's bookkeeping the mutation run of runtime/run-entry.ts found untested: the executor's
// view of the runs live in this process, the id kinds it asks its generator for, shutdown's hand-off, and
// the input a resumed run's run_started chunk carries.
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { defineTool, type RunStartedChunk } from '../index.js';
import { createGate } from '../testing/index.js';
import { AgentError, childSessionId, defineAgent, defineSubAgentTool, InMemoryStateStore, type RunStartedInfo } from '../index.js';
import { createScriptedModel } from '../testing/index.js';
import { bareTool, counterAgent, deadCounterRun, finish, gatedTool, setup } from './harness.js';

describe('runs live in this process', () => {
  it('executor.current(sessionId) is the live run\'s handle while it runs and undefined once it ended', async () => {
    const { tool: held, gate, entered } = gatedTool('held', 'done');
    const { executor } = setup();
    const handle = await executor.execute(counterAgent([{ toolCalls: [{ name: 'held', args: {} }] }, finish('x')], { tools: [held] }), 'go');
    await entered.opened;
    expect(executor.current(handle.sessionId)?.runId).toBe(handle.runId);
    gate.open();
    await handle.result();
    expect(executor.current(handle.sessionId)).toBeUndefined();
  });

  it('shutdown() hands off a run live here: its handle resolves running with run_handed_off (which run was let go, that recover() continues it, its session id) and its lease is released for recover() elsewhere', async () => {
    const { tool: held, gate, entered } = gatedTool('held', 'done');
    const { executor, stateStore } = setup();
    const handle = await executor.execute(counterAgent([{ toolCalls: [{ name: 'held', args: {} }] }, finish('x')], { tools: [held] }), 'go');
    await entered.opened;
    const down = executor.shutdown();
    gate.open();
    await down;
    const result = await handle.result();
    expect(result.status).toBe('running');
    expect(result.error).toMatchObject({
      code: 'run_handed_off',
      message: `Run ${handle.runId} was let go by its process; recover() continues it.`,
      details: { sessionId: handle.sessionId },
    });
    // Its lease is released: another process recovers it at once, not after the lease ran out.
    const elsewhere = setup({ stateStore });
    const [recovered] = await elsewhere.executor.recover({ agents: [counterAgent([finish('finished elsewhere')], { tools: [held] })] });
    expect(recovered?.runId).toBe(handle.runId);
    expect((await recovered!.result()).output).toEqual({ answer: 'finished elsewhere' });
  });
});

describe('ids and the run_started chunk', () => {
  it('the executor asks its generateId for a session, a run and a turn id by kind, and uses each where its kind belongs', async () => {
    const asked: string[] = [];
    let n = 0;
    const { executor, stateStore } = setup({ executor: { generateId: (kind) => (asked.push(kind), `${kind}-${++n}`) } });
    const handle = await executor.execute(counterAgent([finish('x')]), 'go');
    await handle.result();
    expect(asked.slice(0, 3)).toEqual(['session', 'run', 'turn']);
    expect(handle.sessionId).toMatch(/^session-/);
    expect(handle.runId).toMatch(/^run-/);
    expect((await stateStore.getRun(handle.runId))?.turnId).toMatch(/^turn-/);
  });

  it('a new turn\'s run_started chunk carries its input text; a resumed run opens no turn and its run_started carries an empty input', async () => {
    const ask = defineTool({ name: 'ask_user', description: 'answered by the client', inputSchema: z.object({ q: z.string() }) });
    const { executor, streamManager } = setup();
    const first = await executor.execute(counterAgent([{ toolCalls: [{ name: 'ask_user', args: { q: 'why' }, id: 'a1' }] }, finish('x')], { tools: [ask] }), 'the question');
    expect((await first.result()).status).toBe('suspended');
    const second = await executor.submitToolResult(first.sessionId, 'a1', 'because');
    expect((await second.result()).status).toBe('completed');
    const started = streamManager.chunks(first.sessionId).filter((c): c is RunStartedChunk => c.type === 'run_started');
    expect(started.map((c) => [c.signal, c.input])).toEqual([
      ['start', 'the question'],
      ['resumed', ''],
    ]);
  });
});

describe('recovery of a run someone asked to stop', () => {
  it('a run whose process died with a stop request on it stops at once when recovered: interrupted, the model never called', async () => {
    const stateStore = new InMemoryStateStore();
    const { runId } = await deadCounterRun(stateStore);
    await stateStore.requestStop(runId, { reason: 'asked from elsewhere', requestedAt: Date.now() });
    const { executor } = setup({ stateStore });
    let calls = 0;
    const agent = counterAgent([() => (calls++, finish('should not run'))]);
    const [handle] = await executor.recover({ agents: [agent] });
    const result = await handle!.result();
    expect(result.status).toBe('interrupted');
    expect(result.error).toMatchObject({ code: 'run_interrupted' });
    expect(calls).toBe(0);
  });
});

describe('agent hooks and execution hooks together', () => {
  it('a handler the agent registers and the execution passes again at the same point runs once; the other execution handlers still run', async () => {
    const calls: string[] = [];
    const shared = () => void calls.push('shared');
    const extra = () => void calls.push('extra');
    const { executor } = setup();
    const handle = await executor.execute(counterAgent([finish('x')], { hooks: { onAgentStart: shared } }), 'go', { hooks: { onAgentStart: shared, beforeLLMCall: extra } });
    await handle.result();
    expect(calls.sort()).toEqual(['extra', 'shared']);
  });
});

describe('class-based hooks at close()', () => {
  class Closing {
    constructor(
      readonly name: string,
      readonly closed: string[],
    ) {}
    onAgentStart(): void {}
    close(): void {
      this.closed.push(this.name);
    }
  }

  class NoClose {
    onAgentStart(): void {}
  }

  it('executor.close() closes the class-based hooks it warmed newest first, and one without close() is passed over', async () => {
    const closed: string[] = [];
    const older = new Closing('older', closed);
    const newer = new Closing('newer', closed);
    const noClose = new NoClose();
    const { executor } = setup();
    await (await executor.execute(counterAgent([finish('x')], { hooks: { onAgentStart: older } as never }), 'go')).result();
    await (await executor.execute(counterAgent([finish('x')], { hooks: { onAgentStart: noClose } as never }), 'go')).result();
    await (await executor.execute(counterAgent([finish('x')], { hooks: { onAgentStart: newer } as never }), 'go')).result();
    await executor.close();
    expect(closed).toEqual(['newer', 'older']);
  });
});

describe('a failed entry', () => {
  it('when the stream claim fails and recording the failed run fails too, execute() rejects with the claim error and the logger names the run it could not record', async () => {
    class NoCommit extends InMemoryStateStore {
      override async commit(): Promise<never> {
        throw new Error('disk gone');
      }
    }
    const { executor, streamManager, logger } = setup({ stateStore: new NoCommit(), executor: { generateId: (kind) => `${kind}-1` } });
    streamManager.claim = async () => {
      throw new AgentError('stream_closed', 'stream unavailable');
    };
    await expect(executor.execute(counterAgent([finish('x')]), 'go')).rejects.toMatchObject({ info: { code: 'stream_closed' } });
    expect(logger.lines).toContain('error: could not record the failed entry of run run-1: Error: disk gone');
  });
});

describe('the caller\'s abort signal', () => {
  it('an abortSignal already aborted when execute() is called interrupts the run before its model is called', async () => {
    let calls = 0;
    const { executor } = setup();
    const handle = await executor.execute(counterAgent([() => (calls++, finish('x'))]), 'go', { abortSignal: AbortSignal.abort() });
    const result = await handle.result();
    expect(result.status).toBe('interrupted');
    expect(calls).toBe(0);
  });

  it('an abortSignal aborted during the run interrupts it', async () => {
    const controller = new AbortController();
    const { executor } = setup();
    const handle = await executor.execute(counterAgent([{ ...finish('x'), delayMs: 5_000 }]), 'go', { abortSignal: controller.signal });
    controller.abort();
    expect((await handle.result()).status).toBe('interrupted');
  });
});

describe('stop reasons, run listeners and the lease after the end', () => {
  async function abortReasonOf(reason: string | undefined): Promise<unknown> {
    const entered = createGate();
    let seen: unknown;
    const waits = bareTool('waits', 'waits for its abort signal', async (_input, ctx) => {
      entered.open();
      await new Promise<void>((resolve) => ctx.abortSignal.addEventListener('abort', () => resolve(), { once: true }));
      seen = ctx.abortSignal.reason;
      return 'stopped';
    });
    const { executor } = setup();
    const handle = await executor.execute(counterAgent([{ toolCalls: [{ name: 'waits', args: {} }] }, finish('x')], { tools: [waits] }), 'go');
    await entered.opened;
    await handle.stop(reason);
    return seen;
  }

  it('handle.stop(reason) aborts the tools\' signal with a run_interrupted error carrying the reason; without one, "The run was interrupted."', async () => {
    expect(await abortReasonOf('the user gave up')).toMatchObject({ info: { code: 'run_interrupted' }, message: 'the user gave up' });
    expect(await abortReasonOf(undefined)).toMatchObject({ info: { code: 'run_interrupted' }, message: 'The run was interrupted.' });
  });

  it('onRun listeners hear recovered: false for a new run and true for a run continued by recover()', async () => {
    const stateStore = new InMemoryStateStore();
    await deadCounterRun(stateStore);
    const { executor } = setup({ stateStore });
    const heard: RunStartedInfo[] = [];
    executor.onRun((info) => void heard.push(info));
    await (await executor.execute(counterAgent([finish('new')]), 'go')).result();
    const [recovered] = await executor.recover({ agents: [counterAgent([finish('old')])] });
    await recovered!.result();
    expect(heard.map((h) => [h.sessionId === 'dead', h.recovered])).toEqual([
      [false, false],
      [true, true],
    ]);
  });

  it('the function onRun() returns removes the listener: later runs are not heard', async () => {
    const { executor } = setup();
    const heard: string[] = [];
    const off = executor.onRun((info) => void heard.push(info.runId));
    const first = await executor.execute(counterAgent([finish('a')]), 'go');
    await first.result();
    off();
    await (await executor.execute(counterAgent([finish('b')]), 'go')).result();
    expect(heard).toEqual([first.runId]);
  });

  it('a run stops renewing its lease once it ended', async () => {
    let renewals = 0;
    class Counting extends InMemoryStateStore {
      override async renewLease(...args: Parameters<InMemoryStateStore['renewLease']>) {
        renewals++;
        return super.renewLease(...args);
      }
    }
    const { executor } = setup({ stateStore: new Counting(), executor: { leaseMs: 30 } });
    const handle = await executor.execute(counterAgent([{ ...finish('x'), delayMs: 60 }]), 'go');
    await handle.result();
    const atEnd = renewals;
    expect(atEnd).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(renewals).toBe(atEnd);
  });
});

describe('the handle\'s stream and usage', () => {
  it('getUsageRollup() counts only its own run when two runs share a usage store', async () => {
    const { executor, usageStore } = setup();
    const first = await executor.execute(counterAgent([{ ...finish('a'), usage: { inputTokens: 10, outputTokens: 1 } }]), 'go', { usageStore });
    await first.result();
    const second = await executor.execute(counterAgent([{ ...finish('b'), usage: { inputTokens: 200, outputTokens: 20 } }]), 'go', { usageStore });
    await second.result();
    expect((await first.getUsageRollup())?.tokens).toMatchObject({ prompt: 10, completion: 1 });
    expect((await second.getUsageRollup())?.tokens).toMatchObject({ prompt: 200, completion: 20 });
  });

  it('handle.stream({ signal }) ends its iteration when the signal is aborted, while the run goes on', async () => {
    const gate = createGate();
    const { executor } = setup();
    const handle = await executor.execute(counterAgent([async () => (await gate.opened, finish('x'))]), 'go');
    const controller = new AbortController();
    const seen: string[] = [];
    const reading = (async () => {
      for await (const chunk of handle.stream({ signal: controller.signal })) {
        seen.push(chunk.type);
        if (chunk.type === 'run_started') controller.abort();
      }
    })();
    await reading;
    expect(seen[0]).toBe('run_started');
    expect(seen).not.toContain('run_completed');
    gate.open();
    expect((await handle.result()).status).toBe('completed');
  });
});

describe('an onRun listener that throws', () => {
  it('is logged as a warning naming its message, and neither the run nor the other listeners are affected', async () => {
    const { executor, logger } = setup();
    const heard: string[] = [];
    executor.onRun(() => {
      throw new Error('listener broke');
    });
    executor.onRun((info) => void heard.push(info.runId));
    const handle = await executor.execute(counterAgent([finish('x')]), 'go');
    expect((await handle.result()).status).toBe('completed');
    expect(heard).toEqual([handle.runId]);
    expect(logger.lines).toContain('warn: an onRun listener threw: listener broke');
  });
});

describe('a child run as onRun hears of it', () => {
  it('a sub-agent\'s child run is announced with its parent\'s session id; the parent\'s own run without one', async () => {
    const child = defineAgent({ name: 'helper', llmConfig: { model: createScriptedModel([{ text: 'child done' }]) } });
    const parent = defineAgent({ name: 'lead', llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'helper', args: { input: 'x' }, id: 'h1' }] }, { text: 'done' }]) }, tools: [defineSubAgentTool({ agent: child })] });
    const { executor } = setup();
    const heard: RunStartedInfo[] = [];
    executor.onRun((info) => void heard.push(info));
    const handle = await executor.execute(parent, 'go');
    expect((await handle.result()).status).toBe('completed');
    expect(heard.map((h) => [h.agentType, h.sessionId, h.parentSessionId])).toEqual([
      ['lead', handle.sessionId, undefined],
      ['helper', childSessionId(handle.sessionId, 'h1'), handle.sessionId],
    ]);
  });
});
