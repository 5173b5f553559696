import { ConfigError } from '../errors.js';
import { guard } from '../hooks/manager.js';
import type { AgentHooks, AfterToolPayload, AfterToolResult, BeforeLLMCallPayload, BeforeLLMCallResult, HookContext } from '../hooks/types.js';
import type { Message } from '../messages.js';
import type { JournalEntry, StateStore } from '../store.js';
import type { StreamChunkInput, StreamManager, StreamWriter } from '../stream.js';
import type { ToolResultStore } from './tool-result-offload.js';

/** One thing to redact: what it is (reported in counts) and how to find it. */
export interface RedactionPattern {
  /** Reported in the `redaction` event, e.g. `email`. */
  readonly kind: string;
  /** Matched globally (a missing `g` flag is added). Use a lookbehind to keep a prefix such as `Bearer `. */
  readonly pattern: RegExp;
  /** Rejects a match that only looks right (a card number whose Luhn check fails). */
  readonly validate?: (match: string) => boolean;
}

/** Options of {@link createRedactor} and {@link createRedactionHook}. */
export interface RedactionOptions {
  /** Your own patterns, applied before the built-in ones; a bare RegExp reports kind `custom`. */
  readonly patterns?: readonly (RedactionPattern | RegExp)[];
  /** API keys, cloud keys, tokens, private keys, passwords in URLs and assignments, secret-named fields (default true). */
  readonly redactSecrets?: boolean;
  /** Emails, phone numbers, card numbers (Luhn-checked), IBANs (checksum-checked), US SSNs (default true). */
  readonly redactPII?: boolean;
  /** What a match becomes (default `[REDACTED]`); a function gets the kind, e.g. `(kind) => `[${kind}]``. */
  readonly replacement?: string | ((kind: string) => string);
}

/** A redacted value and what was redacted in it. */
export interface RedactionResult<T> {
  /** The redacted value; the very same value when nothing was redacted. */
  readonly value: T;
  readonly count: number;
  /** Redactions per kind. */
  readonly kinds: Readonly<Record<string, number>>;
}

/** Redacts strings and JSON values with one set of patterns. */
export interface Redactor {
  redactText(text: string): RedactionResult<string>;
  /** Redacts every string inside a JSON value (and, with secrets on, the values of secret-named fields). */
  redactValue<T>(value: T): RedactionResult<T>;
}

/** The Luhn checksum of a string of digits (card numbers); false for anything that is not 2+ digits. */
export function luhnCheck(digits: string): boolean {
  if (!/^\d{2,}$/.test(digits)) return false;
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

/** The ISO 13616 mod-97 check of an IBAN (spaces allowed). */
export function ibanCheck(iban: string): boolean {
  const compact = iban.replace(/ /g, '').toUpperCase();
  if (!/^[A-Z]{2}\d{2}[A-Z0-9]{11,30}$/.test(compact)) return false;
  const rearranged = compact.slice(4) + compact.slice(0, 4);
  let remainder = 0;
  for (const char of rearranged) {
    const code = char.charCodeAt(0);
    const value = code >= 65 ? String(code - 55) : char;
    for (const digit of value) remainder = (remainder * 10 + (digit.charCodeAt(0) - 48)) % 97;
  }
  return remainder === 1;
}

const digitsOf = (text: string): string => text.replace(/\D/g, '');

/** The built-in secret patterns, in priority order (earlier patterns win overlaps). */
export const SECRET_PATTERNS: readonly RedactionPattern[] = Object.freeze([
  { kind: 'private_key', pattern: /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----/g },
  { kind: 'aws_access_key', pattern: /\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b/g },
  { kind: 'aws_secret_key', pattern: /(?<=\baws_?secret_?access_?key["']?\s*[:=]\s*["']?)[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])/gi },
  { kind: 'api_key', pattern: /\bsk-[A-Za-z0-9_-]{20,}/g },
  { kind: 'api_key', pattern: /\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}\b/g },
  { kind: 'api_key', pattern: /\bAIza[0-9A-Za-z_-]{35}/g },
  { kind: 'github_token', pattern: /\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})/g },
  { kind: 'slack_token', pattern: /\bxox[abposr]-[A-Za-z0-9-]{10,}/g },
  { kind: 'jwt', pattern: /\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}/g },
  { kind: 'bearer_token', pattern: /(?<=\bBearer\s+)[A-Za-z0-9._~+/-]{16,}=*/gi },
  { kind: 'url_password', pattern: /(?<=\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]+:)[^\s@/]+(?=@)/gi },
  {
    kind: 'credential',
    pattern: /(?<=\b(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret)["']?\s*[:=]\s*["']?)[^\s"',;]{6,}/gi,
  },
]);

