// Answers to pending calls (runtime/resume-answers.ts, runtime/tool-answers.ts) and what a launch records
// (runtime/launch-records.ts), as the mutation run of those files found them loosely pinned: the
// messages and details of an answer to a call that is not waiting (or is answered twice) and of a bad
// signature, the tool_end chunk each kind of answer writes, a blank rejection reason, and the run
// options record, field by field.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createHookManager, defineAgent, defineTool, InMemoryStateStore, type HookEntry, type StreamChunk } from '../index.js';
import { ExecutionManagers } from '../runtime/execution-managers.js';
import { continuesDryRun, executionHooks, hookContextOf, runOptionsRecord, sameHandler, turnInput } from '../runtime/launch-records.js';
import { createScriptedModel } from '../testing/index.js';
import { collect, counterAgent, deadCounterRun, refusal, setup } from './harness.js';

const ask = defineTool({ name: 'ask', description: 'asks the user (a client tool)', inputSchema: z.object({ q: z.string() }) });
const write = defineTool({ name: 'write', description: 'writes (needs approval)', inputSchema: z.object({ text: z.string() }), needsApproval: true, execute: async (input) => ({ wrote: input.text }) });

/** A session `s1` suspended on a client call `c1` and an approval `c2`. */
async function suspended(options: Parameters<typeof setup>[0] = {}) {
  const wired = setup(options);
  const agent = defineAgent({
    name: 'answers',
    llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'ask', args: { q: 'name?' }, id: 'c1' }, { name: 'write', args: { text: 'hi' }, id: 'c2' }] }, { text: 'done' }]) },
    tools: [ask, write],
  });
  const first = await (await wired.executor.execute(agent, 'go', { sessionId: 's1' })).result();
  expect(first.status).toBe('suspended');
  return { ...wired, first };
}

const pendingDetails = [
  { toolCallId: 'c1', kind: 'client' },
  { toolCallId: 'c2', kind: 'approval' },
];

describe('resumeAnswers: answers that do not fit', () => {
  it('a client result for an approval, a decision for a client call and an unknown call are tool_call_not_pending, listing what is pending', async () => {
    const { executor } = await suspended();
    const wrongKind = await refusal(executor.submitToolResult('s1', 'c2', 'x'));
    expect(wrongKind.info).toMatchObject({ code: 'tool_call_not_pending', message: 'Call c2 is not waiting for a client result in session s1.', details: { sessionId: 's1', toolCallId: 'c2', pending: pendingDetails } });
    const decision = await refusal(executor.approve('s1', 'c1'));
    expect(decision.info).toMatchObject({ code: 'tool_call_not_pending', message: 'Call c1 is not waiting for a decision in session s1.', details: { sessionId: 's1', toolCallId: 'c1', pending: pendingDetails } });
    const unknown = await refusal(executor.reject('s1', 'nope'));
    expect(unknown.info.message).toBe('Call nope is not waiting for a decision in session s1.');
  });

  it('one call answered twice in one resume is refused saying so', async () => {
    const { executor } = await suspended();
    const twice = await refusal(
      executor.resume('s1', {
        mode: 'continue',
        toolResults: [
          { toolCallId: 'c1', result: 'a' },
          { toolCallId: 'c1', result: 'b' },
        ],
      }),
    );
    expect(twice.info.message).toBe('Call c1 is not waiting for a client result in session s1 (it was answered twice).');
  });

  it('a missing or wrong signature is approval_invalid_signature naming the approval or the rejection', async () => {
    const { executor, first } = await suspended({ executor: { approvalSecret: 'k' } });
    const approval = await refusal(executor.approve('s1', 'c2'));
    expect(approval.info).toMatchObject({ code: 'approval_invalid_signature', message: 'The approval of call c2 is not signed for this session, run, call, decision and input.', details: { sessionId: 's1', runId: first.runId, toolCallId: 'c2' } });
    const rejection = await refusal(executor.reject('s1', 'c2', { signature: 'forged' }));
    expect(rejection.info.message).toBe('The rejection of call c2 is not signed for this session, run, call, decision and input.');
    // A signature made for the request's input is not one for an edited input.
    const signature = executor.signApproval('s1', 'c2', { runId: first.runId, decision: 'approve', input: { text: 'hi' } });
    const edited = await refusal(executor.approve('s1', 'c2', { signature, input: { text: 'other' } }));
    expect(edited.info.code).toBe('approval_invalid_signature');
  });
});

