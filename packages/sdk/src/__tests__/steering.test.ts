import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ConfigError,
  createHookManager,
  defineTool,
  guard,
  guardPolicy,
  hookFromJSON,
  hookToJSON,
  registerHookFactory,
  type AfterToolPayload,
  type BeforeLLMCallPayload,
  type HookDecisionChunk,
  type HookPoint,
  type Message,
  type StreamChunk,
  type ToolResultMessage,
} from '../index.js';
import { createHookRecorder, createScriptedModel } from '../testing/index.js';
import { counterAgent, finish, recordedRun, setup, textAgent, throwing, type Counter } from './harness.js';

const decisions = (chunks: readonly StreamChunk[]) => chunks.filter((c): c is HookDecisionChunk => c.type === 'hook_decision');

describe('beforeLLMCall steering (C3, C4, D11)', () => {
  it('rule 216 / C4: { messages } rewrites this call only: the provider sees it, the transcript does not, onMessage does not fire', async () => {
    const { executor, stateStore } = setup();
    const model = createScriptedModel([{ text: 'ok' }]);
    const rec = createHookRecorder({ points: ['onMessage'] });
    const agent = textAgent([], {
      llmConfig: { model },
      hooks: {
        beforeLLMCall: (payload) => ({
          messages: payload.messages.map((m) => (m.role === 'user' ? { ...m, content: m.content.replace(/\d{3}-\d{4}/g, '[phone]') } : m)),
        }),
      },
    });
    const handle = await executor.execute(agent, 'call me at 555-1234', { hooks: rec.hooks });
    await handle.result();
    expect(JSON.stringify(model.calls[0]!.prompt)).toContain('call me at [phone]');
    expect(JSON.stringify(model.calls[0]!.prompt)).not.toContain('555-1234');
    const stored = (await stateStore.loadSession(handle.sessionId))!.messages[0] as Message;
    expect(stored.content).toBe('call me at 555-1234');
    expect(rec.of('onMessage')).toHaveLength(2);
  });

  it('C3 / rule 185: handlers steer by return values, chained in composition order; each sees the previous rewrite; { tools } narrows this call', async () => {
    const { executor } = setup();
    const model = createScriptedModel([{ text: 'ok' }]);
    const seen: number[] = [];
    const agent = textAgent([], {
      llmConfig: { model },
      hooks: {
        beforeLLMCall: (p) => ({ messages: [...p.messages, { role: 'user', content: 'extra context' } as Message], tools: [] }),
      },
    });
    await (await executor.execute(agent, 'go', { hooks: { beforeLLMCall: (p: BeforeLLMCallPayload) => void seen.push(p.messages.length, p.tools.length) } })).result();
    expect(seen).toEqual([2, 0]);
    expect(model.calls[0]!.tools ?? []).toHaveLength(0);
    expect(model.calls[0]!.prompt.at(-1)).toMatchObject({ role: 'user' });
  });

  it('rule 216 / D11: { block } makes no model call and fails the run with hook_blocked; a system note records the reason; the first block wins', async () => {
    const { executor, stateStore, streamManager } = setup();
    const model = createScriptedModel([{ text: 'never' }]);
    const rec = createHookRecorder();
    let laterCalled = false;
    const agent = textAgent([], {
      llmConfig: { model },
      hooks: { beforeLLMCall: () => ({ block: true, reason: '  prompt contains secrets ' }) },
    });
    const handle = await executor.execute(agent, 'go', { hooks: { ...rec.hooks, beforeLLMCall: () => void (laterCalled = true) } });
    const result = await handle.result();
    expect(model.calls).toHaveLength(0);
    expect(laterCalled).toBe(false);
    expect(result.error).toMatchObject({ code: 'hook_blocked', layer: 'hook', severity: 'fatal', retryable: false, details: { reason: 'prompt contains secrets' } });
    expect(rec.of('afterLLMCall')).toHaveLength(0);
    expect(rec.of('onAgentFail')).toHaveLength(1);
    const messages = (await stateStore.loadSession(handle.sessionId))!.messages;
    expect(messages.at(-1)).toEqual({ role: 'system', content: 'Run blocked by an agent hook: prompt contains secrets' });
    expect(decisions(streamManager.chunks(handle.sessionId))).toEqual([expect.objectContaining({ hookPoint: 'beforeLLMCall', decision: 'block', reason: 'prompt contains secrets' })]);
  });

  it('C3: a blank block reason becomes "Blocked by beforeLLMCall."', async () => {
    const { executor } = setup();
    const agent = textAgent([{ text: 'x' }], { hooks: { beforeLLMCall: () => ({ block: true }) } });
    const result = await (await executor.execute(agent, 'go')).result();
    expect(result.error?.details?.['reason']).toBe('Blocked by beforeLLMCall.');
  });

  it('rule 217 / C15: under fail-closed, a throwing beforeLLMCall fails the run with hook_blocked (threw: true)', async () => {
    const { executor } = setup();
    const agent = textAgent([{ text: 'x' }]);
    const hookManager = createHookManager({ beforeLLMCall: throwing('policy service down') }, { onError: guardPolicy });
    const result = await (await executor.execute(agent, 'go', { hookManager })).result();
    expect(result.error).toMatchObject({ code: 'hook_blocked', details: { threw: true, cause: 'policy service down' } });
  });
});

