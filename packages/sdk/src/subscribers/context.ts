import { randomUUID } from 'node:crypto';
import type { FileInfo, FileStore, JsonValue, KVStore } from './ports.js';
import { HookStoreError } from './errors.js';
import { InMemoryFileStore, InMemoryKVStore } from './memory.js';
import { assertFilePath, assertKVKey, toJsonValue } from './ports.js';

/** How a session talks: a conversation (`chat`, the default) or one job (`task`). */
export type SessionMode = 'chat' | 'task';

/** Why a session exists: real traffic (`live`, the default) or an evaluation (`eval`). */
export type SessionPurpose = 'live' | 'eval';

/**
 * Read-only facts about the session an event belongs to. `mode`, `purpose` and `title` come from the
 * metadata passed to `execute()`: `metadata.purpose === 'eval'` marks an eval session,
 * `metadata.mode === 'task'` a task session, `metadata.title` the title.
 */
export interface SessionInfo {
  readonly id: string;
  readonly mode: SessionMode;
  readonly purpose: SessionPurpose;
  readonly title?: string;
  readonly userId?: string;
  /** Set for a sub-agent's session. */
  readonly parentSessionId?: string;
  readonly tags: readonly string[];
  readonly metadata: Readonly<Record<string, string>>;
}

/** Durable JSON shared by every session of the agent. Prefix keys with `ctx.session.id` for per-session state. */
export interface HookKV {
  /** The stored value, or undefined. `T` is not checked: it is what you stored. */
  get<T = JsonValue>(key: string): Promise<T | undefined>;
  /** Stores plain JSON (throws `hook_store_invalid_value` for anything a JSON round trip would change). */
  set<T>(key: string, value: T): Promise<void>;
  /** Removes a key; true when it existed. */
  delete(key: string): Promise<boolean>;
  /** Keys starting with `prefix`, sorted. */
  list(prefix?: string): Promise<readonly string[]>;
}

/** Which files a call touches: this session's (the default) or the agent's, shared by every session (`deployment`). */
export interface FileScopeOptions {
  readonly scope?: 'session' | 'deployment';
}

/** Durable files bound to the session; pass `{ scope: 'deployment' }` for agent-wide files. */
export interface HookFiles {
  /** The file as UTF-8 text, or undefined. */
  read(path: string, options?: FileScopeOptions): Promise<string | undefined>;
  /** The file's bytes, or undefined. */
  readBytes(path: string, options?: FileScopeOptions): Promise<Uint8Array | undefined>;
  /** Creates or replaces a file (text is written as UTF-8). */
  write(path: string, content: string | Uint8Array, options?: FileScopeOptions): Promise<FileInfo>;
  /** Appends to a file, creating it when missing (a journal costs one small write per entry). */
  append(path: string, content: string | Uint8Array, options?: FileScopeOptions): Promise<FileInfo>;
  /** Removes a file; true when it existed. */
  delete(path: string, options?: FileScopeOptions): Promise<boolean>;
  /** Files whose path starts with `prefix`, sorted by path. */
  list(options?: FileScopeOptions & { readonly prefix?: string }): Promise<readonly FileInfo[]>;
}

/** An artifact's tags: `sessionId` and `turnId` are filled in by the facade. */
export interface ArtifactTags {
  readonly sessionId: string;
  readonly turnId?: string;
  readonly [tag: string]: string | undefined;
}

/** What `ctx.artifacts.create` takes. */
export interface ArtifactInput {
  readonly name: string;
  readonly content: string | Uint8Array;
  /** Default `text/plain; charset=utf-8` for text, `application/octet-stream` for bytes. */
  readonly mediaType?: string;
  /** Extra tags; `sessionId` and `turnId` always win. */
  readonly tags?: Readonly<Record<string, string>>;
}

/** A stored artifact (without its content). */
export interface Artifact {
  readonly id: string;
  readonly name: string;
  readonly mediaType: string;
  readonly size: number;
  readonly createdAt: number;
  readonly tags: ArtifactTags;
}

