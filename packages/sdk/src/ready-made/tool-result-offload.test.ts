import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ConfigError,
  createHookManager,
  defineTool,
  guardPolicy,
  hookFromJSON,
  hookToJSON,
  type CustomChunk,
  type HookDecisionChunk,
  type StreamChunk,
  type ToolContext,
  type ToolResultMessage,
  type WarningChunk,
  type HookSource,
} from '../index.js';
import type { ScriptedStepFunction } from '../testing/index.js';
import { checkSchema } from '../tool-schema.js';
import { counterAgent, finish, setup } from '../__tests__/harness.js';
import { createToolGuard } from './tool-guard.js';
import {
  AlwaysOffload,
  createReadOffloadedResultTool,
  createToolResultOffloadHook,
  FileSystemToolResultStore,
  isOffloadPointer,
  NeverOffload,
  offloadKey,
  offloadPointer,
  OffloadOverChars,
  shouldOffload,
  TOOL_RESULT_OFFLOAD_HOOK_TYPE,
  TOOL_RESULT_OFFLOADED_EVENT,
  ToolResultOffloadHook,
  type ReadOffloadedResultOutput,
  type ToolResultStore,
} from './tool-result-offload.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'helix-offload-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const LONG = Array.from({ length: 50 }, (_, i) => `line-${String(i).padStart(3, '0')}`).join(' '); // 449 characters
const scope = { sessionId: 'session-1', runId: 'run-1' };

function tools() {
  return [
    defineTool({ name: 'search', description: 'search', inputSchema: z.object({ q: z.string() }), execute: () => LONG }),
    defineTool({ name: 'small', description: 'small', inputSchema: z.object({}), execute: () => 'tiny' }),
    defineTool({ name: 'rows', description: 'rows', inputSchema: z.object({}), execute: () => ({ rows: [1, 2, 3] }) }),
    defineTool({
      name: 'broken',
      description: 'fails',
      inputSchema: z.object({}),
      execute: (): string => {
        throw new Error('x'.repeat(500));
      },
    }),
  ];
}

const REF = /Tool result offloaded to '([^']+)'/;
const chunksOf = <T extends StreamChunk['type']>(chunks: readonly StreamChunk[], type: T) => chunks.filter((c): c is Extract<StreamChunk, { type: T }> => c.type === type);

describe('offload policies and pointers (pure parts)', () => {
  it('rule 212: OffloadOverChars is strict: exactly n characters stay, n + 1 go; Always and Never ignore length', () => {
    expect(shouldOffload(OffloadOverChars(5), '12345')).toBe(false);
    expect(shouldOffload(OffloadOverChars(5), '123456')).toBe(true);
    expect(shouldOffload(OffloadOverChars(0), '')).toBe(false);
    expect(shouldOffload(OffloadOverChars(0), 'a')).toBe(true);
    expect(shouldOffload(AlwaysOffload, '')).toBe(true);
    expect(shouldOffload(NeverOffload, 'x'.repeat(10_000))).toBe(false);
    expect(() => OffloadOverChars(-1)).toThrow(ConfigError);
    expect(() => OffloadOverChars(1.5)).toThrow(ConfigError);
  });

  it('the pointer carries the ref, the length and a preview; the ellipsis only when the preview is cut', () => {
    expect(offloadPointer('/r/0_a_c.txt', 'abcdef', 3)).toBe("Tool result offloaded to '/r/0_a_c.txt' (6 characters). Preview: abc...");
    expect(offloadPointer('/r/0_a_c.txt', 'abc', 3)).toBe("Tool result offloaded to '/r/0_a_c.txt' (3 characters). Preview: abc");
    expect(isOffloadPointer(offloadPointer('x', 'abc', 1))).toBe(true);
    expect(isOffloadPointer('Tool result offloaded elsewhere')).toBe(false);
    expect(isOffloadPointer({ text: offloadPointer('x', 'abc', 1) })).toBe(false);
  });

  it('keys are {step}.{tool}.{callId}.txt with every other byte escaped', () => {
    expect(offloadKey(2, 'web_search', 'call-123')).toBe('2.web_search.call-123.txt');
    expect(offloadKey(0, 'a', '../../etc/passwd')).toBe('0.a.~2E~2E~2F~2E~2E~2Fetc~2Fpasswd.txt');
  });
});

