import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ConfigError,
  createHookManager,
  defineTool,
  guardPolicy,
  RunInterruptedError,
  type AfterToolPayload,
  type CustomChunk,
  type ExitPayload,
  type HookContext,
  type HookDecisionChunk,
  type StreamChunk,
  type ToolResultMessage,
  type HookSource,
} from '../index.js';
import { createHookRecorder, type ScriptedToolCall } from '../testing/index.js';
import { counterAgent, finish, incrementTool, setup } from '../__tests__/harness.js';
import {
  alwaysConfirm,
  alwaysReject,
  createConfirmationHook,
  programmaticStrategy,
  rejectionReason,
  terminalPrompt,
  TOOL_CONFIRMATION_EVENT,
  type ConfirmationRequest,
  type ConfirmationStrategy,
  type ToolConfirmationEvent,
} from './confirmation.js';
import { createToolGuard } from './tool-guard.js';

function writeFileTool() {
  const written: { path: string; content: string }[] = [];
  const tool = defineTool({
    name: 'write_file',
    description: 'Write a file',
    inputSchema: z.object({ path: z.string(), content: z.string() }),
    execute: (input) => {
      written.push(input);
      return { written: input.path };
    },
  });
  return { tool, written };
}

/** A write_file call of the model, with its call id. */
const writeCall = (id: string, path: string, content = ''): ScriptedToolCall => ({ name: 'write_file', args: { path, content }, id });

const decisions = (chunks: readonly StreamChunk[]) => chunks.filter((c): c is HookDecisionChunk => c.type === 'hook_decision');
const confirmations = (chunks: readonly StreamChunk[]) =>
  chunks.filter((c): c is CustomChunk => c.type === 'custom' && c.eventName === TOOL_CONFIRMATION_EVENT).map((c) => c.data as ToolConfirmationEvent);

