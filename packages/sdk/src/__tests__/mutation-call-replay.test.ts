import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, InMemoryStateStore, InMemoryUsageStore, type Message, type StatePatch, type StateStore, type ToolResultMessage } from '../index.js';
import type { JournalEntry } from '../store/index.js';
import { createHookRecorder } from '../testing/index.js';
import { counterAgent, deadCounterRun, finish, incrementTool, setup, type Counter } from './harness.js';

// The replay of the calls a process that died recorded (runtime/call-replay.ts): a step's recorded
// side-effecting calls come back with their rows, their usage and their writes, the writes of parallel
// calls in the order they were made (their recorded places), without a hook or the tool running again.

const input: Message[] = [{ role: 'user', content: 'go' }];

interface Recorded {
  readonly id: string;
  readonly name?: string;
  readonly content: unknown;
  readonly patches: readonly StatePatch[];
  readonly seqs?: readonly number[];
  readonly success?: boolean;
  readonly durationMs?: number;
  readonly finishOutput?: { readonly value: unknown; readonly via: 'finish_tool' | 'finish_with' };
}

/**
 * A dead run in `store` whose step 0 asked for `calls` and recorded the results `recorded`, in that
 * order (the journal order is the order they were recorded).
 */
async function deadStep(store: InMemoryStateStore, calls: readonly { id: string; name: string; args?: Record<string, unknown> }[], recorded: readonly Recorded[]): Promise<void> {
  const dead = await deadCounterRun(store, { sessionId: 'crashed' });
  await store.commit({ ...dead, kind: 'turn_start', appendMessages: input, committedAt: Date.now() });
  const reply = { ok: true, text: '', finishReason: 'tool-calls', model: 'scripted-model', toolCalls: calls.map((c) => ({ id: c.id, name: c.name, arguments: c.args ?? {} })) };
  await store.appendJournal({ ...dead, stepIndex: 0, kind: 'model_reply', key: 'model_reply:0', data: { reply, patches: [] }, at: Date.now() });
  for (const c of calls) await store.appendJournal({ ...dead, stepIndex: 0, kind: 'call_started', key: `call_started:0:${c.id}`, data: {}, at: Date.now() });
  for (const r of recorded) {
    const name = r.name ?? calls.find((c) => c.id === r.id)?.name ?? 'send';
    const data = {
      message: { role: 'tool', toolCallId: r.id, toolName: name, content: r.content },
      patches: r.patches,
      ...(r.seqs ? { seqs: r.seqs } : {}),
      success: r.success ?? true,
      durationMs: r.durationMs ?? 1,
      ...(r.finishOutput ? { finishOutput: r.finishOutput } : {}),
    };
    await store.appendJournal({ ...dead, stepIndex: 0, kind: 'call_result', key: `call_result:0:${r.id}`, data, at: Date.now() });
  }
}

const counting = () => {
  const ran: string[] = [];
  const tool = (name: string) =>
    defineTool({ name, description: `a side-effecting ${name}`, inputSchema: z.object({}), sideEffects: true, execute: (_i, ctx) => void ran.push(`${name}:${ctx.toolCallId}`) });
  return { ran, send: tool('send'), post: tool('post') };
};

const log = (values: readonly string[]): StatePatch => ({ op: 'replace', path: ['log'], value: [...values] });
const toolRows = async (store: InMemoryStateStore) => (await store.loadSession('crashed'))!.messages.filter((m): m is ToolResultMessage => m.role === 'tool');

