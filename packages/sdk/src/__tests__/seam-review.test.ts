// Regressions found by reviewing the runtime seam refactor against the loop it replaced: each test
// names the behaviour it pins.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { defineAgent, defineTool, InMemoryStateStore, InMemoryStreamManager, JSAgentExecutor, RunSupersededError, silentLogger, type LLMAdapter, type StateStore } from '../index.js';
import type { AgentHooks } from '../hooks/types.js';
import type { Commit, JournalEntry } from '../store.js';
import { createScriptedModel } from '../testing/index.js';
import { counterAgent, setup, textAgent, type Counter } from './harness.js';

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

const stuck = defineTool({
  name: 'stuck',
  description: 'waits for the stop',
  inputSchema: z.object({}),
  execute: async (_i, ctx) => {
    await new Promise((_r, reject) => ctx.abortSignal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }));
    return 'never';
  },
});

describe('stop composition (working-copy keepWrites)', () => {
  it('a finished call\'s updater runs once, even when a stop arrives during its step', async () => {
    let runs = 0;
    const quick = defineTool({
      name: 'quick',
      description: 'counts how often its updater runs',
      inputSchema: z.object({}),
      execute: (_i, ctx) => {
        ctx.updateState<Counter>((d) => {
          runs++;
          d.count += 1;
        });
        return 'ok';
      },
    });
    const { executor } = setup();
    const agent = counterAgent([{ toolCalls: [{ name: 'quick', args: {}, id: 'q' }, { name: 'stuck', args: {}, id: 's' }] }], { tools: [quick, stuck] });
    const handle = await executor.execute(agent, 'go');
    await tick(20);
    const result = await handle.stop();
    expect(result.status).toBe('interrupted');
    expect((result.state as Counter).count).toBe(1);
    expect(runs).toBe(1);
  });

  it('the state a stop keeps is the state that was streamed (state_patch) for that call', async () => {
    const stamp = defineTool({
      name: 'stamp',
      description: 'writes a non-deterministic value',
      inputSchema: z.object({}),
      execute: (_i, ctx) => {
        ctx.updateState<Counter>((d) => void d.log.push(`id-${Math.random().toString(36).slice(2, 8)}`));
        return 'ok';
      },
    });
    const { executor, stateStore, streamManager } = setup();
    const agent = counterAgent([{ toolCalls: [{ name: 'stamp', args: {}, id: 'q' }, { name: 'stuck', args: {}, id: 's' }] }], { tools: [stamp, stuck] });
    const handle = await executor.execute(agent, 'go');
    await tick(20);
    await handle.stop();
    const streamed = streamManager.chunks(handle.sessionId).flatMap((c) => (c.type === 'state_patch' && c.toolName === 'stamp' ? c.patches.map((p) => p.value) : []));
    const stored = ((await stateStore.loadSession(handle.sessionId))!.state as Counter).log;
    expect(stored).toEqual(streamed);
  });

  it('a kept call whose write builds on a dropped afterLLMCall write: the run still ends interrupted', async () => {
    const S = z.object({ scratch: z.object({ items: z.array(z.number()) }).optional() });
    const use = defineTool({
      name: 'use',
      description: 'writes under scratch',
      inputSchema: z.object({}),
      execute: (_i, ctx) => {
        ctx.updateState<z.infer<typeof S>>((d) => void d.scratch!.items.push(1));
        return 'ok';
      },
    });
    const { executor } = setup();
    const agent = defineAgent({
      name: 'dep',
      stateSchema: S,
      llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'use', args: {}, id: 'u' }, { name: 'stuck', args: {}, id: 's' }] }]) },
      tools: [use, stuck],
      hooks: { afterLLMCall: (_p, ctx) => ctx.updateState((d) => void (d.scratch ??= { items: [] })) },
    });
    const handle = await executor.execute(agent, 'go');
    await tick(20);
    const result = await handle.stop();
    // The kept call's write cannot apply without the dropped afterLLMCall write: that call is dropped too.
    expect({ status: result.status, code: result.error?.code }).toEqual({ status: 'interrupted', code: 'run_interrupted' });
    expect(result.state).toEqual({});
    const rows = (await executor.getSession(handle.sessionId))!.messages.filter((m) => m.role === 'tool');
    expect(rows.map((r) => (r.role === 'tool' ? r.errorInfo?.code : undefined))).toEqual(['run_stopped', 'run_stopped']);
  });
});

