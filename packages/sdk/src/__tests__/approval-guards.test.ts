import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import {
  childSessionId,
  createHookManager,
  defineAgent,
  defineSubAgentTool,
  defineTool,
  guardPolicy,
  InMemoryStateStore,
  InMemoryStreamManager,
  JSAgentExecutor,
  type StreamChunk,
  type ToolResultMessage,
} from '../index.js';
import { createToolGuard } from '../ready-made/tool-guard.js';
import { createScriptedModel, type ScriptedStep } from '../testing/index.js';
import { collect, memoryLogger, setup } from './harness.js';

// Issue 14, item 1: an edited approval goes through the guards; a signature binds session, run, call,
// decision and final input; the stream carries nothing that authorizes a decision.

const ran: string[] = [];
const readFile = defineTool({
  name: 'read_file',
  description: 'reads a file (needs a human yes)',
  inputSchema: z.object({ path: z.string() }),
  needsApproval: true,
  execute: (input) => {
    ran.push(input.path);
    return { read: input.path };
  },
});

function guardedAgent(steps: ScriptedStep[]) {
  return defineAgent({
    name: 'guarded',
    llmConfig: { model: createScriptedModel(steps), retry: { initialDelayMs: 1 } },
    tools: [readFile],
    hooks: createHookManager(createToolGuard({ argumentRules: [{ tool: 'read_file', path: 'path', deny: [/\.env$/] }] }), { onError: guardPolicy }),
  });
}

type ApprovalRequest = Extract<StreamChunk, { type: 'tool_approval_request' }>;

async function suspended(approvalSecret: string | undefined, sessionId: string) {
  const wired = setup(approvalSecret === undefined ? {} : { executor: { approvalSecret } });
  const agent = guardedAgent([{ toolCalls: [{ name: 'read_file', args: { path: 'notes.txt' }, id: 'c1' }] }, { text: 'done' }]);
  const first = await wired.executor.execute(agent, 'read it', { sessionId });
  const chunks = await collect(first.stream());
  expect((await first.result()).status).toBe('suspended');
  const request = chunks.find((c): c is ApprovalRequest => c.type === 'tool_approval_request')!;
  return { ...wired, agent, first, chunks, request };
}

describe('approvals with edited input (issue 14, item 1)', () => {
  it('an edited input hitting a createToolGuard deny rule is blocked: the tool never runs and the model gets the block', async () => {
    ran.length = 0;
    const { executor, stateStore } = await suspended(undefined, 'edit-1');
    const result = await (await executor.approve('edit-1', 'c1', { input: { path: '../.env' } })).result();
    expect(result.status).toBe('completed');
    expect(ran).toEqual([]);
    const row = (await stateStore.loadSession('edit-1'))!.messages.find((m): m is ToolResultMessage => m.role === 'tool')!;
    expect(row.isError).toBe(true);
    expect(row.errorInfo).toMatchObject({ code: 'hook_blocked', details: { hook: 'beforeTool', name: 'toolGuard' } });
  });

  it('an edited input the guard allows runs with that input; a beforeTool rewrite of the edited input applies', async () => {
    ran.length = 0;
    const wired = setup();
    const agent = defineAgent({
      name: 'rewriting',
      llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'read_file', args: { path: 'a.txt' }, id: 'c1' }] }, { text: 'done' }]) },
      tools: [readFile],
      hooks: { beforeTool: (p) => ({ input: { path: `safe/${(p.toolCall.arguments as { path: string }).path}` } }) },
    });
    await (await wired.executor.execute(agent, 'go', { sessionId: 'edit-2' })).result();
    const result = await (await wired.executor.approve('edit-2', 'c1', { input: { path: 'b.txt' } })).result();
    expect(result.status).toBe('completed');
    expect(ran).toEqual(['safe/b.txt']);
  });
});

