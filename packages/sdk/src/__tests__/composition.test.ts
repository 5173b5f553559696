import { describe, expect, it } from 'vitest';
import { composeHookManagers, ConfigError, createHookManager, HookManager, mergeHooks, type AgentHooks } from '../index.js';
import { counterAgent, finish, setup } from './harness.js';

function tagger(log: string[], tag: string): AgentHooks {
  return { onAgentStart: () => void log.push(tag), afterTool: () => void log.push(`${tag}:afterTool`) };
}

describe('composition and ordering (section 1.11)', () => {
  it('rule 131 / rule 124: agent-level hooks run first, then execution-level hooks (hookManager, then hooks)', async () => {
    const { executor } = setup();
    const log: string[] = [];
    const agent = counterAgent([finish('x')], { hooks: { onAgentStart: () => void log.push('agent') } });
    await (
      await executor.execute(agent, 'go', {
        hookManager: createHookManager({ onAgentStart: () => void log.push('manager') }),
        hooks: { onAgentStart: () => void log.push('execution') },
      })
    ).result();
    expect(log).toEqual(['agent', 'manager', 'execution']);
  });

  it('rule 132: composeHookManagers composes hook sets in argument order', async () => {
    const { executor } = setup();
    const log: string[] = [];
    const hookManager = composeHookManagers(tagger(log, 'a'), tagger(log, 'b'), createHookManager(tagger(log, 'c')));
    await (await executor.execute(counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 1 } }] }, finish('x')]), 'go', { hookManager })).result();
    expect(log).toEqual(['a', 'b', 'c', 'a:afterTool', 'b:afterTool', 'c:afterTool']);
  });

  it('rules 133, 136, 184: createHookManager + register() appends handlers in registration order', () => {
    const log: string[] = [];
    const manager = createHookManager(tagger(log, 'first'));
    manager.register({ onAgentStart: () => void log.push('second') }).register(tagger(log, 'third'));
    expect(manager.handlers('onAgentStart')).toHaveLength(3);
    expect(manager.size).toBe(5);
    expect(manager.has('beforeTool')).toBe(false);
  });

  it('rule 134: mergeHooks(agent.hooks, executionHooks) puts the agent hooks first', async () => {
    const log: string[] = [];
    const merged = mergeHooks(tagger(log, 'agent'), tagger(log, 'exec'));
    for (const handler of merged.handlers('onAgentStart')) await handler({} as never, {} as never);
    expect(log).toEqual(['agent', 'exec']);
  });

  it('rule 137: the same hook object may be registered under several points, and a manager may be registered twice', async () => {
    const { executor } = setup();
    let calls = 0;
    const shared = () => void calls++;
    const hooks = createHookManager({ onAgentStart: shared, onAgentComplete: shared });
    await (await executor.execute(counterAgent([finish('x')]), 'go', { hookManager: composeHookManagers(hooks, hooks) })).result();
    expect(calls).toBe(4);
  });

  it('rule 197: registering an unknown hook point throws a ConfigError naming the valid points', () => {
    expect(() => createHookManager({ onAgentBoot: () => {} } as unknown as AgentHooks)).toThrowError(/Unknown hook point "onAgentBoot".*onAgentStart/);
    try {
      createHookManager({ beforeTool: 'yes' } as unknown as AgentHooks);
    } catch (error) {
      expect(ConfigError.isInstance(error)).toBe(true);
    }
  });

  it('handler arrays handed out are frozen: a register() during a run does not change the running list', () => {
    const manager = new HookManager();
    manager.register({ onMessage: () => {} });
    const before = manager.handlers('onMessage');
    manager.register({ onMessage: () => {} });
    expect(before).toHaveLength(1);
    expect(Object.isFrozen(before)).toBe(true);
    expect(manager.handlers('onMessage')).toHaveLength(2);
  });
});
