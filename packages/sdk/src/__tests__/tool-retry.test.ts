import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AgentError, ConfigError, defineTool, ToolError, type StreamChunk, type ToolResultMessage } from '../index.js';
import { toSessionEvent } from '../subscribers/index.js';
import { collect, counterAgent, finish, recordedRun, setup } from './harness.js';

// Rule 157: a tool's retry policy runs a failed call again; each retry is announced (tool_retry chunk,
// action.tool_retry event), beforeTool and afterTool fire once per call, and the final failure carries
// the number of tries. A side-effecting tool is retried only when it says it is idempotent.

function flaky(failures: number, options: { sideEffects?: boolean; maxAttempts?: number; retryOn?: (e: unknown, n: number) => boolean; error?: () => unknown } = {}) {
  const tries: number[] = [];
  const tool = defineTool({
    name: 'fetchit',
    description: 'a flaky read',
    inputSchema: z.object({}),
    ...(options.sideEffects ? { sideEffects: true } : {}),
    retry: { maxAttempts: options.maxAttempts ?? 3, initialDelayMs: 1, maxDelayMs: 4, ...(options.sideEffects ? { idempotent: true } : {}), ...(options.retryOn ? { retryOn: options.retryOn } : {}) },
    execute: () => {
      tries.push(tries.length + 1);
      if (tries.length <= failures) throw options.error ? options.error() : new Error(`boom ${tries.length}`);
      return { ok: tries.length };
    },
  });
  return { tool, tries };
}

function rows(messages: readonly { role: string }[]): ToolResultMessage[] {
  return messages.filter((m): m is ToolResultMessage => m.role === 'tool');
}

async function runWith(tool: ReturnType<typeof flaky>['tool']) {
  const agent = counterAgent([{ toolCalls: [{ name: 'fetchit', args: {}, id: 'c1' }] }, finish('done')], { tools: [tool] });
  const run = await recordedRun(agent);
  const chunks = await collect(run.handle.stream());
  const session = await run.stateStore.loadSession(run.result.sessionId);
  return { ...run, chunks, row: rows(session!.messages)[0]! };
}

