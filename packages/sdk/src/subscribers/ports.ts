import { HookStoreError } from './errors.js';

/** A JSON value, as kv stores it. */
export type JsonValue = string | number | boolean | null | readonly JsonValue[] | { readonly [key: string]: JsonValue };

/**
 * The durable key-value port behind `ctx.host.kv`. Namespaces keep agents apart (the dispatcher uses
 * one per agent); keys and values are validated by the facade and again by {@link assertKVKey}.
 * Implementations: {@link InMemoryKVStore} here, `SqliteKVStore` in `@helix-agents/store-sqlite`.
 */
export interface KVStore {
  /** The stored value (a fresh copy), or undefined. */
  get(namespace: string, key: string): Promise<JsonValue | undefined>;
  /** Stores a JSON value, replacing any previous one. */
  set(namespace: string, key: string, value: JsonValue): Promise<void>;
  /** Removes a key; true when it existed. */
  delete(namespace: string, key: string): Promise<boolean>;
  /** The namespace's keys that start with `prefix`, sorted. */
  list(namespace: string, prefix?: string): Promise<readonly string[]>;
  /**
   * Stores `value` only when the key holds nothing, atomically for every writer of the same store (other
   * connections and processes included), and returns the value the key holds afterwards: `value` when
   * this call wrote it, the earlier value otherwise. Optional: a store that cannot make it atomic leaves
   * it out, and callers that need a compare-and-set (the server's session owners) say what they do then.
   */
  setIfAbsent?(namespace: string, key: string, value: JsonValue): Promise<JsonValue>;
}

/** What a file store knows about a file. */
export interface FileInfo {
  /** The file's path inside its bucket, e.g. `journal/2025-01-01.md`. */
  readonly path: string;
  /** Size in bytes. */
  readonly size: number;
  readonly createdAt: number;
  readonly updatedAt: number;
  /** JSON metadata written with the file (artifacts keep their tags here). */
  readonly metadata?: Readonly<Record<string, JsonValue>>;
}

/** A file with its bytes. */
export interface StoredFile {
  readonly info: FileInfo;
  readonly data: Uint8Array;
}

/**
 * The durable file port behind `ctx.host.files` and `ctx.artifacts`. A bucket is an opaque name (the
 * dispatcher uses one per session and one per agent); paths are validated by {@link assertFilePath}.
 * Implementations: {@link InMemoryFileStore} here, `SqliteFileStore` in `@helix-agents/store-sqlite`.
 */
export interface FileStore {
  /** The file (a fresh copy of its bytes), or undefined. */
  read(bucket: string, path: string): Promise<StoredFile | undefined>;
  /** Creates or replaces a file; `metadata` replaces the previous metadata (absent: none). */
  write(bucket: string, path: string, data: Uint8Array, metadata?: Readonly<Record<string, JsonValue>>): Promise<FileInfo>;
  /** Appends bytes, creating the file when it does not exist; metadata is kept. Cheap for journals. */
  append(bucket: string, path: string, data: Uint8Array): Promise<FileInfo>;
  /** Removes a file; true when it existed. */
  delete(bucket: string, path: string): Promise<boolean>;
  /** The bucket's files whose path starts with `prefix`, sorted by path. */
  list(bucket: string, prefix?: string): Promise<readonly FileInfo[]>;
}

const MAX_KEY = 1024;

/** Throws `hook_store_invalid_key` unless `key` is a non-empty string of at most 1,024 characters. */
export function assertKVKey(key: unknown): asserts key is string {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY) {
    throw new HookStoreError('hook_store_invalid_key', `A kv key must be a non-empty string of at most ${MAX_KEY} characters, got ${describe(key)}.`);
  }
}

/**
 * Throws `hook_store_invalid_path` unless `path` is relative and clean: segments separated by `/`,
 * none empty, `.` or `..`, no backslash or NUL, at most 1,024 characters.
 */
export function assertFilePath(path: unknown): asserts path is string {
  const ok =
    typeof path === 'string' &&
    path.length > 0 &&
    path.length <= MAX_KEY &&
    !path.includes('\\') &&
    !path.includes('\0') &&
    path.split('/').every((segment) => segment !== '' && segment !== '.' && segment !== '..');
  if (!ok) throw new HookStoreError('hook_store_invalid_path', `Invalid file path ${describe(path)}.`);
}

/**
 * Checks that `value` is plain JSON (what survives a JSON round trip unchanged) and returns it typed
 * as such; throws `hook_store_invalid_value` naming the offending path otherwise.
 */
export function toJsonValue(value: unknown): JsonValue {
  check(value, '$', new Set());
  return value as JsonValue;
}

function check(value: unknown, at: string, seen: Set<object>): void {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) invalid(at, `${value} is not a finite number`);
    return;
  }
  if (typeof value !== 'object') invalid(at, `a ${typeof value} is not JSON`);
  const object = value as object;
  if (seen.has(object)) invalid(at, 'the value is cyclic');
  seen.add(object);
  if (Array.isArray(object)) {
    object.forEach((item: unknown, i) => check(item, `${at}[${i}]`, seen));
  } else {
    const proto: unknown = Object.getPrototypeOf(object);
    // Dates, Maps and class instances would come back as something else after a round trip.
    if (proto !== Object.prototype && proto !== null) invalid(at, `a ${object.constructor?.name ?? 'non-plain'} object is not plain JSON`);
    for (const [key, item] of Object.entries(object)) check(item, `${at}.${key}`, seen);
  }
  seen.delete(object);
}

function invalid(at: string, why: string): never {
  throw new HookStoreError('hook_store_invalid_value', `Cannot store the value: at ${at}, ${why}.`, { details: { path: at } });
}

function describe(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value) : typeof value;
}
