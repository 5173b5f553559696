import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { openSqliteStores } from '@helix-agents/store-sqlite';
import { childSessionId, defineAgent, defineSubAgentTool, defineTool, InMemoryStateStore, JSAgentExecutor, type Message, type StreamChunk, type ToolResultMessage } from '../index.js';
import { toSessionEvent } from '../subscribers/index.js';
import { createHookRecorder, createScriptedModel } from '../testing/index.js';
import { collect, counterAgent, deadCounterRun, finish, incrementTool, memoryLogger, setup } from './harness.js';

// Rule 156: a dry run answers every sideEffects: true tool without running it (its dryRun(), else the
// standard stub), runs read-only tools, and marks the stubbed calls on the events, chunks and rows. The
// flag is kept on the run record: a run that continues a dry run (resume, approve, recover) stays dry.

function tools() {
  const ran: string[] = [];
  const send = defineTool({
    name: 'send',
    description: 'sends an email',
    inputSchema: z.object({ to: z.string() }),
    sideEffects: true,
    execute: (input) => {
      ran.push(`send ${input.to}`);
      return { sent: input.to };
    },
  });
  const charge = defineTool({
    name: 'charge',
    description: 'charges a card',
    inputSchema: z.object({ cents: z.number() }),
    outputSchema: z.object({ receipt: z.string() }),
    sideEffects: true,
    execute: (input) => {
      ran.push(`charge ${input.cents}`);
      return { receipt: 'real' };
    },
    dryRun: (input, ctx) => ({ receipt: `dry-${input.cents}-${ctx.toolCallId}` }),
  });
  const lookup = defineTool({
    name: 'lookup',
    description: 'reads a record',
    inputSchema: z.object({}),
    execute: () => {
      ran.push('lookup');
      return { found: true };
    },
  });
  return { ran, send, charge, lookup };
}

const calls = { toolCalls: [{ name: 'send', args: { to: 'ann' }, id: 's1' }, { name: 'charge', args: { cents: 5 }, id: 'c1' }, { name: 'lookup', args: {}, id: 'l1' }] };

