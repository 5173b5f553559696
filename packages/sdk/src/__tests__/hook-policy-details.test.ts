// What an error policy reports, field by field: the log line and its fields, the audit chunk, the typed error.
import { describe, expect, it } from 'vitest';
import { createHookManager, guard, type HookDecisionChunk, type Logger, type Message, type StreamChunk } from '../index.js';
import { createHookRecorder } from '../testing/index.js';
import { setup, textAgent, throwing } from './harness.js';

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
    expect(decision!.durationMs).toEqual(expect.any(Number));
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
});