describe('FileSystemToolResultStore', () => {
  it('writes one file per key under the session folder and reads it back by absolute or relative ref', async () => {
    const store = new FileSystemToolResultStore({ dir });
    const ref = await store.write('0_search_c1.txt', 'hello', scope);
    expect(ref).toBe(join(dir, 'session-1', '0_search_c1.txt'));
    expect(await readFile(ref, 'utf8')).toBe('hello');
    expect(await store.read(ref, scope)).toBe('hello');
    expect(await store.read('0_search_c1.txt', scope)).toBe('hello');
  });

  it("refuses refs outside the caller's folder: traversal, other sessions, unknown files", async () => {
    const store = new FileSystemToolResultStore({ dir });
    const ref = await store.write('k.txt', 'mine', scope);
    await expect(store.read('../../../etc/passwd', scope)).rejects.toThrow(/not an offloaded result of this session/);
    await expect(store.read('/etc/passwd', scope)).rejects.toThrow(/not an offloaded result/);
    await expect(store.read(ref, { sessionId: 'session-2', runId: 'r' })).rejects.toThrow(/not an offloaded result/);
    await expect(store.read('missing.txt', scope)).rejects.toThrow(/No offloaded result found/);
    const flat = new FileSystemToolResultStore({ dir, perSession: false });
    expect(await flat.write('k.txt', 'flat', scope)).toBe(join(dir, 'k.txt'));
    expect(await flat.read(join(dir, 'k.txt'), { sessionId: 'anyone', runId: 'r' })).toBe('flat');
  });
});

