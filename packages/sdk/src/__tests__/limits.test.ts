import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { ConfigError, DEFAULT_RESOURCE_LIMITS, defineAgent, defineTool, createHookManager, type AgentErrorInfo, type Message, type ToolResultMessage } from '../index.js';
import { createReadOffloadedResultTool, createToolResultOffloadHook, FileSystemToolResultStore, OffloadOverChars } from '../ready-made/index.js';
import { WorkingCopy } from '../runtime/working-copy.js';
import { createHookRecorder, createScriptedModel, type ScriptedStep } from '../testing/index.js';
import { bareTool, collect, setup, textAgent } from './harness.js';

// Issue 14, item 10: documented, configurable limits with typed errors that lose nothing.

const toolRows = (messages: readonly Message[]): ToolResultMessage[] => messages.filter((m): m is ToolResultMessage => m.role === 'tool');

function expectInfo(info: AgentErrorInfo | undefined, code: string, layer: string): void {
  expect(info).toMatchObject({ code, layer, retryable: false });
  expect(info?.hint).toEqual(expect.any(String));
}

describe('limits are configured and checked', () => {
  it('defaults are set for all six limits, and an executor or agent limit that is not a positive integer (or Infinity) is a ConfigError', () => {
    expect(DEFAULT_RESOURCE_LIMITS).toEqual({ maxInputChars: 1_000_000, maxToolResultChars: 1_000_000, maxToolCallsPerStep: 64, maxStateChars: 2_000_000, maxMessages: 10_000, maxInputFileBytes: 10 * 1024 * 1024 });
    for (const bad of [0, -1, 1.5, Number.NaN, '10' as unknown as number]) {
      expect(() => setup({ executor: { limits: { maxMessages: bad } } })).toThrow(ConfigError);
      expect(() => setup({ executor: { limits: { maxInputFileBytes: bad } } })).toThrow(ConfigError);
      expect(() => textAgent([], { limits: { maxInputChars: bad } })).toThrow(expect.objectContaining({ info: expect.objectContaining({ code: 'config_invalid', message: expect.stringContaining('limits.maxInputChars') }) }));
    }
    expect(() => setup({ executor: { limits: { maxMessages: Infinity, maxStateChars: 10 } } })).not.toThrow();
  });
});