describe('stop vs loop guards', () => {
  it('a stop wins over the empty-reply guard: a stopped run that got an empty reply ends interrupted (C6)', async () => {
    // An adapter that ignores the abort signal and returns an empty reply after a while.
    const adapter: LLMAdapter = {
      generateStep: async () => {
        await tick(60);
        return { ok: true, text: '', toolCalls: [], finishReason: 'stop', model: 'm' };
      },
    } as unknown as LLMAdapter;
    const executor = new JSAgentExecutor(new InMemoryStateStore(), new InMemoryStreamManager(), adapter, { logger: silentLogger });
    const agent = textAgent([], { limits: { maxEmptyResponses: 1 } });
    const handle = await executor.execute(agent, 'go');
    await tick(10);
    const result = await handle.stop();
    expect(result.status).toBe('interrupted');
    expect(result.error?.code).toBe('run_interrupted');
  });
});

type StateChangeHook = AgentHooks<Counter, string>['onStateChange'];

/** onAgentStart writes count = 42, then throws (fail-run); `onStateChange` observes. */
function writeThenFailAgent(onStateChange: StateChangeHook) {
  return textAgent([{ text: 'x' }], {
    hooks: {
      onAgentStart: (_p, ctx) => {
        ctx.updateState((d) => void (d.count = 42));
        throw new Error('start broke');
      },
      onStateChange,
    },
  });
}

describe('onStateChange for a write whose handler fails the run', () => {
  it('onAgentStart writes then throws (fail-run): onStateChange does not fire for the discarded write', async () => {
    const seen: unknown[] = [];
    const { executor } = setup();
    const agent = writeThenFailAgent((p) => void seen.push(p.newState));
    const result = await (await executor.execute(agent, 'go')).result();
    expect(result.error?.code).toBe('hook_failed');
    expect((result.state as Counter).count).toBe(0);
    expect(seen).toEqual([]);
  });

  it('... and when that onStateChange throws too, the run reports the hook that failed first', async () => {
    const { executor } = setup();
    const agent = writeThenFailAgent(() => {
      throw new Error('observer broke');
    });
    const result = await (await executor.execute(agent, 'go')).result();
    expect(result.error?.details?.['hook']).toBe('onAgentStart');
  });

  it('auditHooks "all": the allow decision of a handler is audited even when an onStateChange it caused fails', async () => {
    const { executor, streamManager } = setup({ executor: { auditHooks: 'all' } });
    const agent = textAgent([{ text: 'x' }], {
      hooks: {
        onAgentStart: (_p, ctx) => ctx.updateState((d) => void (d.count = 1)),
        onStateChange: () => {
          throw new Error('observer broke');
        },
      },
    });
    const handle = await executor.execute(agent, 'go');
    await handle.result();
    const audited = streamManager.chunks(handle.sessionId).flatMap((c) => (c.type === 'hook_decision' ? [`${c.hookPoint}:${c.decision}`] : []));
    expect(audited).toContain('onAgentStart:allow');
  });
});

