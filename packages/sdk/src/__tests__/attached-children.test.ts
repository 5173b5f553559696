import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  childSessionId,
  defineAgent,
  defineSubAgentTool,
  InMemoryStateStore,
  InMemoryStreamManager,
  JSAgentExecutor,
  silentLogger,
  type AgentConfig,
  type AgentHooks,
  type Draft,
  type JSAgentExecutorOptions,
  type StateStore,
  type StreamManager,
} from '../index.js';
import { createGate, createScriptedModel, type ScriptedStep } from '../testing/index.js';
import { dyingAfterSpawn } from './harness.js';

// A recovered parent re-attaches to a child another process continues (attachedHandle): bounded by a
// deadline, and stoppable across processes through the store's stop requests.

const Notes = z.object({ notes: z.array(z.string()).default([]) });
const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One "process": an executor over the shared store and streams. */
function processOn(store: StateStore, streams: StreamManager, options: JSAgentExecutorOptions = {}) {
  return new JSAgentExecutor(store, streams, new VercelAIAdapter(), { logger: silentLogger, ...options });
}

function researcher(steps: readonly ScriptedStep[], hooks: AgentHooks = {}): AgentConfig<unknown, unknown> {
  return defineAgent({ name: 'researcher', llmConfig: { model: createScriptedModel(steps) }, hooks }) as AgentConfig<unknown, unknown>;
}

function lead(child: AgentConfig<unknown, unknown>, steps: readonly ScriptedStep[], hooks: AgentHooks = {}) {
  return defineAgent({ name: 'lead', stateSchema: Notes, llmConfig: { model: createScriptedModel(steps) }, tools: [defineSubAgentTool({ agent: child })], hooks });
}

const callChild: ScriptedStep = { toolCalls: [{ name: 'researcher', args: { input: 'dig' }, id: 'c1' }] };

/** Process A starts the parent, spawns the child and dies; both runs' leases have expired when it returns. */
async function crashAfterSpawn(store: InMemoryStateStore, streams: StreamManager, sessionId: string) {
  const a = processOn(dyingAfterSpawn(store), streams, { leaseMs: 60 });
  const child = researcher([{ text: 'never', delayMs: 60_000 }]);
  await a.execute(lead(child, [callChild]), 'go', { sessionId });
  const childSession = childSessionId(sessionId, 'c1');
  while ((await store.loadSession(childSession))?.currentRunId === undefined) await tick(5);
  await tick(150);
  return { childSession, childRunId: (await store.loadSession(childSession))!.currentRunId! };
}

describe('stop requests across processes', () => {
  it("a stop asked through the store reaches the process that runs the run at its next lease renewal: the run ends interrupted, its own onAgentFail fires, the request stays on the run", async () => {
    const store = new InMemoryStateStore();
    const streams = new InMemoryStreamManager();
    const fails: string[] = [];
    const owner = processOn(store, streams, { leaseMs: 90 });
    const slow = defineAgent({ name: 'slow', llmConfig: { model: createScriptedModel([{ text: 'late', delayMs: 10_000 }]) }, hooks: { onAgentFail: (p) => void fails.push(p.error.code) } });
    const handle = await owner.execute(slow, 'go', { sessionId: 'far' });
    // Another process has only the store: it can ask, not stop.
    const asked = await new InMemoryStateStoreView(store).requestStop(handle.runId, 'the operator pressed stop');
    expect(asked?.stopRequest?.reason).toBe('the operator pressed stop');
    const result = await handle.result();
    expect(result.status).toBe('interrupted');
    expect(fails).toEqual(['run_interrupted']);
    expect(await store.getRun(handle.runId)).toMatchObject({ status: 'interrupted', stopRequest: { reason: 'the operator pressed stop' } });
  });

  it('a run asked to stop while its process was dead stops at once when another process recovers it', async () => {
    const store = new InMemoryStateStore();
    const streams = new InMemoryStreamManager();
    const { childRunId } = await crashAfterSpawn(store, streams, 'dead-parent');
    await store.requestStop(childRunId, { reason: 'nobody needs it any more', requestedAt: Date.now() });
    const fails: string[] = [];
    const rescuer = processOn(store, streams);
    const [handle] = await rescuer.recover({ agents: [researcher([{ text: 'should not run' }], { onAgentFail: (p) => void fails.push(p.error.code) })] });
    expect(handle?.runId).toBe(childRunId);
    expect((await handle!.result()).status).toBe('interrupted');
    expect(fails).toEqual(['run_interrupted']);
  });
});