describe('input size (maxInputChars)', () => {
  it('an input over the limit is refused with run_input_too_large and nothing is written; one at the limit runs', async () => {
    const { executor, stateStore, streamManager } = setup({ executor: { limits: { maxInputChars: 100 } } });
    const agent = textAgent([{ text: 'ok' }]);
    const refused = executor.execute(agent, 'x'.repeat(101), { sessionId: 'big-input' });
    await expect(refused).rejects.toMatchObject({ info: { code: 'run_input_too_large', layer: 'run', retryable: false, details: { size: 101, max: 100, limit: 'maxInputChars' } } });
    expect(await stateStore.loadSession('big-input')).toBeUndefined();
    expect(await collect(streamManager.read('big-input', { follow: false }))).toEqual([]);
    const fits = await executor.execute(agent, 'x'.repeat(100), { sessionId: 'big-input' });
    expect((await fits.result()).status).toBe('completed');
  });

  it('the default refuses an input one character over 1,000,000', async () => {
    const { executor } = setup();
    await expect(executor.execute(textAgent([{ text: 'ok' }]), 'x'.repeat(DEFAULT_RESOURCE_LIMITS.maxInputChars + 1))).rejects.toMatchObject({ info: { code: 'run_input_too_large' } });
  });

  it('send() and retry() messages over the limit are refused and the session does not change; the agent-level limit wins over the executor one', async () => {
    const { executor, stateStore } = setup({ executor: { limits: { maxInputChars: 1_000 } } });
    const agent = textAgent([{ text: 'one' }, { error: { status: 400, message: 'no' } }, { text: 'three' }], { limits: { maxInputChars: 20 } });
    await (await executor.execute(agent, 'hello', { sessionId: 's' })).result();
    const before = await stateStore.loadSession('s');
    await expect(executor.send('s', 'y'.repeat(21))).rejects.toMatchObject({ info: { code: 'run_input_too_large', details: { max: 20 } } });
    expect(await stateStore.loadSession('s')).toEqual(before);
    expect((await (await executor.send('s', 'fails')).result()).status).toBe('failed');
    const failed = await stateStore.loadSession('s');
    await expect(executor.retry('s', { message: 'z'.repeat(21) })).rejects.toMatchObject({ info: { code: 'run_input_too_large' } });
    expect(await stateStore.loadSession('s')).toEqual(failed);
    expect((await (await executor.retry('s', { message: 'again' })).result()).status).toBe('completed');
  });

  it('an initial state over maxStateChars is refused at the entry', async () => {
    const { executor, stateStore } = setup({ executor: { limits: { maxStateChars: 50 } } });
    const agent = defineAgent({ name: 'stateful', llmConfig: { model: createScriptedModel([{ text: 'ok' }]) } });
    await expect(executor.execute(agent, 'go', { sessionId: 'init', initialState: { blob: 'b'.repeat(60) } })).rejects.toMatchObject({ info: { code: 'run_input_too_large', details: { limit: 'maxStateChars' } } });
    expect(await stateStore.loadSession('init')).toBeUndefined();
  });

  it('a client result over maxToolResultChars and an edited approval input over maxInputChars are refused; the session stays suspended and a fitting answer resumes it', async () => {
    const { executor, stateStore } = setup({ executor: { limits: { maxToolResultChars: 50, maxInputChars: 40 } } });
    const ask = defineTool({ name: 'ask', description: 'Ask the user', inputSchema: z.object({ q: z.string() }) });
    const write = defineTool({ name: 'write', description: 'Write', inputSchema: z.object({ text: z.string() }), needsApproval: true, execute: async (input) => input.text.length });
    const agent = textAgent(
      [{ toolCalls: [{ name: 'ask', args: { q: 'name?' }, id: 'c1' }] }, { toolCalls: [{ name: 'write', args: { text: 'hi' }, id: 'c2' }] }, { text: 'done' }],
      { tools: [ask, write] },
    );
    expect((await (await executor.execute(agent, 'go', { sessionId: 'hitl' })).result()).status).toBe('suspended');
    const suspended = await stateStore.loadSession('hitl');
    await expect(executor.submitToolResult('hitl', 'c1', 'r'.repeat(60))).rejects.toMatchObject({ info: { code: 'run_input_too_large', details: { limit: 'maxToolResultChars' } } });
    expect(await stateStore.loadSession('hitl')).toEqual(suspended);
    expect((await (await executor.submitToolResult('hitl', 'c1', 'Ada')).result()).status).toBe('suspended');
    const again = await stateStore.loadSession('hitl');
    await expect(executor.approve('hitl', 'c2', { input: { text: 't'.repeat(60) } })).rejects.toMatchObject({ info: { code: 'run_input_too_large', details: { limit: 'maxInputChars' } } });
    expect(await stateStore.loadSession('hitl')).toEqual(again);
    expect(await (await executor.approve('hitl', 'c2', { input: { text: 'short' } })).result()).toMatchObject({ status: 'completed', output: 'done' });
  });
});