describe('createConfirmationHook', () => {
  it('rule 210: confirms, modifies and rejects per call through the strategy of each tool; the transcript, stream and state show it', async () => {
    const { executor, stateStore, streamManager } = setup();
    const { tool, written } = writeFileTool();
    const asked: string[] = [];
    const hook = createConfirmationHook({
      strategies: {
        write_file: programmaticStrategy((call) => {
          asked.push(call.id);
          const { path } = call.arguments as { path: string };
          if (path === 'a.txt') return { decision: 'modify', input: { path: 'safe/a.txt', content: 'checked' } };
          return { decision: 'reject', feedback: 'do not touch b' };
        }),
        '*': alwaysConfirm,
      },
    });
    const rec = createHookRecorder({ points: ['afterTool', 'onExit'] });
    const agent = counterAgent(
      [
        {
          toolCalls: [
            writeCall('w1', 'a.txt', 'x'),
            { name: 'increment', args: { by: 2 }, id: 'i1' },
            writeCall('w2', 'b.txt', 'y'),
          ],
        },
        finish('done'),
      ],
      { tools: [tool, incrementTool] },
    );
    const handle = await executor.execute(agent, 'go', { hookManager: createHookManager(hook), hooks: rec.hooks });
    const result = await handle.result();

    expect(result.status).toBe('completed');
    expect(result.state.count).toBe(2);
    expect(written).toEqual([{ path: 'safe/a.txt', content: 'checked' }]);
    expect(asked.sort()).toEqual(['w1', 'w2']);

    const rows = (await stateStore.loadSession(handle.sessionId))!.messages.filter((m): m is ToolResultMessage => m.role === 'tool');
    expect(rows.find((r) => r.toolCallId === 'w1')).toMatchObject({ content: { written: 'safe/a.txt' } });
    expect(rows.find((r) => r.toolCallId === 'i1')).toMatchObject({ content: { ok: true, by: 2 } });
    expect(rows.find((r) => r.toolCallId === 'w2')).toMatchObject({
      isError: true,
      content: `Tool "write_file" was blocked by an agent hook: Tool execution for 'write_file' was rejected by the user. With user feedback: do not touch b`,
      errorInfo: { code: 'hook_blocked', layer: 'tool', severity: 'warning' },
    });

    // C13 / D4: afterTool still fires for the rejected call, with blocked: true; the rejected call is not counted.
    const afters = rec.of('afterTool').map((c) => c.payload as AfterToolPayload);
    expect(afters.find((a) => a.toolCall.id === 'w2')).toMatchObject({ blocked: true, success: false });
    expect(afters.find((a) => a.toolCall.id === 'w1')!.toolCall.arguments).toEqual({ path: 'safe/a.txt', content: 'checked' });
    expect((rec.of('onExit')[0]!.payload as ExitPayload).toolCallCounts).toEqual({ write_file: 1, increment: 1 });

    const chunks = streamManager.chunks(handle.sessionId);
    expect(decisions(chunks).map((d) => [d.toolCallId, d.hookName, d.decision]).sort()).toEqual([
      ['w1', 'ConfirmationHook.beforeTool', 'rewrite'],
      ['w2', 'ConfirmationHook.beforeTool', 'block'],
    ]);
    expect(decisions(chunks).find((d) => d.toolCallId === 'w2')!.reason).toBe(rejectionReason('write_file', 'do not touch b'));
    const events = confirmations(chunks).sort((a, b) => a.toolCallId.localeCompare(b.toolCallId));
    expect(events).toEqual([
      { toolCallId: 'i1', toolName: 'increment', strategy: 'alwaysConfirm', decision: 'confirm' },
      {
        toolCallId: 'w1',
        toolName: 'write_file',
        strategy: 'programmatic',
        decision: 'modify',
        input: { path: 'safe/a.txt', content: 'checked' },
        message: `The parameters for tool 'write_file' were updated by the user to:\n{\n  "path": "safe/a.txt",\n  "content": "checked"\n}`,
      },
      {
        toolCallId: 'w2',
        toolName: 'write_file',
        strategy: 'programmatic',
        decision: 'reject',
        feedback: 'do not touch b',
        reason: "Tool execution for 'write_file' was rejected by the user. With user feedback: do not touch b",
      },
    ]);
  });

  it('a tool with no strategy (and no "*") runs unchanged, without asking; exact names win over "*"', async () => {
    const { executor } = setup();
    const { tool, written } = writeFileTool();
    let asked = 0;
    const hook = createConfirmationHook({ strategies: { write_file: programmaticStrategy(() => (asked++, { decision: 'confirm' })) } });
    expect(hook.strategyFor('increment')).toBeUndefined();
    expect(createConfirmationHook({ strategies: { '*': alwaysReject, write_file: alwaysConfirm } }).strategyFor('write_file')).toBe(alwaysConfirm);
    const agent = counterAgent(
      [{ toolCalls: [{ name: 'increment', args: { by: 1 } }, { name: 'write_file', args: { path: 'x', content: '' } }] }, finish('ok')],
      { tools: [tool, incrementTool] },
    );
    const result = await (await executor.execute(agent, 'go', { hookManager: createHookManager(hook) })).result();
    expect(result.state.count).toBe(1);
    expect(asked).toBe(1);
    expect(written).toHaveLength(1);
  });

  it('rejection reason without feedback is the bare sentence', () => {
    expect(rejectionReason('rm')).toBe("Tool execution for 'rm' was rejected by the user.");
    expect(rejectionReason('rm', '  ')).toBe("Tool execution for 'rm' was rejected by the user.");
  });

  it('issue 4 item 3, approval placement: a guard registered before it blocks the call and the human is never asked', async () => {
    const { executor, streamManager } = setup();
    const { tool, written } = writeFileTool();
    const asked: string[] = [];
    const hookManager = createHookManager(createToolGuard({ argumentRules: [{ tool: 'write_file', path: 'path', deny: [/\.env$/] }] }), { onError: guardPolicy }).register(
      createConfirmationHook({ strategies: { write_file: programmaticStrategy((call) => (asked.push(call.id), { decision: 'confirm' })) } }),
    );
    const agent = counterAgent([{ toolCalls: [writeCall('bad', 'config/.env', 'SECRET=1'), writeCall('good', 'notes.txt', 'hi')] }, finish('ok')], { tools: [tool] });
    const handle = await executor.execute(agent, 'go', { hookManager });
    expect((await handle.result()).status).toBe('completed');
    expect(asked).toEqual(['good']);
    expect(written).toEqual([{ path: 'notes.txt', content: 'hi' }]);
    const chunks = streamManager.chunks(handle.sessionId);
    expect(decisions(chunks)).toEqual([expect.objectContaining({ toolCallId: 'bad', hookName: 'toolGuard', decision: 'block' })]);
    expect(confirmations(chunks).map((e) => e.toolCallId)).toEqual(['good']);
  });

  it('a guard registered again after it also checks what the human typed: an edit to a denied path is blocked', async () => {
    const { executor, streamManager } = setup();
    const { tool, written } = writeFileTool();
    const toolGuard = createToolGuard({ argumentRules: [{ tool: 'write_file', path: 'path', deny: [/\.env$/] }] });
    const hookManager = createHookManager(toolGuard, { onError: guardPolicy })
      .register(createConfirmationHook({ strategies: { write_file: programmaticStrategy(() => ({ decision: 'modify', input: { path: '.env', content: 'oops' } })) } }))
      .register(toolGuard, { onError: guardPolicy });
    const agent = counterAgent([{ toolCalls: [writeCall('w', 'notes.txt', 'hi')] }, finish('ok')], { tools: [tool] });
    const handle = await executor.execute(agent, 'go', { hookManager });
    expect((await handle.result()).status).toBe('completed');
    expect(written).toEqual([]);
    expect(decisions(streamManager.chunks(handle.sessionId)).map((d) => [d.hookName, d.decision])).toEqual([
      ['ConfirmationHook.beforeTool', 'rewrite'],
      ['toolGuard', 'block'],
    ]);
  });

  it('decisions are bound to their call: an answer for another call id fails the run (hook_failed) and the tool never runs', async () => {
    const { executor } = setup();
    const { tool, written } = writeFileTool();
    const hook = createConfirmationHook({ strategies: { write_file: programmaticStrategy(() => ({ decision: 'confirm', toolCallId: 'someone-else' })) } });
    const agent = counterAgent([{ toolCalls: [writeCall('mine', 'x')] }, finish('ok')], { tools: [tool] });
    const result = await (await executor.execute(agent, 'go', { hookManager: createHookManager(hook) })).result();
    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({ code: 'hook_failed', details: { toolCallId: 'mine', answeredFor: 'someone-else' } });
    expect(written).toHaveLength(0);
  });

  it('an invalid decision, or a modify without input, is a hook error under its policy (block-tool with guardPolicy)', async () => {
    const { executor, stateStore } = setup();
    const { tool, written } = writeFileTool();
    const hook = createConfirmationHook({
      strategies: {
        write_file: programmaticStrategy((call) => (call.id === 'a' ? ({ decision: 'maybe' } as never) : ({ decision: 'modify' } as never))),
      },
    });
    const agent = counterAgent([{ toolCalls: [writeCall('a', 'x'), writeCall('b', 'y')] }, finish('ok')], { tools: [tool] });
    const handle = await executor.execute(agent, 'go', { hookManager: createHookManager(hook, { onError: guardPolicy }) });
    expect((await handle.result()).status).toBe('completed');
    expect(written).toHaveLength(0);
    const rows = (await stateStore.loadSession(handle.sessionId))!.messages.filter((m): m is ToolResultMessage => m.role === 'tool' && m.toolName === 'write_file');
    expect(String(rows.find((r) => r.toolCallId === 'a')!.content)).toContain('returned an invalid decision');
    expect(String(rows.find((r) => r.toolCallId === 'b')!.content)).toMatch(/returned an invalid decision[\s\S]*at input/);
  });

  it('is class-based: allowedHookPoints is checked at registration, and close() closes each distinct strategy once', async () => {
    const hook = createConfirmationHook({ strategies: { '*': alwaysConfirm } });
    expect(() => createHookManager({ afterTool: hook } as HookSource)).toThrow(ConfigError);
    expect(() => createHookManager({ afterTool: hook } as HookSource)).toThrow(/allows only beforeTool/);
    expect(() => createConfirmationHook({ strategies: { x: {} as ConfirmationStrategy } })).toThrow(/decide\(\) method/);

    let closed = 0;
    const shared: ConfirmationStrategy = { name: 'shared', decide: () => ({ decision: 'confirm' }), close: () => void closed++ };
    const { executor } = setup();
    const closing = createConfirmationHook({ strategies: { a: shared, b: shared } });
    await executor.warmUp(createHookManager(closing));
    await executor.close();
    expect(closed).toBe(1);
  });
});

