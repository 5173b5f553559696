// The hook manager on its own: how a handler's policy, timeout and name are resolved, what registration
// refuses, and the serialization registry of class-based hooks.
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../errors.js';
import { composeHookManagers, createHookManager, guard, guardPolicy, mergeHooks, OBSERVE_ONLY_POINTS, type HookManager, type HookObject } from './manager.js';
import { hookFromJSON, hookToJSON, registerHookFactory } from './serialize.js';
import { HOOK_POINTS, type HookPoint } from './types.js';

const noop = (): void => {};

/** Asserts that `fn` throws a ConfigError with exactly `message` (and, when given, these details). */
function expectConfigError(fn: () => unknown, message: string, details?: Record<string, unknown>): void {
  let thrown: unknown;
  try {
    fn();
  } catch (error) {
    thrown = error;
  }
  expect(ConfigError.isInstance(thrown)).toBe(true);
  expect((thrown as ConfigError).message).toBe(message);
  if (details) expect((thrown as ConfigError).info.details).toEqual(details);
}
const entry = (manager: HookManager, point: HookPoint, i = 0) => manager.entries(point)[i]!;

describe('error policy resolution (C1)', () => {
  it('C1: the default is fail-run; a manager-wide policy, a per-point map and a handler guard override it in that order', () => {
    expect(entry(createHookManager({ afterTool: noop }), 'afterTool').policy).toBe('fail-run');
    expect(entry(createHookManager({ afterTool: noop }, { onError: 'fail-open' }), 'afterTool').policy).toBe('fail-open');
    const mapped = createHookManager({ afterTool: noop, afterLLMCall: () => {} }, { onError: { afterTool: 'fail-closed' } });
    expect(entry(mapped, 'afterTool').policy).toBe('fail-closed');
    expect(entry(mapped, 'afterLLMCall').policy).toBe('fail-run');
    const own = createHookManager({ afterTool: guard(() => {}, { onError: 'fail-open' }) }, { onError: 'fail-closed' });
    expect(entry(own, 'afterTool').policy).toBe('fail-open');
  });

  it('C1: observe-only points are fail-open whatever the handler or the manager asks for', () => {
    for (const point of OBSERVE_ONLY_POINTS) {
      const manager = createHookManager({ [point]: guard(() => {}, { onError: 'fail-closed' }) }, { onError: 'fail-run' });
      expect(entry(manager, point).policy).toBe('fail-open');
    }
    expect([...OBSERVE_ONLY_POINTS].sort()).toEqual(['onAgentFail', 'onAgentResumed', 'onAgentRetry', 'onAgentSuperseded', 'onAgentSuspended'].sort());
  });

  it('C1: block-tool asked for explicitly outside beforeTool is a ConfigError; as a manager-wide default it means fail-closed there', () => {
    expectConfigError(() => createHookManager({ afterTool: guard(() => {}, { onError: 'block-tool' }) }), 'The "block-tool" error policy only applies to beforeTool, not afterTool.', { hookPoint: 'afterTool' });
    expectConfigError(() => createHookManager({ beforeLLMCall: () => {} }, { onError: { beforeLLMCall: 'block-tool' } }), 'The "block-tool" error policy only applies to beforeTool, not beforeLLMCall.');
    const mixed = createHookManager({ beforeTool: () => {}, afterTool: () => {} }, { onError: { beforeTool: 'block-tool' } });
    expect([entry(mixed, 'beforeTool').policy, entry(mixed, 'afterTool').policy]).toEqual(['block-tool', 'fail-run']);
    const wide = createHookManager({ beforeTool: () => {}, beforeLLMCall: () => {} }, { onError: 'block-tool' });
    expect(entry(wide, 'beforeTool').policy).toBe('block-tool');
    expect(entry(wide, 'beforeLLMCall').policy).toBe('fail-closed');
    expect(entry(createHookManager({ beforeTool: guard(() => {}, { onError: 'block-tool' }) }), 'beforeTool').policy).toBe('block-tool');
  });

  it('rules 217–221: guardPolicy is fail-closed before the model, block-tool before a tool, fail-open after both', () => {
    expect(guardPolicy).toEqual({ beforeLLMCall: 'fail-closed', beforeTool: 'block-tool', afterLLMCall: 'fail-open', afterTool: 'fail-open' });
    expect(Object.isFrozen(guardPolicy)).toBe(true);
  });

  it('C1: a timeout comes from the handler, else the manager (one number or per point); without one the entry has none', () => {
    expect(entry(createHookManager({ afterTool: guard(() => {}, { timeoutMs: 7 }) }, { timeoutMs: 99 }), 'afterTool').timeoutMs).toBe(7);
    expect(entry(createHookManager({ afterTool: noop }, { timeoutMs: 99 }), 'afterTool').timeoutMs).toBe(99);
    const perPoint = createHookManager({ afterTool: noop, beforeTool: () => {} }, { timeoutMs: { beforeTool: 5 } });
    expect(entry(perPoint, 'beforeTool').timeoutMs).toBe(5);
    expect('timeoutMs' in entry(perPoint, 'afterTool')).toBe(false);
    expect('owner' in entry(perPoint, 'afterTool')).toBe(false);
  });

  it('guard() merges its options with those given before', () => {
    const fn = guard(guard(() => {}, { name: 'first', timeoutMs: 3 }), { onError: 'fail-open' });
    expect(entry(createHookManager({ afterTool: fn }), 'afterTool')).toMatchObject({ name: 'first', timeoutMs: 3, policy: 'fail-open' });
  });
});