describe('createToolResultOffloadHook in a run', () => {
  it('rules 211, 212: offloads per policy, gives the model a pointer, keeps small, error and unlisted results, and the model reads the result back', async () => {
    const { executor, stateStore, streamManager } = setup();
    const store = new FileSystemToolResultStore({ dir });
    const hook = createToolResultOffloadHook({
      store,
      policies: { search: OffloadOverChars(100), small: OffloadOverChars(100), rows: AlwaysOffload, broken: AlwaysOffload },
    });
    const readBack: ScriptedStepFunction = (options) => {
      const ref = REF.exec(JSON.stringify(options.prompt))![1]!;
      return { toolCalls: [{ name: 'read_offloaded_result', args: { ref, offset: 10, length: 20 }, id: 'r1' }] };
    };
    const agent = counterAgent(
      [
        {
          toolCalls: [
            { name: 'search', args: { q: 'q' }, id: 's1' },
            { name: 'small', args: {}, id: 'm1' },
            { name: 'rows', args: {}, id: 'j1' },
            { name: 'broken', args: {}, id: 'f1' },
          ],
        },
        readBack,
        finish('done'),
      ],
      { tools: [...tools(), createReadOffloadedResultTool(store)] },
    );
    const handle = await executor.execute(agent, 'go', { hookManager: createHookManager(hook) });
    const result = await handle.result();
    expect(result.status).toBe('completed');

    const rows = (await stateStore.loadSession(handle.sessionId))!.messages.filter((m): m is ToolResultMessage => m.role === 'tool');
    const row = (id: string) => rows.find((r) => r.toolCallId === id)!;
    const searchRef = join(dir, handle.sessionId, '0.search.s1.txt');
    expect(row('s1').content).toBe(`Tool result offloaded to '${searchRef}' (${LONG.length} characters). Preview: ${LONG.slice(0, 200)}...`);
    expect(await readFile(searchRef, 'utf8')).toBe(LONG);
    expect(row('m1').content).toBe('tiny');
    const rowsRef = join(dir, handle.sessionId, '0.rows.j1.txt');
    expect(row('j1').content).toBe(`Tool result offloaded to '${rowsRef}' (16 characters). Preview: {"rows":[1,2,3]}`);
    expect(row('f1')).toMatchObject({ isError: true, errorInfo: { code: 'tool_failed' } });
    expect((await readdir(join(dir, handle.sessionId))).sort()).toEqual(['0.rows.j1.txt', '0.search.s1.txt']);
    // The read-back tool's result is not offloaded (it has no policy) and returns the requested slice.
    expect(row('r1').content).toEqual({ ref: searchRef, offset: 10, content: LONG.slice(10, 30), totalChars: LONG.length, nextOffset: 30 } satisfies ReadOffloadedResultOutput);

    const chunks = streamManager.chunks(handle.sessionId);
    expect(
      chunksOf(chunks, 'hook_decision')
        .map((d: HookDecisionChunk) => [d.toolCallId, d.hookName, d.decision])
        .sort(),
    ).toEqual([
      ['j1', 'ToolResultOffloadHook.afterTool', 'rewrite'],
      ['s1', 'ToolResultOffloadHook.afterTool', 'rewrite'],
    ]);
    const events = chunksOf(chunks, 'custom').filter((c: CustomChunk) => c.eventName === TOOL_RESULT_OFFLOADED_EVENT);
    expect(events.map((e) => e.data).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))).toEqual([
      { toolCallId: 'j1', toolName: 'rows', ref: rowsRef, chars: 16 },
      { toolCallId: 's1', toolName: 'search', ref: searchRef, chars: LONG.length },
    ]);
    // The tool_end chunk carries what the model sees.
    expect(chunksOf(chunks, 'tool_end').find((c) => c.toolCallId === 's1')!.result).toBe(row('s1').content);
  });

  it("the model's next call sees the pointer, never the full result", async () => {
    const { executor } = setup();
    let prompt = '';
    const agent = counterAgent(
      [
        { toolCalls: [{ name: 'search', args: { q: 'q' }, id: 's1' }] },
        (options) => {
          prompt = JSON.stringify(options.prompt);
          return finish('ok');
        },
      ],
      { tools: tools() },
    );
    await (await executor.execute(agent, 'go', { hookManager: createHookManager(createToolResultOffloadHook({ store: new FileSystemToolResultStore({ dir }), policies: { search: AlwaysOffload }, previewChars: 10 })) })).result();
    expect(prompt).toContain(`Preview: ${LONG.slice(0, 10)}...`);
    expect(prompt).not.toContain(LONG.slice(0, 11));
  });

  it('a second offload hook does not offload the pointer; blocked calls and the read-back tool under "*" are left alone', async () => {
    const { executor } = setup();
    const writes: string[] = [];
    const inner = new FileSystemToolResultStore({ dir });
    const counting: ToolResultStore = {
      write: async (key, content, s) => (writes.push(key), inner.write(key, content, s)),
      read: (ref, s) => inner.read(ref, s),
    };
    const readTool = createReadOffloadedResultTool(counting);
    const agent = counterAgent(
      [
        {
          toolCalls: [
            { name: 'search', args: { q: 'q' }, id: 's1' },
            { name: 'rows', args: {}, id: 'blocked' },
          ],
        },
        (options) => ({ toolCalls: [{ name: 'read_offloaded_result', args: { ref: REF.exec(JSON.stringify(options.prompt))![1]! }, id: 'r1' }] }),
        finish('ok'),
      ],
      { tools: [...tools(), readTool] },
    );
    const hookManager = createHookManager(createToolGuard({ deny: ['rows'] }), { onError: guardPolicy })
      .register(createToolResultOffloadHook({ store: counting, policies: { '*': AlwaysOffload } }))
      .register(createToolResultOffloadHook({ store: counting, policies: { '*': AlwaysOffload } }));
    const result = await (await executor.execute(agent, 'go', { hookManager })).result();
    expect(result.status).toBe('completed');
    expect(writes).toEqual(['0.search.s1.txt']);
    expect(new ToolResultOffloadHook({ store: counting, policies: { '*': AlwaysOffload } }).policyFor(readTool)).toBeUndefined();
    expect(new ToolResultOffloadHook({ store: counting, policies: { '*': AlwaysOffload, read_offloaded_result: AlwaysOffload } }).policyFor(readTool)).toBe(AlwaysOffload);
  });

  it('a store that fails keeps the full result and writes a warning chunk', async () => {
    const { executor, stateStore, streamManager } = setup();
    const failing: ToolResultStore = {
      write: () => Promise.reject(new Error('disk full')),
      read: () => Promise.reject(new Error('nothing')),
    };
    const agent = counterAgent([{ toolCalls: [{ name: 'search', args: { q: 'q' }, id: 's1' }] }, finish('ok')], { tools: tools() });
    const handle = await executor.execute(agent, 'go', { hookManager: createHookManager(createToolResultOffloadHook({ store: failing, policies: { search: AlwaysOffload } })) });
    expect((await handle.result()).status).toBe('completed');
    const row = (await stateStore.loadSession(handle.sessionId))!.messages.find((m): m is ToolResultMessage => m.role === 'tool')!;
    expect(row.content).toBe(LONG);
    const warnings = chunksOf(streamManager.chunks(handle.sessionId), 'warning') as WarningChunk[];
    expect(warnings).toEqual([expect.objectContaining({ errorInfo: expect.objectContaining({ code: 'tool_result_offload_failed', severity: 'warning' }) })]);
    expect(warnings[0]!.errorInfo.message).toContain('disk full');
  });
});