describe('ctx.updateMessages: a persistent edit of the conversation (C4)', () => {
  it('rule 208 / C4: at ctx.stepCount 0, rows a hook appends with ctx.updateMessages fire onMessage, reach the model and land in the step commit', async () => {
    const { executor, stateStore } = setup();
    const model = createScriptedModel([{ text: 'answered with memory' }]);
    const rec = createHookRecorder({ points: ['onMessage'] });
    const agent = textAgent([], {
      llmConfig: { model },
      hooks: {
        beforeLLMCall: async (_p, ctx) => {
          if (ctx.stepCount === 0) await ctx.updateMessages((rows) => void rows.push({ role: 'user', content: 'Memory: the user prefers short answers.' }));
        },
      },
    });
    const handle = await executor.execute(agent, 'hello', { hooks: rec.hooks });
    await handle.result();
    const stored = (await stateStore.loadSession(handle.sessionId))!.messages;
    expect(stored.map((m) => m.content)).toEqual(['hello', 'Memory: the user prefers short answers.', 'answered with memory']);
    expect(rec.of('onMessage').map((c) => (c.payload as { messageIndex: number }).messageIndex)).toEqual([0, 1, 2]);
    expect(JSON.stringify(model.calls[0]!.prompt)).toContain('prefers short answers');
  });

  it('committed rows cannot be changed or removed: the hook fails with a clear error', async () => {
    const { executor } = setup();
    const agent = textAgent([{ text: 'x' }], {
      hooks: { beforeLLMCall: (_p, ctx) => ctx.updateMessages((rows) => void rows.splice(0, 1)) },
    });
    const result = await (await executor.execute(agent, 'hello')).result();
    expect(result.error?.code).toBe('hook_failed');
    expect(result.error?.message).toContain('not change or remove committed rows');
  });
});