describe('stored tool result size (maxToolResultChars)', () => {
  const dirs: string[] = [];
  afterEach(async () => {
    for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  });

  const bigTool = bareTool('fetch_page', 'Fetch a page', () => 'lorem ipsum '.repeat(200));

  it('a result over the limit becomes a tool_result_too_large error result whose hint points to offloading; the run goes on', async () => {
    const { executor, stateStore, streamManager } = setup({ executor: { limits: { maxToolResultChars: 1_000 } } });
    const agent = textAgent([{ toolCalls: [{ name: 'fetch_page', args: {}, id: 'p1' }] }, { text: 'summarised' }], { tools: [bigTool] });
    const result = await (await executor.execute(agent, 'go', { sessionId: 'big-result' })).result();
    expect(result).toMatchObject({ status: 'completed', output: 'summarised' });
    const [row] = toolRows((await stateStore.loadSession('big-result'))!.messages);
    expect(row).toMatchObject({ isError: true, toolCallId: 'p1' });
    expectInfo(row!.errorInfo, 'tool_result_too_large', 'tool');
    expect(row!.errorInfo).toMatchObject({ details: { tool: 'fetch_page', size: 2_402, max: 1_000 } });
    expect(row!.errorInfo!.hint).toContain('createToolResultOffloadHook');
    expect(typeof row!.content).toBe('string');
    const chunks = await collect(streamManager.read('big-result', { follow: false }));
    expect(chunks.find((c) => c.type === 'tool_end')).toMatchObject({ success: false, error: { code: 'tool_result_too_large' } });
    expect(JSON.stringify(chunks)).not.toContain('lorem ipsum lorem');
  });

  it('the limit applies to the row as stored: with the offloading hook the same result is offloaded and the model reads it back', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'helix-limits-'));
    dirs.push(dir);
    const store = new FileSystemToolResultStore({ dir });
    const { executor, stateStore } = setup({ executor: { limits: { maxToolResultChars: 1_000 } } });
    const offload = createToolResultOffloadHook({ store, policies: { fetch_page: OffloadOverChars(500) } });
    const agent = textAgent([{ toolCalls: [{ name: 'fetch_page', args: {}, id: 'p1' }] }, { text: 'summarised' }], { tools: [bigTool, createReadOffloadedResultTool(store)] });
    const result = await (await executor.execute(agent, 'go', { sessionId: 'offloaded', hookManager: createHookManager(offload) })).result();
    expect(result.status).toBe('completed');
    const [row] = toolRows((await stateStore.loadSession('offloaded'))!.messages);
    expect(row!.isError).toBeUndefined();
    expect(String(row!.content)).toMatch(/^Tool result offloaded to /);
  });

  it('an afterTool rewrite that makes the row too large is refused the same way', async () => {
    const { executor, stateStore } = setup({ executor: { limits: { maxToolResultChars: 100 } } });
    const small = bareTool('small', 'Small', () => 'ok');
    const agent = textAgent([{ toolCalls: [{ name: 'small', args: {}, id: 's1' }] }, { text: 'fine' }], { tools: [small] });
    const hooks = { afterTool: () => ({ result: { padding: 'p'.repeat(200) } }) };
    expect((await (await executor.execute(agent, 'go', { sessionId: 'rewrite', hooks })).result()).status).toBe('completed');
    const [row] = toolRows((await stateStore.loadSession('rewrite'))!.messages);
    expect(row!.errorInfo?.code).toBe('tool_result_too_large');
  });
});