describe('handler names', () => {
  it('a guard name wins, then a class method "Class.point", then the function name; anonymous and bound functions get the point name', () => {
    function namedAudit(): void {}
    function renamed(): void {}
    const anonymous = [() => {}][0]!;
    const bound = namedAudit.bind(null);
    expect(entry(createHookManager({ afterTool: guard(renamed, { name: 'given' }) }), 'afterTool').name).toBe('given');
    expect(entry(createHookManager({ afterTool: namedAudit }), 'afterTool').name).toBe('namedAudit');
    expect(entry(createHookManager({ afterTool: anonymous }), 'afterTool').name).toBe('afterTool');
    expect(entry(createHookManager({ afterTool: bound }), 'afterTool').name).toBe('afterTool');
    class Audit {
      afterTool(): void {}
    }
    expect(entry(createHookManager({ afterTool: new Audit() as HookObject }), 'afterTool').name).toBe('Audit.afterTool');
  });
});

describe('registration (rules 133, 137, 197, 198, 205)', () => {
  it('rule 197: an unknown point, a value that is neither a function nor a class-based hook, and a non-object source are ConfigErrors', () => {
    expectConfigError(() => createHookManager({ beforeTools: noop } as never), `Unknown hook point "beforeTools". Valid hook points: ${HOOK_POINTS.join(', ')}.`, { hookPoint: 'beforeTools' });
    expectConfigError(() => createHookManager({ afterTool: 'log it' } as never), 'Hook "afterTool" must be a function or a class-based hook, got string.', { hookPoint: 'afterTool' });
    expectConfigError(() => createHookManager({ afterTool: { afterTool: noop } } as never), 'Hook "afterTool" must be a function or a class-based hook, got object.');
    expectConfigError(() => createHookManager({ afterTool: null } as never), 'Hook "afterTool" must be a function or a class-based hook, got object.');
    expectConfigError(() => createHookManager(noop as never), 'Hooks must be an object of hook functions, got function.');
    expectConfigError(() => createHookManager('afterTool' as never), 'Hooks must be an object of hook functions, got string.');
  });

  it('a hook map without a prototype (Object.create(null)) is a plain map of handlers, not a class-based hook', () => {
    const map = Object.assign(Object.create(null) as Record<string, unknown>, { afterTool: noop, beforeTool: guard(() => {}, { name: 'bare' }) });
    const manager = createHookManager(map as never);
    expect(HOOK_POINTS.filter((p) => manager.has(p)).sort()).toEqual(['afterTool', 'beforeTool']);
    expect(manager.hookObjects()).toEqual([]);
    expect(entry(manager, 'beforeTool').name).toBe('bare');
  });

  it('undefined and null sources and undefined points register nothing', () => {
    const manager = createHookManager(undefined).register(null).register({ afterTool: undefined });
    expect(manager.size).toBe(0);
    for (const point of HOOK_POINTS) expect(manager.has(point)).toBe(false);
  });

  it('rule 205: a whole class instance registers its hook-point methods, inherited ones included, and nothing else', () => {
    class Base {
      beforeTool(): void {}
    }
    class Audit extends Base {
      readonly onMessage = 'not a function';
      warmUp(): void {}
      close(): void {}
      toJSON(): unknown {
        return {};
      }
      afterTool(): void {}
      helper(): void {}
    }
    const manager = createHookManager(new Audit() as HookObject);
    expect(HOOK_POINTS.filter((p) => manager.has(p)).sort()).toEqual(['afterTool', 'beforeTool']);
    expect(manager.size).toBe(2);
    expect(manager.hookObjects()).toHaveLength(1);
    class OnlyLifecycle {
      warmUp(): void {}
      close(): void {}
    }
    expectConfigError(() => createHookManager(new OnlyLifecycle() as HookObject), `OnlyLifecycle has no method named after a hook point. Valid hook points: ${HOOK_POINTS.join(', ')}.`);
  });

  it('rules 137, 198: an object at a point it has no method for, or does not allow, is a ConfigError; a guard on its method is kept', () => {
    class Audit {
      readonly allowedHookPoints: readonly HookPoint[] = ['afterTool', 'beforeTool'];
      afterTool(): void {}
    }
    expectConfigError(() => createHookManager({ beforeTool: new Audit() } as never), 'Audit is registered at "beforeTool" but has no beforeTool() method.', { hookPoint: 'beforeTool', hook: 'Audit' });
    expectConfigError(() => createHookManager({ onMessage: new Audit() } as never), 'Audit cannot be registered at "onMessage": it allows only afterTool, beforeTool.', {
      hookPoint: 'onMessage',
      hook: 'Audit',
      allowedHookPoints: ['afterTool', 'beforeTool'],
    });
    class Guarded {
      afterTool(): void {}
    }
    guard(Guarded.prototype.afterTool, { onError: 'fail-open', timeoutMs: 4 });
    const object = new Guarded();
    const manager = createHookManager({ afterTool: object, onMessage: undefined } as never);
    expect(entry(manager, 'afterTool')).toMatchObject({ policy: 'fail-open', timeoutMs: 4, owner: object });
    const twice = createHookManager({ afterTool: object } as never).register({ afterTool: object } as never);
    expect(twice.size).toBe(2);
    expect(twice.hookObjects()).toEqual([object]);
  });

  it('rule 133: registering a manager appends its entries and objects once; handed-out arrays are frozen and never change', () => {
    class Audit {
      afterTool(): void {}
    }
    const object = new Audit();
    const inner = createHookManager({ afterTool: object } as never);
    const outer = createHookManager({ afterTool: noop });
    const before = outer.entries('afterTool');
    outer.register(inner).register(inner);
    expect(before).toHaveLength(1);
    expect(Object.isFrozen(outer.entries('afterTool')) && Object.isFrozen(outer.handlers('afterTool'))).toBe(true);
    expect(outer.entries('afterTool').map((e) => e.name)).toEqual(['noop', 'Audit.afterTool', 'Audit.afterTool']);
    expect(outer.handlers('afterTool')).toHaveLength(3);
    expect(outer.hookObjects()).toEqual([object]);
    expect(outer.size).toBe(3);
  });

  it('rules 132, 134: composeHookManagers and mergeHooks keep argument order', () => {
    const a = guard(() => {}, { name: 'a' });
    const b = guard(() => {}, { name: 'b' });
    expect(composeHookManagers({ afterTool: a }, { afterTool: b }).entries('afterTool').map((e) => e.name)).toEqual(['a', 'b']);
    expect(mergeHooks({ afterTool: b }, { afterTool: a }).entries('afterTool').map((e) => e.name)).toEqual(['b', 'a']);
  });

  it('filter() keeps the accepted entries in order with their policies, and only the objects that keep one', () => {
    class Keep {
      afterTool(): void {}
    }
    class Drop {
      beforeTool(): void {}
    }
    const keep = new Keep();
    const manager = createHookManager({ afterTool: keep, beforeTool: new Drop() } as never, { onError: 'fail-open' }).register({ afterTool: noop });
    const kept = manager.filter((e) => e.point === 'afterTool');
    expect(kept.entries('afterTool').map((e) => [e.name, e.policy])).toEqual([
      ['Keep.afterTool', 'fail-open'],
      ['noop', 'fail-run'],
    ]);
    expect(kept.has('beforeTool')).toBe(false);
    expect(kept.hookObjects()).toEqual([keep]);
    expect(kept.size).toBe(2);
  });
});

