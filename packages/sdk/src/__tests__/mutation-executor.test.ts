// The executor's own API (runtime/executor.ts), as the mutation run of that file found it loosely
// pinned: the defaults it gives the runs, the refusals of resume(), retry(), send(), signApproval() and
// of an entry over its limits (their messages and details), the answers approve(), reject() and
// submitToolResult() carry, stop() on a session nothing runs, and a new turn racing another on a
// suspended session.
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { AgentError} from '../index.js';
import { ConfigError, defineAgent, defineTool, type AgentHandle, type LanguageModel, type ModelRegistry, type ToolResultMessage } from '../index.js';
import { createScriptedModel, type ScriptedStep } from '../testing/index.js';
import { refusal, setup } from './harness.js';

const ask = defineTool({ name: 'ask', description: 'asks the user (a client tool)', inputSchema: z.object({ q: z.string() }) });
const seen: unknown[] = [];
const write = defineTool({
  name: 'write',
  description: 'writes (needs approval)',
  inputSchema: z.object({ text: z.string() }),
  needsApproval: true,
  execute: async (input) => {
    seen.push(input);
    return { wrote: input.text };
  },
});

function agentOf(steps: ScriptedStep[], name = 'api') {
  return defineAgent({ name, llmConfig: { model: createScriptedModel(steps) }, tools: [ask, write] });
}

/** A session suspended on one client call `c1` (or an approval `c1` when `approval`). */
async function suspendedOn(kind: 'client' | 'approval', options: Parameters<typeof setup>[0] = {}, after: ScriptedStep[] = [{ text: 'done' }]) {
  const wired = setup(options);
  const call = kind === 'client' ? { name: 'ask', args: { q: 'name?' }, id: 'c1' } : { name: 'write', args: { text: 'hi' }, id: 'c1' };
  const agent = agentOf([{ toolCalls: [call] }, ...after]);
  const first = await wired.executor.execute(agent, 'go', { sessionId: 's1' });
  const result = await first.result();
  expect(result.status).toBe('suspended');
  return { ...wired, agent, first: result };
}

async function toolRows(wired: { stateStore: { loadSession(id: string): Promise<{ messages: readonly unknown[] } | undefined> } }, sessionId = 's1'): Promise<ToolResultMessage[]> {
  const session = await wired.stateStore.loadSession(sessionId);
  return (session?.messages ?? []).filter((m): m is ToolResultMessage => (m as { role: string }).role === 'tool');
}

describe('JSAgentExecutor: its defaults', () => {
  it('names itself <hostname>:<pid>:<8 random characters> unless given an instanceId, and leases 30 s by default', () => {
    const { executor } = setup();
    const other = setup().executor;
    expect(executor.instanceId).toMatch(new RegExp(`^${hostname().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:${process.pid}:[0-9a-f-]{8}$`));
    expect(other.instanceId).not.toBe(executor.instanceId);
    expect(executor.leaseMs).toBe(30_000);
    expect(setup({ executor: { instanceId: 'me', leaseMs: 999 } }).executor).toMatchObject({ instanceId: 'me', leaseMs: 999 });
  });

  it('refuses bad limits naming itself', () => {
    expect(() => setup({ executor: { limits: { maxMessages: 0 } } })).toThrow('JSAgentExecutor: limits.maxMessages must be a positive integer (or Infinity to turn it off), got 0.');
  });

  it('runs an agent that names its model by id on the providers registry it was given', async () => {
    const model = createScriptedModel([{ text: 'from the registry' }]) as unknown as LanguageModel;
    const asked: string[] = [];
    const providers = { languageModel: (id: string) => (asked.push(id), model) } as unknown as ModelRegistry;
    const { executor } = setup({ executor: { providers } });
    const agent = defineAgent({ name: 'by-id', llmConfig: { model: 'scripted:one' } });
    const result = await (await executor.execute(agent, 'go')).result();
    expect(result.status).toBe('completed');
    expect(result.output).toBe('from the registry');
    expect(asked.length).toBeGreaterThan(0);
    expect(new Set(asked)).toEqual(new Set(['scripted:one']));
  });

  it('registers the agents it is given and those execute() runs; registeredAgent() looks them up by name', async () => {
    const given = agentOf([{ text: 'x' }], 'given');
    const { executor } = setup({ executor: { agents: [given] } });
    expect(executor.registeredAgent('given')).toBe(given);
    expect(executor.registeredAgent('other')).toBeUndefined();
    const ran = agentOf([{ text: 'x' }], 'ran');
    await (await executor.execute(ran, 'go')).result();
    expect(executor.registeredAgent('ran')).toBe(ran);
  });
});

