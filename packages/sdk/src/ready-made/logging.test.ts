import { describe, expect, it } from 'vitest';
import { createHookManager, guardPolicy } from '../index.js';
import { counterAgent, finish, setup } from '../__tests__/harness.js';
import { createLoggingHooks, type LoggingHooksLogger } from './logging.js';
import { createToolGuard } from './tool-guard.js';

function memoryLogger(): LoggingHooksLogger & { readonly lines: [string, string, Record<string, unknown>][] } {
  const lines: [string, string, Record<string, unknown>][] = [];
  const keep = (level: string) => (message: string, fields?: Record<string, unknown>) => void lines.push([level, message, fields ?? {}]);
  return { lines, debug: keep('debug'), info: keep('info'), error: keep('error') };
}

describe('createLoggingHooks', () => {
  it('logs the lifecycle at info and tool calls at debug, typed for the agent it is attached to', async () => {
    const { executor } = setup();
    const logger = memoryLogger();
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 }, id: 'c1' }] }, finish('x')], { hooks: createLoggingHooks(logger) });
    const handle = await executor.execute(agent, 'count once');
    await handle.result();
    expect(logger.lines.map(([level, message]) => `${level} ${message}`)).toEqual(['info Agent started', 'debug Tool starting', 'debug Tool completed', 'info Agent completed']);
    expect(logger.lines[0]![2]).toMatchObject({ sessionId: handle.sessionId, runId: handle.runId, agent: 'counter', input: 'count once' });
    expect(logger.lines[2]![2]).toMatchObject({ tool: 'increment', toolCallId: 'c1', success: true, blocked: false });
    expect(logger.lines[3]![2]).toMatchObject({ stepCount: 2 });
  });

  it('logs a blocked call with its code, and a failed run at error', async () => {
    const { executor } = setup();
    const logger = memoryLogger();
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 }, id: 'c1' }] }]);
    const hookManager = createHookManager(createToolGuard({ deny: ['increment'] }), { onError: guardPolicy }).register(createLoggingHooks(logger));
    const result = await (await executor.execute(agent, 'go', { hookManager })).result();
    expect(result.status).toBe('failed');
    // The guard blocked before the logger's beforeTool ran: only afterTool reports the call.
    expect(logger.lines.find(([, m]) => m === 'Tool completed')![2]).toMatchObject({ success: false, blocked: true, code: 'hook_blocked' });
    expect(logger.lines.some(([, m]) => m === 'Tool starting')).toBe(false);
    expect(logger.lines.at(-1)).toEqual(['error', 'Agent failed', expect.objectContaining({ code: result.error!.code, recoverable: false })]);
  });
});