describe('beforeTool and afterTool steering (C13, C16, D4)', () => {
  it('rule 218 / D4 / C13 / rules 189, 193: { block } skips the tool, the model gets the reason as an error result, afterTool fires with blocked: true, the loop goes on', async () => {
    const { executor, stateStore, streamManager } = setup();
    const rec = createHookRecorder({ points: ['afterTool', 'onMessage'] });
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 5 }, id: 'c1' }] }, finish('x')], {
      hooks: { beforeTool: (p) => (p.toolCall.name === 'increment' ? { block: true, reason: 'counting is forbidden' } : undefined) },
    });
    const handle = await executor.execute(agent, 'go', { hooks: rec.hooks });
    const result = await handle.result();
    expect(result.status).toBe('completed');
    expect(result.state.count).toBe(0);
    const row = (await stateStore.loadSession(handle.sessionId))!.messages.find((m): m is ToolResultMessage => m.role === 'tool')!;
    expect(row).toMatchObject({
      isError: true,
      content: 'Tool "increment" was blocked by an agent hook: counting is forbidden',
      errorInfo: { code: 'hook_blocked', layer: 'tool', severity: 'warning', retryable: false },
    });
    const after = rec.of('afterTool')[0]!.payload as AfterToolPayload;
    expect(after).toMatchObject({ blocked: true, success: false, result: undefined });
    expect(after.error?.code).toBe('hook_blocked');
    // onMessage for the synthetic result fires before afterTool (D4).
    expect(rec.points().slice(-4)).toEqual(['onMessage', 'afterTool', 'onMessage', 'onMessage']);
    expect(decisions(streamManager.chunks(handle.sessionId))[0]).toMatchObject({ hookPoint: 'beforeTool', decision: 'block', toolCallId: 'c1' });
  });

  it('rules 188, 218: { input } replaces the whole input, is validated, and afterTool reports the effective input', async () => {
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 5 } }] }, finish('x')], {
      hooks: { beforeTool: (p) => ({ input: { ...(p.toolCall.arguments as object), by: 1 } }) },
    });
    const { result, rec } = await recordedRun(agent, { points: ['afterTool'] });
    expect(result.state.count).toBe(1);
    expect((rec.of('afterTool')[0]!.payload as AfterToolPayload).toolCall.arguments).toEqual({ by: 1 });
  });

  it('a rewrite into invalid input blocks the call with the validation errors', async () => {
    const { executor, stateStore } = setup();
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 5 } }] }, finish('x')], { hooks: { beforeTool: () => ({ input: { by: 'many' } }) } });
    const handle = await executor.execute(agent, 'go');
    expect((await handle.result()).state.count).toBe(0);
    const row = (await stateStore.loadSession(handle.sessionId))!.messages.find((m): m is ToolResultMessage => m.role === 'tool')!;
    expect(row.errorInfo?.code).toBe('hook_blocked');
    expect(String(row.content)).toContain('invalid input');
  });

  it('C3: beforeTool handlers chain; each sees the previous rewrite; the first block wins over later handlers', async () => {
    const { executor } = setup();
    const seen: unknown[] = [];
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 } }] }, finish('x')], {
      hooks: { beforeTool: () => ({ input: { by: 2 } }) },
    });
    const hookManager = createHookManager({ beforeTool: (p) => void seen.push(p.toolCall.arguments) }).register({ beforeTool: () => ({ block: true, reason: 'no' }) });
    const after = createHookManager({ beforeTool: () => void seen.push('never') });
    await (await executor.execute(agent, 'go', { hookManager: createHookManager(hookManager).register(after) })).result();
    expect(seen).toEqual([{ by: 2 }]);
  });

  it('rule 219 / C15: under block-tool, a throwing beforeTool blocks the call (hook_blocked, threw) and the run continues', async () => {
    const { executor, stateStore } = setup();
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 } }] }, finish('x')]);
    const hookManager = createHookManager({ beforeTool: throwing('path check crashed') }, { onError: guardPolicy });
    const handle = await executor.execute(agent, 'go', { hookManager });
    expect((await handle.result()).status).toBe('completed');
    const row = (await stateStore.loadSession(handle.sessionId))!.messages.find((m): m is ToolResultMessage => m.role === 'tool')!;
    expect(row.errorInfo).toMatchObject({ code: 'hook_blocked', details: { threw: true } });
    expect(String(row.content)).toContain('path check crashed');
  });

  it('rules 220, 221: under guardPolicy, a throwing afterLLMCall or afterTool is logged and ignored (fail-open)', async () => {
    const { executor, logger, streamManager } = setup();
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 } }] }, finish('x')]);
    const boom = throwing('audit sink down');
    const handle = await executor.execute(agent, 'go', { hookManager: createHookManager({ afterLLMCall: boom, afterTool: boom }, { onError: guardPolicy }) });
    const result = await handle.result();
    expect(result.status).toBe('completed');
    expect(result.state.count).toBe(1);
    expect(logger.lines.filter((l) => l.includes('audit sink down'))).toHaveLength(3);
    expect(decisions(streamManager.chunks(handle.sessionId)).map((d) => [d.hookPoint, d.decision, d.policy])).toEqual([
      ['afterLLMCall', 'error', 'fail-open'],
      ['afterTool', 'error', 'fail-open'],
      ['afterLLMCall', 'error', 'fail-open'],
    ]);
  });

  it('C16 / rule 191: afterTool { result } replaces what the model sees and what is stored; onMessage saw the original; later handlers see the rewrite', async () => {
    const { executor, stateStore } = setup();
    const model = createScriptedModel([{ toolCalls: [{ name: 'increment', args: { by: 1 } }] }, finish('x')]);
    const onMessageSaw: unknown[] = [];
    const laterSaw: unknown[] = [];
    const agent = counterAgent([], {
      llmConfig: { model },
      hooks: {
        onMessage: (p) => void (p.message.role === 'tool' && p.message.toolName === 'increment' && onMessageSaw.push(p.message.content)),
        afterTool: () => ({ result: { summary: 'shortened' } }),
      },
    });
    const handle = await executor.execute(agent, 'go', { hooks: { afterTool: (p) => void laterSaw.push(p.result) } });
    await handle.result();
    expect(onMessageSaw).toEqual([{ ok: true, by: 1 }]);
    expect(laterSaw).toEqual([{ summary: 'shortened' }]);
    const row = (await stateStore.loadSession(handle.sessionId))!.messages.find((m): m is ToolResultMessage => m.role === 'tool')!;
    expect(row.content).toEqual({ summary: 'shortened' });
    expect(JSON.stringify(model.calls[1]!.prompt)).toContain('shortened');
  });
});

