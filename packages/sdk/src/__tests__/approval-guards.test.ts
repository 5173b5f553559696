import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createHookManager, defineAgent, defineTool, guardPolicy, type StreamChunk, type ToolResultMessage } from '../index.js';
import { createToolGuard } from '../ready-made/tool-guard.js';
import { createScriptedModel, type ScriptedStep } from '../testing/index.js';
import { collect, setup } from './harness.js';

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