describe('serialization and the read-back tool', () => {
  it('toJSON + the registered factory rebuild an equivalent hook from configuration', () => {
    const hook = createToolResultOffloadHook({ store: new FileSystemToolResultStore({ dir, perSession: false }), policies: { search: OffloadOverChars(4000), time: NeverOffload }, previewChars: 50 });
    const json = hookToJSON(hook);
    expect(json).toEqual({
      type: TOOL_RESULT_OFFLOAD_HOOK_TYPE,
      config: { store: { type: 'filesystem', config: { dir, perSession: false } }, policies: { search: { kind: 'over_chars', maxChars: 4000 }, time: { kind: 'never' } }, previewChars: 50 },
    });
    const rebuilt = hookFromJSON(JSON.parse(JSON.stringify(json)) as typeof json) as ToolResultOffloadHook;
    expect(rebuilt).toBeInstanceOf(ToolResultOffloadHook);
    expect(rebuilt.store).toBeInstanceOf(FileSystemToolResultStore);
    expect((rebuilt.store as FileSystemToolResultStore).dir).toBe(dir);
    expect(rebuilt.policies).toEqual(hook.policies);
    expect(rebuilt.previewChars).toBe(50);
    expect(() => hookFromJSON({ type: TOOL_RESULT_OFFLOAD_HOOK_TYPE, config: { store: { type: 's3', config: {} }, policies: {} } })).toThrow(/Known types: filesystem/);
    expect(() => hookFromJSON({ type: TOOL_RESULT_OFFLOAD_HOOK_TYPE, config: { policies: 'all' } })).toThrow(ConfigError);
    const inMemory: ToolResultStore = { write: async (k) => k, read: async () => '' };
    expect(() => hookToJSON(createToolResultOffloadHook({ store: inMemory, policies: {} }))).toThrow(/store has no toJSON/);
  });

  it('validates its options and is allowed only at afterTool', () => {
    const store = new FileSystemToolResultStore({ dir });
    expect(() => createToolResultOffloadHook({ store: {} as ToolResultStore, policies: {} })).toThrow(ConfigError);
    expect(() => createToolResultOffloadHook({ store, policies: { x: { kind: 'sometimes' } as never } })).toThrow(/AlwaysOffload, NeverOffload or OffloadOverChars/);
    expect(() => createToolResultOffloadHook({ store, policies: {}, previewChars: -1 })).toThrow(ConfigError);
    expect(() => createHookManager({ beforeTool: createToolResultOffloadHook({ store, policies: {} }) } as HookSource)).toThrow(/allows only afterTool/);
  });

  it('reads in parts of at most maxChars, reporting nextOffset until the end', async () => {
    const store = new FileSystemToolResultStore({ dir });
    const ref = await store.write('k.txt', 'abcdefghij', scope);
    const tool = createReadOffloadedResultTool(store, { maxChars: 4 });
    const ctx = { sessionId: 'session-1', runId: 'run-1' } as ToolContext;
    expect(await tool.execute!({ ref }, ctx)).toEqual({ ref, offset: 0, content: 'abcd', totalChars: 10, nextOffset: 4 });
    expect(await tool.execute!({ ref, offset: 8, length: 100 }, ctx)).toEqual({ ref, offset: 8, content: 'ij', totalChars: 10 });
    expect(await tool.execute!({ ref, offset: 50 }, ctx)).toEqual({ ref, offset: 10, content: '', totalChars: 10 });
    expect(await checkSchema(tool.inputSchema, { ref, offset: -1 })).toMatchObject({ ok: false });
    expect(() => createReadOffloadedResultTool(store, { maxChars: 0 })).toThrow(ConfigError);
  });
});