describe('tool calls per step (maxToolCallsPerStep)', () => {
  it('calls past the limit get a tool_calls_exceeded error result and fire no tool hooks; the first ones run and the run goes on', async () => {
    const { executor, stateStore, streamManager } = setup({ executor: { limits: { maxToolCallsPerStep: 2 } } });
    let ran = 0;
    const tick = bareTool('tick', 'Tick', () => ++ran);
    const calls = [1, 2, 3, 4].map((n) => ({ name: 'tick', args: {}, id: `t${n}` }));
    const agent = textAgent([{ toolCalls: calls }, { text: 'ticked' }], { tools: [tick] });
    const rec = createHookRecorder({ points: ['beforeTool', 'afterTool'] });
    const result = await (await executor.execute(agent, 'go', { sessionId: 'many', hooks: rec.hooks })).result();
    expect(result).toMatchObject({ status: 'completed', output: 'ticked' });
    expect(ran).toBe(2);
    expect(rec.calls.filter((e) => e.point === 'beforeTool').map((e) => (e.payload as { toolCall: { id: string } }).toolCall.id).sort()).toEqual(['t1', 't2']);
    const rows = toolRows((await stateStore.loadSession('many'))!.messages);
    expect(rows.map((r) => r.toolCallId).sort()).toEqual(['t1', 't2', 't3', 't4']);
    for (const id of ['t3', 't4']) {
      const row = rows.find((r) => r.toolCallId === id)!;
      expectInfo(row.errorInfo, 'tool_calls_exceeded', 'tool');
      expect(row.errorInfo!.details).toMatchObject({ max: 2, total: 4 });
    }
    const completed = (await collect(streamManager.read('many', { follow: false }))).find((c) => c.type === 'actions_completed');
    expect(completed).toMatchObject({ results: [{ callId: 't1' }, { callId: 't2' }, { callId: 't3', isError: true }, { callId: 't4', isError: true }] });
  });

  it('by default the 65th call of one reply is refused', async () => {
    const { executor, stateStore } = setup();
    const tick = bareTool('tick', 'Tick', () => 'ok');
    const calls = Array.from({ length: 65 }, (_, i) => ({ name: 'tick', args: {}, id: `c${i}` }));
    await (await executor.execute(textAgent([{ toolCalls: calls }, { text: 'ok' }], { tools: [tick] }), 'go', { sessionId: 'default-calls' })).result();
    const refused = toolRows((await stateStore.loadSession('default-calls'))!.messages).filter((r) => r.errorInfo?.code === 'tool_calls_exceeded');
    expect(refused.map((r) => r.toolCallId)).toEqual(['c64']);
  });
});

