import { ConfigError } from '../errors.js';
import { HOOK_POINTS, type AgentHooks, type HookPoint } from './types.js';

type HandlerOf<P extends HookPoint, S, O> = NonNullable<AgentHooks<S, O>[P]>;
type HandlerTable<S, O> = { readonly [P in HookPoint]: readonly HandlerOf<P, S, O>[] };

const EMPTY: readonly never[] = Object.freeze([]);
const POINT_SET: ReadonlySet<string> = new Set(HOOK_POINTS);

function emptyTable<S, O>(): HandlerTable<S, O> {
  const table: Record<string, readonly unknown[]> = {};
  for (const point of HOOK_POINTS) table[point] = EMPTY;
  return table as HandlerTable<S, O>;
}

/** Something hooks can be composed from: a hook object, a manager, or nothing. */
export type HookSource<TState = unknown, TOutput = unknown> = AgentHooks<TState, TOutput> | HookManager<TState, TOutput> | undefined | null;

/**
 * Holds the handlers of every hook point as fixed arrays, in registration order. A point with no
 * handler has a shared empty array, so the run loop's `has()` check is one property read.
 */
export class HookManager<TState = unknown, TOutput = unknown> {
  #table: HandlerTable<TState, TOutput> = emptyTable();
  #count = 0;

  constructor(...sources: HookSource<TState, TOutput>[]) {
    for (const source of sources) this.register(source);
  }

  /** Adds hooks after the ones already registered. Unknown hook points and non-functions throw a ConfigError. */
  register(source: HookSource<TState, TOutput>): this {
    if (source === undefined || source === null) return this;
    if (source instanceof HookManager) {
      for (const point of HOOK_POINTS) {
        for (const handler of source.handlers(point)) this.#add(point, handler);
      }
      return this;
    }
    if (typeof source !== 'object') {
      throw new ConfigError(`Hooks must be an object of hook functions, got ${typeof source}.`);
    }
    for (const key of Object.keys(source)) {
      if (!POINT_SET.has(key)) {
        throw new ConfigError(`Unknown hook point "${key}". Valid hook points: ${HOOK_POINTS.join(', ')}.`, { hookPoint: key });
      }
      const handler = (source as Record<string, unknown>)[key];
      if (handler === undefined) continue;
      if (typeof handler !== 'function') {
        throw new ConfigError(`Hook "${key}" must be a function, got ${typeof handler}.`, { hookPoint: key });
      }
      this.#add(key as HookPoint, handler as HandlerOf<HookPoint, TState, TOutput>);
    }
    return this;
  }

  #add<P extends HookPoint>(point: P, handler: HandlerOf<P, TState, TOutput>): void {
    // Copy-on-write: arrays handed out by handlers() never change under a running loop.
    const table = this.#table as Record<HookPoint, readonly unknown[]>;
    table[point] = Object.freeze([...table[point], handler]);
    this.#count++;
  }

  /** The handlers of one point, in the order they run. */
  handlers<P extends HookPoint>(point: P): readonly HandlerOf<P, TState, TOutput>[] {
    return this.#table[point];
  }

  /** True when the point has at least one handler. */
  has(point: HookPoint): boolean {
    return this.#table[point].length > 0;
  }

  /** Total handlers registered. */
  get size(): number {
    return this.#count;
  }
}

/** Creates a hook manager with initial hooks; add more with `register()`. */
export function createHookManager<TState = unknown, TOutput = unknown>(hooks?: AgentHooks<TState, TOutput>): HookManager<TState, TOutput> {
  return new HookManager<TState, TOutput>(hooks);
}

/** Composes several hook sets into one manager; they run in argument order. */
export function composeHookManagers<TState = unknown, TOutput = unknown>(...sources: HookSource<TState, TOutput>[]): HookManager<TState, TOutput> {
  return new HookManager<TState, TOutput>(...sources);
}

/** Merges agent-level hooks (run first) with execution-level hooks (run second). */
export function mergeHooks<TState = unknown, TOutput = unknown>(
  agentHooks: HookSource<TState, TOutput>,
  executionHooks: HookSource<TState, TOutput>,
): HookManager<TState, TOutput> {
  return new HookManager<TState, TOutput>(agentHooks, executionHooks);
}
