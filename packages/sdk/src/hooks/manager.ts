import { ConfigError } from '../errors.js';
import { HOOK_POINTS, type AgentHooks, type HookPoint } from './types.js';

/**
 * What a throwing (or timed-out) handler does (docs/rules.md, C1):
 * - `fail-run`: the run fails with `hook_failed` and onAgentFail fires once (the default, rule 5);
 * - `fail-closed`: the run fails with `hook_blocked` (a guard that cannot decide refuses);
 * - `block-tool`: beforeTool only: the call is blocked and the error message goes back to the model;
 * - `fail-open`: the error is logged and the run goes on as if the handler had returned nothing.
 */
export type HookErrorPolicy = 'fail-run' | 'fail-closed' | 'block-tool' | 'fail-open';

/** Per-handler options, attached with {@link guard}. */
export interface HookHandlerOptions {
  readonly onError?: HookErrorPolicy;
  /** A handler that does not settle in time is an error (`hook_timeout`) under its policy. */
  readonly timeoutMs?: number;
  /** The name audits and logs use (default: the function's name). */
  readonly name?: string;
}

/** Defaults for every handler registered through one `register()` / `createHookManager()` call. */
export interface HookManagerOptions {
  /** One policy for every point, or one per point. Observe-only points are always fail-open. */
  readonly onError?: HookErrorPolicy | Partial<Record<HookPoint, HookErrorPolicy>>;
  readonly timeoutMs?: number | Partial<Record<HookPoint, number>>;
}

/** The guard preset (rules 217–221) as a configuration: `createHookManager(hooks, { onError: guardPolicy })`. */
export const guardPolicy: Readonly<Partial<Record<HookPoint, HookErrorPolicy>>> = Object.freeze({
  beforeLLMCall: 'fail-closed',
  beforeTool: 'block-tool',
  afterLLMCall: 'fail-open',
  afterTool: 'fail-open',
});

/** Points whose errors are always logged, never fatal (they cannot fail the run, or fire after it ended). */
export const OBSERVE_ONLY_POINTS: ReadonlySet<HookPoint> = new Set(['onAgentFail', 'onAgentSuperseded', 'onAgentSuspended', 'onAgentResumed', 'onAgentRetry']);

/**
 * A class-based hook: an object whose methods are named after hook points, with optional `warmUp()` /
 * `close()` (called once per executor, however many points the object is registered at), an
 * `allowedHookPoints` declaration checked at registration, and `toJSON()` for rebuilding it from
 * configuration (see `registerHookFactory`).
 */
export interface HookObject {
  readonly allowedHookPoints?: readonly HookPoint[];
  warmUp?(): void | Promise<void>;
  close?(): void | Promise<void>;
  toJSON?(): unknown;
}

type AnyHandler = (...args: never[]) => unknown;

/** One registered handler with its resolved policy. */
export interface HookEntry {
  readonly point: HookPoint;
  readonly handler: AnyHandler;
  readonly policy: HookErrorPolicy;
  readonly timeoutMs?: number;
  readonly name: string;
  /** The class-based hook it belongs to, if any. */
  readonly owner?: HookObject;
}

const handlerOptions = new WeakMap<object, HookHandlerOptions>();

/** Attaches an error policy, a timeout and/or a name to one handler: `beforeTool: guard(fn, { onError: 'block-tool' })`. */
export function guard<F extends AnyHandler>(handler: F, options: HookHandlerOptions): F {
  handlerOptions.set(handler, { ...handlerOptions.get(handler), ...options });
  return handler;
}

const EMPTY: readonly never[] = Object.freeze([]);
const POINT_SET: ReadonlySet<string> = new Set(HOOK_POINTS);
const NON_HOOK_MEMBERS = new Set(['constructor', 'allowedHookPoints', 'warmUp', 'close', 'toJSON']);

type HandlerOf<P extends HookPoint, S, O> = NonNullable<AgentHooks<S, O>[P]>;

/** Hooks by point where a point may also name a class-based hook (its method of that name is registered). */
export type HookMap<TState = unknown, TOutput = unknown> = { readonly [P in HookPoint]?: AgentHooks<TState, TOutput>[P] | HookObject };

