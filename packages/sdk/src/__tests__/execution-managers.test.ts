import { describe, expect, it } from 'vitest';
import { defineAgent, HookManager, InMemoryStateStore, InMemoryStreamManager, JSAgentExecutor, silentLogger, type AgentHooks } from '../index.js';
import { ExecutionManagers } from '../runtime/execution-managers.js';
import { createAddLoop } from '../testing/index.js';

// The managers of execution-level hooks are built once per `hooks` object and reused while it does not
// change (docs/performance.md, "A run's start"). What a run fires must be what its options say at the time
// of its execute(), whatever was cached.

function executor() {
  const { adapter, agent } = createAddLoop(2);
  return { agent, executor: new JSAgentExecutor(new InMemoryStateStore(), new InMemoryStreamManager(), adapter, { logger: silentLogger }) };
}

async function run(x: ReturnType<typeof executor>, options: { hooks?: AgentHooks; hookManager?: HookManager }): Promise<void> {
  const handle = await x.executor.execute(x.agent, 'go', options);
  expect((await handle.result()).status).toBe('completed');
}

describe('execution-level hook managers, built once per hooks object', () => {
  it('the same plain hooks object gets the same managers on every run, and every run fires its handlers', async () => {
    const managers = new ExecutionManagers();
    const own = new HookManager();
    const hooks: AgentHooks = { onAgentStart: () => {} };
    const first = managers.managerFor(own, hooks, undefined);
    expect(managers.managerFor(own, hooks, undefined)).toBe(first);
    expect(managers.executionOf(hooks, undefined)).toBe(managers.executionOf(hooks, undefined));
    const x = executor();
    const starts: number[] = [];
    const counted: AgentHooks = { onAgentStart: () => void starts.push(starts.length) };
    await run(x, { hooks: counted });
    await run(x, { hooks: counted });
    expect(starts).toEqual([0, 1]);
  });

  it('a handler replaced on the same hooks object between two runs: the second run fires the new handler, not the old one', async () => {
    const x = executor();
    const seen: string[] = [];
    const hooks: AgentHooks = { onAgentStart: () => void seen.push('old') };
    await run(x, { hooks });
    hooks.onAgentStart = () => void seen.push('new');
    await run(x, { hooks });
    expect(seen).toEqual(['old', 'new']);
  });

  it('a hook point added to the same hooks object, or one removed, is seen by the next run', async () => {
    const x = executor();
    const seen: string[] = [];
    const hooks: AgentHooks = { onAgentStart: () => void seen.push('start') };
    await run(x, { hooks });
    hooks.onAgentComplete = () => void seen.push('complete');
    await run(x, { hooks });
    delete hooks.onAgentStart;
    await run(x, { hooks });
    expect(seen).toEqual(['start', 'start', 'complete', 'complete']);
  });

  it('a hook manager that registers more handlers between two runs: the next run fires them too', async () => {
    const x = executor();
    const seen: string[] = [];
    const hookManager = new HookManager({ onAgentStart: () => void seen.push('first') });
    await run(x, { hookManager });
    hookManager.register({ onAgentStart: () => void seen.push('second') });
    await run(x, { hookManager });
    expect(seen).toEqual(['first', 'first', 'second']);
  });

  it('hooks that are not a plain object of functions (a class-based hook) are built for each run and still fire', async () => {
    const managers = new ExecutionManagers();
    const own = new HookManager();
    class Starts {
      count = 0;
      onAgentStart(): void {
        this.count++;
      }
    }
    const hooks = new Starts();
    expect(managers.managerFor(own, hooks as AgentHooks, undefined)).not.toBe(managers.managerFor(own, hooks as AgentHooks, undefined));
    const x = executor();
    await run(x, { hooks: hooks as AgentHooks });
    await run(x, { hooks: hooks as AgentHooks });
    expect(hooks.count).toBe(2);
  });

  it('one hooks object shared by two agents: each run has its own agent hooks first, and a handler its agent already has runs once', async () => {
    const x = executor();
    const seen: string[] = [];
    const shared = (): void => void seen.push('shared');
    const hooks: AgentHooks = { onAgentStart: shared };
    const other = defineAgent({ ...x.agent, name: 'other', hooks: new HookManager({ onAgentStart: () => void seen.push('own') }).register({ onAgentStart: shared }) });
    await run(x, { hooks });
    const handle = await x.executor.execute(other, 'go', { hooks });
    expect((await handle.result()).status).toBe('completed');
    await run(x, { hooks });
    expect(seen).toEqual(['shared', 'own', 'shared', 'shared']);
  });
});