/** The built-in PII patterns, in priority order. */
export const PII_PATTERNS: readonly RedactionPattern[] = Object.freeze([
  {
    kind: 'credit_card',
    pattern: /(?<![\d-])(?:\d[ -]?){12,18}\d(?!\d)/g,
    validate: (match: string) => {
      const digits = digitsOf(match);
      return digits.length >= 13 && digits.length <= 19 && luhnCheck(digits);
    },
  },
  { kind: 'iban', pattern: /\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b/g, validate: ibanCheck },
  { kind: 'ssn', pattern: /\b(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}\b/g },
  { kind: 'email', pattern: /\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b/g },
  {
    kind: 'phone',
    pattern: /(?<![\w+])\+\d{1,3}(?:[ .-]?\(?\d{1,4}\)?){2,5}(?!\w)/g,
    validate: (match: string) => {
      const n = digitsOf(match).length;
      return n >= 8 && n <= 15;
    },
  },
  { kind: 'phone', pattern: /(?<![\w.+-])(?:\(\d{3}\) ?|\d{3}[ .-])\d{3}[ .-]\d{4}(?![\w-]|\.\d)/g },
]);

// Field names whose string values are secrets whatever they look like.
const SECRET_FIELD = /^(?:password|passwd|pwd|secret|client_?secret|api_?key|apikey|access_?token|auth_?token|refresh_?token|private_?key|authorization|x_?api_?key)$/i;

interface Range {
  readonly start: number;
  readonly end: number;
  readonly kind: string;
}

function globalCopy(pattern: RegExp): RegExp {
  return new RegExp(pattern.source, pattern.flags.includes('g') ? pattern.flags : `${pattern.flags}g`);
}

/** Builds a {@link Redactor}; all patterns are found in the original text, so a replacement is never matched again. */
export function createRedactor(options: RedactionOptions = {}): Redactor {
  const custom = (options.patterns ?? []).map((p): RedactionPattern => {
    if (p instanceof RegExp) return { kind: 'custom', pattern: p };
    if (typeof p !== 'object' || p === null || !(p.pattern instanceof RegExp) || typeof p.kind !== 'string') {
      throw new ConfigError('A redaction pattern must be a RegExp or { kind, pattern: RegExp, validate? }.');
    }
    return p;
  });
  const redactSecrets = options.redactSecrets ?? true;
  const patterns = [...custom, ...(redactSecrets ? SECRET_PATTERNS : []), ...((options.redactPII ?? true) ? PII_PATTERNS : [])].map((p) => ({
    ...p,
    pattern: globalCopy(p.pattern),
  }));
  const replacement = options.replacement ?? '[REDACTED]';
  const replace = typeof replacement === 'function' ? replacement : () => replacement;

  function redactText(text: string): RedactionResult<string> {
    const ranges: Range[] = [];
    for (const { kind, pattern, validate } of patterns) {
      pattern.lastIndex = 0;
      for (const match of text.matchAll(pattern)) {
        const start = match.index;
        const end = start + match[0].length;
        if (end === start) continue;
        if (validate && !validate(match[0])) continue;
        // Earlier patterns win: a card number inside a private key block is one redaction, not two.
        if (ranges.some((r) => start < r.end && end > r.start)) continue;
        ranges.push({ start, end, kind });
      }
    }
    if (ranges.length === 0) return { value: text, count: 0, kinds: {} };
    ranges.sort((a, b) => a.start - b.start);
    const kinds: Record<string, number> = {};
    let out = '';
    let at = 0;
    for (const r of ranges) {
      out += text.slice(at, r.start) + replace(r.kind);
      at = r.end;
      kinds[r.kind] = (kinds[r.kind] ?? 0) + 1;
    }
    return { value: out + text.slice(at), count: ranges.length, kinds };
  }

  function redactValue<T>(value: T): RedactionResult<T> {
    const kinds: Record<string, number> = {};
    let count = 0;
    const add = (r: RedactionResult<unknown>): void => {
      count += r.count;
      for (const [kind, n] of Object.entries(r.kinds)) kinds[kind] = (kinds[kind] ?? 0) + n;
    };
    const walk = (v: unknown): unknown => {
      if (typeof v === 'string') {
        const r = redactText(v);
        add(r);
        return r.value;
      }
      if (Array.isArray(v)) {
        let changed = false;
        const next = v.map((item) => {
          const out = walk(item);
          if (out !== item) changed = true;
          return out;
        });
        return changed ? next : v;
      }
      if (typeof v === 'object' && v !== null && (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null)) {
        let changed = false;
        const next: Record<string, unknown> = {};
        for (const [key, item] of Object.entries(v)) {
          let out: unknown;
          if (redactSecrets && typeof item === 'string' && item !== '' && SECRET_FIELD.test(key.replace(/-/g, '_'))) {
            out = replace('secret_field');
            add({ value: out, count: 1, kinds: { secret_field: 1 } });
          } else {
            out = walk(item);
          }
          if (out !== item) changed = true;
          next[key] = out;
        }
        return changed ? next : v;
      }
      return v;
    };
    const out = walk(value) as T;
    return { value: count === 0 ? value : out, count, kinds };
  }

  return { redactText, redactValue };
}