describe('journal order of a side-effecting call', () => {
  it('tool_end of a side-effecting call is written only after its call_result is journaled', async () => {
    const order: string[] = [];
    const base = new InMemoryStateStore();
    const store = new Proxy(base, {
      get(target, prop) {
        if (prop === 'appendJournal') return (e: JournalEntry) => (order.push(`journal:${e.kind}`), target.appendJournal(e));
        const value: unknown = Reflect.get(target, prop);
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    }) as StateStore;
    const streams = new InMemoryStreamManager();
    const origClaim = streams.claim.bind(streams);
    streams.claim = async (s: string, r: string) => {
      const w = await origClaim(s, r);
      const write = w.write.bind(w);
      (w as { write: typeof write }).write = (c) => (order.push(`chunk:${c.type}`), write(c));
      // The loop queues a step's chunks (queue) rather than awaiting each write: record both paths.
      const queue = w.queue?.bind(w);
      if (queue) (w as { queue: typeof queue }).queue = (c) => (order.push(`chunk:${c.type}`), queue(c));
      return w;
    };
    const send = defineTool({ name: 'send', description: 'side effect', inputSchema: z.object({}), sideEffects: true, execute: () => 'sent' });
    const executor = new JSAgentExecutor(store, streams, new VercelAIAdapter(), { logger: silentLogger });
    const agent = textAgent([{ toolCalls: [{ name: 'send', args: {}, id: 'x' }] }, { text: 'done' }], { tools: [send] });
    await (await executor.execute(agent, 'go')).result();
    const relevant = order.filter((o) => o === 'journal:call_result' || o === 'chunk:tool_end');
    expect(relevant).toEqual(['journal:call_result', 'chunk:tool_end']);
  });
});

describe('supersede after onAgentComplete', () => {
  it('a supersede at K5 reports the state onAgentComplete left (the run\'s in-memory state)', async () => {
    const base = new InMemoryStateStore();
    const store = new Proxy(base, {
      get(target, prop) {
        if (prop === 'commit')
          return (c: Commit) => (c.kind === 'terminal' && c.runStatus === 'completed' ? Promise.reject(new RunSupersededError(c.sessionId, c.runId, 'other')) : target.commit(c));
        const value: unknown = Reflect.get(target, prop);
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    }) as StateStore;
    const { executor } = setup({ stateStore: store });
    let finalState: unknown;
    const agent = textAgent([{ text: 'done' }], {
      hooks: {
        onAgentComplete: (_p, ctx) => ctx.updateState((d) => void (d.count = 7)),
        onAgentSuperseded: (p) => void (finalState = p.finalState),
      },
    });
    const result = await (await executor.execute(agent, 'go')).result();
    expect(result.status).toBe('superseded');
    expect((finalState as Counter).count).toBe(7);
  });
});

describe('journal keys of an approved call delivered after a resume', () => {
  it('a step-0 call that reuses the delivered call\'s id runs; the delivered call\'s record is not replayed for it', async () => {
    let sends = 0;
    const approveMe = defineTool({ name: 'approveMe', description: 'needs approval', inputSchema: z.object({}), sideEffects: true, needsApproval: true, execute: (_i, ctx) => (ctx.updateState<Counter>((d) => void d.log.push('approved-ran')), 'approved result') });
    const send = defineTool({ name: 'send', description: 'side effect', inputSchema: z.object({}), sideEffects: true, execute: () => (++sends, 'sent') });
    const { executor, stateStore } = setup();
    // Some OpenAI-compatible servers number calls per response (call_0, call_1, ...).
    const agent = textAgent([{ toolCalls: [{ name: 'approveMe', args: {}, id: 'call_0' }] }, { toolCalls: [{ name: 'send', args: {}, id: 'call_0' }] }, { text: 'done' }], { tools: [approveMe, send] });
    await (await executor.execute(agent, 'go', { sessionId: 'reuse' })).result();
    const result = await (await executor.approve('reuse', 'call_0')).result();
    expect(result.status).toBe('completed');
    const rows = (await stateStore.loadSession('reuse'))!.messages.filter((m) => m.role === 'tool');
    expect(sends).toBe(1);
    expect((result.state as Counter).log).toEqual(['approved-ran']);
    expect(rows.map((r) => r.content)).toEqual(['approved result', 'sent']);
  });
});