/** The session-bound artifacts facade: everything it creates is tagged with the session and the event's turn. */
export interface SessionArtifacts {
  /** `tags` plus the session's id and the event's turn id. */
  tag(tags?: Readonly<Record<string, string>>): ArtifactTags;
  /** Stores an artifact of this session. */
  create(input: ArtifactInput): Promise<Artifact>;
  /** This session's artifacts, oldest first. */
  list(): Promise<readonly Artifact[]>;
  /** One artifact of this session with its content, or undefined. */
  read(id: string): Promise<{ readonly artifact: Artifact; readonly content: Uint8Array } | undefined>;
}

/**
 * What a subscriber handler receives besides the event. Clients the runtime does not have (MCP,
 * GitHub, Slack, reminders, channels) are not part of it.
 */
export interface SessionHookContext {
  readonly session: SessionInfo;
  /** The agent the event belongs to. */
  readonly agent: { readonly name: string };
  /** The hook being called (its mounted name, e.g. `audit/usage` or `pack__usage`). */
  readonly hook: { readonly name: string };
  readonly host: {
    readonly kv: HookKV;
    readonly files: HookFiles;
  };
  readonly artifacts: SessionArtifacts;
  /** Absolute path of the local state root (the CLI's `.helix/`), when the host has one. Keep derived state in kv or files. */
  readonly stateRoot: string | undefined;
  /** Aborted when the dispatcher closes: pass it (with a timeout) to outbound calls. */
  readonly signal: AbortSignal;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function bytes(content: string | Uint8Array): Uint8Array {
  return typeof content === 'string' ? encoder.encode(content) : content;
}

/** The kv namespace of an agent. */
export function kvNamespace(agentName: string): string {
  return `agent/${encodeURIComponent(agentName)}`;
}

/** The file bucket of a session (`session` scope) or of its agent (`deployment` scope). */
export function fileBucket(agentName: string, sessionId: string, scope: 'session' | 'deployment'): string {
  return scope === 'deployment' ? `deployment/${encodeURIComponent(agentName)}` : `session/${encodeURIComponent(agentName)}/${encodeURIComponent(sessionId)}`;
}

/** The artifact bucket of a session. */
export function artifactBucket(agentName: string, sessionId: string): string {
  return `artifacts/${encodeURIComponent(agentName)}/${encodeURIComponent(sessionId)}`;
}

/** Builds the kv facade of one agent. */
export function createHookKV(store: KVStore, agentName: string): HookKV {
  const namespace = kvNamespace(agentName);
  return Object.freeze({
    get: async <T = JsonValue>(key: string) => {
      assertKVKey(key);
      return (await store.get(namespace, key)) as T | undefined;
    },
    set: async <T>(key: string, value: T) => {
      assertKVKey(key);
      await store.set(namespace, key, toJsonValue(value));
    },
    delete: async (key: string) => {
      assertKVKey(key);
      return store.delete(namespace, key);
    },
    list: async (prefix?: string) => store.list(namespace, prefix),
  });
}

/** Builds the files facade of one session. */
export function createHookFiles(store: FileStore, agentName: string, sessionId: string): HookFiles {
  const session = fileBucket(agentName, sessionId, 'session');
  const deployment = fileBucket(agentName, sessionId, 'deployment');
  const bucket = (options: FileScopeOptions | undefined): string => (options?.scope === 'deployment' ? deployment : session);
  return Object.freeze({
    read: async (path: string, options?: FileScopeOptions) => {
      assertFilePath(path);
      const file = await store.read(bucket(options), path);
      return file === undefined ? undefined : decoder.decode(file.data);
    },
    readBytes: async (path: string, options?: FileScopeOptions) => {
      assertFilePath(path);
      return (await store.read(bucket(options), path))?.data;
    },
    write: async (path: string, content: string | Uint8Array, options?: FileScopeOptions) => {
      assertFilePath(path);
      return store.write(bucket(options), path, bytes(content));
    },
    append: async (path: string, content: string | Uint8Array, options?: FileScopeOptions) => {
      assertFilePath(path);
      return store.append(bucket(options), path, bytes(content));
    },
    delete: async (path: string, options?: FileScopeOptions) => {
      assertFilePath(path);
      return store.delete(bucket(options), path);
    },
    list: async (options?: FileScopeOptions & { readonly prefix?: string }) => store.list(bucket(options), options?.prefix),
  });
}

function toArtifact(info: FileInfo, sessionId: string): Artifact {
  const meta = info.metadata ?? {};
  const tags = typeof meta['tags'] === 'object' && meta['tags'] !== null && !Array.isArray(meta['tags']) ? (meta['tags'] as Record<string, string>) : {};
  return Object.freeze({
    id: info.path,
    name: typeof meta['name'] === 'string' ? meta['name'] : info.path,
    mediaType: typeof meta['mediaType'] === 'string' ? meta['mediaType'] : 'application/octet-stream',
    size: info.size,
    createdAt: info.createdAt,
    tags: Object.freeze({ ...tags, sessionId }),
  });
}

let lastArtifactMs = 0;
let artifactSeq = 0;

/**
 * A sortable artifact id: milliseconds, then a counter within the millisecond, then a random part.
 * Artifacts list oldest first by path order, so two created in the same millisecond (or after the
 * clock stepped back) must still sort in creation order within this process.
 */
function nextArtifactId(): string {
  const now = Date.now();
  if (now > lastArtifactMs) {
    lastArtifactMs = now;
    artifactSeq = 0;
  } else {
    artifactSeq += 1;
  }
  return `${lastArtifactMs.toString(36).padStart(9, '0')}-${artifactSeq.toString(36).padStart(4, '0')}-${randomUUID()}`;
}

/** Builds the artifacts facade of one session, tagging with `turnId` (the event's turn). */
export function createSessionArtifacts(store: FileStore, agentName: string, sessionId: string, turnId: string | undefined): SessionArtifacts {
  const bucket = artifactBucket(agentName, sessionId);
  const tag = (tags?: Readonly<Record<string, string>>): ArtifactTags =>
    Object.freeze({ ...tags, sessionId, ...(turnId === undefined ? {} : { turnId }) });
  return Object.freeze({
    tag,
    create: async (input: ArtifactInput) => {
      if (typeof input.name !== 'string' || input.name === '') throw new HookStoreError('hook_store_invalid_value', 'An artifact needs a non-empty name.');
      const text = typeof input.content === 'string';
      const mediaType = input.mediaType ?? (text ? 'text/plain; charset=utf-8' : 'application/octet-stream');
      const id = nextArtifactId();
      const tags = tag(input.tags) as Readonly<Record<string, string>>;
      const info = await store.write(bucket, id, bytes(input.content), { name: input.name, mediaType, tags });
      return toArtifact(info, sessionId);
    },
    list: async () => (await store.list(bucket)).map((info) => toArtifact(info, sessionId)),
    read: async (id: string) => {
      assertFilePath(id);
      const file = await store.read(bucket, id);
      return file === undefined ? undefined : { artifact: toArtifact(file.info, sessionId), content: file.data };
    },
  });
}

/** What {@link createSessionHookContext} takes: only the session id and agent name are required. */
export interface SessionHookContextOptions {
  readonly session: Partial<SessionInfo> & { readonly id: string };
  readonly agentName: string;
  readonly hookName?: string;
  /** The turn artifacts are tagged with. */
  readonly turnId?: string;
  /** Default: a new in-memory store. */
  readonly kv?: KVStore;
  /** Default: a new in-memory store. */
  readonly files?: FileStore;
  readonly stateRoot?: string;
  readonly signal?: AbortSignal;
}

/**
 * A complete handler context over real (by default in-memory) kv and file stores, for unit tests
 * that call `hook.events[type](event, ctx)` directly and then inspect what the hook stored.
 */
export function createSessionHookContext(options: SessionHookContextOptions): SessionHookContext {
  const kv = options.kv ?? new InMemoryKVStore();
  const files = options.files ?? new InMemoryFileStore();
  const session: SessionInfo = Object.freeze({ mode: 'chat', purpose: 'live', tags: [], metadata: {}, ...options.session });
  return Object.freeze({
    session,
    agent: Object.freeze({ name: options.agentName }),
    hook: Object.freeze({ name: options.hookName ?? 'test' }),
    host: Object.freeze({ kv: createHookKV(kv, options.agentName), files: createHookFiles(files, options.agentName, session.id) }),
    artifacts: createSessionArtifacts(files, options.agentName, session.id, options.turnId),
    stateRoot: options.stateRoot,
    signal: options.signal ?? new AbortController().signal,
  });
}
