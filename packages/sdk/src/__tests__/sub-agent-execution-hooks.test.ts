import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { childSessionId, composeHookManagers, defineAgent, defineSubAgentTool, defineTool, guard, InMemoryStateStore, InMemoryStreamManager, JSAgentExecutor, silentLogger, type AgentHooks, type StateStore, type BeforeToolPayload, type BeforeToolResult, type HookContext } from '../index.js';
import { createScriptedModel } from '../testing/index.js';
import { setup } from './harness.js';

// Children run with their own agent's hooks first, then the execution-level hooks of the run that
// started them (those given to execute(), resume(), recover(), ...), as one execution. The parent
// agent's own hooks stay the parent's.

/** Hooks that note `point session-role` for the points of interest. */
function noting(into: string[], label: string, roles: ReadonlyMap<string, string>): AgentHooks {
  const who = (ctx: HookContext) => roles.get(ctx.sessionId) ?? ctx.sessionId;
  return {
    onAgentStart: (_p, ctx) => void into.push(`${label}:onAgentStart@${who(ctx)}`),
    beforeTool: (p, ctx) => void into.push(`${label}:beforeTool(${p.tool.name})@${who(ctx)}`),
    onAgentComplete: (_p, ctx) => void into.push(`${label}:onAgentComplete@${who(ctx)}`),
  };
}

const leafModel = () => createScriptedModel([{ text: 'leaf done' }]);

