// What an error policy reports, field by field: the log line and its fields, the audit chunk, the typed error.
import { describe, expect, it } from 'vitest';
import { createHookManager, guard, HookError, RunInterruptedError, RunSupersededError, type HookDecisionChunk, type Logger, type Message, type StreamChunk } from '../index.js';
import { createHookRecorder } from '../testing/index.js';
import { counterAgent, finish, setup, textAgent, throwing } from './harness.js';

interface Line {
  readonly level: string;
  readonly message: string;
  readonly fields?: Record<string, unknown>;
}

/** A logger that keeps the fields too (the harness logger keeps only the message). */
function fieldLogger(): Logger & { readonly lines: Line[] } {
  const lines: Line[] = [];
  const keep = (level: string) => (message: string, fields?: Record<string, unknown>) => void lines.push({ level, message, ...(fields ? { fields } : {}) });
  return { lines, debug: keep('debug'), info: keep('info'), warn: keep('warn'), error: keep('error') };
}

const decisions = (chunks: readonly StreamChunk[]) => chunks.filter((c): c is HookDecisionChunk => c.type === 'hook_decision');

describe('error policies in detail (C1, C15)', () => {
  it('C1: a fail-open throw is logged as a warning naming the point, the handler, the session and the run, and audited as an error with its policy', async () => {
    const logger = fieldLogger();
    const { executor, streamManager } = setup({ executor: { logger } });
    const hookManager = createHookManager({ afterLLMCall: guard(throwing('sink down'), { onError: 'fail-open', name: 'audit-sink' }) });
    const handle = await executor.execute(textAgent([{ text: 'fine' }]), 'go', { hookManager });
    expect((await handle.result()).status).toBe('completed');
    expect(logger.lines).toContainEqual({
      level: 'warn',
      message: 'hook afterLLMCall "audit-sink" threw (fail-open, ignored): The afterLLMCall hook threw: sink down',
      fields: { sessionId: handle.sessionId, runId: handle.runId },
    });
    const [decision] = decisions(streamManager.chunks(handle.sessionId));
    expect(decision).toMatchObject({
      hookPoint: 'afterLLMCall',
      hookName: 'audit-sink',
      decision: 'error',
      policy: 'fail-open',
      reason: 'The afterLLMCall hook threw: sink down',
      errorInfo: { code: 'hook_failed', layer: 'hook', details: { hook: 'afterLLMCall', cause: 'sink down' } },
    });
    expect(decision!.durationMs).toBeGreaterThanOrEqual(0);
    expect(decision!.durationMs).toBeLessThan(10_000);
  });

  it('C1 / C15: fail-closed on a non-tool point fails the run with hook_blocked naming the hook, the handler and the cause (threw: true)', async () => {
    const { executor, streamManager } = setup();
    const rec = createHookRecorder({ points: ['onAgentFail'] });
    const hookManager = createHookManager(rec.hooks).register({ afterLLMCall: guard(throwing('judge crashed'), { onError: 'fail-closed', name: 'judge' }) });
    const handle = await executor.execute(textAgent([{ text: 'answer' }]), 'go', { hookManager });
    const result = await handle.result();
    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({
      code: 'hook_blocked',
      layer: 'hook',
      message: 'The afterLLMCall hook "judge" failed closed: The afterLLMCall hook threw: judge crashed',
      details: { hook: 'afterLLMCall', name: 'judge', cause: 'judge crashed', threw: true },
    });
    expect(rec.of('onAgentFail')).toHaveLength(1);
    expect(decisions(streamManager.chunks(handle.sessionId))).toEqual([expect.objectContaining({ hookName: 'judge', decision: 'error', policy: 'fail-closed' })]);
  });

  it('C1: fail-run (the default) fails the run with the hook_failed error itself, naming the point and the cause', async () => {
    const { executor } = setup();
    const result = await (await executor.execute(textAgent([{ text: 'answer' }]), 'go', { hooks: { afterLLMCall: throwing('metrics exploded') } })).result();
    expect(result.error).toMatchObject({ code: 'hook_failed', message: 'The afterLLMCall hook threw: metrics exploded', details: { hook: 'afterLLMCall', cause: 'metrics exploded' } });
  });

  it('C1: a timeout is hook_timeout with the point, the handler and the limit; a late ctx.updateMessages is ignored and logged', async () => {
    const logger = fieldLogger();
    const { executor, stateStore, streamManager } = setup({ executor: { logger } });
    const late = guard(
      async (_p: unknown, ctx: { updateMessages: (fn: (rows: Message[]) => void) => Promise<void> }) => {
        await new Promise((r) => setTimeout(r, 30));
        await ctx.updateMessages((rows) => void rows.push({ role: 'user', content: 'too late' }));
      },
      { timeoutMs: 5, onError: 'fail-open', name: 'slowpoke' },
    );
    const handle = await executor.execute(textAgent([{ text: 'reply', delayMs: 80 }]), 'go', { hooks: { beforeLLMCall: late } });
    expect((await handle.result()).status).toBe('completed');
    const [decision] = decisions(streamManager.chunks(handle.sessionId));
    expect(decision).toMatchObject({
      hookName: 'slowpoke',
      decision: 'error',
      errorInfo: { code: 'hook_timeout', details: { hook: 'beforeLLMCall', name: 'slowpoke', timeoutMs: 5 } },
      reason: 'The beforeLLMCall hook "slowpoke" did not settle within 5 ms.',
    });
    expect(logger.lines.map((l) => l.message)).toContain('the beforeLLMCall hook "slowpoke" timed out; its late message edit was ignored');
    expect((await stateStore.loadSession(handle.sessionId))!.messages.map((m) => m.content)).toEqual(['go', 'reply']);
  });

  it('rule 89: a state write from a suspension-family hook (onAgentRetry) fires onStateChange with source hook', async () => {
    const agent = textAgent([{ error: { status: 401 } }, { text: 'ok' }]);
    const { executor } = setup({ executor: { agents: [agent] as never } });
    const failed = await executor.execute(agent, 'go');
    await failed.result();
    const changes: unknown[] = [];
    const result = await (
      await executor.retry(failed.sessionId, {
        hooks: {
          onAgentRetry: (ctx) => ctx.updateState((d) => void ((d as { count: number }).count = 3)),
          onStateChange: (p) => void changes.push({ source: p.source, count: (p.newState as { count: number }).count }),
        },
      })
    ).result();
    expect(result.status).toBe('completed');
    expect(changes).toEqual([{ source: 'hook', count: 3 }]);
  });
  it('C1 / C15: fail-closed keeps the cause of a timeout (its message) and of a HookError the hook threw without details', async () => {
    const { executor } = setup();
    const slow = guard(() => new Promise<void>(() => {}), { timeoutMs: 5, onError: 'fail-closed', name: 'stalled' });
    const timedOut = await (await executor.execute(textAgent([{ text: 'x' }]), 'go', { hooks: { afterLLMCall: slow } })).result();
    expect(timedOut.error).toMatchObject({ code: 'hook_blocked', details: { hook: 'afterLLMCall', name: 'stalled', cause: 'The afterLLMCall hook "stalled" did not settle within 5 ms.', threw: true } });
    const own = guard(
      () => {
        throw new HookError('hook_failed', 'policy service said no');
      },
      { onError: 'fail-closed', name: 'policy' },
    );
    const refused = await (await executor.execute(textAgent([{ text: 'x' }]), 'go', { hooks: { afterLLMCall: own } })).result();
    expect(refused.error).toMatchObject({ code: 'hook_blocked', details: { hook: 'afterLLMCall', name: 'policy', cause: 'policy service said no', threw: true } });
  });

  it('C15: a throw under block-tool is audited as a block decision of that call, with the error', async () => {
    const { executor, streamManager } = setup();
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 }, id: 't1' }] }, finish('x')]);
    const handle = await executor.execute(agent, 'go', { hooks: { beforeTool: guard(throwing('path check crashed'), { onError: 'block-tool', name: 'paths' }) } });
    expect((await handle.result()).status).toBe('completed');
    const [decision] = decisions(streamManager.chunks(handle.sessionId));
    expect(decision).toMatchObject({ hookPoint: 'beforeTool', hookName: 'paths', decision: 'block', toolCallId: 't1', reason: 'The beforeTool hook threw: path check crashed', errorInfo: { code: 'hook_failed' } });
    expect(decision!.durationMs).toBeLessThan(10_000);
  });

  it("C1: auditHooks 'off' writes no hook_decision chunk, not even for errors; 'all' writes allows without reason, policy, call id or error", async () => {
    const quiet = setup({ executor: { auditHooks: 'off' } });
    const hooks = { afterLLMCall: guard(throwing('ignored'), { onError: 'fail-open' }) };
    const h1 = await quiet.executor.execute(textAgent([{ text: 'x' }]), 'go', { hooks });
    await h1.result();
    expect(decisions(quiet.streamManager.chunks(h1.sessionId))).toEqual([]);
    const loud = setup({ executor: { auditHooks: 'all' } });
    const h2 = await loud.executor.execute(textAgent([{ text: 'x' }]), 'go', { hooks: { beforeLLMCall: function allowAll() {} } });
    await h2.result();
    const [allow] = decisions(loud.streamManager.chunks(h2.sessionId));
    expect(allow).toMatchObject({ hookPoint: 'beforeLLMCall', hookName: 'allowAll', decision: 'allow' });
    expect(Object.keys(allow!).filter((k) => ['reason', 'toolCallId', 'policy', 'errorInfo'].includes(k))).toEqual([]);
    expect(allow!.durationMs).toBeGreaterThanOrEqual(0);
    expect(allow!.durationMs).toBeLessThan(10_000);
  });

  it('rule 7: a throwing streaming hook is audited as an error and logged with the session and the run', async () => {
    const logger = fieldLogger();
    const { executor, streamManager } = setup({ executor: { logger } });
    const handle = await executor.execute(textAgent([{ textChunks: ['a', 'b'] }]), 'go', { hooks: { onTextDelta: guard(throwing('ui gone'), { name: 'ui' }) } });
    await handle.result();
    const audit = decisions(streamManager.chunks(handle.sessionId)).filter((d) => d.hookPoint === 'onTextDelta');
    expect(audit.length).toBeGreaterThan(0);
    expect(audit[0]).toMatchObject({ hookName: 'ui', decision: 'error', errorInfo: { code: 'hook_failed' } });
    expect(audit[0]!.durationMs).toBeLessThan(10_000);
    expect(logger.lines).toContainEqual({
      level: 'warn',
      message: 'hook onTextDelta "ui" threw (observe-only, ignored): The onTextDelta hook threw: ui gone',
      fields: { sessionId: handle.sessionId, runId: handle.runId },
    });
  });

  it('C1: a handler under a timeout that settles in time keeps its state writes; a late write is logged with the run id', async () => {
    const logger = fieldLogger();
    const { executor } = setup({ executor: { logger } });
    const quick = guard((_p: unknown, ctx: { updateState: (fn: (d: { count: number }) => void) => void }) => ctx.updateState((d) => void (d.count = 4)), { timeoutMs: 5_000 });
    const result = await (await executor.execute(textAgent([{ text: 'x' }]), 'go', { hooks: { afterLLMCall: quick } })).result();
    expect(result.state.count).toBe(4);
    const late = guard(
      async (_p: unknown, ctx: { updateState: (fn: (d: { count: number }) => void) => void }) => {
        await new Promise((r) => setTimeout(r, 30));
        ctx.updateState((d) => void (d.count = 99));
      },
      { timeoutMs: 5, onError: 'fail-open', name: 'tardy' },
    );
    const handle = await executor.execute(textAgent([{ text: 'x', delayMs: 80 }]), 'go', { hooks: { beforeLLMCall: late } });
    expect((await handle.result()).state.count).toBe(0);
    expect(logger.lines).toContainEqual({ level: 'warn', message: 'the beforeLLMCall hook "tardy" timed out; its late state write was ignored', fields: { runId: handle.runId } });
  });

  it('C1: a throwing suspension-family hook is audited as a fail-open error with a real duration', async () => {
    const agent = textAgent([{ error: { status: 401 } }, { text: 'ok' }]);
    const { executor, streamManager } = setup({ executor: { agents: [agent] as never } });
    const failed = await executor.execute(agent, 'go');
    await failed.result();
    const handle = await executor.retry(failed.sessionId, { hooks: { onAgentRetry: guard(throwing('retry counter down'), { name: 'counter' }) } });
    expect((await handle.result()).status).toBe('completed');
    const [decision] = decisions(streamManager.chunks(handle.sessionId)).filter((d) => d.hookPoint === 'onAgentRetry');
    expect(decision).toMatchObject({ hookName: 'counter', decision: 'error', policy: 'fail-open' });
    expect(decision!.durationMs).toBeLessThan(10_000);
  });
  it('rule 56 / C1: a supersede a hook raises ends the run as superseded under every policy; a run_interrupted it raises is never swallowed either', async () => {
    for (const policy of ['fail-open', 'fail-closed', 'fail-run'] as const) {
      const { executor } = setup();
      const fenced = guard((_p: unknown, ctx: { sessionId: string; runId: string }) => {
        throw new RunSupersededError(ctx.sessionId, ctx.runId, 'newer-run');
      }, { onError: policy });
      const result = await (await executor.execute(textAgent([{ text: 'x' }]), 'go', { hooks: { afterLLMCall: fenced } })).result();
      expect([policy, result.status]).toEqual([policy, 'superseded']);
    }
    const { executor } = setup();
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 } }] }, finish('x')]);
    const inTool = guard((_p: unknown, ctx: { sessionId: string; runId: string }) => {
      throw new RunSupersededError(ctx.sessionId, ctx.runId, 'newer-run');
    }, { onError: 'block-tool' });
    expect((await (await executor.execute(agent, 'go', { hooks: { beforeTool: inTool } })).result()).status).toBe('superseded');
    const interrupted = guard(() => {
      throw new RunInterruptedError('the user pressed stop');
    }, { onError: 'fail-open' });
    const stopped = await (await executor.execute(textAgent([{ text: 'x' }]), 'go', { hooks: { afterLLMCall: interrupted } })).result();
    expect(stopped.status).not.toBe('completed');
    expect(stopped.error?.code).toBe('run_interrupted');
  });
});
