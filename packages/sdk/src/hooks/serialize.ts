import { ConfigError } from '../errors.js';
import type { HookObject } from './manager.js';

/** The JSON form of a serializable class-based hook: its registered type and its constructor configuration. */
export interface SerializedHook {
  readonly type: string;
  readonly config: unknown;
}

/** Rebuilds a hook from its configuration (runtime clients are re-created from it, not serialized). */
export type HookFactory = (config: unknown) => HookObject;

const factories = new Map<string, HookFactory>();

/** Registers how to rebuild hooks of `type` from their `toJSON()` output. Registering a type twice throws. */
export function registerHookFactory(type: string, factory: HookFactory): void {
  if (factories.has(type)) throw new ConfigError(`A hook factory for "${type}" is already registered.`, { type });
  factories.set(type, factory);
}

/** Rebuilds a hook from `{ type, config }` (the output of its `toJSON()`); an unknown type throws a ConfigError naming the known ones. */
export function hookFromJSON(json: SerializedHook): HookObject {
  const factory = factories.get(json.type);
  if (!factory) {
    throw new ConfigError(`No hook factory is registered for "${json.type}". Known types: ${[...factories.keys()].join(', ') || '(none)'}.`, { type: json.type });
  }
  return factory(json.config);
}

/** Serializes a class-based hook through its `toJSON()`; throws when it has none. */
export function hookToJSON(hook: HookObject): SerializedHook {
  const json: unknown = hook.toJSON?.();
  if (typeof json !== 'object' || json === null || typeof (json as SerializedHook).type !== 'string') {
    throw new ConfigError(`${hook.constructor.name} is not serializable: its toJSON() must return { type, config }.`);
  }
  return json as SerializedHook;
}