/** The custom event the redaction hook emits when it redacted something (never the redacted text itself). */
export interface RedactionEvent {
  readonly point: 'beforeLLMCall' | 'afterTool';
  readonly count: number;
  readonly kinds: Readonly<Record<string, number>>;
  readonly toolCallId?: string;
  readonly toolName?: string;
}

/** The name of the custom event carrying a {@link RedactionEvent}. */
export const REDACTION_EVENT = 'redaction';

/** The hooks {@link createRedactionHook} returns. */
export type RedactionHooks<TState = unknown, TOutput = unknown> = Required<Pick<AgentHooks<TState, TOutput>, 'beforeLLMCall' | 'afterTool'>>;

function redactMessage(redactor: Redactor, message: Message): RedactionResult<Message> {
  switch (message.role) {
    case 'system':
    case 'user': {
      const r = redactor.redactText(message.content);
      return r.count === 0 ? { ...r, value: message } : { ...r, value: { ...message, content: r.value } };
    }
    case 'assistant': {
      const r = redactor.redactValue({ content: message.content, reasoning: message.reasoning, args: message.toolCalls?.map((c) => c.arguments) });
      if (r.count === 0) return { ...r, value: message };
      const { content, reasoning, args } = r.value;
      return {
        ...r,
        value: {
          ...message,
          content,
          ...(reasoning === undefined ? {} : { reasoning }),
          ...(message.toolCalls === undefined ? {} : { toolCalls: message.toolCalls.map((c, i) => ({ ...c, arguments: args?.[i] })) }),
        },
      };
    }
    case 'tool': {
      const r = redactor.redactValue(message.content);
      return r.count === 0 ? { ...r, value: message } : { ...r, value: { ...message, content: r.value } };
    }
  }
}

/**
 * Redacts secrets and PII: beforeLLMCall returns `{ messages }` with the outgoing messages redacted (this
 * call only, C4: the stored conversation keeps the user's words), and afterTool returns `{ result }` with
 * successful tool results redacted, so the stored row is redacted too. Each handler fails closed: a
 * redaction that throws must not let the unredacted text through, whatever the manager's policy.
 * Counts go to the stream as `redaction` custom events. The input, tool arguments and state are written
 * before or outside these hooks: add {@link createRedactingStores} (and {@link createRedactingTracerProvider})
 * to redact every place a value is written.
 */
export function createRedactionHook<TState = unknown, TOutput = unknown>(options: RedactionOptions = {}): RedactionHooks<TState, TOutput> {
  const redactor = createRedactor(options);
  // Messages are immutable once appended, so each is redacted once, not on every model call.
  const cache = new WeakMap<Message, RedactionResult<Message>>();

  const beforeLLMCall = async (payload: BeforeLLMCallPayload, ctx: HookContext<TState, TOutput>): Promise<BeforeLLMCallResult | undefined> => {
    let count = 0;
    const kinds: Record<string, number> = {};
    const messages = payload.messages.map((message) => {
      let r = cache.get(message);
      if (!r) {
        r = redactMessage(redactor, message);
        cache.set(message, r);
      }
      count += r.count;
      for (const [kind, n] of Object.entries(r.kinds)) kinds[kind] = (kinds[kind] ?? 0) + n;
      return r.value;
    });
    if (count === 0) return undefined;
    await ctx.emitCustom(REDACTION_EVENT, { point: 'beforeLLMCall', count, kinds } satisfies RedactionEvent);
    return { messages };
  };

  const afterTool = async (payload: AfterToolPayload, ctx: HookContext<TState, TOutput>): Promise<AfterToolResult | undefined> => {
    // A `{ result }` on a failed call would store it as a success; its error text is redacted on the way out by beforeLLMCall.
    if (!payload.success) return undefined;
    const r = redactor.redactValue(payload.result);
    if (r.count === 0) return undefined;
    await ctx.emitCustom(REDACTION_EVENT, {
      point: 'afterTool',
      count: r.count,
      kinds: r.kinds,
      toolCallId: payload.toolCall.id,
      toolName: payload.toolCall.name,
    } satisfies RedactionEvent);
    return { result: r.value };
  };

  return {
    beforeLLMCall: guard(beforeLLMCall, { name: 'redaction', onError: 'fail-closed' }),
    afterTool: guard(afterTool, { name: 'redaction', onError: 'fail-closed' }),
  };
}