describe('deliverAnswer: the rows and chunks of answers', () => {
  type ToolEnd = Extract<StreamChunk, { type: 'tool_end' }>;

  it('a client result and an approval write tool_end with success and result; an error result and a rejection with success false and the error', async () => {
    const ok = await suspended();
    const handle = await ok.executor.resume('s1', { mode: 'with_confirmation', toolResults: [{ toolCallId: 'c1', result: { name: 'Ada' } }], decisions: [{ toolCallId: 'c2', decision: 'approve' }] } as never);
    await handle.result();
    const okEnds = (await collect(ok.streamManager.read('s1', { follow: false }))).filter((c): c is ToolEnd => c.type === 'tool_end');
    expect(okEnds.find((c) => c.toolCallId === 'c1')).toMatchObject({ toolName: 'ask', success: true, durationMs: 0, result: { name: 'Ada' } });
    expect(okEnds.find((c) => c.toolCallId === 'c1')).not.toHaveProperty('error');
    expect(okEnds.find((c) => c.toolCallId === 'c2')).toMatchObject({ toolName: 'write', success: true, result: { wrote: 'hi' } });

    const bad = await suspended();
    await (await bad.executor.resume('s1', { mode: 'with_confirmation', toolResults: [{ toolCallId: 'c1', result: 'no', isError: true }], decisions: [{ toolCallId: 'c2', decision: 'reject', reason: '   ' }] } as never)).result();
    const badEnds = (await collect(bad.streamManager.read('s1', { follow: false }))).filter((c): c is ToolEnd => c.type === 'tool_end');
    const failed = badEnds.find((c) => c.toolCallId === 'c1');
    expect(failed).toMatchObject({ success: false, error: { code: 'tool_failed' } });
    expect(failed).not.toHaveProperty('result');
    const rejected = badEnds.find((c) => c.toolCallId === 'c2');
    // A blank reason is no reason.
    expect(rejected).toMatchObject({ success: false, error: { code: 'permission_denied', message: 'The user rejected the call to "write".', details: { tool: 'write' } } });
    expect((rejected as unknown as { error: { details: object } }).error.details).not.toHaveProperty('reason');
    const rows = (await bad.stateStore.loadSession('s1'))!.messages.filter((m) => m.role === 'tool');
    expect(rows.find((r) => r.role === 'tool' && r.toolCallId === 'c2')).toMatchObject({ isError: true, errorInfo: { code: 'permission_denied', message: 'The user rejected the call to "write".' } });
  });

  it('a reason is trimmed before it is told', async () => {
    const { executor, stateStore } = await suspended();
    await (await executor.resume('s1', { mode: 'with_confirmation', toolResults: [{ toolCallId: 'c1', result: 'x' }], decisions: [{ toolCallId: 'c2', decision: 'reject', reason: '  too risky  ' }] } as never)).result();
    const row = (await stateStore.loadSession('s1'))!.messages.find((m) => m.role === 'tool' && m.toolCallId === 'c2');
    expect(row).toMatchObject({ errorInfo: { message: 'The user rejected the call to "write". Reason: too risky', details: { tool: 'write', reason: 'too risky' } } });
  });
});