describe('serialization registry (rule 207)', () => {
  it('rule 207: an unknown type names the known ones, "(none)" when there are none; a type registers once; toJSON must give { type, config }', () => {
    expectConfigError(() => hookFromJSON({ type: 'audit.v1', config: {} }), 'No hook factory is registered for "audit.v1". Known types: (none).', { type: 'audit.v1' });
    class Audit {
      constructor(readonly config: unknown) {}
      afterTool(): void {}
      toJSON(): unknown {
        return { type: 'audit.v1', config: this.config };
      }
    }
    registerHookFactory('audit.v1', (config) => new Audit(config));
    registerHookFactory('audit.v2', (config) => new Audit(config));
    expectConfigError(() => registerHookFactory('audit.v1', (config) => new Audit(config)), 'A hook factory for "audit.v1" is already registered.', { type: 'audit.v1' });
    expectConfigError(() => hookFromJSON({ type: 'audit.v3', config: {} }), 'No hook factory is registered for "audit.v3". Known types: audit.v1, audit.v2.');
    const rebuilt = hookFromJSON(hookToJSON(new Audit({ level: 2 }))) as Audit;
    expect(rebuilt).toBeInstanceOf(Audit);
    expect(rebuilt.config).toEqual({ level: 2 });
    class NoJson {
      afterTool(): void {}
    }
    class BadJson {
      toJSON(): unknown {
        return { config: 1 };
      }
    }
    class NullJson {
      toJSON(): unknown {
        return null;
      }
    }
    class StringJson {
      toJSON(): unknown {
        return 'audit.v1';
      }
    }
    for (const hook of [new NoJson(), new BadJson(), new NullJson(), new StringJson()]) {
      expectConfigError(() => hookToJSON(hook as HookObject), `${hook.constructor.name} is not serializable: its toJSON() must return { type, config }.`);
    }
  });
});