function toolRows(messages: readonly Message[]): ToolResultMessage[] {
  return messages.filter((m): m is ToolResultMessage => m.role === 'tool');
}

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('dry runs', () => {
  it('rule 156: side-effecting tools are answered without running (dryRun(), else the standard stub); read-only tools run; the stored rows say stubbed (sqlite)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'helix-dry-'));
    dirs.push(dir);
    const stores = openSqliteStores({ path: join(dir, 'dry.db') });
    const t = tools();
    const executor = new JSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { logger: memoryLogger() });
    const rec = createHookRecorder({ points: ['beforeTool', 'afterTool'] });
    const agent = counterAgent([calls, finish('done')], { tools: [t.send, t.charge, t.lookup] });
    const handle = await executor.execute(agent, 'go', { dryRun: true, hooks: rec.hooks });
    const result = await handle.result();
    expect(result.status).toBe('completed');
    expect(t.ran).toEqual(['lookup']);
    const rows = toolRows((await stores.stateStore.loadSession(result.sessionId))!.messages);
    const byId = new Map(rows.map((r) => [r.toolCallId, r]));
    expect(byId.get('s1')).toMatchObject({ stubbed: true, content: { stubbed: true, tool: 'send' } });
    expect(byId.get('c1')).toMatchObject({ stubbed: true, content: { receipt: 'dry-5-c1' } });
    expect(byId.get('l1')?.stubbed).toBeUndefined();
    expect(byId.get('l1')?.content).toEqual({ found: true });
    // The hooks still fire for stubbed calls: an eval sees what the agent would have done.
    expect(rec.of('beforeTool')).toHaveLength(3);
    expect(rec.of('afterTool')).toHaveLength(3);
    expect((await stores.stateStore.getRun(result.runId))?.options.dryRun).toBe(true);
    stores.close();
  });

  it('rule 156: stubbed: true is on the tool_end chunks, the actions_completed chunk, and the action.result and actions.completed events', async () => {
    const t = tools();
    const { executor } = setup();
    const handle = await executor.execute(counterAgent([calls, finish('done')], { tools: [t.send, t.charge, t.lookup] }), 'go', { dryRun: true });
    await handle.result();
    const chunks = await collect(handle.stream());
    const ends = chunks.filter((c): c is Extract<StreamChunk, { type: 'tool_end' }> => c.type === 'tool_end');
    expect(Object.fromEntries(ends.map((e) => [e.toolCallId, e.stubbed === true]))).toEqual({ s1: true, c1: true, l1: false });
    const completed = chunks.find((c): c is Extract<StreamChunk, { type: 'actions_completed' }> => c.type === 'actions_completed' && c.stepIndex === 0)!;
    expect(completed.results.map((r) => [r.callId, r.stubbed === true])).toEqual([
      ['s1', true],
      ['c1', true],
      ['l1', false],
    ]);
    const events = chunks.map((c) => toSessionEvent(c, { sessionId: handle.sessionId, turnId: undefined, recovered: false })).filter((e) => e !== undefined);
    const results = events.filter((e) => e.type === 'action.result').map((e) => e.data as { callId: string; stubbed?: boolean });
    expect(Object.fromEntries(results.map((r) => [r.callId, r.stubbed === true]))).toEqual({ s1: true, c1: true, l1: false });
    const envelope = events.find((e) => e.type === 'actions.completed')!.data as unknown as { results: { callId: string; stubbed?: boolean }[] };
    expect(envelope.results.map((r) => r.stubbed === true)).toEqual([true, true, false]);
  });

  it('rule 156: without dryRun the same tools run and nothing is stubbed', async () => {
    const t = tools();
    const { executor, stateStore } = setup();
    const handle = await executor.execute(counterAgent([calls, finish('done')], { tools: [t.send, t.charge, t.lookup] }), 'go');
    const result = await handle.result();
    expect(t.ran.sort()).toEqual(['charge 5', 'lookup', 'send ann']);
    expect(toolRows((await stateStore.loadSession(result.sessionId))!.messages).some((r) => r.stubbed)).toBe(false);
    expect((await stateStore.getRun(result.runId))?.options.dryRun).toBeUndefined();
  });

  it('rule 156: a run that continues a dry run stays dry: approve() resumes a dry session and its approved call is stubbed too', async () => {
    const ran: string[] = [];
    const wire = defineTool({
      name: 'wire',
      description: 'wires money',
      inputSchema: z.object({ cents: z.number() }),
      sideEffects: true,
      needsApproval: true,
      execute: (input) => {
        ran.push(`wire ${input.cents}`);
        return { wired: input.cents };
      },
    });
    const { executor, stateStore } = setup();
    const agent = counterAgent([{ toolCalls: [{ name: 'wire', args: { cents: 9 }, id: 'w1' }] }, finish('done')], { tools: [wire] });
    const first = await executor.execute(agent, 'go', { dryRun: true });
    expect((await first.result()).status).toBe('suspended');
    // The resuming call does not repeat dryRun: the session's run says it.
    const resumed = await executor.approve(first.sessionId, 'w1');
    const result = await resumed.result();
    expect(result.status).toBe('completed');
    expect(ran).toEqual([]);
    expect((await stateStore.getRun(result.runId))?.options.dryRun).toBe(true);
    const row = toolRows((await stateStore.loadSession(first.sessionId))!.messages).find((r) => r.toolCallId === 'w1');
    expect(row).toMatchObject({ stubbed: true, content: { stubbed: true, tool: 'wire' } });
  });

  it('rule 156: a recovered dry run stays dry (the flag is read back from the run record)', async () => {
    const store = new InMemoryStateStore();
    await deadCounterRun(store, { recorded: { dryRun: true } });
    const t = tools();
    const { executor } = setup({ stateStore: store });
    const [handle] = await executor.recover({ agents: [counterAgent([calls, finish('done')], { tools: [t.send, t.charge, t.lookup, incrementTool] })] });
    expect((await handle!.result()).status).toBe('completed');
    expect(t.ran).toEqual(['lookup']);
    const rows = toolRows((await store.loadSession('dead'))!.messages);
    expect(rows.filter((r) => r.stubbed).map((r) => r.toolCallId).sort()).toEqual(['c1', 's1']);
  });

  it('rule 156: a new turn on a dry session is dry only when its own call says so', async () => {
    const t = tools();
    const { executor } = setup();
    const agent = counterAgent([{ toolCalls: [{ name: 'send', args: { to: 'a' }, id: 'x1' }] }, finish('one'), { toolCalls: [{ name: 'send', args: { to: 'b' }, id: 'x2' }] }, finish('two')], { tools: [t.send] });
    const first = await executor.execute(agent, 'go', { dryRun: true });
    await first.result();
    const second = await executor.send(first.sessionId, 'again');
    await second.result();
    expect(t.ran).toEqual(['send b']);
  });

  it('rule 156: the child run of a dry run\'s sub-agent call is dry, and sees the parent\'s hookContext (rule 202)', async () => {
    const t = tools();
    const request = { id: 'req-1' };
    const childSaw: unknown[] = [];
    const child = defineAgent({
      name: 'mailer',
      llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'send', args: { to: 'bo' }, id: 'k1' }] }, { text: 'mailed' }]) },
      tools: [t.send],
      hooks: { afterTool: (_p, ctx) => void childSaw.push(ctx.hookContext) },
    });
    const parent = defineAgent({
      name: 'lead',
      llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'mailer', args: { input: 'mail bo' }, id: 'm1' }] }, { text: 'done' }]) },
      tools: [defineSubAgentTool({ agent: child })],
    });
    const { executor, stateStore } = setup();
    const handle = await executor.execute(parent, 'go', { dryRun: true, hookContext: request });
    expect((await handle.result()).status).toBe('completed');
    expect(t.ran).toEqual([]);
    expect(childSaw).toEqual([request]);
    expect(childSaw[0]).toBe(request);
    const childRow = toolRows((await stateStore.loadSession(childSessionId(handle.sessionId, 'm1')))!.messages).find((r) => r.toolCallId === 'k1');
    expect(childRow).toMatchObject({ stubbed: true });
  });
});
