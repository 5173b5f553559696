import { HookManager } from '../hooks/manager.js';
import type { AgentHooks } from '../hooks/types.js';
import { sameHandler } from './launch-records.js';

/** The managers built for one `hooks` object (or one `hookManager` given without one), and what they were built from. */
interface Built {
  readonly hookManager: HookManager<unknown, unknown> | undefined;
  /** The given manager's size then (managers only grow: register adds, nothing removes). */
  readonly managerSize: number;
  /** The `hooks` object's keys and handlers then, in order. */
  readonly keys: readonly string[];
  readonly handlers: readonly unknown[];
  /** The execution's own hooks as one manager (what its sub-agents inherit). */
  readonly execution: HookManager<unknown, unknown>;
  /** The run's manager per agent manager: the agent's hooks, then the execution's. */
  readonly byAgent: WeakMap<HookManager<unknown, unknown>, HookManager<unknown, unknown>>;
}

/**
 * The hook managers of runs started with execution-level hooks (`execute(…, { hooks, hookManager })`),
 * built once per `hooks` object (or per `hookManager` given without one) and reused by every run that
 * passes the same one, as long as it did not change: a `hooks` object whose keys or handlers changed, or
 * a manager that registered more handlers since, gets new managers. Only plain objects of functions
 * are cached; anything else is built for each run. Keys are held weakly: a `hooks` object nobody holds
 * any more takes its managers with it.
 */
export class ExecutionManagers {
  readonly #built = new WeakMap<object, Built>();

  /** The execution's own hooks as one manager (its sub-agents inherit it); undefined without any. */
  executionOf(hooks: AgentHooks | undefined, hookManager: HookManager<unknown, unknown> | undefined): HookManager<unknown, unknown> | undefined {
    return this.#builtFor(hooks, hookManager)?.execution;
  }

  /**
   * The run's manager: the agent's manager `own`, then the execution's hooks, leaving out a handler the
   * agent already has at the same point (the same function, or the same class-based hook).
   */
  managerFor(own: HookManager<unknown, unknown>, hooks: AgentHooks | undefined, hookManager: HookManager<unknown, unknown> | undefined): HookManager<unknown, unknown> {
    const built = this.#builtFor(hooks, hookManager);
    if (built === undefined) return own;
    let manager = built.byAgent.get(own);
    if (manager === undefined) {
      const { execution } = built;
      manager = new HookManager<unknown, unknown>(own, own.size === 0 ? execution : execution.filter((entry) => !own.entries(entry.point).some((o) => sameHandler(o, entry))));
      built.byAgent.set(own, manager);
    }
    return manager;
  }

  #builtFor(hooks: AgentHooks | undefined, hookManager: HookManager<unknown, unknown> | undefined): Built | undefined {
    const key: object | undefined = hooks ?? hookManager;
    if (key === undefined) return undefined;
    const cached = this.#built.get(key);
    if (cached !== undefined && cached.hookManager === hookManager && cached.managerSize === (hookManager?.size ?? 0) && sameShape(cached, hooks)) return cached;
    const shape = hooks === undefined ? { keys: [], handlers: [] } : shapeOf(hooks);
    const built: Built = { hookManager, managerSize: hookManager?.size ?? 0, keys: shape?.keys ?? [], handlers: shape?.handlers ?? [], execution: new HookManager<unknown, unknown>(hookManager, hooks), byAgent: new WeakMap() };
    if (shape !== undefined) this.#built.set(key, built);
    else this.#built.delete(key);
    return built;
  }
}

/** The keys and handlers of a plain object of functions, or undefined for anything else (not cached). */
function shapeOf(hooks: AgentHooks): { keys: string[]; handlers: unknown[] } | undefined {
  const proto: unknown = Object.getPrototypeOf(hooks);
  if (proto !== Object.prototype && proto !== null) return undefined;
  const keys = Object.keys(hooks);
  const handlers: unknown[] = [];
  for (const key of keys) {
    const handler: unknown = (hooks as Record<string, unknown>)[key];
    if (typeof handler !== 'function') return undefined;
    handlers.push(handler);
  }
  return { keys, handlers };
}

/** Whether `hooks` still has the keys and handlers it had when `built` was made. */
function sameShape(built: Built, hooks: AgentHooks | undefined): boolean {
  if (hooks === undefined) return built.keys.length === 0;
  if (built.keys.length === 0) return false;
  const keys = Object.keys(hooks);
  if (keys.length !== built.keys.length) return false;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    if (key !== built.keys[i] || (hooks as Record<string, unknown>)[key] !== built.handlers[i]) return false;
  }
  return true;
}