// A request as the hook builds it, for driving a strategy directly.
function request(id: string, args: unknown, signal: AbortSignal = new AbortController().signal): ConfirmationRequest {
  const { tool } = writeFileTool();
  return { id, name: 'write_file', arguments: args, tool, ctx: { abortSignal: signal } as HookContext };
}

function terminal() {
  const input = new PassThrough();
  const output = new PassThrough();
  let text = '';
  output.on('data', (chunk: Buffer) => (text += chunk.toString()));
  const strategy = terminalPrompt({ input, output });
  return { input, strategy, output: () => text };
}

/** Resolves once the output contains `text` (the prompt was shown). */
async function shown(output: () => string, text: string, count = 1): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (output().split(text).length - 1 >= count) return;
    await new Promise((r) => setTimeout(r, 2));
  }
  throw new Error(`"${text}" was not shown; output so far:\n${output()}`);
}

describe('terminalPrompt (PassThrough streams)', () => {
  it('shows the tool and its arguments; y confirms', async () => {
    const t = terminal();
    t.input.write('y\n');
    const decision = await t.strategy.decide(request('c1', { path: 'a.txt', content: 'hello' }));
    expect(decision).toEqual({ decision: 'confirm', toolCallId: 'c1' });
    expect(t.output()).toContain('Tool call requested: write_file (id c1)');
    expect(t.output()).toContain('Description: Write a file');
    expect(t.output()).toContain('"path": "a.txt"');
    expect(t.output()).toContain('[y]es / [n]o / [e]dit');
    await t.strategy.close?.();
  });

  it('n asks for optional feedback; an empty line rejects without feedback', async () => {
    const t = terminal();
    t.input.write('no\nplease use notes.txt\nn\n\n');
    expect(await t.strategy.decide(request('c1', { path: 'a', content: '' }))).toEqual({ decision: 'reject', feedback: 'please use notes.txt', toolCallId: 'c1' });
    expect(await t.strategy.decide(request('c2', { path: 'a', content: '' }))).toEqual({ decision: 'reject', toolCallId: 'c2' });
    await t.strategy.close?.();
  });

  it('e reads JSON (over several lines), checks it against the input schema, and re-asks on bad JSON or a schema mismatch', async () => {
    const t = terminal();
    const pending = t.strategy.decide(request('c1', { path: 'a', content: '' }));
    await shown(t.output, '[e]dit: ');
    t.input.write('maybe\n');
    await shown(t.output, 'Please answer y, n or e.');
    t.input.write('e\n{"path": oops\n\n');
    await shown(t.output, 'That is not valid JSON');
    t.input.write('e\n{"path": 42}\n');
    await shown(t.output, "do not match the tool's input");
    t.input.write('e\n{\n  "path": "b.txt",\n  "content": "edited"\n}\n');
    expect(await pending).toEqual({ decision: 'modify', input: { path: 'b.txt', content: 'edited' }, toolCallId: 'c1' });
    await t.strategy.close?.();
  });

  it('an edit that changes nothing confirms; an empty edit goes back to the question', async () => {
    const t = terminal();
    t.input.write('e\n\ne\n{"path":"a","content":""}\n');
    expect(await t.strategy.decide(request('c1', { path: 'a', content: '' }))).toEqual({ decision: 'confirm', toolCallId: 'c1' });
    expect(t.output().match(/\[e\]dit: /g)).toHaveLength(2);
    await t.strategy.close?.();
  });

  it('asks one call at a time when calls arrive in parallel', async () => {
    const t = terminal();
    const first = t.strategy.decide(request('c1', { path: 'a', content: '' }));
    const second = t.strategy.decide(request('c2', { path: 'b', content: '' }));
    await shown(t.output, '[e]dit: ');
    expect(t.output()).not.toContain('(id c2)');
    t.input.write('y\n');
    await shown(t.output, '(id c2)');
    t.input.write('n\n\n');
    expect(await first).toMatchObject({ decision: 'confirm', toolCallId: 'c1' });
    expect(await second).toMatchObject({ decision: 'reject', toolCallId: 'c2' });
    await t.strategy.close?.();
  });

  it('a closed input rejects; an aborted run stops waiting with run_interrupted', async () => {
    const t = terminal();
    t.input.end();
    expect(await t.strategy.decide(request('c1', { path: 'a', content: '' }))).toEqual({ decision: 'reject' });
    expect(t.output()).toContain('the input closed');

    const u = terminal();
    const abort = new AbortController();
    const pending = u.strategy.decide(request('c2', { path: 'a', content: '' }, abort.signal));
    await shown(u.output, '[e]dit: ');
    abort.abort();
    await expect(pending).rejects.toSatisfy((e: unknown) => RunInterruptedError.isInstance(e));
    await u.strategy.close?.();
  });

  it('drives a real run: the answers typed on the terminal decide what the tool runs with', async () => {
    const { executor, stateStore } = setup();
    const { tool, written } = writeFileTool();
    const t = terminal();
    t.input.write('e\n{"path":"ok.txt","content":"typed"}\n');
    const agent = counterAgent([{ toolCalls: [writeCall('w', '/etc/passwd', 'x')] }, finish('ok')], { tools: [tool] });
    const handle = await executor.execute(agent, 'go', { hookManager: createHookManager(createConfirmationHook({ strategies: { write_file: t.strategy } })) });
    expect((await handle.result()).status).toBe('completed');
    expect(written).toEqual([{ path: 'ok.txt', content: 'typed' }]);
    expect(t.output()).toContain('"path": "/etc/passwd"');
    const row = (await stateStore.loadSession(handle.sessionId))!.messages.find((m): m is ToolResultMessage => m.role === 'tool' && m.toolCallId === 'w');
    expect(row?.content).toEqual({ written: 'ok.txt' });
    await executor.close();
  });
});