describe('a recovered parent re-attached to a child another process continues', () => {
  it("waits for the child's end there (no new spawn, beforeSubAgent once) and folds its result once", async () => {
    const store = new InMemoryStateStore();
    const streams = new InMemoryStreamManager();
    const events: string[] = [];
    const hooks: AgentHooks = {
      beforeSubAgent: () => void events.push('beforeSubAgent'),
      afterSubAgent: (p, ctx) => {
        events.push(`afterSubAgent ${String(p.result)}`);
        ctx.updateState((d) => void (d as Draft<z.infer<typeof Notes>>).notes.push(String(p.result)));
      },
    };
    const a = processOn(dyingAfterSpawn(store), streams, { leaseMs: 60 });
    await a.execute(lead(researcher([{ text: 'never', delayMs: 60_000 }]), [callChild], hooks), 'go', { sessionId: 'p1' });
    const childSession = childSessionId('p1', 'c1');
    while ((await store.loadSession(childSession))?.currentRunId === undefined) await tick(5);
    await tick(150);

    // Process X continues the child; process B continues the parent, which finds the child running elsewhere.
    const x = processOn(store, streams);
    const gate = createGate();
    const [child] = await x.recover({ agents: [researcher([async () => (await gate.opened, { text: 'the finding' })])] });
    const b = processOn(store, streams);
    const [parent] = await b.recover({ agents: [lead(researcher([]), [{ text: 'done' }], hooks)] });
    await tick(100);
    gate.open();
    expect((await child!.result()).status).toBe('completed');
    const result = await parent!.result();
    expect(result).toMatchObject({ status: 'completed', output: 'done', state: { notes: ['the finding'] } });
    expect(events).toEqual(['beforeSubAgent', 'afterSubAgent the finding']);
    expect((await store.loadSession(childSession))!.currentRunId).toBe(child!.runId);
  });

  it('stopping the parent stops the child in the other process through the store: the child ends interrupted there and the parent ends interrupted', async () => {
    const store = new InMemoryStateStore();
    const streams = new InMemoryStreamManager();
    await crashAfterSpawn(store, streams, 'p2');
    const childFails: string[] = [];
    const x = processOn(store, streams, { leaseMs: 90 });
    const [child] = await x.recover({ agents: [researcher([{ text: 'late', delayMs: 10_000 }], { onAgentFail: (p) => void childFails.push(p.error.code) })] });
    const b = processOn(store, streams, { leaseMs: 90 });
    const afterSub: (string | undefined)[] = [];
    const [parent] = await b.recover({ agents: [lead(researcher([]), [{ text: 'never' }], { afterSubAgent: (p) => void afterSub.push(p.error?.code) })] });
    await tick(80);
    const before = Date.now();
    const stopped = await parent!.stop('the user gave up');
    expect(stopped.status).toBe('interrupted');
    expect(Date.now() - before).toBeLessThan(5_000);
    expect(await child!.result()).toMatchObject({ status: 'interrupted', error: { code: 'run_interrupted' } });
    expect((await store.getRun(child!.runId))?.stopRequest?.reason).toBe('The parent run was stopped.');
    expect(childFails).toEqual(['run_interrupted']);
    expect(afterSub).toEqual(['run_interrupted']);
  });

  it("a child nobody continues: the parent's call fails with subagent_timeout after attachedSubAgentTimeoutMs, the child is asked to stop, and the parent goes on", async () => {
    const store = new InMemoryStateStore();
    const streams = new InMemoryStreamManager();
    const { childRunId } = await crashAfterSpawn(store, streams, 'p3');
    const b = processOn(store, streams, { attachedSubAgentTimeoutMs: 200 });
    // Only the parent is recovered; the child's run stays orphaned.
    const [parent] = await b.recover({ agents: [lead(researcher([]), [{ text: 'went on without it' }])] });
    const before = Date.now();
    const result = await parent!.result();
    expect(result).toMatchObject({ status: 'completed', output: 'went on without it' });
    expect(Date.now() - before).toBeGreaterThanOrEqual(150);
    const row = (await store.loadSession('p3'))!.messages.find((m) => m.role === 'tool');
    expect(row).toMatchObject({ isError: true, errorInfo: { code: 'subagent_failed', details: { cause: 'subagent_timeout' } } });
    expect((await store.getRun(childRunId))?.stopRequest?.reason).toMatch(/deadline/);
  });
});

/** What another process that shares only the store can do: ask a run to stop. */
class InMemoryStateStoreView {
  constructor(private readonly store: StateStore) {}
  requestStop(runId: string, reason: string) {
    return this.store.requestStop(runId, { reason, requestedAt: Date.now() });
  }
}