/** Something hooks can be composed from: hook functions by point, a class-based hook, a manager, or nothing. */
export type HookSource<TState = unknown, TOutput = unknown> = AgentHooks<TState, TOutput> | HookMap<TState, TOutput> | HookManager<TState, TOutput> | HookObject | undefined | null;

function isPlainObject(value: object): boolean {
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function hookMethods(object: object): string[] {
  const names = new Set<string>();
  for (let o: object | null = object; o && o !== Object.prototype; o = Object.getPrototypeOf(o) as object | null) {
    for (const key of Object.getOwnPropertyNames(o)) if (!NON_HOOK_MEMBERS.has(key)) names.add(key);
  }
  return [...names].filter((k) => POINT_SET.has(k) && typeof (object as Record<string, unknown>)[k] === 'function');
}

/**
 * Holds the handlers of every hook point as fixed arrays, in registration order, each with its error
 * policy. A point with no handler has a shared empty array, so the loop's `has()` check is one read.
 */
export class HookManager<TState = unknown, TOutput = unknown> {
  #entries: Record<HookPoint, readonly HookEntry[]>;
  #handlers: Record<HookPoint, readonly AnyHandler[]>;
  readonly #objects: HookObject[] = [];
  #count = 0;

  constructor(...sources: HookSource<TState, TOutput>[]) {
    const entries: Record<string, readonly HookEntry[]> = {};
    const handlers: Record<string, readonly AnyHandler[]> = {};
    for (const point of HOOK_POINTS) {
      entries[point] = EMPTY;
      handlers[point] = EMPTY;
    }
    this.#entries = entries as Record<HookPoint, readonly HookEntry[]>;
    this.#handlers = handlers as Record<HookPoint, readonly AnyHandler[]>;
    for (const source of sources) this.register(source);
  }

  /**
   * Adds hooks after the ones already registered. Unknown hook points, non-functions, a class-based hook
   * at a point it does not allow, and `block-tool` outside beforeTool throw a ConfigError.
   */
  register(source: HookSource<TState, TOutput>, options: HookManagerOptions = {}): this {
    if (source === undefined || source === null) return this;
    if (source instanceof HookManager) {
      for (const point of HOOK_POINTS) for (const entry of source.entries(point)) this.#push(entry);
      for (const object of source.hookObjects()) if (!this.#objects.includes(object)) this.#objects.push(object);
      return this;
    }
    if (typeof source !== 'object') {
      throw new ConfigError(`Hooks must be an object of hook functions, got ${typeof source}.`);
    }
    if (!isPlainObject(source)) {
      // A class-based hook registered as a whole: every method named after a hook point.
      const object = source as HookObject;
      const points = hookMethods(object);
      if (points.length === 0) {
        throw new ConfigError(`${object.constructor.name} has no method named after a hook point. Valid hook points: ${HOOK_POINTS.join(', ')}.`);
      }
      for (const point of points) this.#addObjectPoint(point as HookPoint, object, options);
      return this;
    }
    for (const key of Object.keys(source)) {
      if (!POINT_SET.has(key)) {
        throw new ConfigError(`Unknown hook point "${key}". Valid hook points: ${HOOK_POINTS.join(', ')}.`, { hookPoint: key });
      }
      const value = (source as Record<string, unknown>)[key];
      if (value === undefined) continue;
      const point = key as HookPoint;
      if (typeof value === 'function') this.#add(point, value as AnyHandler, options, undefined);
      else if (typeof value === 'object' && value !== null && !isPlainObject(value)) this.#addObjectPoint(point, value as HookObject, options);
      else throw new ConfigError(`Hook "${key}" must be a function or a class-based hook, got ${typeof value}.`, { hookPoint: key });
    }
    return this;
  }

  #addObjectPoint(point: HookPoint, object: HookObject, options: HookManagerOptions): void {
    const name = object.constructor.name;
    if (object.allowedHookPoints && !object.allowedHookPoints.includes(point)) {
      throw new ConfigError(`${name} cannot be registered at "${point}": it allows only ${object.allowedHookPoints.join(', ')}.`, {
        hookPoint: point,
        hook: name,
        allowedHookPoints: [...object.allowedHookPoints],
      });
    }
    const method = (object as unknown as Record<string, unknown>)[point];
    if (typeof method !== 'function') {
      throw new ConfigError(`${name} is registered at "${point}" but has no ${point}() method.`, { hookPoint: point, hook: name });
    }
    if (!this.#objects.includes(object)) this.#objects.push(object);
    const bound = (method as AnyHandler).bind(object) as AnyHandler;
    const attached = handlerOptions.get(method as object);
    if (attached) handlerOptions.set(bound, attached);
    this.#add(point, bound, options, object, `${name}.${point}`);
  }

  #add(point: HookPoint, handler: AnyHandler, options: HookManagerOptions, owner: HookObject | undefined, defaultName?: string): void {
    const own = handlerOptions.get(handler) ?? {};
    const pointPolicy = typeof options.onError === 'string' ? options.onError : options.onError?.[point];
    let policy: HookErrorPolicy = own.onError ?? pointPolicy ?? 'fail-run';
    if (OBSERVE_ONLY_POINTS.has(point)) policy = 'fail-open';
    if (policy === 'block-tool' && point !== 'beforeTool') {
      if (own.onError === 'block-tool' || (typeof options.onError === 'object' && options.onError[point] === 'block-tool')) {
        throw new ConfigError(`The "block-tool" error policy only applies to beforeTool, not ${point}.`, { hookPoint: point });
      }
      policy = 'fail-closed';
    }
    const timeoutMs = own.timeoutMs ?? (typeof options.timeoutMs === 'number' ? options.timeoutMs : options.timeoutMs?.[point]);
    this.#push({
      point,
      handler,
      policy,
      name: own.name ?? defaultName ?? (handler.name !== '' && !handler.name.startsWith('bound ') ? handler.name : point),
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
      ...(owner === undefined ? {} : { owner }),
    });
  }

  #push(entry: HookEntry): void {
    // Copy-on-write: arrays handed out never change under a running loop.
    this.#entries[entry.point] = Object.freeze([...this.#entries[entry.point], entry]);
    this.#handlers[entry.point] = Object.freeze([...this.#handlers[entry.point], entry.handler]);
    this.#count++;
  }

  /** The handlers of one point, in the order they run. */
  handlers<P extends HookPoint>(point: P): readonly HandlerOf<P, TState, TOutput>[] {
    return this.#handlers[point] as readonly HandlerOf<P, TState, TOutput>[];
  }

  /** The handlers of one point with their policies, in the order they run. */
  entries(point: HookPoint): readonly HookEntry[] {
    return this.#entries[point];
  }

  /** True when the point has at least one handler. */
  has(point: HookPoint): boolean {
    return this.#entries[point].length > 0;
  }

  /** The class-based hooks registered (each once), for warm-up and close. */
  hookObjects(): readonly HookObject[] {
    return this.#objects;
  }

  /**
   * A new manager with only the entries `keep` accepts, in the same order and with the same policies
   * (class-based hooks that keep at least one entry stay registered for warm-up and close).
   */
  filter(keep: (entry: HookEntry) => boolean): HookManager<TState, TOutput> {
    const kept = new HookManager<TState, TOutput>();
    for (const point of HOOK_POINTS) for (const entry of this.#entries[point]) if (keep(entry)) kept.#push(entry);
    for (const object of this.#objects) if (HOOK_POINTS.some((point) => kept.#entries[point].some((e) => e.owner === object))) kept.#objects.push(object);
    return kept;
  }

  /** Total handlers registered. */
  get size(): number {
    return this.#count;
  }
}

/** Creates a hook manager with initial hooks and their default error policies; add more with `register()`. */
export function createHookManager<TState = unknown, TOutput = unknown>(hooks?: HookSource<TState, TOutput>, options: HookManagerOptions = {}): HookManager<TState, TOutput> {
  return new HookManager<TState, TOutput>().register(hooks, options);
}

/** Composes several hook sets into one manager; they run in argument order, each keeping its own policies. */
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
