// The run launcher's bookkeeping the mutation run of runtime/run-entry.ts found untested: the executor's
// view of the runs live in this process, the id kinds it asks its generator for, shutdown's hand-off, and
// the input a resumed run's run_started chunk carries.
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { defineTool, type RunStartedChunk } from '../index.js';
import { createGate } from '../testing/index.js';
import { bareTool, counterAgent, finish, setup } from './harness.js';

describe('runs live in this process', () => {
  it('executor.current(sessionId) is the live run\'s handle while it runs and undefined once it ended', async () => {
    const gate = createGate();
    const entered = createGate();
    const held = bareTool('held', 'waits for the gate', async () => {
      entered.open();
      await gate.opened;
      return 'done';
    });
    const { executor } = setup();
    const handle = await executor.execute(counterAgent([{ toolCalls: [{ name: 'held', args: {} }] }, finish('x')], { tools: [held] }), 'go');
    await entered.opened;
    expect(executor.current(handle.sessionId)?.runId).toBe(handle.runId);
    gate.open();
    await handle.result();
    expect(executor.current(handle.sessionId)).toBeUndefined();
  });

  it('shutdown() hands off a run live here: its handle resolves running with run_handed_off', async () => {
    const gate = createGate();
    const entered = createGate();
    const held = bareTool('held', 'waits for the gate', async () => {
      entered.open();
      await gate.opened;
      return 'done';
    });
    const { executor } = setup();
    const handle = await executor.execute(counterAgent([{ toolCalls: [{ name: 'held', args: {} }] }, finish('x')], { tools: [held] }), 'go');
    await entered.opened;
    const down = executor.shutdown();
    gate.open();
    await down;
    const result = await handle.result();
    expect(result.status).toBe('running');
    expect(result.error).toMatchObject({ code: 'run_handed_off' });
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
