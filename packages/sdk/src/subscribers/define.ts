import { ConfigError } from '../errors.js';
import type { SessionHookContext } from './context.js';
import type { SessionEvent, SessionEventType } from './events.js';
import { isSessionEventType } from './events.js';

/** A handler for events of type `T` (the union for `'*'`). It may be async; its result is ignored. */
export type SessionEventHandler<T extends SessionEventType = SessionEventType> = (event: SessionEvent<T>, ctx: SessionHookContext) => void | Promise<void>;

/** A hook's events map: a handler per event type, and/or `'*'` for every event. */
export type HookEvents = { readonly [K in SessionEventType]?: SessionEventHandler<K> } & { readonly '*'?: SessionEventHandler };

/** A key of an events map. */
export type HookEventKey = SessionEventType | '*';

/** A subscriber hook, as `defineHook` returns it: a plain (frozen) object, so a test can call `hook.events[type](event, ctx)`. */
export interface HookDefinition<E extends HookEvents = HookEvents> {
  readonly events: E;
}

/** The events map `defineHook` returns: the keys that were given, each with its canonical handler type (so a test can call it with `(event, ctx)`). */
export type DefinedHookEvents<E> = { readonly [K in keyof E & HookEventKey]-?: K extends SessionEventType ? SessionEventHandler<K> : SessionEventHandler };

// Turns an unknown key of an events map into a type error on that key.
type OnlyVocabularyKeys<E> = { readonly [K in Exclude<keyof E, HookEventKey>]: never };

const MARKER = Symbol.for('helix-agents.subscriber-hook');

/**
 * Defines an event subscriber: handlers run after each matching event of every session of the agent
 * is recorded, never on the model's path. A typed key narrows `event.data`; `'*'` gets the union.
 * Throws a ConfigError for a key outside the vocabulary or a handler that is not a function.
 */
export function defineHook<const E extends HookEvents>(definition: { readonly events: E & OnlyVocabularyKeys<E> }): HookDefinition<DefinedHookEvents<E>> {
  const events: unknown = (definition as { events?: unknown } | undefined)?.events;
  if (typeof events !== 'object' || events === null || Array.isArray(events)) {
    throw new ConfigError('defineHook({ events }) needs an events map: { "turn.completed": handler, "*": handler, ... }.');
  }
  for (const [key, handler] of Object.entries(events)) {
    if (key !== '*' && !isSessionEventType(key)) {
      throw new ConfigError(`defineHook: "${key}" is not an event type. Use one of the session event types or "*".`, { key });
    }
    if (typeof handler !== 'function') {
      throw new ConfigError(`defineHook: the handler for "${key}" is a ${typeof handler}, not a function.`, { key });
    }
  }
  const hook = { events: Object.freeze({ ...(events as DefinedHookEvents<E>) }) };
  Object.defineProperty(hook, MARKER, { value: true, enumerable: false });
  return Object.freeze(hook);
}

/** True for a value `defineHook` returned (from any copy of this package). */
export function isHookDefinition(value: unknown): value is HookDefinition {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[MARKER] === true;
}

/** The event keys a hook handles, in the order they were defined. */
export function hookEventKeys(hook: HookDefinition): readonly HookEventKey[] {
  return Object.keys(hook.events) as HookEventKey[];
}

const NAME_SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/**
 * Why `name` cannot name a hook, or undefined when it can. Names are paths: segments of letters,
 * digits, `.`, `_` and `-` separated by `/` (`audit/usage`); `__` is reserved for mounted packs.
 */
export function hookNameProblem(name: string): string | undefined {
  if (name.includes('__')) return `hook names cannot contain "__" (it separates a pack's namespace from its hook names): "${name}"`;
  if (name === '' || !name.split('/').every((segment) => NAME_SEGMENT.test(segment))) {
    return `"${name}" is not a valid hook name: use letters, digits, ".", "_" and "-", with "/" between folders`;
  }
  return undefined;
}

/** A hook under its mounted name, ready for the dispatcher. */
export interface MountedHook {
  readonly name: string;
  readonly hook: HookDefinition;
  /** Where it came from (a file path, a pack), for messages. */
  readonly source?: string;
}

/** Mounts one hook under `name` (checked with {@link hookNameProblem}). */
export function mountHook(name: string, hook: HookDefinition, source?: string): MountedHook {
  const problem = hookNameProblem(name);
  if (problem) throw new ConfigError(`Cannot mount hook: ${problem}.`, { hook: name });
  return mounted(name, hook, source);
}

function mounted(name: string, hook: HookDefinition, source: string | undefined): MountedHook {
  if (!isHookDefinition(hook)) throw new ConfigError(`Cannot mount hook "${name}": it is not a defineHook(...) value.`, { hook: name });
  return Object.freeze({ name, hook, ...(source === undefined ? {} : { source }) });
}

/** A package of hooks mounted under a namespace: its hooks are named `<namespace>__<name>`. */
export interface MountedHookPack {
  readonly namespace: string;
  readonly hooks: readonly MountedHook[];
  /** The same pack without one hook (by its own name or its mounted `<namespace>__<name>`); throws a ConfigError for a name the pack does not have. */
  disableHook(name: string): MountedHookPack;
}

/**
 * Mounts a package of hooks (a record of hook name → `defineHook(...)`) as `<namespace>__<name>`.
 * Neither the namespace nor the names may contain `__`.
 */
export function mountHooks(namespace: string, hooks: Readonly<Record<string, HookDefinition>>): MountedHookPack {
  const problem = hookNameProblem(namespace);
  if (problem || namespace.includes('/')) {
    throw new ConfigError(`Cannot mount hook pack: ${problem ?? `a namespace is one name without "/": "${namespace}"`}.`, { namespace });
  }
  const list = Object.entries(hooks).map(([name, hook]) => {
    const nameProblem = hookNameProblem(name);
    if (nameProblem) throw new ConfigError(`Cannot mount hook pack "${namespace}": ${nameProblem}.`, { namespace, hook: name });
    return mounted(`${namespace}__${name}`, hook, `pack ${namespace}`);
  });
  return pack(namespace, list);
}

function pack(namespace: string, hooks: readonly MountedHook[]): MountedHookPack {
  return Object.freeze({
    namespace,
    hooks: Object.freeze(hooks),
    disableHook(name: string): MountedHookPack {
      const full = name.startsWith(`${namespace}__`) ? name : `${namespace}__${name}`;
      if (!hooks.some((h) => h.name === full)) {
        throw new ConfigError(`Hook pack "${namespace}" has no hook "${name}" to disable; it has ${hooks.map((h) => `"${h.name}"`).join(', ') || 'none'}.`, {
          namespace,
          hook: name,
        });
      }
      return pack(
        namespace,
        hooks.filter((h) => h.name !== full),
      );
    },
  });
}