describe('approval signatures (issue 14, item 1)', () => {
  it('the approval request chunk carries no signature, and nothing on the stream is a valid signature', async () => {
    const { executor, chunks, request } = await suspended('secret', 'sig-1');
    expect(request).not.toHaveProperty('signature');
    const valid = executor.signApproval('sig-1', 'c1', { runId: request.runId, decision: 'approve', input: request.arguments });
    expect(JSON.stringify(chunks)).not.toContain(valid);
    const rejection = executor.signApproval('sig-1', 'c1', { runId: request.runId, decision: 'reject' });
    expect(JSON.stringify(chunks)).not.toContain(rejection);
  });

  it('a signature for approve cannot reject, nor approve other input, another run or another call; the right one works', async () => {
    ran.length = 0;
    const { executor, request, first } = await suspended('secret', 'sig-2');
    const approveSig = executor.signApproval('sig-2', 'c1', { runId: request.runId, decision: 'approve', input: { path: 'notes.txt' } });
    const refused = { info: expect.objectContaining({ code: 'approval_invalid_signature' }) };
    await expect(executor.reject('sig-2', 'c1', { signature: approveSig })).rejects.toMatchObject(refused);
    await expect(executor.approve('sig-2', 'c1', { signature: approveSig, input: { path: 'other.txt' } })).rejects.toMatchObject(refused);
    const otherRun = executor.signApproval('sig-2', 'c1', { runId: 'another-run', decision: 'approve', input: { path: 'notes.txt' } });
    await expect(executor.approve('sig-2', 'c1', { signature: otherRun })).rejects.toMatchObject(refused);
    const otherCall = executor.signApproval('sig-2', 'c2', { runId: first.runId, decision: 'approve', input: { path: 'notes.txt' } });
    await expect(executor.approve('sig-2', 'c1', { signature: otherCall })).rejects.toMatchObject(refused);
    expect(ran).toEqual([]);
    // An edit needs a signature for the edited input.
    const editedSig = executor.signApproval('sig-2', 'c1', { runId: first.runId, decision: 'approve', input: { path: 'other.txt' } });
    await expect(executor.approve('sig-2', 'c1', { signature: editedSig })).rejects.toMatchObject(refused);
    const result = await (await executor.approve('sig-2', 'c1', { signature: editedSig, input: { path: 'other.txt' } })).result();
    expect(result.status).toBe('completed');
    expect(ran).toEqual(['other.txt']);
  });

  it('a rejection needs a signature for reject', async () => {
    const { executor, request, stateStore } = await suspended('secret', 'sig-3');
    await expect(executor.reject('sig-3', 'c1')).rejects.toMatchObject({ info: { code: 'approval_invalid_signature' } });
    const signature = executor.signApproval('sig-3', 'c1', { runId: request.runId, decision: 'reject' });
    expect((await (await executor.reject('sig-3', 'c1', { signature })).result()).status).toBe('completed');
    const row = (await stateStore.loadSession('sig-3'))!.messages.find((m): m is ToolResultMessage => m.role === 'tool')!;
    expect(row.errorInfo).toMatchObject({ code: 'permission_denied' });
  });
});