describe('state size (maxStateChars)', () => {
  const Notes = z.object({ notes: z.array(z.string()).default([]) });
  const note = defineTool({
    name: 'note',
    description: 'Keep a note',
    inputSchema: z.object({ text: z.string() }),
    execute: async (input, ctx) => {
      ctx.updateState<{ notes: string[] }>((draft) => void draft.notes.push(input.text));
      return 'noted';
    },
  });
  const notesAgent = (steps: ScriptedStep[]) => defineAgent({ name: 'notes', stateSchema: Notes, llmConfig: { model: createScriptedModel(steps) }, tools: [note] });

  it('a step whose writes grow the state past the limit fails the run with run_state_too_large; the committed state and rows are kept, the step is not committed', async () => {
    const { executor, stateStore, streamManager } = setup({ executor: { limits: { maxStateChars: 200 } } });
    const agent = notesAgent([
      { toolCalls: [{ name: 'note', args: { text: 'a'.repeat(50) }, id: 'n1' }] },
      { toolCalls: [{ name: 'note', args: { text: 'b'.repeat(200) }, id: 'n2' }] },
      { text: 'unreached' },
    ]);
    const result = await (await executor.execute(agent, 'go', { sessionId: 'fat' })).result();
    expect(result.status).toBe('failed');
    expectInfo(result.error, 'run_state_too_large', 'run');
    expect(result.error).toMatchObject({ severity: 'fatal', details: { max: 200 } });
    const session = (await stateStore.loadSession('fat'))!;
    expect(session.state).toEqual({ notes: ['a'.repeat(50)] });
    expect(toolRows(session.messages).map((r) => r.toolCallId)).toEqual(['n1']);
    const chunks = await collect(streamManager.read('fat', { follow: false }));
    expect(chunks.at(-1)).toMatchObject({ type: 'error', status: 'failed', errorInfo: { code: 'run_state_too_large' } });
    // The write that could never be committed was not streamed as a state_patch either.
    const patches = chunks.filter((c) => c.type === 'state_patch');
    expect(patches).toHaveLength(1);
    expect(JSON.stringify(patches)).not.toContain('b'.repeat(200));
  });

  it("onAgentComplete's write past the limit fails the run and the state stays as committed", async () => {
    const { executor, stateStore } = setup({ executor: { limits: { maxStateChars: 200 } } });
    const agent = notesAgent([{ text: 'done' }]);
    const hooks = { onAgentComplete: (_p: unknown, ctx: { updateState: (f: (d: { notes: string[] }) => void) => void }) => ctx.updateState((d) => void d.notes.push('c'.repeat(300))) };
    const result = await (await executor.execute(agent, 'go', { sessionId: 'fat-end', hooks: hooks as never })).result();
    expect(result.error?.code).toBe('run_state_too_large');
    expect((await stateStore.loadSession('fat-end'))!.state).toEqual({ notes: [] });
  });

  it('property: the working copy reports the state over a limit exactly when its JSON is longer, whatever writes and rollbacks came before', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('push' as const), text: fc.string({ maxLength: 40 }) }),
      fc.record({ kind: fc.constant('set' as const), key: fc.string({ minLength: 1, maxLength: 6 }), text: fc.string({ maxLength: 40 }) }),
      fc.record({ kind: fc.constant('delete' as const), key: fc.string({ minLength: 1, maxLength: 6 }) }),
      fc.record({ kind: fc.constant('shift' as const) }),
      fc.record({ kind: fc.constant('root' as const), text: fc.string({ maxLength: 40 }) }),
      fc.record({ kind: fc.constant('mark' as const) }),
      fc.record({ kind: fc.constant('rollback' as const) }),
      fc.record({ kind: fc.constant('commit' as const) }),
      fc.record({ kind: fc.constant('check' as const), max: fc.integer({ min: 1, max: 400 }) }),
    );
    fc.assert(
      fc.property(fc.array(op, { minLength: 5, maxLength: 80, size: 'max' }), (ops) => {
        type S = { list: string[]; map: Record<string, string> };
        const work = new WorkingCopy({ list: [], map: {} }, []);
        let mark = work.mark();
        const update = (f: (d: S) => void) => work.update((d) => f(d as S), 'owner');
        for (const o of ops) {
          if (o.kind === 'push') update((d) => void d.list.push(o.text));
          else if (o.kind === 'set') update((d) => void (d.map[o.key] = o.text));
          else if (o.kind === 'delete') update((d) => void delete d.map[o.key]);
          else if (o.kind === 'shift') update((d) => void d.list.shift());
          else if (o.kind === 'root') work.update(() => ({ list: [o.text], map: {} }), 'owner');
          else if (o.kind === 'mark') mark = work.mark();
          else if (o.kind === 'rollback') work.rollbackTo(mark);
          else if (o.kind === 'commit') work.committed();
          else {
            // Just under the size first: a bound that fell below the real size would let this pass unmeasured.
            const size = JSON.stringify(work.state).length;
            expect(work.stateOver(size - 1)).toBe(size);
            expect(work.stateOver(size)).toBeUndefined();
            expect(work.stateOver(o.max)).toBe(size > o.max ? size : undefined);
          }
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe('message count (maxMessages)', () => {
  it('a run whose conversation grows past the limit fails before its next model call with run_too_many_messages; a new turn past it is refused and changes nothing', async () => {
    const { executor, stateStore } = setup({ executor: { limits: { maxMessages: 4 } } });
    const tick = bareTool('tick', 'Tick', () => 'ok');
    const model = createScriptedModel([{ toolCalls: [{ name: 'tick', args: {}, id: 'a' }] }, { toolCalls: [{ name: 'tick', args: {}, id: 'b' }] }, { text: 'unreached' }]);
    const agent = defineAgent({ name: 'chatty', llmConfig: { model }, tools: [tick] });
    const result = await (await executor.execute(agent, 'go', { sessionId: 'long' })).result();
    expect(result.status).toBe('failed');
    expectInfo(result.error, 'run_too_many_messages', 'run');
    expect(result.error).toMatchObject({ details: { count: 5, max: 4 } });
    expect(model.callCount).toBe(2);
    const session = (await stateStore.loadSession('long'))!;
    expect(session.messages).toHaveLength(5);
    await expect(executor.send('long', 'more')).rejects.toMatchObject({ info: { code: 'run_too_many_messages', details: { count: 6, max: 4 } } });
    expect(await stateStore.loadSession('long')).toEqual(session);
  });
});
