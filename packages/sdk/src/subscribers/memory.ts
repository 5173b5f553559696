import type { FileInfo, FileStore, JsonValue, KVStore, StoredFile } from './ports.js';
import { assertFilePath, assertKVKey, toJsonValue } from './ports.js';

/** The in-memory {@link KVStore}: values are kept as JSON text, so callers never share objects with it. */
export class InMemoryKVStore implements KVStore {
  readonly #namespaces = new Map<string, Map<string, string>>();

  async get(namespace: string, key: string): Promise<JsonValue | undefined> {
    assertKVKey(key);
    const text = this.#namespaces.get(namespace)?.get(key);
    return text === undefined ? undefined : (JSON.parse(text) as JsonValue);
  }

  async set(namespace: string, key: string, value: JsonValue): Promise<void> {
    assertKVKey(key);
    const text = JSON.stringify(toJsonValue(value));
    let entries = this.#namespaces.get(namespace);
    if (!entries) {
      entries = new Map();
      this.#namespaces.set(namespace, entries);
    }
    entries.set(key, text);
  }

  async setIfAbsent(namespace: string, key: string, value: JsonValue): Promise<JsonValue> {
    assertKVKey(key);
    const text = this.#namespaces.get(namespace)?.get(key);
    if (text !== undefined) return JSON.parse(text) as JsonValue;
    await this.set(namespace, key, value);
    return JSON.parse(JSON.stringify(toJsonValue(value))) as JsonValue;
  }

  async delete(namespace: string, key: string): Promise<boolean> {
    assertKVKey(key);
    return this.#namespaces.get(namespace)?.delete(key) ?? false;
  }

  async list(namespace: string, prefix = ''): Promise<readonly string[]> {
    const keys = [...(this.#namespaces.get(namespace)?.keys() ?? [])].filter((key) => key.startsWith(prefix));
    return keys.sort(compare);
  }
}

interface MemoryFile {
  data: Uint8Array;
  info: FileInfo;
}

/** The in-memory {@link FileStore}: bytes are copied in and out. */
export class InMemoryFileStore implements FileStore {
  readonly #buckets = new Map<string, Map<string, MemoryFile>>();

  async read(bucket: string, path: string): Promise<StoredFile | undefined> {
    assertFilePath(path);
    const file = this.#buckets.get(bucket)?.get(path);
    return file ? { info: file.info, data: file.data.slice() } : undefined;
  }

  async write(bucket: string, path: string, data: Uint8Array, metadata?: Readonly<Record<string, JsonValue>>): Promise<FileInfo> {
    assertFilePath(path);
    const files = this.#bucket(bucket);
    const now = Date.now();
    const previous = files.get(path);
    const info = fileInfo(path, data.byteLength, previous?.info.createdAt ?? now, now, metadata === undefined ? undefined : cloneMetadata(metadata));
    files.set(path, { data: data.slice(), info });
    return info;
  }

  async append(bucket: string, path: string, data: Uint8Array): Promise<FileInfo> {
    assertFilePath(path);
    const files = this.#bucket(bucket);
    const previous = files.get(path);
    if (!previous) return this.write(bucket, path, data);
    const joined = new Uint8Array(previous.data.byteLength + data.byteLength);
    joined.set(previous.data, 0);
    joined.set(data, previous.data.byteLength);
    const info = fileInfo(path, joined.byteLength, previous.info.createdAt, Date.now(), previous.info.metadata);
    files.set(path, { data: joined, info });
    return info;
  }

  async delete(bucket: string, path: string): Promise<boolean> {
    assertFilePath(path);
    return this.#buckets.get(bucket)?.delete(path) ?? false;
  }

  async list(bucket: string, prefix = ''): Promise<readonly FileInfo[]> {
    const files = [...(this.#buckets.get(bucket)?.values() ?? [])].filter((file) => file.info.path.startsWith(prefix));
    return files.map((file) => file.info).sort((a, b) => compare(a.path, b.path));
  }

  #bucket(bucket: string): Map<string, MemoryFile> {
    let files = this.#buckets.get(bucket);
    if (!files) {
      files = new Map();
      this.#buckets.set(bucket, files);
    }
    return files;
  }
}

/** Builds a frozen {@link FileInfo} (shared by the store implementations). */
export function fileInfo(path: string, size: number, createdAt: number, updatedAt: number, metadata: Readonly<Record<string, JsonValue>> | undefined): FileInfo {
  return Object.freeze({ path, size, createdAt, updatedAt, ...(metadata === undefined ? {} : { metadata }) });
}

function cloneMetadata(metadata: Readonly<Record<string, JsonValue>>): Readonly<Record<string, JsonValue>> {
  return Object.freeze(JSON.parse(JSON.stringify(toJsonValue(metadata))) as Record<string, JsonValue>);
}

// UTF-16 code-unit order; SQLite's BINARY collation agrees on ASCII keys, so the stores list alike.
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
