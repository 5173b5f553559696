// The executor's helpers (runtime/executor-options.ts) and the journal's record schemas
// (runtime/journal-records.ts), as the mutation run of those files found them pinned only loosely:
// the rows that cancel a suspended run's calls, a new session's initial state, the checkpoint a retry
// restores, the check of a rewind's checkpoint, what a child inherits, and which records replay.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { InMemoryStateStore } from '../index.js';
import { AgentError, defineAgent, GENESIS_CHECKPOINT } from '../index.js';
import { cancelledRows, checkRestorable, childRunOptions, initialStateOf, lastRestorable } from '../runtime/executor-options.js';
import { callResultRecord, modelReplyRecord, startSignalRecord, terminalRecord } from '../runtime/journal-records.js';
import { createScriptedModel } from '../testing/index.js';
import { begunMemoryRun } from './harness.js';

const model = createScriptedModel([{ text: 'unused' }]);

async function rejection(promise: Promise<unknown>): Promise<AgentError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!AgentError.isInstance(error)) throw new Error(`expected an AgentError, got ${String(error)}`);
  return error;
}

describe('cancelledRows', () => {
  it('one error row per pending call, in order, with tool_cancelled naming the tool', () => {
    const rows = cancelledRows([
      { toolCallId: 'c1', toolName: 'ask', kind: 'client_tool', arguments: {} },
      { toolCallId: 'c2', toolName: 'pay', kind: 'approval', arguments: {} },
    ] as never);
    expect(rows).toHaveLength(2);
    const [first, second] = rows as unknown as [Record<string, unknown>, Record<string, unknown>];
    expect(first).toMatchObject({
      role: 'tool',
      toolCallId: 'c1',
      toolName: 'ask',
      isError: true,
      content: 'The call to "ask" was cancelled: a new message started another turn.',
      errorInfo: { code: 'tool_cancelled', message: 'The call to "ask" was cancelled: a new message started another turn.', details: { tool: 'ask' } },
    });
    expect(second).toMatchObject({ toolCallId: 'c2', toolName: 'pay', errorInfo: { code: 'tool_cancelled', details: { tool: 'pay' } } });
    expect(cancelledRows([])).toEqual([]);
  });
});