describe('JSAgentExecutor: refusals at the entry', () => {
  it('an empty parent session id is refused as a parent session id', async () => {
    const { executor } = setup();
    const error = await refusal(executor.execute(agentOf([{ text: 'x' }]), 'go', { parentSessionId: '' }));
    expect(error.info.code).toBe('run_invalid_input');
    expect(error.info.message).toBe('A parent session id must be a non-empty string of at most 256 characters, got an empty string.');
  });

  it('an initial state over maxStateChars is refused naming the initial state', async () => {
    const { executor } = setup({ executor: { limits: { maxStateChars: 20 } } });
    const error = await refusal(executor.execute(agentOf([{ text: 'x' }]), 'go', { initialState: { blob: 'b'.repeat(30) } }));
    expect(error.info.message).toBe('The initial state is 41 characters long, over the limit of 20 (limits.maxStateChars); nothing was written.');
  });

  it('a new turn may bring the conversation to maxMessages exactly; one past it is refused saying nothing was written', async () => {
    const { executor, stateStore } = setup({ executor: { limits: { maxMessages: 4 } } });
    const agent = agentOf([{ text: 'one' }, { text: 'two' }]);
    await (await executor.execute(agent, 'first', { sessionId: 'm' })).result();
    // 2 rows now; the next turn makes 4.
    expect((await (await executor.send('m', 'second')).result()).status).toBe('completed');
    expect((await stateStore.loadSession('m'))!.messages).toHaveLength(4);
    const error = await refusal(executor.send('m', 'third'));
    expect(error.info).toMatchObject({ code: 'run_too_many_messages', message: 'A new turn would make the conversation 5 rows long, over the limit of 4 (limits.maxMessages); nothing was written.', details: { count: 5, max: 4 } });
  });

  it('the rows that cancel a suspended run\'s calls count toward maxMessages', async () => {
    // user, assistant (call c1): 2 rows; a new turn adds the cancelled row and its own user row: 4.
    const fits = await suspendedOn('client', { executor: { limits: { maxMessages: 4 } } });
    expect((await (await fits.executor.send('s1', 'never mind')).result()).status).toBe('completed');
    const over = await suspendedOn('client', { executor: { limits: { maxMessages: 3 } } });
    const error = await refusal(over.executor.send('s1', 'never mind'));
    expect(error.info).toMatchObject({ code: 'run_too_many_messages', details: { count: 4, max: 3 } });
  });

  it('an oversized client result and edited approval input are refused naming the call', async () => {
    const client = await suspendedOn('client', { executor: { limits: { maxToolResultChars: 10 } } });
    const big = await refusal(client.executor.submitToolResult('s1', 'c1', 'r'.repeat(20)));
    expect(big.info.message).toBe('The result submitted for call c1 is 22 characters long, over the limit of 10 (limits.maxToolResultChars); nothing was written.');
    const approval = await suspendedOn('approval', { executor: { limits: { maxInputChars: 30 } } });
    const edited = await refusal(approval.executor.approve('s1', 'c1', { input: { text: 't'.repeat(40) } }));
    expect(edited.info.message).toBe('The edited input of call c1 is 51 characters long, over the limit of 30 (limits.maxInputChars); nothing was written.');
  });
});

