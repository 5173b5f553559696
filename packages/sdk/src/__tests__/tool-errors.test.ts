import { describe, expect, it } from 'vitest';
import { AgentError, ToolError, type AfterToolPayload, type ToolResultMessage } from '../index.js';
import { bareTool, counterAgent, finish, recordedRun } from './harness.js';

// A tool reports a typed failure by throwing a tool-layer error: the model and afterTool get that error
// as it was thrown (its code, message, retryable and details, with the tool's name added); any other
// throw is a tool_failed that names the tool.

function toolRows(messages: readonly { role: string }[]): ToolResultMessage[] {
  return messages.filter((m): m is ToolResultMessage => m.role === 'tool');
}

describe('errors thrown by a tool', () => {
  it('a thrown ToolError keeps its code, message, retryable and details; the tool name is added to details; the run goes on', async () => {
    const typed = bareTool('remote', 'a remote tool', () => {
      throw new ToolError('remote_timeout', 'The remote tool did not answer within 50 ms.', { retryable: true, details: { timeoutMs: 50 } });
    });
    const { result, rec, stateStore } = await recordedRun(counterAgent([{ toolCalls: [{ name: 'remote', args: {}, id: 'r1' }] }, finish('gave up')], { tools: [typed] }));
    expect(result.status).toBe('completed');
    const row = toolRows((await stateStore.loadSession(result.sessionId))!.messages)[0]!;
    expect(row).toMatchObject({ isError: true, content: 'The remote tool did not answer within 50 ms.' });
    expect(row.errorInfo).toMatchObject({ code: 'remote_timeout', layer: 'tool', retryable: true, details: { timeoutMs: 50, tool: 'remote' } });
    const after = rec.of('afterTool')[0]!.payload as AfterToolPayload;
    expect(after.success).toBe(false);
    expect(ToolError.isInstance(after.error)).toBe(true);
    expect(after.error?.code).toBe('remote_timeout');
  });

  it('an AgentError of another layer and a plain Error both become tool_failed naming the tool', async () => {
    const runLayer = bareTool('runlayer', 'throws a run-layer error', () => {
      throw new AgentError('state_invalid', 'not a tool error');
    });
    const plain = bareTool('plain', 'throws an Error', () => {
      throw new Error('disk on fire');
    });
    const agent = counterAgent([{ toolCalls: [{ name: 'runlayer', args: {}, id: 'a' }, { name: 'plain', args: {}, id: 'b' }] }, finish('x')], { tools: [runLayer, plain] });
    const { result, stateStore } = await recordedRun(agent);
    const rows = toolRows((await stateStore.loadSession(result.sessionId))!.messages);
    expect(rows.find((r) => r.toolCallId === 'a')?.errorInfo).toMatchObject({ code: 'tool_failed', message: 'Tool "runlayer" failed: not a tool error', details: { tool: 'runlayer' } });
    expect(rows.find((r) => r.toolCallId === 'b')?.errorInfo).toMatchObject({ code: 'tool_failed', message: 'Tool "plain" failed: disk on fire' });
  });
});