describe('tool retries', () => {
  it('rule 157: a call that fails twice then succeeds runs three times; beforeTool and afterTool fire once; two tool_retry chunks name the try about to run', async () => {
    const { tool, tries } = flaky(2);
    const { result, rec, chunks, row } = await runWith(tool);
    expect(result.status).toBe('completed');
    expect(tries).toEqual([1, 2, 3]);
    expect(rec.of('beforeTool')).toHaveLength(1);
    expect(rec.of('afterTool')).toHaveLength(1);
    expect(rec.of('afterTool')[0]!.payload).toMatchObject({ success: true, result: { ok: 3 } });
    const retries = chunks.filter((c): c is Extract<StreamChunk, { type: 'tool_retry' }> => c.type === 'tool_retry');
    expect(retries.map((c) => ({ id: c.toolCallId, tool: c.toolName, attempt: c.attempt, reason: c.reason }))).toEqual([
      { id: 'c1', tool: 'fetchit', attempt: 2, reason: 'boom 1' },
      { id: 'c1', tool: 'fetchit', attempt: 3, reason: 'boom 2' },
    ]);
    expect(row).toMatchObject({ content: { ok: 3 } });
    expect(chunks.find((c) => c.type === 'tool_end')).toMatchObject({ success: true, attempts: 3 });
    // One tool_start per call, not per try.
    expect(chunks.filter((c) => c.type === 'tool_start')).toHaveLength(1);
  });

  it('rule 157: each retry becomes the subscriber event action.tool_retry { callId, toolName, attempt, reason }', async () => {
    const { tool } = flaky(1);
    const { chunks, result } = await runWith(tool);
    const events = chunks.map((c) => toSessionEvent(c, { sessionId: result.sessionId, turnId: undefined, recovered: false })).filter((e) => e?.type === 'action.tool_retry');
    expect(events.map((e) => e!.data)).toEqual([{ callId: 'c1', toolName: 'fetchit', attempt: 2, reason: 'boom 1' }]);
  });

  it('rule 157: when every try fails, the error result carries the number of tries in its details', async () => {
    const { tool, tries } = flaky(9, { maxAttempts: 4 });
    const { row, rec, chunks } = await runWith(tool);
    expect(tries).toEqual([1, 2, 3, 4]);
    expect(row.isError).toBe(true);
    expect(row.errorInfo).toMatchObject({ code: 'tool_failed', message: 'Tool "fetchit" failed: boom 4', details: { tool: 'fetchit', attempts: 4 } });
    expect(rec.of('afterTool')).toHaveLength(1);
    expect(chunks.filter((c) => c.type === 'tool_retry')).toHaveLength(3);
    expect(chunks.find((c) => c.type === 'tool_end')).toMatchObject({ success: false, attempts: 4 });
  });

  it('rule 157: retryOn decides from the error and the failed try; a refused error ends the call at once', async () => {
    const seen: [string, number][] = [];
    const { tool, tries } = flaky(9, {
      retryOn: (error, attempt) => {
        seen.push([(error as Error).message, attempt]);
        return attempt < 2;
      },
    });
    const { row } = await runWith(tool);
    expect(tries).toEqual([1, 2]);
    expect(seen).toEqual([
      ['boom 1', 1],
      ['boom 2', 2],
    ]);
    expect(row.errorInfo?.details).toMatchObject({ attempts: 2 });
  });

  it('rule 157: by default an AgentError marked retryable: false is not retried, and a thrown ToolError keeps its code with the tries added', async () => {
    const { tool, tries } = flaky(9, { error: () => new ToolError('remote_denied', 'denied', { retryable: false }) });
    const { row } = await runWith(tool);
    expect(tries).toEqual([1]);
    expect(row.errorInfo).toMatchObject({ code: 'remote_denied', details: { tool: 'fetchit', attempts: 1 } });
    const retryable = flaky(1, { error: () => new AgentError('provider_timeout', 'slow') });
    const second = await runWith(retryable.tool);
    expect(retryable.tries).toEqual([1, 2]);
    expect(second.row.content).toEqual({ ok: 2 });
  });

  it('rule 157: a sideEffects: true tool with a retry policy but no idempotent: true is refused at definition (config_invalid)', () => {
    const define = () =>
      defineTool({ name: 'charge', description: 'charges a card', inputSchema: z.object({}), sideEffects: true, retry: { maxAttempts: 3 }, execute: () => ({ ok: true }) });
    expect(define).toThrow(ConfigError);
    expect(define).toThrow(/idempotent: true/);
    expect(() => defineTool({ name: 'x', description: 'x', inputSchema: z.object({}), retry: { maxAttempts: 0 }, execute: () => 1 })).toThrow(/maxAttempts/);
    expect(() => defineTool({ name: 'x', description: 'x', inputSchema: z.object({}), retry: { initialDelayMs: -1 }, execute: () => 1 })).toThrow(/initialDelayMs/);
  });

  it('rule 157: an idempotent side-effecting tool is retried inside its one journaled call', async () => {
    const { tool, tries } = flaky(1, { sideEffects: true });
    const { row, stateStore, result } = await runWith(tool);
    expect(tries).toEqual([1, 2]);
    expect(row.content).toEqual({ ok: 2 });
    const run = await stateStore.getRun(result.runId);
    expect(run?.status).toBe('completed');
  });

  it('rule 157: a stop during the backoff ends the call as stopped, without another try', async () => {
    const stopper: { stop?: () => void } = {};
    const tries: number[] = [];
    const tool = defineTool({
      name: 'fetchit',
      description: 'a flaky read',
      inputSchema: z.object({}),
      retry: { maxAttempts: 5, initialDelayMs: 5_000 },
      execute: () => {
        tries.push(1);
        setTimeout(() => stopper.stop?.(), 10);
        throw new Error('down');
      },
    });
    const agent = counterAgent([{ toolCalls: [{ name: 'fetchit', args: {}, id: 'c1' }] }, finish('done')], { tools: [tool] });
    const started = Date.now();
    const wired = setup();
    const handle = await wired.executor.execute(agent, 'go');
    stopper.stop = () => void handle.stop('enough');
    const result = await handle.result();
    expect(result.status).toBe('interrupted');
    expect(tries).toHaveLength(1);
    expect(Date.now() - started).toBeLessThan(4_000);
  });
});