describe('an edited approval input is checked against the input schema (issue 14, item 1; D5)', () => {
  /** A second step that answers with what the model was given for call c1. */
  const reportsResult: ScriptedStep = (o) => {
    const row = o.prompt.find((m) => m.role === 'tool');
    const part = row?.content[0] as { output?: { type?: string; value?: unknown } } | undefined;
    return { text: `model saw ${JSON.stringify(part?.output?.value)}` };
  };

  it('an edited input that breaks the inputSchema gives the model a tool_invalid_input result: the tool does not run, afterTool does not fire, and the run goes on to complete', async () => {
    ran.length = 0;
    const wired = setup();
    const afterTool: string[] = [];
    const agent = defineAgent({
      name: 'schema-checked',
      llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'read_file', args: { path: 'notes.txt' }, id: 'c1' }] }, reportsResult]) },
      tools: [readFile],
      hooks: { afterTool: (p) => void afterTool.push(p.toolCall.id) },
    });
    expect((await (await wired.executor.execute(agent, 'go', { sessionId: 'edit-bad-1' })).result()).status).toBe('suspended');
    const resumed = await wired.executor.approve('edit-bad-1', 'c1', { input: { path: 42 } });
    const chunks = await collect(resumed.stream());
    const result = await resumed.result();
    expect(result.status).toBe('completed');
    expect(ran).toEqual([]);
    expect(afterTool).toEqual([]);
    const row = (await wired.stateStore.loadSession('edit-bad-1'))!.messages.find((m): m is ToolResultMessage => m.role === 'tool')!;
    expect(row).toMatchObject({ toolCallId: 'c1', isError: true, errorInfo: { code: 'tool_invalid_input', layer: 'tool', details: { tool: 'read_file' } } });
    expect(row.errorInfo!.details!.issues).toEqual([expect.objectContaining({ path: ['path'] })]);
    // The model got the error as the call's result and answered after it: the run went on.
    expect(result.output).toContain('Invalid arguments for tool');
    expect(chunks.some((c) => c.type === 'tool_start' && c.toolCallId === 'c1')).toBe(false);
  });

  it('an edited input that is not an object at all is a tool_invalid_input result too, and that answers the call: a second approve with a valid edit is session_not_suspended and the tool still never ran', async () => {
    ran.length = 0;
    const wired = setup();
    const agent = defineAgent({
      name: 'schema-checked-2',
      llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'read_file', args: { path: 'notes.txt' }, id: 'c1' }] }, reportsResult]) },
      tools: [readFile],
    });
    await (await wired.executor.execute(agent, 'go', { sessionId: 'edit-bad-2' })).result();
    expect((await (await wired.executor.approve('edit-bad-2', 'c1', { input: 'notes.txt' })).result()).status).toBe('completed');
    expect(ran).toEqual([]);
    const rows = (await wired.stateStore.loadSession('edit-bad-2'))!.messages.filter((m): m is ToolResultMessage => m.role === 'tool');
    expect(rows).toEqual([expect.objectContaining({ toolCallId: 'c1', errorInfo: expect.objectContaining({ code: 'tool_invalid_input' }) })]);
    await expect(wired.executor.approve('edit-bad-2', 'c1', { input: { path: 'notes.txt' } })).rejects.toMatchObject({ info: { code: 'session_not_suspended' } });
    expect(ran).toEqual([]);
  });

  it("an edited input for a child's approval, given through the parent's session, is checked against the child tool's schema: tool_invalid_input in the child, the tool does not run, parent and child complete", async () => {
    ran.length = 0;
    const stateStore = new InMemoryStateStore();
    const executor = new JSAgentExecutor(stateStore, new InMemoryStreamManager(), new VercelAIAdapter(), { logger: memoryLogger() });
    const child = defineAgent({ name: 'reader', llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'read_file', args: { path: 'notes.txt' }, id: 'r1' }] }, reportsResult]) }, tools: [readFile] });
    const tool = defineSubAgentTool({ agent: child, name: 'read' });
    const parent = defineAgent({
      name: 'lead',
      llmConfig: { model: createScriptedModel([(o) => (o.prompt.some((m) => m.role === 'tool') ? { text: 'done' } : { toolCalls: [{ name: 'read', args: { input: 'read notes' }, id: 'p1' }] })], { loop: true }) },
      tools: [tool],
    });
    expect((await (await executor.execute(parent, 'go', { sessionId: 'edit-bad-3' })).result()).suspension?.reason).toBe('awaiting_children');
    const done = await (await executor.approve('edit-bad-3', 'r1', { input: { path: ['x'] } })).result();
    expect(done).toMatchObject({ status: 'completed', output: 'done' });
    expect(ran).toEqual([]);
    const childRows = (await stateStore.loadSession(childSessionId('edit-bad-3', 'p1')))!.messages.filter((m): m is ToolResultMessage => m.role === 'tool');
    expect(childRows).toEqual([expect.objectContaining({ toolCallId: 'r1', isError: true, errorInfo: expect.objectContaining({ code: 'tool_invalid_input' }) })]);
  });
});
