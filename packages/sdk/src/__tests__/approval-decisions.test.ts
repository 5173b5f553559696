import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, defineTool, JSAgentExecutor, type AgentResumedHookContext, type ApprovalDecisionInfo, type Message, type StreamChunk } from '../index.js';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { approvalDecisions, type PendingAnswer } from '../runtime/tool-answers.js';
import { createGate, createScriptedModel } from '../testing/index.js';
import { collect, memoryLogger, setup } from './harness.js';

// The decisions a person answers approval calls with (approve / reject, their reasons) are announced by
// the resumed run: on its run_started chunk and to onAgentResumed. No signature goes with them.

type RunStarted = Extract<StreamChunk, { type: 'run_started' }>;

const sent: string[] = [];
const sendEmail = defineTool({
  name: 'send_email',
  description: 'sends an email (a person approves it first)',
  inputSchema: z.object({ to: z.string() }),
  needsApproval: true,
  execute: ({ to }) => (sent.push(to), `sent to ${to}`),
});
const plainTool = defineTool({ name: 'lookup', description: 'looks up (asked of the client)', inputSchema: z.object({ q: z.string() }) });

/** A mailer whose first step asks for two approvals (and a client tool when `withClient`); `seen` gets onAgentResumed's decisions. */
function mailer(seen: (readonly ApprovalDecisionInfo[])[], withClient = false) {
  const calls = [
    { name: 'send_email', args: { to: 'ana@example.com' }, id: 'mail-a' },
    { name: 'send_email', args: { to: 'bo@example.com' }, id: 'mail-b' },
    ...(withClient ? [{ name: 'lookup', args: { q: 'x' }, id: 'look-1' }] : []),
  ];
  return defineAgent({
    name: 'mailer',
    llmConfig: { model: createScriptedModel([{ toolCalls: calls }, { text: 'Done.' }]) },
    tools: [sendEmail, plainTool],
    hooks: { onAgentResumed: (ctx: AgentResumedHookContext) => void seen.push(ctx.decisions) },
  });
}

async function suspendedMailer(sessionId: string, options: { readonly approvalSecret?: string; readonly withClient?: boolean } = {}) {
  const wired = setup(options.approvalSecret === undefined ? {} : { executor: { approvalSecret: options.approvalSecret } });
  const seen: (readonly ApprovalDecisionInfo[])[] = [];
  const first = await wired.executor.execute(mailer(seen, options.withClient), 'mail them', { sessionId });
  expect((await first.result()).status).toBe('suspended');
  return { ...wired, seen, first };
}

function runStarted(chunks: readonly StreamChunk[]): RunStarted {
  return chunks.find((c): c is RunStarted => c.type === 'run_started')!;
}