describe('the exit hook (D6, rules 194–196)', () => {
  it('D6 / rules 194, 195, 200, 209: onExit reads toolCallCounts and can keep the run going with a message; the step is committed and the loop continues', async () => {
    const { executor, stateStore } = setup();
    const model = createScriptedModel([{ text: 'done?' }, { toolCalls: [{ name: 'increment', args: { by: 1 } }] }, { text: 'now done' }]);
    const exits: unknown[] = [];
    const agent = textAgent([], {
      llmConfig: { model },
      hooks: {
        onExit: (p) => {
          exits.push({ reason: p.reason, output: p.output, counts: p.toolCallCounts });
          if ((p.toolCallCounts['increment'] ?? 0) === 0) return { continue: true, message: 'You must call increment first.' };
          return undefined;
        },
      },
    });
    const handle = await executor.execute(agent, 'go');
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'completed', output: 'now done', stepCount: 3 });
    expect(exits).toEqual([
      { reason: 'text', output: 'done?', counts: {} },
      { reason: 'text', output: 'now done', counts: { increment: 1 } },
    ]);
    const rows = (await stateStore.loadSession(handle.sessionId))!.messages;
    expect(rows[2]).toEqual({ role: 'user', content: 'You must call increment first.' });
  });

  it('rule 196: onExit does not run when maxSteps stops the run; an always-continue hook is bounded by maxSteps', async () => {
    const { executor } = setup();
    let exits = 0;
    const agent = textAgent([{ text: 'a' }, { text: 'b' }, { text: 'c' }], {
      maxSteps: 3,
      hooks: { onExit: () => (exits++, { continue: true }) },
    });
    const result = await (await executor.execute(agent, 'go')).result();
    expect(result).toMatchObject({ status: 'completed', exitReason: 'max_steps', stepCount: 3 });
    expect(exits).toBe(3);
  });
});

