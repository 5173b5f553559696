import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createHookManager, defineAgent, defineSubAgentTool, type AgentConfig, type HookPoint } from '../index.js';
import { WarmHooks } from '../runtime/warm-hooks.js';
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

describe('class-based hooks an execution brings: warmed once, not kept alive by the executor, closed by executor.close() while they exist', () => {
  it('a hook object passed to one execute is warmed before its run and closed once by executor.close(), not when the run ends', async () => {
    const { executor } = setup();
    const log: string[] = [];
    const hook = new LoggingHook('h', log);
    const result = await (await executor.execute(talker(), 'go', { hookManager: createHookManager(hook) })).result();
    expect(result.status).toBe('completed');
    expect(log).toEqual(['h:warmUp', 'h:start', 'h:complete']);
    await executor.close();
    expect(log).toEqual(['h:warmUp', 'h:start', 'h:complete', 'h:close']);
  });

  it('100 executes each with a fresh hook instance: each is warmed once, and once their runs ended the executor keeps none of them alive (all collectable)', async () => {
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
    logs.forEach((log, i) => expect(log).toEqual([`h${i}:warmUp`, `h${i}:start`, `h${i}:complete`]));
    await collectTwice(gc);
    expect(refs.filter((r) => r.deref() !== undefined)).toHaveLength(0);
    // Collected objects are forgotten: executor.close() has nothing of them to close.
    await executor.close();
    logs.forEach((log) => expect(log.some((l) => l.endsWith(':close'))).toBe(false));
  });

  it('of fresh instances, those the caller still holds after their runs stay warm and are closed once by executor.close(), newest first; the dropped ones are collected', async () => {
    const gc = collector();
    const { executor } = setup();
    const agent = talker();
    const log: string[] = [];
    const kept: LoggingHook[] = [];
    const dropped: WeakRef<LoggingHook>[] = [];
    const runOne = async (i: number): Promise<void> => {
      const hook = new LoggingHook(`h${i}`, log);
      if (i % 2 === 0) kept.push(hook);
      else dropped.push(new WeakRef(hook));
      await (await executor.execute(agent, 'go', { sessionId: `s${i}`, hookManager: createHookManager(hook) })).result();
    };
    for (let i = 0; i < 6; i++) await runOne(i);
    // A kept object passed again is not warmed again.
    await (await executor.execute(agent, 'go', { sessionId: 'again', hookManager: createHookManager(kept[0]!) })).result();
    expect(log.filter((l) => l === 'h0:warmUp')).toHaveLength(1);
    await collectTwice(gc);
    expect(dropped.filter((r) => r.deref() !== undefined)).toHaveLength(0);
    log.length = 0;
    await executor.close();
    expect(log).toEqual(['h4:close', 'h2:close', 'h0:close']);
  });

  it('one object passed to overlapping and sequential executes is warmed once and closed once, by executor.close()', async () => {
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
    gate.open();
    expect((await slow.result()).status).toBe('completed');
    await (await executor.execute(talker(), 'go', { sessionId: 'later', hookManager: createHookManager(hook) })).result();
    expect(log.filter((l) => l === 'shared:warmUp')).toHaveLength(1);
    expect(log).not.toContain('shared:close');
    await executor.close();
    expect(log.filter((l) => l === 'shared:close')).toHaveLength(1);
    expect(log.at(-1)).toBe('shared:close');
  });

  it('a sub-agent child that inherits the execution\'s hook object uses the same warm object: warmed once, closed once by executor.close()', async () => {
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
    expect(log).toEqual(['tree:warmUp', 'tree:start', 'tree:start', 'tree:complete', 'tree:complete']);
    await executor.close();
    expect(log.filter((l) => l === 'tree:close')).toHaveLength(1);
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

  it('an object given to executor.warmUp() is held by the executor even when the caller drops it, and executor.close() closes it once', async () => {
    const gc = collector();
    const { executor } = setup();
    const log: string[] = [];
    const ref = await (async () => {
      const hook = new LoggingHook('held', log);
      await executor.warmUp(createHookManager(hook));
      return new WeakRef(hook);
    })();
    await collectTwice(gc);
    expect(ref.deref()).toBeDefined();
    await executor.close();
    expect(log).toEqual(['held:warmUp', 'held:close']);
  });

  it('a warmUp that throws rejects that execute and writes no run; the object counts as warmed (not warmed again) and executor.close() closes it once', async () => {
    const { executor, stateStore } = setup();
    const log: string[] = [];
    const hook = new LoggingHook('cold', log, true);
    const refused = await executor.execute(talker(), 'go', { sessionId: 'cold', hookManager: createHookManager(hook) }).then(() => undefined, (e: unknown) => e);
    expect((refused as Error).message).toContain('cold cannot warm up');
    expect(await stateStore.loadSession('cold')).toBeUndefined();
    expect((await (await executor.execute(talker(), 'go', { sessionId: 'warm', hookManager: createHookManager(hook) })).result()).status).toBe('completed');
    expect(log).toEqual(['cold:warmUp', 'cold:start', 'cold:complete']);
    await executor.close();
    expect(log.at(-1)).toBe('cold:close');
  });

  it('after executor.close(), an executor used again warms a hook object passed again (and closes it again at its next close())', async () => {
    const { executor } = setup();
    const log: string[] = [];
    const hook = new LoggingHook('reused', log);
    for (let round = 0; round < 2; round++) {
      await (await executor.execute(talker(), 'go', { sessionId: `r${round}`, hookManager: createHookManager(hook) })).result();
      await executor.close();
    }
    expect(log).toEqual(['reused:warmUp', 'reused:start', 'reused:complete', 'reused:close', 'reused:warmUp', 'reused:start', 'reused:complete', 'reused:close']);
  });
});

/** Two full collections, each in a later job (WeakRefs read in a job stay alive until it ends). */
async function collectTwice(gc: () => void): Promise<void> {
  for (let i = 0; i < 2; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    gc();
  }
  await new Promise((resolve) => setImmediate(resolve));
}

describe('WarmHooks: warm-up and close stay paired for any sequence of runs and closes (property)', () => {
  it('for any sequence of warms (held or weak, any objects) and closes: each object is warmed only when cold, each close closes exactly the warm objects, newest first', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.oneof(fc.record({ op: fc.constant('warm' as const), objects: fc.array(fc.nat(4), { maxLength: 5 }), how: fc.constantFrom('hold' as const, 'weak' as const) }), fc.record({ op: fc.constant('close' as const) })), { maxLength: 25 }),
        async (ops) => {
          const log: string[] = [];
          const objects = Array.from({ length: 5 }, (_, i) => new LoggingHook(`o${i}`, log));
          const warm = new WarmHooks();
          // The model: which objects are warm, in the order they were warmed.
          let model: number[] = [];
          const expected: string[] = [];
          for (const op of ops) {
            if (op.op === 'warm') {
              await warm.warm(op.objects.map((i) => objects[i]!), op.how);
              for (const i of op.objects) {
                if (model.includes(i)) continue;
                model.push(i);
                expected.push(`o${i}:warmUp`);
              }
            } else {
              await warm.close();
              expected.push(...[...model].reverse().map((i) => `o${i}:close`));
              model = [];
            }
          }
          expect(log).toEqual(expected);
        },
      ),
      { numRuns: 300 },
    );
  });
});