describe('approval decisions and their reasons, announced by the resumed run', () => {
  it('approve() with a reason: the resumed run\'s run_started chunk and onAgentResumed carry the decision with its reason; the call runs', async () => {
    sent.length = 0;
    const { executor, seen } = await suspendedMailer('ap-1');
    const second = await executor.resume('ap-1', { mode: 'with_confirmation', decisions: [{ toolCallId: 'mail-a', decision: 'approve', reason: 'Ana asked for it' }, { toolCallId: 'mail-b', decision: 'reject', reason: 'Bo left' }] });
    const chunks = await collect(second.stream());
    expect((await second.result()).status).toBe('completed');
    const expected: ApprovalDecisionInfo[] = [
      { toolCallId: 'mail-a', toolName: 'send_email', decision: 'approve', reason: 'Ana asked for it', edited: false },
      { toolCallId: 'mail-b', toolName: 'send_email', decision: 'reject', reason: 'Bo left', edited: false },
    ];
    expect(runStarted(chunks).decisions).toEqual(expected);
    expect(seen).toEqual([expected]);
    expect(sent).toEqual(['ana@example.com']);
  });

  it('executor.approve(sessionId, callId, { reason }) passes its reason through; a reason is trimmed and a blank one is left out', async () => {
    const { executor, seen } = await suspendedMailer('ap-2');
    const approved = await executor.approve('ap-2', 'mail-a', { reason: '  fine by me \n' });
    const chunks = await collect(approved.stream());
    expect(runStarted(chunks).decisions).toEqual([{ toolCallId: 'mail-a', toolName: 'send_email', decision: 'approve', reason: 'fine by me', edited: false }]);
    // The other call is still pending: this run suspends again; a blank reason is no reason.
    expect((await approved.result()).status).toBe('suspended');
    const rejected = await executor.reject('ap-2', 'mail-b', { reason: '   ' });
    expect(runStarted(await collect(rejected.stream())).decisions).toEqual([{ toolCallId: 'mail-b', toolName: 'send_email', decision: 'reject', edited: false }]);
    expect(seen.map((d) => d.map((x) => x.reason ?? null))).toEqual([['fine by me'], [null]]);
  });

  it('an approval with edited arguments is flagged edited; the decision does not repeat the input (the tool_start chunk carries what runs)', async () => {
    sent.length = 0;
    const { executor } = await suspendedMailer('ap-3');
    const handle = await executor.resume('ap-3', { mode: 'with_confirmation', decisions: [{ toolCallId: 'mail-a', decision: 'approve', input: { to: 'ana@example.org' }, reason: 'right domain' }, { toolCallId: 'mail-b', decision: 'approve' }] });
    const chunks = await collect(handle.stream());
    const decisions = runStarted(chunks).decisions!;
    expect(decisions.map((d) => [d.toolCallId, d.edited, d.reason ?? null])).toEqual([['mail-a', true, 'right domain'], ['mail-b', false, null]]);
    expect(JSON.stringify(decisions)).not.toContain('ana@example.org');
    expect(chunks.find((c) => c.type === 'tool_start' && c.toolCallId === 'mail-a')).toMatchObject({ arguments: { to: 'ana@example.org' } });
    expect(sent.sort()).toEqual(['ana@example.org', 'bo@example.com']);
  });

  it('the approval\'s reason never reaches the model: the conversation after the approval holds the tool\'s result only (a rejection\'s reason does reach it)', async () => {
    const { executor, stateStore } = await suspendedMailer('ap-4');
    await (await executor.resume('ap-4', { mode: 'with_confirmation', decisions: [{ toolCallId: 'mail-a', decision: 'approve', reason: 'APPROVAL-REASON' }, { toolCallId: 'mail-b', decision: 'reject', reason: 'REJECTION-REASON' }] })).result();
    const messages: readonly Message[] = (await stateStore.loadSession('ap-4'))!.messages;
    expect(JSON.stringify(messages)).not.toContain('APPROVAL-REASON');
    expect(JSON.stringify(messages)).toContain('REJECTION-REASON');
  });

  it('with approvalSecret, the signatures the decisions carried appear nowhere on the stream, and the run_started decisions hold only the documented fields', async () => {
    const { executor, streamManager, first } = await suspendedMailer('ap-5', { approvalSecret: 'secret' });
    const approveSig = executor.signApproval('ap-5', 'mail-a', { runId: first.runId, decision: 'approve', input: { to: 'ana@example.com' } });
    const rejectSig = executor.signApproval('ap-5', 'mail-b', { runId: first.runId, decision: 'reject' });
    const handle = await executor.resume('ap-5', { mode: 'with_confirmation', decisions: [{ toolCallId: 'mail-a', decision: 'approve', reason: 'ok', signature: approveSig }, { toolCallId: 'mail-b', decision: 'reject', signature: rejectSig }] });
    expect((await handle.result()).status).toBe('completed');
    const all = JSON.stringify(await collect(streamManager.read('ap-5', { follow: false })));
    expect(all).not.toContain(approveSig);
    expect(all).not.toContain(rejectSig);
    const decisions = runStarted(await collect(handle.stream())).decisions!;
    for (const d of decisions) expect(Object.keys(d).every((k) => ['toolCallId', 'toolName', 'decision', 'reason', 'edited'].includes(k))).toBe(true);
  });

  it('a resume that answers no approval (only a client result) announces no decisions: run_started has none, onAgentResumed gets []', async () => {
    const wired = setup();
    const seen: (readonly ApprovalDecisionInfo[])[] = [];
    const agent = defineAgent({
      name: 'asker',
      llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'lookup', args: { q: 'x' }, id: 'look-1' }] }, { text: 'ok' }]) },
      tools: [plainTool],
      hooks: { onAgentResumed: (ctx: AgentResumedHookContext) => void seen.push(ctx.decisions) },
    });
    expect((await (await wired.executor.execute(agent, 'go', { sessionId: 'ap-6' })).result()).status).toBe('suspended');
    const handle = await wired.executor.submitToolResult('ap-6', 'look-1', 'found');
    expect(runStarted(await collect(handle.stream()))).not.toHaveProperty('decisions');
    expect(seen).toEqual([[]]);
  });

  it('decisions and a client result delivered together: only the decisions are announced, in the order given', async () => {
    const { executor, seen } = await suspendedMailer('ap-7', { withClient: true });
    const handle = await executor.resume('ap-7', {
      mode: 'with_confirmation',
      toolResults: [{ toolCallId: 'look-1', result: 'found' }],
      decisions: [{ toolCallId: 'mail-b', decision: 'approve', reason: 'b first' }, { toolCallId: 'mail-a', decision: 'reject', reason: 'not a' }],
    });
    expect((await handle.result()).status).toBe('completed');
    expect(runStarted(await collect(handle.stream())).decisions!.map((d) => `${d.toolCallId}:${d.decision}:${d.reason}`)).toEqual(['mail-b:approve:b first', 'mail-a:reject:not a']);
    expect(seen[0]!.map((d) => d.toolCallId)).toEqual(['mail-b', 'mail-a']);
  });

  it('a resumed run handed off at shutdown and recovered elsewhere announces the same decisions on its recovered run_started', async () => {
    const gate = createGate();
    const started = createGate();
    const slowSend = defineTool({
      name: 'send_email',
      description: 'sends slowly',
      inputSchema: z.object({ to: z.string() }),
      needsApproval: true,
      execute: async ({ to }) => (started.open(), await gate.opened, `sent to ${to}`),
    });
    const agent = defineAgent({ name: 'slow-mailer', llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'send_email', args: { to: 'ana@example.com' }, id: 'mail-a' }] }, { text: 'Done.' }]) }, tools: [slowSend] });
    const { executor, stateStore, streamManager } = setup();
    expect((await (await executor.execute(agent, 'mail', { sessionId: 'ap-8' })).result()).status).toBe('suspended');
    const resumed = await executor.approve('ap-8', 'mail-a', { reason: 'go ahead' });
    await started.opened;
    const stopping = executor.shutdown();
    gate.open();
    await stopping;
    expect((await resumed.result()).status).toBe('running');
    const elsewhere = new JSAgentExecutor(stateStore, streamManager, new VercelAIAdapter(), { logger: memoryLogger() });
    const [recovered] = await elsewhere.recover({ agents: [agent] });
    expect(recovered!.runId).toBe(resumed.runId);
    expect((await recovered!.result()).status).toBe('completed');
    const starts = (await collect(streamManager.read('ap-8', { follow: false }))).filter((c): c is RunStarted => c.type === 'run_started' && c.runId === resumed.runId);
    expect(starts).toHaveLength(2);
    for (const start of starts) expect(start.decisions).toEqual([{ toolCallId: 'mail-a', toolName: 'send_email', decision: 'approve', reason: 'go ahead', edited: false }]);
  });
});