describe('error policies and timeouts (C1)', () => {
  it('a hook that does not settle within its timeout is an error under its policy (hook_timeout under fail-run)', async () => {
    const { executor } = setup();
    const agent = textAgent([{ text: 'x' }]);
    const slow = guard(() => new Promise<void>(() => {}), { timeoutMs: 20, name: 'slow-audit' });
    const result = await (await executor.execute(agent, 'go', { hooks: { afterLLMCall: slow } })).result();
    expect(result.error).toMatchObject({ code: 'hook_timeout', layer: 'hook' });
    expect(result.error?.message).toContain('slow-audit');
  });

  it('a per-handler policy (guard) overrides the manager default; fail-open on a timeout lets the run complete', async () => {
    const { executor } = setup();
    const agent = textAgent([{ text: 'x' }]);
    const hookManager = createHookManager({ afterLLMCall: guard(() => new Promise<void>(() => {}), { timeoutMs: 10, onError: 'fail-open' }) }, { onError: 'fail-run' });
    expect((await (await executor.execute(agent, 'go', { hookManager })).result()).status).toBe('completed');
  });

  it('a handler that timed out under fail-open cannot write state afterwards (its late writes are ignored)', async () => {
    const { executor, logger } = setup();
    const agent = counterAgent([{ ...finish('x'), delayMs: 60 }]);
    const late = guard(
      async (_p: unknown, ctx: { updateState: (fn: (d: Counter) => void) => void }) => {
        await new Promise((r) => setTimeout(r, 30));
        ctx.updateState((d) => void (d.count = 99));
      },
      { timeoutMs: 5, onError: 'fail-open' },
    );
    const result = await (await executor.execute(agent, 'go', { hooks: { onAgentStart: late as never } })).result();
    expect(result.status).toBe('completed');
    expect((result.state as Counter).count).toBe(0);
    expect(logger.lines.some((l) => l.includes('timed out; its late state write was ignored'))).toBe(true);
  });

  it('block-tool is only valid on beforeTool', () => {
    expect(() => createHookManager({ afterTool: guard(() => {}, { onError: 'block-tool' }) })).toThrowError(/only applies to beforeTool/);
  });

  it('onAgentFail and onAgentSuperseded are always fail-open, even under a fail-run default', async () => {
    const { executor, logger } = setup();
    const hookManager = createHookManager({ onAgentFail: throwing('pager down') }, { onError: 'fail-run' });
    const result = await (await executor.execute(counterAgent([{ error: { status: 401 } }]), 'go', { hookManager })).result();
    expect(result.error?.code).toBe('provider_auth');
    expect(logger.lines.some((l) => l.includes('pager down'))).toBe(true);
  });

  it("auditHooks: 'all' writes a hook_decision chunk for every invocation with its duration", async () => {
    const { executor, streamManager } = setup({ executor: { auditHooks: 'all' } });
    const handle = await executor.execute(textAgent([{ text: 'x' }]), 'go', { hooks: { onMessage: () => {}, afterLLMCall: () => {} } });
    await handle.result();
    const all = decisions(streamManager.chunks(handle.sessionId));
    expect(all.map((d) => d.hookPoint)).toEqual(['onMessage', 'afterLLMCall', 'onMessage']);
    expect(all.every((d) => d.decision === 'allow' && d.durationMs >= 0)).toBe(true);
  });
});

describe('loop guards (rule 228)', () => {
  it('run_repeated_error: the same tool error N times fails the run', async () => {
    const { executor } = setup();
    const bad = { toolCalls: [{ name: 'increment', args: { by: 'x' } }] };
    const result = await (await executor.execute(counterAgent([bad, bad, bad, finish('x')], { limits: { maxRepeatedErrors: 3 } }), 'go')).result();
    expect(result.error).toMatchObject({ code: 'run_repeated_error', layer: 'run', severity: 'fatal', retryable: false, details: { times: 3 } });
  });

  it('run_empty_responses: N empty replies in a row fail the run', async () => {
    const { executor } = setup();
    const result = await (await executor.execute(counterAgent([{ text: '' }, { text: '' }, finish('x')], { limits: { maxEmptyResponses: 2 } }), 'go')).result();
    expect(result.error).toMatchObject({ code: 'run_empty_responses', severity: 'fatal', retryable: true });
  });

  it('run_hard_stop: a token budget or a cost budget ends the run', async () => {
    const { executor } = setup();
    const step = { toolCalls: [{ name: 'increment', args: { by: 1 } }], usage: { inputTokens: 60, outputTokens: 10 } };
    const tokens = await (await executor.execute(counterAgent([step, step, step], { limits: { maxTotalTokens: 100 } }), 'go')).result();
    expect(tokens.error).toMatchObject({ code: 'run_hard_stop', details: { budget: 'tokens', spent: 140 } });
    const cost = await (
      await executor.execute(counterAgent([step, step, step], { limits: { maxCostUsd: 0.0001, pricing: { inputPerMillion: 1, outputPerMillion: 4 } } }), 'go')
    ).result();
    expect(cost.error).toMatchObject({ code: 'run_hard_stop', details: { budget: 'cost' } });
  });

  it('limits.maxCostUsd without pricing is a ConfigError', () => {
    expect(() => counterAgent([], { limits: { maxCostUsd: 1 } })).toThrowError(ConfigError);
  });
});