describe("children run the parent's execution-level hooks", () => {
  it("a child and a grandchild run the execute() hooks after their own agent's hooks, with parentSessionId and parentToolCallId set; the parent agent's own hooks stay the parent's", async () => {
    const seen: string[] = [];
    const contexts: { sessionId: string; parentSessionId?: string; parentToolCallId?: string }[] = [];
    const roles = new Map([
      ['root', 'root'],
      [childSessionId('root', 'c1'), 'child'],
      [childSessionId(childSessionId('root', 'c1'), 'g1'), 'grandchild'],
    ]);
    const leaf = defineAgent({ name: 'leaf', llmConfig: { model: leafModel() }, hooks: noting(seen, 'leafAgent', roles) });
    const middle = defineAgent({
      name: 'middle',
      llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'leaf', args: { input: 'deeper' }, id: 'g1' }] }, { text: 'middle done' }]) },
      tools: [defineSubAgentTool({ agent: leaf })],
      hooks: noting(seen, 'middleAgent', roles),
    });
    const top = defineAgent({
      name: 'top',
      llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'middle', args: { input: 'go on' }, id: 'c1' }] }, { text: 'top done' }]) },
      tools: [defineSubAgentTool({ agent: middle })],
      hooks: noting(seen, 'topAgent', roles),
    });
    const execution: AgentHooks = {
      ...noting(seen, 'exec', roles),
      onAgentStart: (_p, ctx) => {
        seen.push(`exec:onAgentStart@${roles.get(ctx.sessionId) ?? ctx.sessionId}`);
        contexts.push({ sessionId: ctx.sessionId, ...(ctx.parentSessionId === undefined ? {} : { parentSessionId: ctx.parentSessionId }), ...(ctx.parentToolCallId === undefined ? {} : { parentToolCallId: ctx.parentToolCallId }) });
      },
    };
    const { executor } = setup();
    const result = await (await executor.execute(top, 'go', { sessionId: 'root', hooks: execution })).result();
    expect(result.status).toBe('completed');
    expect(seen.filter((s) => s.includes('onAgentStart'))).toEqual([
      'topAgent:onAgentStart@root',
      'exec:onAgentStart@root',
      'middleAgent:onAgentStart@child',
      'exec:onAgentStart@child',
      'leafAgent:onAgentStart@grandchild',
      'exec:onAgentStart@grandchild',
    ]);
    expect(seen.filter((s) => s.includes('onAgentComplete'))).toEqual([
      'leafAgent:onAgentComplete@grandchild',
      'exec:onAgentComplete@grandchild',
      'middleAgent:onAgentComplete@child',
      'exec:onAgentComplete@child',
      'topAgent:onAgentComplete@root',
      'exec:onAgentComplete@root',
    ]);
    // The parent agent's own hooks never ran inside a child.
    expect(seen.filter((s) => s.startsWith('topAgent:') && !s.endsWith('@root'))).toEqual([]);
    expect(contexts).toEqual([
      { sessionId: 'root' },
      { sessionId: childSessionId('root', 'c1'), parentSessionId: 'root', parentToolCallId: 'c1' },
      { sessionId: childSessionId(childSessionId('root', 'c1'), 'g1'), parentSessionId: childSessionId('root', 'c1'), parentToolCallId: 'g1' },
    ]);
  });

  it("an execution-level guard (a hook manager with its policies) guards the children too: the child's call of a forbidden tool is blocked", async () => {
    let ran = 0;
    const danger = defineTool({ name: 'danger', description: 'Does something risky.', inputSchema: z.object({}), execute: () => ++ran });
    const child = defineAgent({ name: 'worker', llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'danger', args: {}, id: 'd1' }] }, { text: 'child done' }]) }, tools: [danger] });
    const parent = defineAgent({ name: 'lead', llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'worker', args: { input: 'x' }, id: 'w1' }] }, { text: 'lead done' }]) }, tools: [defineSubAgentTool({ agent: child })] });
    const noDanger = (p: BeforeToolPayload): BeforeToolResult | undefined => (p.tool.name === 'danger' ? { block: true, reason: 'not here' } : undefined);
    const policy = composeHookManagers({ beforeTool: guard(noDanger, { name: 'no-danger' }) });
    const { executor, stateStore } = setup();
    const result = await (await executor.execute(parent, 'go', { sessionId: 'guarded', hookManager: policy })).result();
    expect(result.status).toBe('completed');
    expect(ran).toBe(0);
    const childRows = (await stateStore.loadSession(childSessionId('guarded', 'w1')))!.messages.filter((m) => m.role === 'tool');
    expect(childRows).toEqual([expect.objectContaining({ toolCallId: 'd1', isError: true, errorInfo: expect.objectContaining({ code: 'hook_blocked' }) })]);
  });

  it('a handler that is both on the child agent and among the inherited execution-level hooks fires once per invocation in the child', async () => {
    const starts: string[] = [];
    const shared: AgentHooks = { onAgentStart: (_p, ctx) => void starts.push(ctx.sessionId) };
    const child = defineAgent({ name: 'helper', llmConfig: { model: leafModel() }, hooks: shared });
    const parent = defineAgent({ name: 'lead', llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'helper', args: { input: 'x' }, id: 'h1' }] }, { text: 'done' }]) }, tools: [defineSubAgentTool({ agent: child })] });
    const { executor } = setup();
    await (await executor.execute(parent, 'go', { sessionId: 'once', hooks: shared })).result();
    expect(starts).toEqual(['once', childSessionId('once', 'h1')]);
  });

  it('the same handler given on the agent and at execute() runs once per invocation on a root run too; a different handler at the same point still runs', async () => {
    const starts: string[] = [];
    const shared: AgentHooks = { onAgentStart: () => void starts.push('shared') };
    const agent = defineAgent({ name: 'solo', llmConfig: { model: leafModel() }, hooks: shared });
    const { executor } = setup();
    await (await executor.execute(agent, 'go', { hooks: { ...shared }, hookManager: composeHookManagers({ onAgentStart: () => void starts.push('other') }) })).result();
    expect(starts).toEqual(['shared', 'other']);
  });

  it("a recovered parent's children run recover()'s hooks (the recovered run's execution-level hooks)", async () => {
    const store = new InMemoryStateStore();
    const streams = new InMemoryStreamManager();
    // Process A dies once the parent's model reply (which calls the sub-agent) is journaled.
    let dead = false;
    const dying = new Proxy(store, {
      get(target, prop) {
        if (prop === 'appendJournal') {
          return async (entry: Parameters<StateStore['appendJournal']>[0]) => {
            if (dead) return new Promise(() => {});
            const written = await target.appendJournal(entry);
            if (entry.kind === 'model_reply') dead = true;
            return written;
          };
        }
        if (prop === 'commit') return (c: Parameters<StateStore['commit']>[0]) => (dead ? new Promise(() => {}) : target.commit(c));
        if (prop === 'renewLease') return (...args: Parameters<StateStore['renewLease']>) => (dead ? Promise.reject(new Error('down')) : target.renewLease(...args));
        const value: unknown = Reflect.get(target, prop);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    }) as StateStore;
    const child = defineAgent({ name: 'helper', llmConfig: { model: leafModel() } });
    const parentOf = (steps: Parameters<typeof createScriptedModel>[0]) => defineAgent({ name: 'lead', llmConfig: { model: createScriptedModel(steps) }, tools: [defineSubAgentTool({ agent: child })] });
    const a = new JSAgentExecutor(dying, streams, new VercelAIAdapter(), { logger: silentLogger, leaseMs: 60 });
    await a.execute(parentOf([{ toolCalls: [{ name: 'helper', args: { input: 'x' }, id: 'h1' }] }]), 'go', { sessionId: 'rec' });
    while (!dead) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, 150));
    const seen: string[] = [];
    const b = new JSAgentExecutor(store, streams, new VercelAIAdapter(), { logger: silentLogger });
    const [handle] = await b.recover({ agents: [parentOf([{ text: 'done' }])], hooks: { onAgentStart: (_p, ctx) => void seen.push(`${ctx.sessionId}<-${String(ctx.parentToolCallId)}`) } });
    expect((await handle!.result()).status).toBe('completed');
    expect(seen).toEqual([`${childSessionId('rec', 'h1')}<-h1`]);
  });

  it('without execution-level hooks a child runs only its own agent hooks', async () => {
    const seen: string[] = [];
    const child = defineAgent({ name: 'helper', llmConfig: { model: leafModel() }, hooks: { onAgentStart: () => void seen.push('child') } });
    const parent = defineAgent({
      name: 'lead',
      llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'helper', args: { input: 'x' }, id: 'h1' }] }, { text: 'done' }]) },
      tools: [defineSubAgentTool({ agent: child })],
      hooks: { onAgentStart: () => void seen.push('parent') },
    });
    const { executor } = setup();
    await (await executor.execute(parent, 'go')).result();
    expect(seen).toEqual(['parent', 'child']);
  });
});