describe('launch records', () => {
  it('runOptionsRecord keeps each field that is set and nothing else', () => {
    const start = { resumed: { previousRunId: 'r0' } };
    expect(runOptionsRecord({ start } as never, {})).toStrictEqual({ start });
    expect(
      runOptionsRecord(
        { input: 'go', parentSessionId: 'p', parentToolCallId: 'pc', depth: 2, previousRunId: 'r0', restoreCheckpointId: 'cp', start } as never,
        { userId: 'u', tags: ['t'], metadata: { k: 'v' } },
        true,
      ),
    ).toStrictEqual({ dryRun: true, input: 'go', userId: 'u', tags: ['t'], metadata: { k: 'v' }, parentSessionId: 'p', parentToolCallId: 'pc', depth: 2, previousRunId: 'r0', restoredCheckpointId: 'cp', start });
    expect(runOptionsRecord({ depth: 0, start } as never, {}, false)).toStrictEqual({ start });
  });

  it('turnInput is the text of the last user row, or empty', () => {
    expect(turnInput(undefined)).toBe('');
    expect(turnInput([])).toBe('');
    expect(turnInput([{ role: 'assistant', content: 'a' }])).toBe('');
    expect(
      turnInput([
        { role: 'user', content: 'first' },
        { role: 'assistant', content: 'a' },
        { role: 'user', content: 'last' },
        { role: 'assistant', content: 'b' },
      ]),
    ).toBe('last');
  });

  it('executionHooks: a manager of the call\'s hooks and hook manager together, none without either', async () => {
    const managers = new ExecutionManagers();
    expect(executionHooks({}, managers)).toStrictEqual({});
    const fired: string[] = [];
    const hooks = { onAgentStart: () => void fired.push('hooks') };
    const hookManager = createHookManager({ onAgentStart: () => void fired.push('manager') });
    for (const options of [{ hooks }, { hookManager }, { hooks, hookManager }]) {
      const { executionHooks: made } = executionHooks(options, managers);
      expect(made).toBeDefined();
      expect(made!.has('onAgentStart')).toBe(true);
    }
    expect(executionHooks({ hooks, hookManager }, managers).executionHooks!.entries('onAgentStart')).toHaveLength(2);
  });

  it('sameHandler: the same function, or two entries of one owner; entries without an owner differ by function', () => {
    const f = () => undefined;
    const g = () => undefined;
    const owner = {};
    const entry = (handler: unknown, o?: object) => ({ handler, ...(o ? { owner: o } : {}) }) as unknown as HookEntry;
    expect(sameHandler(entry(f), entry(f))).toBe(true);
    expect(sameHandler(entry(f, owner), entry(g, owner))).toBe(true);
    expect(sameHandler(entry(f), entry(g))).toBe(false);
    expect(sameHandler(entry(f, owner), entry(g, {}))).toBe(false);
    expect(sameHandler(entry(f, owner), entry(g))).toBe(false);
  });

  it('hookContextOf passes the hookContext by reference when given', () => {
    const resources = { db: {} };
    expect(hookContextOf({})).toStrictEqual({});
    expect(hookContextOf({ hookContext: resources }).hookContext).toBe(resources);
  });

  it('continuesDryRun: true only for a previous run recorded as a dry run', async () => {
    const { executor, stateStore } = setup();
    const agent = defineAgent({ name: 'dry', llmConfig: { model: createScriptedModel([{ text: 'a' }, { text: 'b' }]) } });
    const dry = await (await executor.execute(agent, 'go', { sessionId: 'd', dryRun: true })).result();
    const wet = await (await executor.execute(agent, 'go', { sessionId: 'w' })).result();
    expect(await continuesDryRun(stateStore, dry.runId)).toBe(true);
    expect(await continuesDryRun(stateStore, wet.runId)).toBe(false);
    expect(await continuesDryRun(stateStore, undefined)).toBe(false);
    expect(await continuesDryRun(stateStore, '')).toBe(false);
    expect(await continuesDryRun(new InMemoryStateStore(), 'missing')).toBe(false);
  });
});

describe('recover()', () => {
  it('a recoverable run whose agent was not given is left for another process, with a warning; one whose model id does not resolve is logged and left unclaimed; the others recover', async () => {
    const store = new InMemoryStateStore();
    await deadCounterRun(store, { sessionId: 'a', runId: 'ra' });
    await deadCounterRun(store, { sessionId: 'b', runId: 'rb' });
    const { executor, logger } = setup({ stateStore: store });
    expect(await executor.recover({ agents: [] })).toEqual([]);
    expect(logger.lines).toEqual([
      'warn: run ra of agent "counter" is recoverable, but no such agent was given to recover()',
      'warn: run rb of agent "counter" is recoverable, but no such agent was given to recover()',
    ]);
    logger.lines.length = 0;
    const byId = counterAgent([{ text: 'x' }], { llmConfig: { model: 'nowhere:model' } } as never);
    expect(await executor.recover({ agents: [byId] })).toEqual([]);
    expect(logger.lines).toHaveLength(2);
    expect(logger.lines[0]).toMatch(/^error: recovering run ra failed: Agent "counter" names its model by id/);
    expect((await store.getRun('ra'))!.leaseOwner).toBe('dead-process');
    logger.lines.length = 0;
    const handles = await executor.recover({ agents: new Map([['counter', counterAgent([{ text: 'recovered' }, { text: 'recovered' }])]]), limit: 1 });
    expect(handles).toHaveLength(1);
    expect(['a', 'b']).toContain(handles[0]!.sessionId);
    await handles[0]!.result();
    expect(logger.lines).toEqual([]);
  });
});