/** The stores {@link createRedactingStores} wraps. */
export interface RedactableStores<S extends StateStore = StateStore, M extends StreamManager = StreamManager> {
  readonly stateStore: S;
  readonly streamManager: M;
}

/**
 * Wraps a state store and a stream manager so that every value written through them is redacted first:
 * every argument of every state-store call (run starts with the user's input, step commits with the
 * assistant's tool-call arguments, tool results and state, checkpoints, journal entries) and every chunk a
 * stream writer writes (`run_started` with the input, `actions_requested`, `tool_start`, `tool_end`,
 * `state_patch`, `end`, ...). The hooks cannot reach those places: the input is stored and streamed before
 * any hook runs, and a tool must still receive its real arguments. The run itself keeps working on the
 * clear values in memory; only what is written is redacted, so readers (a UI, subscribers, a later load
 * of the session) see the redacted form. Give the wrapped stores to the executor:
 * `new JSAgentExecutor(redacted.stateStore, redacted.streamManager, adapter)`.
 */
export function createRedactingStores<S extends StateStore, M extends StreamManager>(stores: RedactableStores<S, M>, options: RedactionOptions | Redactor = {}): { readonly stateStore: S; readonly streamManager: M } {
  const redactor = redactorOf(options);
  const redactArgs = (args: unknown[]): unknown[] => args.map((arg) => redactor.redactValue(arg).value);
  const stateStore = new Proxy(stores.stateStore, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (prop === 'appendJournal') return (entry: JournalEntry) => appendJournal(target, entry);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => (value as (...a: unknown[]) => unknown).apply(target, redactArgs(args));
    },
  });
  // A store returns the very entry it was given when it wrote it, and an earlier entry of the key when
  // one exists (the journal's "first record wins"). The redacted copy it wrote is not the caller's entry,
  // which the run would take for another writer's record and go on with: a side-effecting tool would get
  // the redacted arguments of a journaled model reply. The entry written is handed back as the caller's.
  const appendJournal = async (target: StateStore, entry: JournalEntry): Promise<JournalEntry> => {
    const written = redactor.redactValue(entry).value;
    const stored = await target.appendJournal(written);
    return stored === written ? entry : stored;
  };
  const wrapWriter = (writer: StreamWriter): StreamWriter => ({
    get startSeq() {
      return writer.startSeq;
    },
    get owned() {
      return writer.owned;
    },
    write: (chunk) => writer.write(redactor.redactValue(chunk).value),
    // Queued chunks are redacted as written ones are; a writer without queue() keeps none.
    ...(writer.queue === undefined ? {} : { queue: (chunk: StreamChunkInput) => writer.queue?.(redactor.redactValue(chunk).value) }),
  });
  const streamManager = new Proxy(stores.streamManager, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (prop === 'claim') return async (streamId: string, runId: string) => wrapWriter(await target.claim(streamId, runId));
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => (value as (...a: unknown[]) => unknown).apply(target, args);
    },
  });
  return { stateStore, streamManager };
}

/** The part of an OpenTelemetry span {@link createRedactingTracerProvider} intercepts (structural: the SDK has no OpenTelemetry dependency). */
interface SpanLike {
  setAttribute(key: string, value: unknown): unknown;
  setAttributes(attributes: Record<string, unknown>): unknown;
  addEvent(name: string, attributesOrTime?: unknown, time?: unknown): unknown;
  setStatus(status: { readonly code: number; readonly message?: string }): unknown;
  recordException(exception: unknown, time?: unknown): unknown;
  updateName(name: string): unknown;
}

/** The part of an OpenTelemetry tracer it intercepts. */
interface TracerLike {
  startSpan(name: string, options?: { readonly attributes?: Record<string, unknown> }, context?: unknown): SpanLike;
}

/** A Redactor as given, or one made from options. */
function redactorOf(options: RedactionOptions | Redactor): Redactor {
  return 'redactValue' in options && typeof options.redactValue === 'function' ? options : createRedactor(options as RedactionOptions);
}