describe('JSAgentExecutor: sessions it cannot continue', () => {
  it('send() to a session that does not exist is state_not_found naming it', async () => {
    const { executor } = setup();
    const error = await refusal(executor.send('nope', 'hi'));
    expect(error.info).toMatchObject({ code: 'state_not_found', message: 'Session nope does not exist.', details: { sessionId: 'nope' } });
  });

  it("a session whose agent this executor does not know is agent_not_registered naming the agent", async () => {
    const first = setup();
    await (await first.executor.execute(agentOf([{ text: 'x' }], 'elsewhere'), 'go', { sessionId: 'a' })).result();
    const { JSAgentExecutor } = await import('../index.js');
    const second = new JSAgentExecutor(first.stateStore, first.streamManager, (first.executor as unknown as { llmAdapter: never }).llmAdapter, { logger: first.logger });
    const error = await refusal(second.send('a', 'hi'));
    expect(error.info).toMatchObject({ code: 'agent_not_registered', message: 'No agent named "elsewhere" is registered with this executor.', details: { agentType: 'elsewhere' } });
  });

  it('resume() of a session that is not suspended is session_not_suspended saying what its run is', async () => {
    const { executor } = setup();
    await (await executor.execute(agentOf([{ text: 'x' }]), 'go', { sessionId: 'done' })).result();
    const error = await refusal(executor.resume('done', { mode: 'continue' }));
    expect(error.info).toMatchObject({ code: 'session_not_suspended', message: 'Session done is not suspended (its run is completed).', details: { sessionId: 'done' } });
  });

  it('retry() of a session whose run did not fail is session_not_retryable saying what its run is; an oversized retry message is refused as such', async () => {
    const { executor } = setup({ executor: { limits: { maxInputChars: 10 } } });
    await (await executor.execute(agentOf([{ text: 'x' }]), 'go', { sessionId: 'done' })).result();
    const error = await refusal(executor.retry('done'));
    expect(error.info).toMatchObject({ code: 'session_not_retryable', message: 'Session done has no failed or interrupted run to retry (its run is completed).', details: { sessionId: 'done' } });
    const long = await refusal(executor.retry('done', { message: 'm'.repeat(11) }));
    expect(long.info.message).toBe('The retry message is 11 characters long, over the limit of 10 (limits.maxInputChars); nothing was written.');
  });

  it('signApproval() without an approvalSecret is config_invalid saying so', () => {
    const { executor } = setup();
    let error: unknown;
    try {
      executor.signApproval('s1', 'c1', { runId: 'r', decision: 'reject' });
    } catch (caught) {
      error = caught;
    }
    expect(ConfigError.isInstance(error)).toBe(true);
    expect((error as AgentError).info.message).toBe('signApproval() needs the executor option approvalSecret.');
  });

  it('stop() and interrupt() on a session nothing runs (or that does not exist) resolve undefined', async () => {
    const { executor } = setup();
    expect(await executor.stop('never-seen')).toBeUndefined();
    expect(await executor.interrupt('never-seen')).toBeUndefined();
    await (await executor.execute(agentOf([{ text: 'x' }]), 'go', { sessionId: 'done' })).result();
    expect(await executor.stop('done')).toBeUndefined();
  });

  it('interrupt() is stop(): the running run ends interrupted with the reason', async () => {
    const { executor } = setup();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const slow = defineTool({ name: 'slow', description: 'waits', inputSchema: z.object({}), execute: async () => held.then(() => 'late') });
    const agent = defineAgent({ name: 'slowpoke', llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'slow', args: {}, id: 'c1' }] }, { text: 'x' }]) }, tools: [slow] });
    const handle = await executor.execute(agent, 'go', { sessionId: 'busy' });
    await new Promise((r) => setTimeout(r, 20));
    const stopping = executor.interrupt('busy', 'enough');
    release();
    const result = await stopping;
    expect(result?.status).toBe('interrupted');
    expect((await handle.result()).status).toBe('interrupted');
  });
});

