import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createHookManager, defineAgent, defineSubAgentTool, defineTool, type AgentConfig, type HookPoint } from '../index.js';
import { createGate, createScriptedModel } from '../testing/index.js';
import { setup } from './harness.js';

/** A class-based hook that logs its warm-ups, closes and the runs it saw, into a shared log. */
class LoggingHook {
  readonly allowedHookPoints: readonly HookPoint[] = ['onAgentStart', 'onAgentComplete'];
  constructor(
    readonly name: string,
    readonly log: string[],
    readonly failWarmUp = false,
  ) {}
  async warmUp(): Promise<void> {
    this.log.push(`${this.name}:warmUp`);
    if (this.failWarmUp) throw new Error(`${this.name} cannot warm up`);
  }
  onAgentStart(): void {
    this.log.push(`${this.name}:start`);
  }
  onAgentComplete(): void {
    this.log.push(`${this.name}:complete`);
  }
  async close(): Promise<void> {
    this.log.push(`${this.name}:close`);
  }
}

function talker(name = 'talker', hooks?: AgentConfig<unknown, unknown>['hooks']) {
  return defineAgent({ name, llmConfig: { model: createScriptedModel([{ text: 'hi' }], { loop: true }) }, ...(hooks ? { hooks } : {}) });
}

/** V8's full collection, exposed at run time (vitest's workers do not start with --expose-gc). */
function collector(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

describe('class-based hooks of an execution: warmed for its runs, closed when the last of them ends', () => {
  it('a hook object passed to one execute is warmed before its run and closed once when the run ends; executor.close() does not close it again', async () => {
    const { executor } = setup();
    const log: string[] = [];
    const result = await (await executor.execute(talker(), 'go', { hookManager: createHookManager(new LoggingHook('h', log)) })).result();
    expect(result.status).toBe('completed');
    expect(log).toEqual(['h:warmUp', 'h:start', 'h:complete', 'h:close']);
    await executor.close();
    expect(log.filter((l) => l === 'h:close')).toHaveLength(1);
  });

  it('100 executes each with a fresh hook instance: each is warmed once and closed once by its run\'s end, and the executor holds none of them (all collectable)', async () => {
    const gc = collector();
    const { executor } = setup();
    const agent = talker();
    const refs: WeakRef<LoggingHook>[] = [];
    const logs: string[][] = [];
    // In a function of its own: a suspended async frame may keep its last local value.
    const runWithFreshHook = async (i: number): Promise<void> => {
      const log: string[] = [];
      const hook = new LoggingHook(`h${i}`, log);
      refs.push(new WeakRef(hook));
      logs.push(log);
      expect((await (await executor.execute(agent, 'go', { sessionId: `s${i}`, hooks: { onAgentStart: hook, onAgentComplete: hook } as never })).result()).status).toBe('completed');
    };
    for (let i = 0; i < 100; i++) await runWithFreshHook(i);
    logs.forEach((log, i) => expect(log).toEqual([`h${i}:warmUp`, `h${i}:start`, `h${i}:complete`, `h${i}:close`]));
    // WeakRefs read in this job stay alive until it ends: collect in a later one.
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    expect(refs.filter((r) => r.deref() !== undefined)).toHaveLength(0);
    await executor.close();
    logs.forEach((log) => expect(log.filter((l) => l.endsWith(':close'))).toHaveLength(1));
  });

  it('one object passed to two overlapping executes is warmed once and closed once, after the later run ends', async () => {
    const { executor } = setup();
    const log: string[] = [];
    const hook = new LoggingHook('shared', log);
    const gate = createGate();
    const waiting = defineAgent({
      name: 'waiting',
      llmConfig: { model: createScriptedModel([{ text: 'late' }]) },
      hooks: { onAgentStart: async () => gate.opened },
    });
    const slow = await executor.execute(waiting, 'go', { sessionId: 'slow', hookManager: createHookManager(hook) });
    const quick = await (await executor.execute(talker(), 'go', { sessionId: 'quick', hookManager: createHookManager(hook) })).result();
    expect(quick.status).toBe('completed');
    // The slow run still holds the object (its agent's own onAgentStart waits, before the shared one).
    expect(log).toEqual(['shared:warmUp', 'shared:start', 'shared:complete']);
    gate.open();
    expect((await slow.result()).status).toBe('completed');
    expect(log).toEqual(['shared:warmUp', 'shared:start', 'shared:complete', 'shared:start', 'shared:complete', 'shared:close']);
  });

  it('a sub-agent child that inherits the execution\'s hook object holds it too: warmed once, closed once after the parent and child ended', async () => {
    const { executor } = setup();
    const log: string[] = [];
    const hook = new LoggingHook('tree', log);
    const child = defineAgent({ name: 'child', llmConfig: { model: createScriptedModel([{ text: 'child done' }]) } });
    const parent = defineAgent({
      name: 'parent',
      llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'child', args: { input: 'do it' } }] }, { text: 'parent done' }]) },
      tools: [defineSubAgentTool({ agent: child })],
    });
    const result = await (await executor.execute(parent, 'go', { hookManager: createHookManager(hook) })).result();
    expect(result.status).toBe('completed');
    // The parent's start, the child's whole run (it inherits the execution's hooks), then the parent's end.
    expect(log).toEqual(['tree:warmUp', 'tree:start', 'tree:start', 'tree:complete', 'tree:complete', 'tree:close']);
    await executor.close();
    expect(log.filter((l) => l === 'tree:close')).toHaveLength(1);
  });

  it('an object passed again after its run ended is warmed again: every warm-up is followed by exactly one close', async () => {
    const { executor } = setup();
    const log: string[] = [];
    const hook = new LoggingHook('again', log);
    for (const sessionId of ['a', 'b']) await (await executor.execute(talker(), 'go', { sessionId, hookManager: createHookManager(hook) })).result();
    await executor.close();
    expect(log).toEqual(['again:warmUp', 'again:start', 'again:complete', 'again:close', 'again:warmUp', 'again:start', 'again:complete', 'again:close']);
  });

  it('an agent\'s own hook object stays warm across runs and is closed only by executor.close() (rule 206)', async () => {
    const { executor } = setup();
    const log: string[] = [];
    const hook = new LoggingHook('own', log);
    const agent = talker('owner', createHookManager(hook));
    for (const sessionId of ['a', 'b']) await (await executor.execute(agent, 'go', { sessionId, hookManager: createHookManager(hook) })).result();
    expect(log).toEqual(['own:warmUp', 'own:start', 'own:complete', 'own:start', 'own:complete']);
    await executor.close();
    expect(log.at(-1)).toBe('own:close');
    expect(log.filter((l) => l === 'own:close')).toHaveLength(1);
  });

  it('an execution object also given to executor.warmUp() is kept: its runs do not close it, executor.close() does, once', async () => {
    const { executor } = setup();
    const log: string[] = [];
    const hook = new LoggingHook('kept', log);
    const manager = createHookManager(hook);
    await executor.warmUp(manager);
    await (await executor.execute(talker(), 'go', { hookManager: manager })).result();
    expect(log).toEqual(['kept:warmUp', 'kept:start', 'kept:complete']);
    await executor.close();
    expect(log).toEqual(['kept:warmUp', 'kept:start', 'kept:complete', 'kept:close']);
  });

  it('a run that suspends gives its execution hooks back at the suspension: the object is closed, and the resume that brings it warms it again', async () => {
    const { executor } = setup();
    const log: string[] = [];
    const hook = new LoggingHook('pause', log);
    const agent = defineAgent({
      name: 'asker',
      llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'ask', args: {}, id: 'ask-1' }] }, { text: 'thanks' }]) },
      tools: [defineTool({ name: 'ask', description: 'asks the client', inputSchema: z.object({}) })],
    });
    const first = await (await executor.execute(agent, 'go', { sessionId: 'paused', hookManager: createHookManager(hook) })).result();
    expect(first.status).toBe('suspended');
    expect(log).toEqual(['pause:warmUp', 'pause:start', 'pause:close']);
    const second = await (await executor.submitToolResult('paused', 'ask-1', 'yes', { hookManager: createHookManager(hook) })).result();
    expect(second.status).toBe('completed');
    expect(log).toEqual(['pause:warmUp', 'pause:start', 'pause:close', 'pause:warmUp', 'pause:complete', 'pause:close']);
  });

  it('a warmUp that throws rejects the execute, writes no run, and the object is still closed once', async () => {
    const { executor, stateStore } = setup();
    const log: string[] = [];
    const refused = await executor.execute(talker(), 'go', { sessionId: 'cold', hookManager: createHookManager(new LoggingHook('cold', log, true)) }).then(() => undefined, (e: unknown) => e);
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).message).toContain('cold cannot warm up');
    expect(await stateStore.loadSession('cold')).toBeUndefined();
    expect(log).toEqual(['cold:warmUp', 'cold:close']);
    await executor.close();
    expect(log).toEqual(['cold:warmUp', 'cold:close']);
  });

  it('a close that throws when the run ends is logged, and the run\'s result is unchanged', async () => {
    const { executor, logger } = setup();
    class Failing extends LoggingHook {
      override async close(): Promise<void> {
        throw new Error('socket already gone');
      }
    }
    const result = await (await executor.execute(talker(), 'go', { hookManager: createHookManager(new Failing('bad', [])) })).result();
    expect(result.status).toBe('completed');
    expect(logger.lines.some((l) => l.startsWith('warn:') && l.includes('Failing') && l.includes('socket already gone'))).toBe(true);
  });
});