describe('call-replay: the recorded calls of a recovered step', () => {
  it('the writes of parallel recorded calls are applied in the order they were made (their seqs), not call by call', async () => {
    const { ran, send, post } = counting();
    const store = new InMemoryStateStore();
    // a wrote first and last, b in between: each patch holds the whole log as it was after that write.
    await deadStep(store, [{ id: 'a', name: 'send' }, { id: 'b', name: 'post' }], [
      { id: 'a', content: 'a done', patches: [log(['a1']), log(['a1', 'b1', 'a2'])], seqs: [0, 2] },
      { id: 'b', content: 'b done', patches: [log(['a1', 'b1'])], seqs: [1] },
    ]);
    const [handle] = await setup({ stateStore: store }).executor.recover({ agents: [counterAgent([finish('done')], { tools: [send, post] })] });
    const result = await handle!.result();
    expect(result.status).toBe('completed');
    expect((result.state as Counter).log).toEqual(['a1', 'b1', 'a2']);
    expect(ran).toEqual([]);
  });

  it('the writes of the call recorded second come first when they were made first', async () => {
    const { send, post } = counting();
    const store = new InMemoryStateStore();
    await deadStep(store, [{ id: 'a', name: 'send' }, { id: 'b', name: 'post' }], [
      { id: 'a', content: 'a done', patches: [{ op: 'replace', path: ['count'], value: 2 }], seqs: [5] },
      { id: 'b', content: 'b done', patches: [{ op: 'replace', path: ['count'], value: 1 }], seqs: [3] },
    ]);
    const [handle] = await setup({ stateStore: store }).executor.recover({ agents: [counterAgent([finish('done')], { tools: [send, post] })] });
    expect(((await handle!.result()).state as Counter).count).toBe(2);
  });

  it('a record without places (or with fewer places than patches) keeps its own order, after the writes that have places', async () => {
    const { send, post } = counting();
    const store = new InMemoryStateStore();
    // b and c were recorded before a; a's place is known, b has none, c's places do not match its patches.
    await deadStep(store, [{ id: 'a', name: 'send' }, { id: 'b', name: 'post' }, { id: 'c', name: 'send' }], [
      { id: 'b', content: 'b done', patches: [{ op: 'replace', path: ['count'], value: 7 }, log(['b1'])] },
      { id: 'c', content: 'c done', patches: [log(['b1', 'c1']), log(['b1', 'c1', 'c2'])], seqs: [0] },
      { id: 'a', content: 'a done', patches: [{ op: 'replace', path: ['count'], value: 3 }, log(['a1'])], seqs: [10, 11] },
    ]);
    const [handle] = await setup({ stateStore: store }).executor.recover({ agents: [counterAgent([finish('done')], { tools: [send, post] })] });
    const state = (await handle!.result()).state as Counter;
    // a's writes (placed) come first, then b's and c's in their recorded order, each in its own order.
    expect(state.count).toBe(7);
    expect(state.log).toEqual(['b1', 'c1', 'c2']);
  });

  it('the rows of replayed calls come back in the order they were recorded, with their content and error flag, and no hook fires for them', async () => {
    const { ran, send, post } = counting();
    const store = new InMemoryStateStore();
    await deadStep(store, [{ id: 'a', name: 'send' }, { id: 'b', name: 'post' }], [
      { id: 'b', content: 'b first', patches: [] },
      { id: 'a', content: 'a second', patches: [], success: false },
    ]);
    const rec = createHookRecorder();
    const [handle] = await setup({ stateStore: store }).executor.recover({ agents: [counterAgent([finish('done')], { tools: [send, post], hooks: rec.hooks })] });
    expect((await handle!.result()).status).toBe('completed');
    const rows = await toolRows(store);
    expect(rows.slice(0, 2).map((r) => [r.toolCallId, r.toolName, r.content])).toEqual([
      ['b', 'post', 'b first'],
      ['a', 'send', 'a second'],
    ]);
    expect(ran).toEqual([]);
    expect(rec.of('beforeTool')).toHaveLength(0);
    expect(rec.of('afterTool')).toHaveLength(0);
  });

  it('a replayed call adds its tool usage: its name, call id, step, run, session, recorded success and duration', async () => {
    const { send, post } = counting();
    const store = new InMemoryStateStore();
    await deadStep(store, [{ id: 'a', name: 'send' }, { id: 'b', name: 'post' }], [
      { id: 'a', content: 'a done', patches: [], success: true, durationMs: 42 },
      { id: 'b', content: 'b failed', patches: [], success: false, durationMs: 17 },
    ]);
    const usageStore = new InMemoryUsageStore();
    const before = Date.now();
    const [handle] = await setup({ stateStore: store }).executor.recover({ agents: [counterAgent([finish('done')], { tools: [send, post] })], usageStore });
    await handle!.result();
    const tools = usageStore.entries({ runId: 'dead-run' }).filter((e) => e.kind === 'tool');
    expect(tools).toEqual([
      { kind: 'tool', sessionId: 'crashed', runId: 'dead-run', stepIndex: 0, toolName: 'send', toolCallId: 'a', success: true, durationMs: 42, at: expect.any(Number) },
      { kind: 'tool', sessionId: 'crashed', runId: 'dead-run', stepIndex: 0, toolName: 'post', toolCallId: 'b', success: false, durationMs: 17, at: expect.any(Number) },
    ]);
    for (const t of tools) expect(t.at).toBeGreaterThanOrEqual(before);
  });

  it('a replayed finishWith call ends the run with its recorded output, without another model call', async () => {
    const pay = defineTool({ name: 'pay', description: 'pays', inputSchema: z.object({}), sideEffects: true, finishWith: true, execute: () => ({ answer: 'paid again' }) });
    const store = new InMemoryStateStore();
    await deadStep(store, [{ id: 'p', name: 'pay' }], [{ id: 'p', content: { answer: 'paid' }, patches: [], finishOutput: { value: { answer: 'paid' }, via: 'finish_with' } }]);
    // The script has no step left: a model call would fail the run.
    const [handle] = await setup({ stateStore: store }).executor.recover({ agents: [counterAgent([], { tools: [pay], llmConfig: { ...counterAgent([]).llmConfig, retry: { maxAttempts: 1 } } })] });
    const result = await handle!.result();
    expect(result).toMatchObject({ status: 'completed', output: { answer: 'paid' } });
  });

  it('a recorded call of a tool that is not side-effecting is not replayed: that tool runs again, next to a replayed side-effecting call', async () => {
    const { ran, send } = counting();
    const store = new InMemoryStateStore();
    await deadStep(store, [{ id: 'i', name: 'increment', args: { by: 1 } }, { id: 'a', name: 'send' }], [
      { id: 'i', name: 'increment', content: 'stale', patches: [{ op: 'replace', path: ['count'], value: 100 }] },
      { id: 'a', content: 'a done', patches: [log(['a1'])] },
    ]);
    const [handle] = await setup({ stateStore: store }).executor.recover({ agents: [counterAgent([finish('done')], { tools: [incrementTool, send] })] });
    const result = await handle!.result();
    expect(result.status).toBe('completed');
    expect(result.state as Counter).toEqual({ count: 1, log: ['a1', '+1'] });
    expect(ran).toEqual([]);
    expect((await toolRows(store)).find((r) => r.toolCallId === 'i')?.content).not.toBe('stale');
  });

  it('a side-effecting call with no recorded result is not replayed: it ends tool_interrupted, beside the replayed one', async () => {
    const { ran, send } = counting();
    const store = new InMemoryStateStore();
    await deadStep(store, [{ id: 'a', name: 'send' }, { id: 'b', name: 'send' }], [{ id: 'a', content: 'a done', patches: [log(['a1'])] }]);
    const [handle] = await setup({ stateStore: store }).executor.recover({ agents: [counterAgent([finish('done')], { tools: [send] })] });
    const result = await handle!.result();
    expect((result.state as Counter).log).toEqual(['a1']);
    const rows = await toolRows(store);
    expect(rows.find((r) => r.toolCallId === 'a')?.content).toBe('a done');
    expect(rows.find((r) => r.toolCallId === 'b')?.errorInfo?.code).toBe('tool_interrupted');
    expect(ran).toEqual([]);
  });

  it('no onMessage fires for a replayed row (the dead process fired it), while rows made after the recovery fire it', async () => {
    const { send } = counting();
    const store = new InMemoryStateStore();
    await deadStep(store, [{ id: 'a', name: 'send' }], [{ id: 'a', content: 'a done', patches: [] }]);
    const seen: string[] = [];
    const hooks = { onMessage: (p: { message: Message }) => void seen.push(p.message.role === 'tool' ? `tool:${p.message.toolCallId}` : p.message.role) };
    const [handle] = await setup({ stateStore: store }).executor.recover({ agents: [counterAgent([finish('done')], { tools: [send], hooks })] });
    expect((await handle!.result()).status).toBe('completed');
    expect((await toolRows(store)).find((r) => r.toolCallId === 'a')?.content).toBe('a done');
    expect(seen).not.toContain('tool:a');
    expect(seen).toContain('assistant');
  });

  it('a call of an unknown tool beside a recorded side-effecting call gets its error row; the recorded one is replayed', async () => {
    const { ran, send } = counting();
    const store = new InMemoryStateStore();
    await deadStep(store, [{ id: 'x', name: 'nope' }, { id: 'a', name: 'send' }], [{ id: 'a', content: 'a done', patches: [log(['a1'])] }]);
    const [handle] = await setup({ stateStore: store }).executor.recover({ agents: [counterAgent([finish('done')], { tools: [send] })] });
    const result = await handle!.result();
    expect(result.status).toBe('completed');
    expect((result.state as Counter).log).toEqual(['a1']);
    const rows = await toolRows(store);
    expect(rows.find((r) => r.toolCallId === 'a')?.content).toBe('a done');
    expect(rows.find((r) => r.toolCallId === 'x')?.isError).toBe(true);
    expect(ran).toEqual([]);
  });

  it('a stop during the recovered step keeps a replayed call\'s row and writes (its result is recorded); the stopped live call is paired run_stopped', async () => {
    const { send } = counting();
    const stuck = defineTool({
      name: 'stuck',
      description: 'waits for its abort signal',
      inputSchema: z.object({}),
      execute: (_i, ctx) => new Promise((_r, reject) => ctx.abortSignal.addEventListener('abort', () => reject(new Error('aborted')), { once: true })),
    });
    const store = new InMemoryStateStore();
    await deadStep(store, [{ id: 'a', name: 'send' }, { id: 's', name: 'stuck' }], [{ id: 'a', content: 'a done', patches: [log(['a1'])], seqs: [0] }]);
    const [handle] = await setup({ stateStore: store }).executor.recover({ agents: [counterAgent([finish('done')], { tools: [send, stuck] })] });
    await new Promise((r) => setTimeout(r, 30));
    const result = await handle!.stop('stop during the recovered step');
    expect(result.status).toBe('interrupted');
    expect((result.state as Counter).log).toEqual(['a1']);
    expect(((await store.loadSession('crashed'))!.state as Counter).log).toEqual(['a1']);
    const rows = await toolRows(store);
    expect(rows.find((r) => r.toolCallId === 'a')?.content).toBe('a done');
    expect(rows.find((r) => r.toolCallId === 's')?.errorInfo?.code).toBe('run_stopped');
  });

  it('the places recorded for writes made after a recovery that replayed unplaced writes are distinct and in order', async () => {
    const { send } = counting();
    const twice = defineTool({
      name: 'twice',
      description: 'writes twice',
      inputSchema: z.object({}),
      sideEffects: true,
      execute: (_i, ctx) => {
        ctx.updateState<Counter>((d) => void d.log.push('t1'));
        ctx.updateState<Counter>((d) => void d.log.push('t2'));
        return 'twice done';
      },
    });
    const store = new InMemoryStateStore();
    // A record without places (an older process), replayed first; then step 1 runs `twice` live.
    await deadStep(store, [{ id: 'a', name: 'send' }], [{ id: 'a', content: 'a done', patches: [log(['a1'])] }]);
    const recorded: { key: string; seqs?: readonly number[] }[] = [];
    const watched = new Proxy(store, {
      get(target, prop) {
        if (prop === 'appendJournal')
          return (entry: JournalEntry) => {
            if (entry.kind === 'call_result') recorded.push({ key: entry.key, ...(entry.data as { seqs?: readonly number[] }) });
            return target.appendJournal(entry);
          };
        const value: unknown = Reflect.get(target, prop);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    }) as StateStore;
    const agent = counterAgent([{ toolCalls: [{ name: 'twice', args: {}, id: 't' }] }, finish('done')], { tools: [send, twice] });
    const [handle] = await setup({ stateStore: watched }).executor.recover({ agents: [agent] });
    const result = await handle!.result();
    expect((result.state as Counter).log).toEqual(['a1', 't1', 't2']);
    const seqs = recorded.find((r) => r.key === 'call_result:1:t')?.seqs;
    expect(seqs).toHaveLength(2);
    const [first, second] = seqs as [number, number];
    expect(Number.isSafeInteger(first) && Number.isSafeInteger(second)).toBe(true);
    expect(second).toBeGreaterThan(first);
  });
});