/**
 * Wraps a {@link ToolResultStore} (where the offload hook writes whole tool results: files, a bucket) so that
 * what it stores is redacted: an offloaded result is a place a value is written too, and
 * `createRedactingStores` does not reach it. The reference the model sees is the inner store's; reading a
 * result back (`createReadOffloadedResultTool`) gives the redacted text. The wrapper has no `toJSON`: a hook
 * rebuilt from its configuration would lose the redaction, so a hook that uses it cannot be serialized.
 */
export function createRedactingToolResultStore(store: ToolResultStore, options: RedactionOptions | Redactor = {}): ToolResultStore {
  const redactor = redactorOf(options);
  return {
    write: (key, content, scope) => store.write(key, redactor.redactText(content).value, scope),
    read: (ref, scope) => store.read(ref, scope),
  };
}

/** The part of an OpenTelemetry tracer provider it intercepts. */
export interface RedactableTracerProvider {
  getTracer(name: string, version?: string, options?: unknown): unknown;
}

/**
 * Wraps an OpenTelemetry tracer provider so that everything set on a span through its tracers is
 * redacted: attributes and event attributes (strings, string arrays, JSON text such as
 * `gen_ai.tool.call.arguments`), the status message (an error's text), recorded exceptions and names. Pass
 * it as `createOtelHooks({ tracerProvider: createRedactingTracerProvider(provider) })`. Tracing hooks read
 * the hook payloads, which carry the clear values the run works on (the tool's real arguments, the
 * user's input), so their spans are redacted on the way out instead.
 */
export function createRedactingTracerProvider<P extends RedactableTracerProvider>(provider: P, options: RedactionOptions | Redactor = {}): P {
  const redactor = redactorOf(options);
  const attribute = (value: unknown): unknown => {
    if (typeof value === 'string') return redactor.redactText(value).value;
    if (Array.isArray(value)) return value.map((item) => (typeof item === 'string' ? redactor.redactText(item).value : item));
    return value;
  };
  const attributes = (value: unknown): unknown => {
    if (typeof value !== 'object' || value === null || Array.isArray(value) || value instanceof Date) return value;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, attribute(v)]));
  };
  // An exception is a string or an object with message, name, stack and code (OpenTelemetry's Exception).
  const exception = (value: unknown): unknown => {
    if (typeof value === 'string') return redactor.redactText(value).value;
    if (typeof value !== 'object' || value === null) return value;
    const { message, name, stack, code } = value as { message?: unknown; name?: unknown; stack?: unknown; code?: unknown };
    return Object.fromEntries(Object.entries({ message, name, stack, code }).filter(([, v]) => v !== undefined).map(([k, v]) => [k, attribute(v)]));
  };
  const wrapSpan = (span: SpanLike): SpanLike => {
    const proxy: SpanLike = new Proxy(span, {
      get(target, prop) {
        const value: unknown = Reflect.get(target, prop, target);
        if (prop === 'setAttribute') return (key: string, v: unknown) => (target.setAttribute(key, attribute(v)), proxy);
        if (prop === 'setAttributes') return (attrs: Record<string, unknown>) => (target.setAttributes(attributes(attrs) as Record<string, unknown>), proxy);
        if (prop === 'addEvent') return (name: string, attrsOrTime?: unknown, time?: unknown) => (target.addEvent(attribute(name) as string, attributes(attrsOrTime), time), proxy);
        // An error's message is the span's status: a tool's error text can carry what its arguments held.
        if (prop === 'setStatus') return (status: { code: number; message?: string }) => (target.setStatus(status.message === undefined ? status : { ...status, message: redactor.redactText(status.message).value }), proxy);
        if (prop === 'recordException') return (error: unknown, time?: unknown) => (target.recordException(exception(error), time), proxy);
        if (prop === 'updateName') return (name: string) => (target.updateName(redactor.redactText(name).value), proxy);
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    return proxy;
  };
  const wrapTracer = (tracer: TracerLike): TracerLike =>
    new Proxy(tracer, {
      get(target, prop) {
        const value: unknown = Reflect.get(target, prop, target);
        if (prop === 'startSpan') {
          return (name: string, spanOptions?: { readonly attributes?: Record<string, unknown> }, context?: unknown) =>
            wrapSpan(target.startSpan(name, spanOptions?.attributes === undefined ? spanOptions : { ...spanOptions, attributes: attributes(spanOptions.attributes) as Record<string, unknown> }, context));
        }
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
  return new Proxy(provider, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (prop === 'getTracer') return (name: string, version?: string, tracerOptions?: unknown) => wrapTracer(target.getTracer(name, version, tracerOptions) as TracerLike);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