describe('JSAgentExecutor: answers to pending calls', () => {
  it('submitToolResult(..., { isError: true }) records the client result as a tool_failed error row', async () => {
    const wired = await suspendedOn('client');
    await (await wired.executor.submitToolResult('s1', 'c1', 'it broke', { isError: true })).result();
    const [row] = await toolRows(wired);
    expect(row).toMatchObject({ toolCallId: 'c1', content: 'it broke', isError: true, errorInfo: { code: 'tool_failed', message: 'The client reported that "ask" failed.' } });
  });

  it('approve() with an edited input runs the tool on it', async () => {
    seen.length = 0;
    const wired = await suspendedOn('approval');
    await (await wired.executor.approve('s1', 'c1', { input: { text: 'edited' } })).result();
    expect(seen).toEqual([{ text: 'edited' }]);
  });

  it('reject() with a reason tells it to the model', async () => {
    const wired = await suspendedOn('approval');
    await (await wired.executor.reject('s1', 'c1', { reason: 'not today' })).result();
    const [row] = await toolRows(wired);
    expect(row).toMatchObject({ isError: true, errorInfo: { code: 'permission_denied', message: 'The user rejected the call to "write". Reason: not today', details: { tool: 'write', reason: 'not today' } } });
  });

  it('with an approvalSecret, approve() and reject() carry the signature made by signApproval()', async () => {
    seen.length = 0;
    const approved = await suspendedOn('approval', { executor: { approvalSecret: 'k' } });
    const signature = approved.executor.signApproval('s1', 'c1', { runId: approved.first.runId, decision: 'approve', input: { text: 'hi' } });
    expect((await (await approved.executor.approve('s1', 'c1', { signature })).result()).status).toBe('completed');
    expect(seen).toEqual([{ text: 'hi' }]);
    const rejected = await suspendedOn('approval', { executor: { approvalSecret: 'k' } });
    const no = rejected.executor.signApproval('s1', 'c1', { runId: rejected.first.runId, decision: 'reject' });
    expect((await (await rejected.executor.reject('s1', 'c1', { signature: no })).result()).status).toBe('completed');
    expect((await toolRows(rejected))[0]).toMatchObject({ errorInfo: { code: 'permission_denied' } });
  });

  it('retry() with a message appends it after the restored checkpoint', async () => {
    const { executor, stateStore } = setup();
    const agent = defineAgent({ name: 'flaky', llmConfig: { model: createScriptedModel([{ error: { status: 400, message: 'bad request' } }, { text: 'better' }]), retry: { maxAttempts: 1 } } });
    expect((await (await executor.execute(agent, 'go', { sessionId: 'f' })).result()).status).toBe('failed');
    expect((await (await executor.retry('f', { message: 'try harder' })).result()).status).toBe('completed');
    const users = (await stateStore.loadSession('f'))!.messages.filter((m) => m.role === 'user').map((m) => m.content);
    expect(users).toEqual(['go', 'try harder']);
  });
});

describe('JSAgentExecutor: two new turns on one suspended session', () => {
  it('only the first cancels the pending call: the other is refused, and the call has one cancelled row', async () => {
    const wired = await suspendedOn('client', {}, [{ text: 'one' }, { text: 'two' }]);
    const settled = await Promise.allSettled([wired.executor.send('s1', 'first'), wired.executor.send('s1', 'second')]);
    const started = settled.filter((s): s is PromiseFulfilledResult<AgentHandle> => s.status === 'fulfilled');
    expect(started).toHaveLength(1);
    await started[0]!.value.result();
    const cancelled = (await toolRows(wired)).filter((r) => r.toolCallId === 'c1');
    expect(cancelled).toHaveLength(1);
    expect(cancelled[0]).toMatchObject({ errorInfo: { code: 'tool_cancelled' } });
  });
});