describe('initialStateOf', () => {
  it('without a stateSchema: the given state, or {} when none is given', () => {
    const agent = defineAgent({ name: 'plain', llmConfig: { model } });
    expect(initialStateOf(agent as never, { a: 1 })).toEqual({ a: 1 });
    expect(initialStateOf(agent as never, undefined)).toEqual({});
  });

  it("with a stateSchema: its defaults apply (to {} when none is given); a state it refuses is run_invalid_input with the schema's issues", () => {
    const agent = defineAgent({ name: 'typed', llmConfig: { model }, stateSchema: z.object({ n: z.number().default(3), tag: z.string().optional() }) });
    expect(initialStateOf(agent as never, undefined)).toEqual({ n: 3 });
    expect(initialStateOf(agent as never, { tag: 'x' })).toEqual({ n: 3, tag: 'x' });
    let error: unknown;
    try {
      initialStateOf(agent as never, { n: 'three' });
    } catch (caught) {
      error = caught;
    }
    expect(AgentError.isInstance(error)).toBe(true);
    const info = (error as AgentError).info;
    expect(info.code).toBe('run_invalid_input');
    expect(info.message).toMatch(/^The initial state does not match typed's stateSchema: /);
    expect(info.details).toEqual({ issues: [{ path: ['n'], message: expect.any(String) }] });
  });
});

describe('lastRestorable and checkRestorable', () => {
  async function sessionWithCheckpoints(): Promise<{ store: InMemoryStateStore; ids: { kind: string; checkpointId: string }[] }> {
    const { store, epoch } = await begunMemoryRun();
    const base = { sessionId: 's1', runId: 'r1', epoch };
    await store.commit({ ...base, kind: 'step', stepIndex: 0, appendMessages: [{ role: 'assistant', content: 'a' }], checkpoint: 'step' } as never);
    await store.commit({ ...base, kind: 'step', stepIndex: 1, appendMessages: [{ role: 'assistant', content: 'b' }], checkpoint: 'step' } as never);
    await store.commit({ ...base, kind: 'terminal', runStatus: 'failed', state: { n: 1 }, checkpoint: 'state' } as never);
    const ids = (await store.listCheckpoints('s1')).map((c) => ({ kind: c.kind, checkpointId: c.checkpointId }));
    return { store, ids };
  }

  it('a retry restores the last step or turn-start checkpoint, not a later state checkpoint; genesis when the session has none', async () => {
    const { store, ids } = await sessionWithCheckpoints();
    expect(ids.map((c) => c.kind)).toEqual(['step', 'step', 'state']);
    expect(await lastRestorable(store, 's1')).toBe(ids[1]?.checkpointId);
    expect(await lastRestorable(store, 'no-such-session')).toBe(GENESIS_CHECKPOINT);
  });

  it('a rewind to a checkpoint the session has (or to genesis) passes; to another one is state_not_found naming it', async () => {
    const { store, ids } = await sessionWithCheckpoints();
    for (const { checkpointId } of ids) await expect(checkRestorable(store, 's1', checkpointId)).resolves.toBeUndefined();
    await expect(checkRestorable(store, 's1', GENESIS_CHECKPOINT)).resolves.toBeUndefined();
    await expect(checkRestorable(store, 'no-such-session', GENESIS_CHECKPOINT)).resolves.toBeUndefined();
    const error = await rejection(checkRestorable(store, 's1', 'cp-missing'));
    expect(error.info).toMatchObject({ code: 'state_not_found', message: 'Session s1 has no checkpoint cp-missing.', details: { checkpointId: 'cp-missing' } });
  });
});

describe('childRunOptions (rules 156, 202)', () => {
  it('a child inherits a dry run and the hookContext, given by reference, and nothing it was not given', () => {
    const resources = { db: {} };
    expect(childRunOptions({})).toStrictEqual({});
    expect(childRunOptions({ dryRun: false })).toStrictEqual({});
    expect(childRunOptions({ dryRun: true })).toStrictEqual({ dryRun: true });
    const inherited = childRunOptions({ hookContext: resources });
    expect(Object.keys(inherited)).toEqual(['hookContext']);
    expect(inherited.hookContext).toBe(resources);
    expect(childRunOptions({ dryRun: true, hookContext: null })).toEqual({ dryRun: true, hookContext: null });
  });
});

describe('journal record schemas', () => {
  const errorInfo = new AgentError('tool_execution_failed', 'boom').info;

  it('a call result row with an AgentErrorInfo replays; one whose errorInfo is not one is refused', () => {
    const record = { message: { role: 'tool', toolCallId: 'c1', toolName: 't', content: 'boom', isError: true, errorInfo }, patches: [], success: false, durationMs: 3 };
    expect(callResultRecord.safeParse(record).success).toBe(true);
    expect(callResultRecord.safeParse({ ...record, message: { ...record.message, errorInfo: { code: 'x' } } }).success).toBe(false);
    expect(callResultRecord.safeParse({ ...record, message: { ...record.message, errorInfo: 'boom' } }).success).toBe(false);
  });

  it('the other records: valid ones replay as written, damaged ones are refused', () => {
    const reply = { ok: true, text: 'hi', toolCalls: [{ id: 'c1', name: 't', arguments: {} }], finishReason: 'stop', model: 'm' };
    expect(modelReplyRecord.safeParse({ reply, patches: [{ op: 'add', path: ['a', 0], value: 1 }] }).data).toEqual({ reply, patches: [{ op: 'add', path: ['a', 0], value: 1 }] });
    expect(modelReplyRecord.safeParse({ reply, patches: [{ op: 'move', path: [] }] }).success).toBe(false);
    expect(terminalRecord.safeParse({ output: 1, exitReason: 'text', patches: [], endCarriesState: true }).success).toBe(true);
    expect(terminalRecord.safeParse({ output: 1, exitReason: 'other', patches: [], endCarriesState: true }).success).toBe(false);
    expect(startSignalRecord.safeParse({}).success).toBe(true);
    expect(startSignalRecord.safeParse({ signal: 'restart' }).success).toBe(false);
  });
});
