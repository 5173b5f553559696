// A tool's tries under its retry policy (runtime/tool-retry.ts), as the fifth mutation run found them
// loosely pinned: the fields of a tool_retry chunk, a retryOn that throws (logged, not retried), a thrown
// value that is not an Error, the default number of tries, and a tool without a policy (no attempts).
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, type StreamChunk, type ToolResultMessage } from '../index.js';
import { counterAgent, finish, setup } from './harness.js';

function tries(failures: number, retry: Record<string, unknown> | undefined, thrown: (n: number) => unknown = (n) => new Error(`boom ${n}`)) {
  let n = 0;
  const tool = defineTool({
    name: 'fetchit',
    description: 'a flaky read',
    inputSchema: z.object({}),
    ...(retry ? { retry: { initialDelayMs: 1, maxDelayMs: 2, ...retry } } : {}),
    execute: () => {
      n++;
      if (n <= failures) throw thrown(n);
      return { ok: n };
    },
  });
  return { tool, count: () => n };
}

async function runWith(tool: ReturnType<typeof tries>['tool']) {
  const agent = counterAgent([{ toolCalls: [{ name: 'fetchit', args: {}, id: 'c1' }] }, finish('done')], { tools: [tool] });
  const { executor, streamManager, stateStore, logger } = setup();
  const handle = await executor.execute(agent, 'go');
  const result = await handle.result();
  const chunks = streamManager.chunks(handle.sessionId);
  const row = (await stateStore.loadSession(handle.sessionId))!.messages.find((m): m is ToolResultMessage => m.role === 'tool')!;
  return { result, chunks, row, logger, runId: handle.runId };
}

describe('tool tries', () => {
  it('a tool_retry chunk names the call, the tool, the try about to run, the reason and the delay (doubling from the second retry)', async () => {
    const { tool } = tries(2, { maxAttempts: 3, initialDelayMs: 2, maxDelayMs: 50 });
    const { chunks } = await runWith(tool);
    const retries = chunks.filter((c) => c.type === 'tool_retry');
    expect(retries).toEqual([
      expect.objectContaining({ type: 'tool_retry', toolCallId: 'c1', toolName: 'fetchit', attempt: 2, reason: 'boom 1', delayMs: 2 }),
      expect.objectContaining({ attempt: 3, reason: 'boom 2', delayMs: 4 }),
    ]);
  });

  it('a retryOn that throws is logged with the tool and its message, and the call is not retried', async () => {
    const { tool, count } = tries(5, {
      maxAttempts: 4,
      retryOn: () => {
        throw new Error('classifier broke');
      },
    });
    const { row, logger, chunks } = await runWith(tool);
    expect(count()).toBe(1);
    expect(row.isError).toBe(true);
    expect(chunks.some((c) => c.type === 'tool_retry')).toBe(false);
    expect(logger.lines).toContain('warn: retryOn of tool "fetchit" threw (classifier broke); the call is not retried');
  });

  it('a thrown string is the reason of its retry and, after the last try, the message of the error result with its tries', async () => {
    const { tool } = tries(5, { maxAttempts: 2 }, (n) => `plain failure ${n}`);
    const { row, chunks } = await runWith(tool);
    expect((chunks.find((c) => c.type === 'tool_retry') as StreamChunk & { reason: string }).reason).toBe('plain failure 1');
    expect(row.errorInfo).toMatchObject({ details: { attempts: 2 } });
    expect(row.errorInfo?.message).toContain('plain failure 2');
  });

  it('a policy without maxAttempts makes three tries', async () => {
    const { tool, count } = tries(5, {});
    const { row, chunks } = await runWith(tool);
    expect(count()).toBe(3);
    expect(row.errorInfo?.details).toMatchObject({ attempts: 3 });
    expect(chunks.find((c) => c.type === 'tool_end')).toMatchObject({ success: false, attempts: 3 });
  });

  it('a tool without a retry policy runs once and reports no attempts, in its error details or its tool_end chunk', async () => {
    const { tool, count } = tries(1, undefined);
    const { row, chunks } = await runWith(tool);
    expect(count()).toBe(1);
    expect(row.errorInfo?.details?.['attempts']).toBeUndefined();
    expect('attempts' in (chunks.find((c) => c.type === 'tool_end') as object)).toBe(false);
  });

  it('a call that succeeds on its first try with a policy reports one attempt on its tool_end chunk', async () => {
    const { tool } = tries(0, { maxAttempts: 3 });
    const { chunks } = await runWith(tool);
    expect(chunks.find((c) => c.type === 'tool_end')).toMatchObject({ success: true, attempts: 1 });
  });
});
