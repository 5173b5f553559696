import type {
  JSONValue,
  LanguageModelV3Message,
  LanguageModelV3Prompt,
  LanguageModelV3ToolCallPart,
  LanguageModelV3ToolResultOutput,
  LanguageModelV3ToolResultPart,
} from '@ai-sdk/provider';
import type { Message } from '@helix-agents/sdk';

type ToolResultMessage = Extract<Message, { role: 'tool' }>;

type V3ToolMessage = Extract<LanguageModelV3Message, { role: 'tool' }>;
type V3SystemMessage = Extract<LanguageModelV3Message, { role: 'system' }>;

// A tool result converts to a part, not a message: consecutive results share one V3 'tool' message.
type ConvertedMessage = LanguageModelV3Message | LanguageModelV3ToolResultPart;

/** The prompt of one request, kept so the next request of the same conversation only appends to it. */
interface PromptSnapshot {
  /** The request's messages array; when the next request passes the same array, its prefix is trusted. */
  readonly source: readonly Message[];
  readonly first: Message;
  readonly last: Message;
  /** How many messages of `source` the prompt covers. */
  readonly count: number;
  readonly systemPrompt: string | undefined;
  /** Never mutated once handed to a model: providers and recorders may keep a reference. */
  readonly prompt: readonly LanguageModelV3Message[];
}

// How far back from the end a request may look for the previous request's last message: a step
// appends an assistant message, its tool results and maybe a few notes.
const SNAPSHOT_LOOKBACK = 64;

/** Converts a tool result's content to a V3 tool output: strings stay text, anything else is JSON. */
export function toToolResultOutput(message: ToolResultMessage): LanguageModelV3ToolResultOutput {
  const content = message.content;
  // Plain text reaches the model as written; 'json' would wrap it in quotes and escapes.
  if (typeof content === 'string') return message.isError === true ? { type: 'error-text', value: content } : { type: 'text', value: content };
  const value = (content === undefined ? null : content) as JSONValue;
  return message.isError === true ? { type: 'error-json', value } : { type: 'json', value };
}

type UserMessage = Extract<Message, { role: 'user' }>;
type V3UserMessage = Extract<LanguageModelV3Message, { role: 'user' }>;

/**
 * A user message with images and files: its text, then a V3 file part per attachment (an image is a file
 * part of an image media type). Base64 stays base64; a URL goes to the provider as a URL, which the
 * provider passes on or refuses: nothing here downloads it.
 */
function userWithFiles(message: UserMessage): V3UserMessage {
  const content: V3UserMessage['content'] = message.content === '' ? [] : [{ type: 'text', text: message.content }];
  for (const a of message.attachments ?? []) {
    content.push({ type: 'file', mediaType: a.mediaType, data: a.url === undefined ? a.data : new URL(a.url), ...(a.filename === undefined ? {} : { filename: a.filename }) });
  }
  return { role: 'user', content };
}

/** Converts one of our messages to its V3 form (a tool result becomes a tool-result part). */
export function convertMessage(message: Message): ConvertedMessage {
  switch (message.role) {
    case 'system':
      return { role: 'system', content: message.content };
    case 'user':
      return message.attachments === undefined || message.attachments.length === 0 ? { role: 'user', content: [{ type: 'text', text: message.content }] } : userWithFiles(message);
    case 'assistant': {
      const calls = message.toolCalls;
      // Reasoning is not replayed: without the provider's signature some providers reject it.
      if (calls === undefined || calls.length === 0) return { role: 'assistant', content: [{ type: 'text', text: message.content }] };
      const content: Array<{ type: 'text'; text: string } | LanguageModelV3ToolCallPart> =
        message.content === '' ? [] : [{ type: 'text', text: message.content }];
      for (const call of calls) content.push({ type: 'tool-call', toolCallId: call.id, toolName: call.name, input: call.arguments });
      return { role: 'assistant', content };
    }
    case 'tool':
      return { type: 'tool-result', toolCallId: message.toolCallId, toolName: message.toolName, output: toToolResultOutput(message) };
  }
}

/**
 * Turns our conversation into a `LanguageModelV3Prompt`. A request that extends an earlier request of
 * its conversation copies that prompt and converts only the new messages, so a step costs about the
 * same at message 10 and at message 1,000; any other request converts each message at most once.
 */
export class PromptConverter {
  // Used when a request does not extend a known prompt (first call, a rewritten history, a fork).
  readonly #converted = new WeakMap<Message, ConvertedMessage>();
  // The conversation served last stays in a field, so a run stepping alone costs no map traffic. Others
  // wait in a small strong map keyed by the last message their prompt covers (the next request of that
  // conversation contains it). Not a WeakMap: a snapshot references its own key, and such entries make
  // every V8 GC iterate ephemerons, which cost more than the whole step.
  #current: PromptSnapshot | undefined;
  readonly #parked = new Map<Message, PromptSnapshot>();
  readonly #maxParked: number;
  #conversions = 0;

  /** `maxParked`: how many other conversations keep their prompt for a cheap next step (default 32). */
  constructor(options: { readonly maxParked?: number } = {}) {
    this.#maxParked = options.maxParked ?? 32;
  }

  /** How many messages this converter has converted; a message is converted again only after its prompt was dropped. */
  get conversions(): number {
    return this.#conversions;
  }

