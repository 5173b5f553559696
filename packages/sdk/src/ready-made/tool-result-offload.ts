import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, mkdir, open, realpath } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { z } from 'zod';
import { defineTool, type ToolDefinition } from '../define.js';
import { ConfigError, ToolError } from '../errors.js';
import type { HookObject } from '../hooks/manager.js';
import { registerHookFactory, type SerializedHook } from '../hooks/serialize.js';
import type { AfterToolPayload, AfterToolResult, HookContext, HookPoint } from '../hooks/types.js';

/** Whether a tool's results are offloaded: always, never, or when longer than `maxChars` characters (strictly). */
export type OffloadPolicy = { readonly kind: 'always' } | { readonly kind: 'never' } | { readonly kind: 'over_chars'; readonly maxChars: number };

/** Offloads every successful result of the tool. */
export const AlwaysOffload: OffloadPolicy = Object.freeze({ kind: 'always' });

/** Never offloads the tool's results (opts a tool out of a `'*'` policy). */
export const NeverOffload: OffloadPolicy = Object.freeze({ kind: 'never' });

/** Offloads results longer than `maxChars` characters; a result of exactly `maxChars` stays in context. */
export function OffloadOverChars(maxChars: number): OffloadPolicy {
  if (!Number.isInteger(maxChars) || maxChars < 0) throw new ConfigError(`OffloadOverChars needs a non-negative integer, got ${String(maxChars)}.`);
  return Object.freeze({ kind: 'over_chars', maxChars });
}

/** True when `policy` offloads a result of this text. */
export function shouldOffload(policy: OffloadPolicy, text: string): boolean {
  switch (policy.kind) {
    case 'always':
      return true;
    case 'never':
      return false;
    case 'over_chars':
      return text.length > policy.maxChars;
  }
}

/** Who a stored result belongs to; stores may isolate results per session with it. */
export interface ToolResultScope {
  readonly sessionId: string;
  readonly runId: string;
}

/** The serialized form of a store, rebuilt by a factory registered with {@link registerToolResultStoreFactory}. */
export interface SerializedToolResultStore {
  readonly type: string;
  readonly config: unknown;
}

/** Where offloaded results go. `write` returns the reference the model sees; `read` takes it back. */
export interface ToolResultStore {
  write(key: string, content: string, scope: ToolResultScope): Promise<string>;
  /** Throws when the reference is unknown or not readable from this scope. */
  read(ref: string, scope: ToolResultScope): Promise<string>;
  /** Needed only to serialize a hook that uses the store. */
  toJSON?(): SerializedToolResultStore;
}

/** Options of {@link FileSystemToolResultStore}. */
export interface FileSystemToolResultStoreOptions {
  /** The directory results are written under; created on first write. */
  readonly dir: string;
  /**
   * Write each session's results to its own subfolder and read only from the caller's (default true), so
   * that on a shared server one user's model cannot read another session's results by guessing a reference.
   */
  readonly perSession?: boolean;
}

const NAME_MAX = 200;

/**
 * The file name of one id, injective and safe on any file system: every UTF-8 byte outside `[a-z0-9._~-]`
 * (uppercase letters too, so names that differ only by case stay apart on case-insensitive file systems),
 * `%` itself and a leading `.` become `%XX` (uppercase hex), so percent-decoding gives the id back and no
 * name is `.`, `..`, hidden or holds a separator. The empty id is `%`; a name longer than 200 characters
 * is cut and followed by `%~` and the SHA-256 of the id. Neither `%` alone nor `%~` comes out of the
 * escaping, so no two ids share a name.
 */
export function encodeFileName(id: string): string {
  if (id === '') return '%';
  let out = '';
  const bytes = Buffer.from(id, 'utf8');
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    const keep = (b >= 0x61 && b <= 0x7a) || (b >= 0x30 && b <= 0x39) || b === 0x5f || b === 0x2d || b === 0x7e || (b === 0x2e && i > 0);
    out += keep ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  if (out.length <= NAME_MAX) return out;
  return `${out.slice(0, 120)}%~${createHash('sha256').update(id, 'utf8').digest('hex')}`;
}