describe('class-based hooks (rules 197, 198, 205–207; warmed up once per object)', () => {
  class AuditHook {
    readonly allowedHookPoints: readonly HookPoint[] = ['beforeTool', 'afterTool'];
    warmUps = 0;
    closes = 0;
    seen: string[] = [];
    constructor(readonly prefix: string) {}
    warmUp(): void {
      this.warmUps++;
    }
    close(): void {
      this.closes++;
    }
    beforeTool(p: { toolCall: { name: string } }): void {
      this.seen.push(`${this.prefix}:before:${p.toolCall.name}`);
    }
    afterTool(p: { toolCall: { name: string } }): void {
      this.seen.push(`${this.prefix}:after:${p.toolCall.name}`);
    }
    toJSON() {
      return { type: 'test.audit', config: { prefix: this.prefix } };
    }
  }

  it('rule 206: an object registered at several points is warmed up and closed once by the executor', async () => {
    const { executor } = setup();
    const hook = new AuditHook('a');
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 } }] }, finish('x')], { hooks: { beforeTool: hook, afterTool: hook } as never });
    await (await executor.execute(agent, 'go')).result();
    await (await executor.execute(agent, 'again')).result().catch(() => undefined);
    expect(hook.seen.slice(0, 2)).toEqual(['a:before:increment', 'a:after:increment']);
    expect(hook.warmUps).toBe(1);
    await executor.close();
    expect(hook.closes).toBe(1);
  });

  it('rule 205: registering a whole class instance registers every hook-point method', () => {
    const manager = createHookManager(new AuditHook('b'));
    expect(manager.has('beforeTool') && manager.has('afterTool')).toBe(true);
    expect(manager.entries('beforeTool')[0]!.name).toBe('AuditHook.beforeTool');
  });

  it('rule 198: allowedHookPoints is checked at registration; a wrong point throws naming the valid ones', () => {
    expect(() => createHookManager({ onMessage: new AuditHook('c') } as never)).toThrowError(/cannot be registered at "onMessage": it allows only beforeTool, afterTool/);
  });

  it('rule 207: a hook serializes with toJSON and is rebuilt by a registered factory', () => {
    registerHookFactory('test.audit', (config) => new AuditHook((config as { prefix: string }).prefix));
    const json = hookToJSON(new AuditHook('d'));
    expect(json).toEqual({ type: 'test.audit', config: { prefix: 'd' } });
    const rebuilt = hookFromJSON(JSON.parse(JSON.stringify(json)) as typeof json) as AuditHook;
    expect(rebuilt).toBeInstanceOf(AuditHook);
    expect(rebuilt.prefix).toBe('d');
    expect(() => hookFromJSON({ type: 'nope', config: {} })).toThrowError(/No hook factory is registered for "nope"/);
  });
});

describe('a tool with the same name in a guard', () => {
  it('a guard before a human approval means the human is never asked (approval placement, rule 222)', async () => {
    const { executor } = setup();
    const asked: string[] = [];
    const deleteTool = defineTool({ name: 'delete', description: 'deletes a file', inputSchema: z.object({ path: z.string() }), execute: () => 'deleted' });
    const agent = counterAgent([{ toolCalls: [{ name: 'delete', args: { path: '/etc/.env' } }] }, finish('x')], { tools: [deleteTool] });
    const guardHook = { beforeTool: (p: { toolCall: { arguments: unknown } }) => ((p.toolCall.arguments as { path: string }).path.endsWith('.env') ? { block: true as const, reason: 'secrets' } : undefined) };
    const approval = { beforeTool: (p: { toolCall: { name: string } }) => void asked.push(p.toolCall.name) };
    const result = await (await executor.execute(agent, 'go', { hookManager: createHookManager(guardHook, { onError: guardPolicy }).register(approval) })).result();
    expect(result.status).toBe('completed');
    expect(asked).toEqual([]);
    expect((result.state as Counter).count).toBe(0);
  });
});