describe('approvalDecisions (property)', () => {
  const answer = fc.oneof(
    fc.record({ kind: fc.constant('approve' as const), input: fc.option(fc.jsonValue(), { nil: undefined }), reason: fc.option(fc.string(), { nil: undefined }), signature: fc.option(fc.string(), { nil: undefined }) }, { requiredKeys: ['kind'] }),
    fc.record({ kind: fc.constant('reject' as const), reason: fc.option(fc.string(), { nil: undefined }), signature: fc.option(fc.string(), { nil: undefined }) }, { requiredKeys: ['kind'] }),
    fc.record({ kind: fc.constant('client' as const), result: fc.jsonValue() }),
  );
  it('for any answers: only approvals and rejections, in order, with the reason trimmed (blank left out), edited iff an approval has input, and no other field', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.uuid(), fc.string({ minLength: 1, maxLength: 8 }), answer), { maxLength: 8 }), (rows) => {
        const deliveries = rows.map(([id, toolName, a]) => ({ pending: { toolCallId: id, toolName, input: {}, kind: a.kind === 'client' ? ('client' as const) : ('approval' as const) }, answer: a as PendingAnswer }));
        const decisions = approvalDecisions(deliveries);
        const expected = rows.flatMap(([id, toolName, a]) => {
          if (a.kind === 'client') return [];
          const reason = a.reason?.trim();
          return [{ toolCallId: id, toolName, decision: a.kind, ...(reason ? { reason } : {}), edited: a.kind === 'approve' && 'input' in a && a.input !== undefined }];
        });
        expect(decisions).toEqual(expected);
        for (const d of decisions) expect(Object.keys(d).every((k) => ['toolCallId', 'toolName', 'decision', 'reason', 'edited'].includes(k))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});
