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

/** Converts one of our messages to its V3 form (a tool result becomes a tool-result part). */
export function convertMessage(message: Message): ConvertedMessage {
  switch (message.role) {
    case 'system':
      return { role: 'system', content: message.content };
    case 'user':
      return { role: 'user', content: [{ type: 'text', text: message.content }] };
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
 * Turns our conversation into a `LanguageModelV3Prompt`, converting each message once. A request that
 * extends the previous request of its conversation copies that prompt and converts only the new
 * messages, so a step costs the same at message 10 and at message 1,000.
 */
export class PromptConverter {
  readonly #converted = new WeakMap<Message, ConvertedMessage>();
  // Keyed by the last message a prompt covers: the next request of the conversation contains it.
  readonly #snapshots = new WeakMap<Message, PromptSnapshot>();
  #conversions = 0;

  /** How many messages this converter has converted (each message is converted once). */
  get conversions(): number {
    return this.#conversions;
  }

  /** The V3 prompt for `messages`, led by `systemPrompt` as a system message. */
  convert(systemPrompt: string | undefined, messages: readonly Message[]): LanguageModelV3Prompt {
    const count = messages.length;
    if (count === 0) return systemPrompt === undefined ? [] : [{ role: 'system', content: systemPrompt }];

    const snapshot = this.#findSnapshot(messages);
    let prompt: LanguageModelV3Message[];
    let from: number;
    if (snapshot === undefined) {
      prompt = systemPrompt === undefined ? [] : [{ role: 'system', content: systemPrompt }];
      from = 0;
    } else {
      if (snapshot.count === count && snapshot.systemPrompt === systemPrompt) return snapshot.prompt as LanguageModelV3Prompt;
      prompt = withSystemPrompt(snapshot, systemPrompt);
      from = snapshot.count;
      // One snapshot per conversation keeps memory linear; a fork of the old prefix rebuilds from the message cache.
      this.#snapshots.delete(messages[snapshot.count - 1]!);
    }

    let openTool: V3ToolMessage | undefined;
    for (let i = from; i < count; i++) {
      const message = messages[i]!;
      const converted = this.#convert(message);
      if (message.role !== 'tool') {
        openTool = undefined;
        prompt.push(converted as LanguageModelV3Message);
        continue;
      }
      const part = converted as LanguageModelV3ToolResultPart;
      if (openTool !== undefined) {
        openTool.content.push(part);
        continue;
      }
      const last = prompt[prompt.length - 1];
      if (last !== undefined && last.role === 'tool') {
        // That message belongs to an earlier prompt, which must stay as it was: merge into a copy.
        openTool = { role: 'tool', content: [...last.content, part] };
        prompt[prompt.length - 1] = openTool;
      } else {
        openTool = { role: 'tool', content: [part] };
        prompt.push(openTool);
      }
    }

    this.#snapshots.set(messages[count - 1]!, { source: messages, first: messages[0]!, count, systemPrompt, prompt });
    return prompt;
  }

  #convert(message: Message): ConvertedMessage {
    let converted = this.#converted.get(message);
    if (converted === undefined) {
      converted = convertMessage(message);
      this.#converted.set(message, converted);
      this.#conversions++;
    }
    return converted;
  }

  #findSnapshot(messages: readonly Message[]): PromptSnapshot | undefined {
    const stop = Math.max(0, messages.length - SNAPSHOT_LOOKBACK);
    for (let i = messages.length - 1; i >= stop; i--) {
      const snapshot = this.#snapshots.get(messages[i]!);
      if (snapshot === undefined || snapshot.count !== i + 1) continue;
      // The same array is append-only (messages are immutable once appended); a different array may
      // be a rewrite of the history (a redacting hook), so its prefix is compared element by element.
      if (snapshot.source === messages) return snapshot.first === messages[0] ? snapshot : undefined;
      return samePrefix(snapshot.source, messages, snapshot.count) ? snapshot : undefined;
    }
    return undefined;
  }
}

function samePrefix(a: readonly Message[], b: readonly Message[], count: number): boolean {
  if (a.length < count) return false;
  for (let i = 0; i < count; i++) if (a[i] !== b[i]) return false;
  return true;
}

function withSystemPrompt(snapshot: PromptSnapshot, systemPrompt: string | undefined): LanguageModelV3Message[] {
  const prompt = snapshot.prompt.slice();
  if (snapshot.systemPrompt === systemPrompt) return prompt;
  const system: V3SystemMessage | undefined = systemPrompt === undefined ? undefined : { role: 'system', content: systemPrompt };
  if (snapshot.systemPrompt === undefined) prompt.unshift(system!);
  else if (system === undefined) prompt.shift();
  else prompt[0] = system;
  return prompt;
}