  /** The V3 prompt for `messages`, led by `systemPrompt` as a system message. */
  convert(systemPrompt: string | undefined, messages: readonly Message[]): LanguageModelV3Prompt {
    const count = messages.length;
    if (count === 0) return systemPrompt === undefined ? [] : [{ role: 'system', content: systemPrompt }];

    const snapshot = this.#take(messages);
    const current = this.#current;
    if (current !== undefined && current !== snapshot) this.#park(current);
    if (snapshot !== undefined && snapshot.count === count && snapshot.systemPrompt === systemPrompt) {
      this.#current = snapshot;
      return snapshot.prompt as LanguageModelV3Prompt;
    }

    // New messages are collected apart and joined to the old prompt with one concat: one exact-size
    // copy per step (push after slice would copy the history twice).
    let base: readonly LanguageModelV3Message[];
    let tail: LanguageModelV3Message[];
    let from: number;
    if (snapshot === undefined) {
      base = [];
      tail = systemPrompt === undefined ? [] : [{ role: 'system', content: systemPrompt }];
      from = 0;
    } else {
      base = snapshot.systemPrompt === systemPrompt ? snapshot.prompt : withSystemPrompt(snapshot, systemPrompt);
      tail = [];
      from = snapshot.count;
    }

    let replacesLast = false;
    let openTool: V3ToolMessage | undefined;
    for (let i = from; i < count; i++) {
      const message = messages[i]!;
      // Appended messages are converted once and live on in the snapshot; only a rebuild needs the cache.
      const converted = snapshot === undefined ? this.#convertCached(message) : this.#convert(message);
      if (message.role !== 'tool') {
        openTool = undefined;
        tail.push(converted as LanguageModelV3Message);
        continue;
      }
      const part = converted as LanguageModelV3ToolResultPart;
      if (openTool !== undefined) {
        openTool.content.push(part);
        continue;
      }
      const last = tail.length === 0 ? base[base.length - 1] : undefined;
      if (last !== undefined && last.role === 'tool') {
        // That message belongs to an earlier prompt, which must stay as it was: merge into a copy.
        openTool = { role: 'tool', content: [...last.content, part] };
        replacesLast = true;
      } else {
        openTool = { role: 'tool', content: [part] };
      }
      tail.push(openTool);
    }

    const prompt = base.length === 0 ? tail : replacesLast ? base.slice(0, -1).concat(tail) : base.concat(tail);
    this.#current = { source: messages, first: messages[0]!, last: messages[count - 1]!, count, systemPrompt, prompt };
    return prompt;
  }

  #convert(message: Message): ConvertedMessage {
    this.#conversions++;
    return convertMessage(message);
  }

  #convertCached(message: Message): ConvertedMessage {
    let converted = this.#converted.get(message);
    if (converted === undefined) {
      converted = this.#convert(message);
      this.#converted.set(message, converted);
    }
    return converted;
  }

  #park(snapshot: PromptSnapshot): void {
    if (this.#maxParked <= 0) return;
    this.#parked.delete(snapshot.last);
    this.#parked.set(snapshot.last, snapshot);
    // Maps iterate in insertion order: the first key is the conversation parked longest ago.
    if (this.#parked.size > this.#maxParked) this.#parked.delete(this.#parked.keys().next().value!);
  }

  /** Finds the snapshot `messages` extends (the current one, or a parked one, which it unparks). */
  #take(messages: readonly Message[]): PromptSnapshot | undefined {
    const current = this.#current;
    if (current !== undefined && coversPrefixOf(current, messages)) return current;
    const stop = Math.max(0, messages.length - SNAPSHOT_LOOKBACK);
    for (let i = messages.length - 1; i >= stop; i--) {
      const snapshot = this.#parked.get(messages[i]!);
      if (snapshot === undefined || snapshot.count !== i + 1) continue;
      if (!coversPrefixOf(snapshot, messages)) return undefined;
      this.#parked.delete(snapshot.last);
      return snapshot;
    }
    return undefined;
  }
}

/** True when `messages` starts with exactly the messages `snapshot` covers. */
function coversPrefixOf(snapshot: PromptSnapshot, messages: readonly Message[]): boolean {
  const count = snapshot.count;
  if (messages.length < count || messages[count - 1] !== snapshot.last || messages[0] !== snapshot.first) return false;
  // The same array is append-only (messages are immutable once appended); a different array may be a
  // rewrite of the history (a redacting hook), so its prefix is compared element by element.
  return snapshot.source === messages || samePrefix(snapshot.source, messages, count);
}

function samePrefix(a: readonly Message[], b: readonly Message[], count: number): boolean {
  if (a.length < count) return false;
  for (let i = 0; i < count; i++) if (a[i] !== b[i]) return false;
  return true;
}

function withSystemPrompt(snapshot: PromptSnapshot, systemPrompt: string | undefined): LanguageModelV3Message[] {
  const prompt = snapshot.prompt.slice();
  const system: V3SystemMessage | undefined = systemPrompt === undefined ? undefined : { role: 'system', content: systemPrompt };
  if (snapshot.systemPrompt === undefined) prompt.unshift(system!);
  else if (system === undefined) prompt.shift();
  else prompt[0] = system;
  return prompt;
}