/** One part of an {@link offloadKey}: bytes outside `[A-Za-z0-9_-]` become `~XX`, so it never holds the `.` separator. */
function keyPart(part: string): string {
  let out = '';
  for (const b of Buffer.from(part, 'utf8')) {
    const keep = (b >= 0x61 && b <= 0x7a) || (b >= 0x41 && b <= 0x5a) || (b >= 0x30 && b <= 0x39) || b === 0x5f || b === 0x2d;
    out += keep ? String.fromCharCode(b) : `~${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

function isInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel !== '' && rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
}

function refused(ref: string, why: string): ToolError {
  return new ToolError('tool_failed', `'${ref}' is not an offloaded result of this session${why}.`, { details: { ref } });
}

/**
 * A {@link ToolResultStore} on the local file system: one UTF-8 file per result; references are absolute
 * paths. Session ids and keys become file names through {@link encodeFileName}, so distinct ids never share
 * a file and no id reaches outside the folder; a session folder or result file that is a symlink is refused.
 */
export class FileSystemToolResultStore implements ToolResultStore {
  readonly dir: string;
  readonly perSession: boolean;

  constructor(options: FileSystemToolResultStoreOptions) {
    if (typeof options?.dir !== 'string' || options.dir.trim() === '') throw new ConfigError('FileSystemToolResultStore needs { dir }.');
    this.dir = options.dir;
    this.perSession = options.perSession ?? true;
  }

  #root(scope: ToolResultScope): string {
    const base = resolve(this.dir);
    return this.perSession ? join(base, encodeFileName(scope.sessionId)) : base;
  }

  /** The real session folder, refused when it is a symlink (it could point out of the store's folder). */
  async #realRoot(scope: ToolResultScope, ref: string): Promise<string> {
    const realBase = await realpath(resolve(this.dir));
    if (!this.perSession) return realBase;
    const root = join(realBase, encodeFileName(scope.sessionId));
    const stat = await lstat(root);
    if (!stat.isDirectory()) throw refused(ref, ': its session folder is not a plain directory');
    return root;
  }

  /** The path of the file a key is written to: `<dir>/[<session>/]<key>`, both through {@link encodeFileName}. */
  pathOf(key: string, scope: ToolResultScope): string {
    return join(this.#root(scope), encodeFileName(key));
  }

  /** Writes `<dir>/[<session>/]<key>` (names encoded) and returns its absolute path; never follows a symlink out. */
  async write(key: string, content: string, scope: ToolResultScope): Promise<string> {
    const path = this.pathOf(key, scope);
    await mkdir(this.#root(scope), { recursive: true });
    const realRoot = await this.#realRoot(scope, path);
    const handle = await open(join(realRoot, encodeFileName(key)), constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, 0o600);
    try {
      await handle.writeFile(content, 'utf8');
    } finally {
      await handle.close();
    }
    return path;
  }

  /**
   * Reads a reference: an absolute path, a path relative to the session folder, or the key it was written
   * under. Anything whose real location is outside the caller's folder is refused.
   */
  async read(ref: string, scope: ToolResultScope): Promise<string> {
    const root = this.#root(scope);
    // A bare key (no separator) names the file it was written to; a path is taken as a path.
    const asKey = ref.includes('/') || ref.includes(sep) ? [] : [join(root, encodeFileName(ref))];
    const path = [resolve(ref), ...asKey, resolve(root, ref)].find((candidate) => isInside(root, candidate));
    if (path === undefined) throw refused(ref, '');
    try {
      const realRoot = await this.#realRoot(scope, ref);
      const real = await realpath(path);
      if (!isInside(realRoot, real)) throw refused(ref, '');
      const handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW);
      try {
        return await handle.readFile('utf8');
      } finally {
        await handle.close();
      }
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') throw new ToolError('tool_failed', `No offloaded result found at '${ref}'.`, { details: { ref } });
      throw error;
    }
  }

  /** `{ type: 'filesystem', config: { dir, perSession } }`. */
  toJSON(): SerializedToolResultStore {
    return { type: 'filesystem', config: { dir: this.dir, perSession: this.perSession } };
  }
}

const storeFactories = new Map<string, (config: unknown) => ToolResultStore>([
  [
    'filesystem',
    (config) => {
      const parsed = z.object({ dir: z.string().min(1), perSession: z.boolean().optional() }).safeParse(config);
      if (!parsed.success) throw new ConfigError(`Invalid filesystem store configuration: ${z.prettifyError(parsed.error)}`);
      return new FileSystemToolResultStore(parsed.data);
    },
  ],
]);

/** Registers how to rebuild a custom store from its `toJSON()` output (for serialized offload hooks). */
export function registerToolResultStoreFactory(type: string, factory: (config: unknown) => ToolResultStore): void {
  if (storeFactories.has(type)) throw new ConfigError(`A tool result store factory for "${type}" is already registered.`, { type });
  storeFactories.set(type, factory);
}

/** Rebuilds a store from `{ type, config }`. */
export function toolResultStoreFromJSON(json: SerializedToolResultStore): ToolResultStore {
  const factory = storeFactories.get(json.type);
  if (!factory) throw new ConfigError(`No tool result store factory is registered for "${json.type}". Known types: ${[...storeFactories.keys()].join(', ')}.`, { type: json.type });
  return factory(json.config);
}

/** The pointer that replaces an offloaded result (Haystack's format: the ellipsis only when the preview is cut). */
export function offloadPointer(ref: string, text: string, previewChars: number): string {
  const preview = text.slice(0, previewChars);
  return `Tool result offloaded to '${ref}' (${text.length} characters). Preview: ${preview}${text.length > previewChars ? '...' : ''}`;
}

const POINTER = /^Tool result offloaded to '[^']*' \(\d+ characters\)\. Preview: /;

/** True for a pointer this hook wrote, so a second offload hook never offloads a pointer. */
export function isOffloadPointer(value: unknown): boolean {
  return typeof value === 'string' && POINTER.test(value);
}

/** The text form of a result: strings as they are, other JSON values compact; undefined when there is nothing to store. */
function offloadableText(result: unknown): string | undefined {
  if (typeof result === 'string') return result;
  if (result === undefined || result === null) return undefined;
  try {
    return JSON.stringify(result);
  } catch {
    return undefined;
  }
}

/**
 * The store key of a result: `{step}.{tool}.{callId}.txt`, step being the 0-based index of the step that ran
 * it; bytes of the tool name and call id outside `[A-Za-z0-9_-]` become `~XX`, so distinct calls get distinct keys.
 */
export function offloadKey(stepIndex: number, toolName: string, toolCallId: string): string {
  return `${stepIndex}.${keyPart(toolName)}.${keyPart(toolCallId)}.txt`;
}

/** The custom event a {@link ToolResultOffloadHook} emits per offloaded result. */
export interface ToolResultOffloadedEvent {
  readonly toolCallId: string;
  readonly toolName: string;
  readonly ref: string;
  readonly chars: number;
}

/** The name of the custom event carrying a {@link ToolResultOffloadedEvent}. */
export const TOOL_RESULT_OFFLOADED_EVENT = 'tool_result_offloaded';

/** Options of {@link createToolResultOffloadHook}. */
export interface ToolResultOffloadHookOptions {
  readonly store: ToolResultStore;
  /** A policy per tool name; `'*'` covers tools without their own entry. Tools with neither are never offloaded. */
  readonly policies: Readonly<Record<string, OffloadPolicy>>;
  /** Characters of the result kept in the pointer (default 200). */
  readonly previewChars?: number;
}

/** The serialized type of {@link ToolResultOffloadHook} (`hookFromJSON` rebuilds it). */
export const TOOL_RESULT_OFFLOAD_HOOK_TYPE = '@helix-agents/sdk/ToolResultOffloadHook';

const readTools = new WeakSet<ToolDefinition>();

const PolicySchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('always') }),
  z.object({ kind: z.literal('never') }),
  z.object({ kind: z.literal('over_chars'), maxChars: z.number().int().min(0) }),
]);

const ConfigSchema = z.object({
  store: z.object({ type: z.string(), config: z.unknown() }),
  policies: z.record(z.string(), PolicySchema),
  previewChars: z.number().int().min(0).optional(),
});

/**
 * An afterTool hook that writes large tool results to a store and gives the model a compact pointer
 * instead (afterTool's `{ result }`: the model and the step commit see the pointer). Error and blocked
 * results, results already offloaded, and tools without a policy are left alone.
 */
export class ToolResultOffloadHook implements HookObject {
  /** Only afterTool: it rewrites a result that exists. */
  readonly allowedHookPoints: readonly HookPoint[] = Object.freeze(['afterTool'] as const);
  readonly store: ToolResultStore;
  readonly policies: Readonly<Record<string, OffloadPolicy>>;
  readonly previewChars: number;

  constructor(options: ToolResultOffloadHookOptions) {
    if (typeof options?.store?.write !== 'function' || typeof options.store.read !== 'function') {
      throw new ConfigError('createToolResultOffloadHook needs a store with write() and read() (e.g. new FileSystemToolResultStore({ dir })).');
    }
    const policies: Record<string, OffloadPolicy> = {};
    for (const [tool, policy] of Object.entries(options.policies ?? {})) {
      const parsed = PolicySchema.safeParse(policy);
      if (!parsed.success) throw new ConfigError(`The offload policy for "${tool}" must be AlwaysOffload, NeverOffload or OffloadOverChars(n).`, { tool });
      policies[tool] = policy;
    }
    const previewChars = options.previewChars ?? 200;
    if (!Number.isInteger(previewChars) || previewChars < 0) throw new ConfigError(`previewChars must be a non-negative integer, got ${String(options.previewChars)}.`);
    this.store = options.store;
    this.policies = Object.freeze(policies);
    this.previewChars = previewChars;
  }

  /** The policy of a tool: its own entry, then `'*'` (which never covers the read-back tool, or reading would loop). */
  policyFor(tool: ToolDefinition): OffloadPolicy | undefined {
    const own = this.policies[tool.name];
    if (own !== undefined) return own;
    return readTools.has(tool) ? undefined : this.policies['*'];
  }

  /** Offloads the result when its policy says so and replaces it with the pointer. */
  async afterTool(payload: AfterToolPayload, ctx: HookContext): Promise<AfterToolResult | undefined> {
    if (!payload.success || payload.blocked || isOffloadPointer(payload.result)) return undefined;
    const policy = this.policyFor(payload.tool);
    if (!policy || policy.kind === 'never') return undefined;
    const text = offloadableText(payload.result);
    if (text === undefined || !shouldOffload(policy, text)) return undefined;
    const { toolCall } = payload;
    const key = offloadKey(ctx.stepCount, toolCall.name, toolCall.id);
    let ref: string;
    try {
      ref = await this.store.write(key, text, { sessionId: ctx.sessionId, runId: ctx.runId });
    } catch (error) {
      // Losing an offload only costs context; the full result stays and a warning says why.
      await ctx.emit({
        type: 'warning',
        errorInfo: {
          code: 'tool_result_offload_failed',
          layer: 'hook',
          severity: 'warning',
          message: `The result of '${toolCall.name}' could not be offloaded and stays in the conversation: ${error instanceof Error ? error.message : String(error)}`,
          retryable: false,
          details: { tool: toolCall.name, toolCallId: toolCall.id, key },
        },
      });
      return undefined;
    }
    await ctx.emitCustom(TOOL_RESULT_OFFLOADED_EVENT, { toolCallId: toolCall.id, toolName: toolCall.name, ref, chars: text.length } satisfies ToolResultOffloadedEvent);
    return { result: offloadPointer(ref, text, this.previewChars) };
  }

  /** `{ type, config: { store, policies, previewChars } }`; throws a ConfigError when the store has no toJSON(). */
  toJSON(): SerializedHook {
    if (typeof this.store.toJSON !== 'function') {
      throw new ConfigError('This ToolResultOffloadHook cannot be serialized: its store has no toJSON().');
    }
    return { type: TOOL_RESULT_OFFLOAD_HOOK_TYPE, config: { store: this.store.toJSON(), policies: { ...this.policies }, previewChars: this.previewChars } };
  }

  /** Rebuilds a hook from the `config` of its `toJSON()`. */
  static fromJSON(config: unknown): ToolResultOffloadHook {
    const parsed = ConfigSchema.safeParse(config);
    if (!parsed.success) throw new ConfigError(`Invalid ToolResultOffloadHook configuration: ${z.prettifyError(parsed.error)}`);
    const { store, policies, previewChars } = parsed.data;
    return new ToolResultOffloadHook({ store: toolResultStoreFromJSON(store), policies, ...(previewChars === undefined ? {} : { previewChars }) });
  }
}

registerHookFactory(TOOL_RESULT_OFFLOAD_HOOK_TYPE, (config) => ToolResultOffloadHook.fromJSON(config));

/** Creates a {@link ToolResultOffloadHook}; give the agent {@link createReadOffloadedResultTool} so the model can read results back. */
export function createToolResultOffloadHook(options: ToolResultOffloadHookOptions): ToolResultOffloadHook {
  return new ToolResultOffloadHook(options);
}

/** Options of {@link createReadOffloadedResultTool}. */
export interface ReadOffloadedResultToolOptions {
  /** The tool's name (default `read_offloaded_result`). */
  readonly name?: string;
  /** The most characters one call returns (default 20,000), so reading back cannot flood the context at once. */
  readonly maxChars?: number;
}

/** What the model passes to the read-back tool. */
export interface ReadOffloadedResultInput {
  readonly ref: string;
  readonly offset?: number;
  readonly length?: number;
}

/** What the read-back tool returns. */
export interface ReadOffloadedResultOutput {
  readonly ref: string;
  /** The offset of `content` in the full result. */
  readonly offset: number;
  readonly content: string;
  readonly totalChars: number;
  /** Where the next part starts; absent when `content` reaches the end. */
  readonly nextOffset?: number;
}

/** A tool the model calls to read an offloaded result back, whole or by `offset` / `length`. */
export function createReadOffloadedResultTool(store: ToolResultStore, options: ReadOffloadedResultToolOptions = {}): ToolDefinition<ReadOffloadedResultInput, ReadOffloadedResultOutput> {
  const maxChars = options.maxChars ?? 20_000;
  if (!Number.isInteger(maxChars) || maxChars < 1) throw new ConfigError(`maxChars must be a positive integer, got ${String(options.maxChars)}.`);
  const tool = defineTool({
    name: options.name ?? 'read_offloaded_result',
    description:
      `Reads back a tool result that was offloaded (the conversation shows "Tool result offloaded to '<ref>'"). ` +
      `Pass the ref; use offset and length to read a long result in parts (at most ${maxChars} characters per call).`,
    inputSchema: z.object({
      ref: z.string().min(1).describe('The reference from the offload pointer.'),
      offset: z.number().int().min(0).optional().describe('The first character to read (default 0).'),
      length: z.number().int().min(1).optional().describe(`How many characters to read (default and maximum ${maxChars}).`),
    }),
    execute: async (input, ctx): Promise<ReadOffloadedResultOutput> => {
      const text = await store.read(input.ref, { sessionId: ctx.sessionId, runId: ctx.runId });
      const offset = Math.min(input.offset ?? 0, text.length);
      const end = Math.min(text.length, offset + Math.min(input.length ?? maxChars, maxChars));
      return { ref: input.ref, offset, content: text.slice(offset, end), totalChars: text.length, ...(end < text.length ? { nextOffset: end } : {}) };
    },
  });
  readTools.add(tool);
  return tool;
}
