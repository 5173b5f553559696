// A turn's input: a string, AI SDK ModelMessages or AI SDK UIMessages, checked and turned into the rows
// the turn-start commit appends. Hostile input is refused here, before anything is written.
import type { ModelMessage } from '@ai-sdk/provider-utils';
import { AgentError } from '../errors.js';
import type { AssistantMessage, Message, MessageAttachment, ToolCall, ToolResultMessage, UserMessage } from '../messages.js';
import { invalidInput, toAttachment } from './input-attachments.js';
import { inputTooLarge, safeJsonLength, type ResolvedLimits } from './limits.js';

/**
 * What a new turn takes: the user's text, or a conversation to append (AI SDK `ModelMessage`s, or
 * `UIMessage`s as `useChat` sends them, converted with the AI SDK's `convertToModelMessages`). An array
 * holds user, assistant and tool messages and ends with a user message; system messages are refused
 * (instructions belong to the agent). See docs/input.md.
 */
export type TurnInput = string | readonly ModelMessage[] | readonly UIMessageInput[];

/**
 * The shape of an AI SDK `UIMessage` (from `ai`) that a turn input takes; every `UIMessage` fits it. Kept
 * structural, so helix's declarations do not pull the `ai` package's types into an application that does
 * not use them. The parts are checked when the input is converted.
 */
export interface UIMessageInput {
  readonly id: string;
  readonly role: 'system' | 'user' | 'assistant';
  readonly metadata?: unknown;
  readonly parts: readonly { readonly type: string }[];
}

/** A turn input checked and converted: the rows to append, and the text hooks see as `input`. */
export interface NormalizedTurnInput {
  /** The text of the last user message (onAgentStart's `input`, the run_started chunk's). */
  readonly text: string;
  /** The rows the turn-start commit appends (undefined for a string: one user row of `text`). */
  readonly rows?: readonly Message[];
}

/** The most messages one array input may hold (the session's maxMessages also applies). */
export const MAX_INPUT_MESSAGES = 1000;

/** Checks `input` and converts it; throws `run_invalid_input` or `run_input_too_large` (nothing written). */
export async function normalizeTurnInput(input: unknown, limits: ResolvedLimits): Promise<NormalizedTurnInput> {
  if (typeof input === 'string') {
    if (input.length > limits.maxInputChars) throw inputTooLarge('input', input.length, limits.maxInputChars, 'maxInputChars');
    return { text: input };
  }
  if (!Array.isArray(input)) throw invalidInput('the input', `expected a string or an array of messages, got ${input === null ? 'null' : typeof input}`);
  if (input.length === 0) throw invalidInput('the input', 'the array holds no message');
  if (input.length > MAX_INPUT_MESSAGES) throw invalidInput('the input', `the array holds ${input.length} messages, more than ${MAX_INPUT_MESSAGES}`);
  const model = isUiArray(input) ? await fromUiMessages(input) : input;
  const { rows, bytes } = toRows(model);
  checkTranscript(rows);
  checkSizes(rows, bytes, limits);
  const last = rows[rows.length - 1] as UserMessage;
  return { text: last.content, rows };
}

/** True for an array of UI messages (each has `parts` and no `content`); a mix of kinds is refused. */
function isUiArray(input: readonly unknown[]): boolean {
  const ui = input.map((m, i) => {
    if (typeof m !== 'object' || m === null) throw invalidInput(`message ${i}`, 'a message must be an object');
    const record = m as Record<string, unknown>;
    if (Array.isArray(record['parts']) && !('content' in record)) return true;
    if ('content' in record) return false;
    throw invalidInput(`message ${i}`, 'a message needs `content` (a ModelMessage) or `parts` (a UIMessage)');
  });
  if (ui.some((u) => u !== ui[0])) throw invalidInput('the input', 'the array mixes ModelMessages and UIMessages');
  return ui[0] === true;
}

/** UI messages through the AI SDK's own conversion (loaded only when a UI array comes in). */
async function fromUiMessages(input: readonly unknown[]): Promise<readonly unknown[]> {
  input.forEach((m, i) => {
    const role = (m as Record<string, unknown>)['role'];
    if (role !== 'user' && role !== 'assistant' && role !== 'system') throw invalidInput(`message ${i}`, `a UIMessage's role must be user, assistant or system, got ${JSON.stringify(role) ?? 'nothing'}`);
    const parts = (m as { parts: unknown[] }).parts;
    parts.forEach((p, j) => {
      if (typeof p !== 'object' || p === null || typeof (p as Record<string, unknown>)['type'] !== 'string') throw invalidInput(`message ${i}, part ${j}`, 'a part must be an object with a string `type`');
    });
  });
  const { convertToModelMessages } = await import('ai');
  try {
    return await convertToModelMessages(input as Parameters<typeof convertToModelMessages>[0]);
  } catch (cause) {
    throw invalidInput('the input', `the AI SDK could not convert the UIMessages (${cause instanceof Error ? cause.message : String(cause)})`);
  }
}

function toRows(input: readonly unknown[]): { rows: Message[]; bytes: number } {
  const rows: Message[] = [];
  let bytes = 0;
  input.forEach((m, i) => {
    const message = m as Record<string, unknown>;
    const where = `message ${i}`;
    switch (message['role']) {
      case 'user': {
        const user = userRow(message['content'], where);
        bytes += user.bytes;
        rows.push(user.row);
        return;
      }
      case 'assistant':
        rows.push(assistantRow(message['content'], where));
        return;
      case 'tool':
        rows.push(...toolRows(message['content'], where));
        return;
      case 'system':
        throw invalidInput(where, 'system messages are not taken', "Put instructions in the agent's system prompt; a turn's input holds user, assistant and tool messages.");
      default:
        throw invalidInput(where, `unknown role ${JSON.stringify(message['role']) ?? 'undefined'}`);
    }
  });
  return { rows, bytes };
}

function partsOf(content: unknown, where: string): readonly Record<string, unknown>[] {
  if (!Array.isArray(content)) throw invalidInput(where, '`content` must be a string or an array of parts');
  return content.map((p, j) => {
    if (typeof p !== 'object' || p === null || typeof (p as Record<string, unknown>)['type'] !== 'string') throw invalidInput(`${where}, part ${j}`, 'a part must be an object with a string `type`');
    return p as Record<string, unknown>;
  });
}

function textOf(part: Record<string, unknown>, where: string): string {
  if (typeof part['text'] !== 'string') throw invalidInput(where, 'a text part needs a string `text`');
  return part['text'];
}

function userRow(content: unknown, where: string): { row: UserMessage; bytes: number } {
  if (typeof content === 'string') {
    if (content.trim() === '') throw invalidInput(where, 'the user message is empty');
    return { row: { role: 'user', content }, bytes: 0 };
  }
  const texts: string[] = [];
  const attachments: MessageAttachment[] = [];
  let bytes = 0;
  partsOf(content, where).forEach((part, j) => {
    const at = `${where}, part ${j}`;
    if (part['type'] === 'text') texts.push(textOf(part, at));
    else if (part['type'] === 'image' || part['type'] === 'file') {
      const kind = part['type'];
      const made = toAttachment(kind, kind === 'image' ? part['image'] : part['data'], part['mediaType'], part['filename'], at);
      attachments.push(made.attachment);
      bytes += made.bytes;
    } else throw invalidInput(at, `a user message takes text, image and file parts, not ${JSON.stringify(part['type'])}`);
  });
  const text = texts.join('\n');
  if (text.trim() === '' && attachments.length === 0) throw invalidInput(where, 'the user message has no text and no image or file');
  return { row: { role: 'user', content: text, ...(attachments.length === 0 ? {} : { attachments }) }, bytes };
}

function assistantRow(content: unknown, where: string): AssistantMessage {
  if (typeof content === 'string') return { role: 'assistant', content };
  let text = '';
  let reasoning = '';
  const toolCalls: ToolCall[] = [];
  partsOf(content, where).forEach((part, j) => {
    const at = `${where}, part ${j}`;
    if (part['type'] === 'text') text += textOf(part, at);
    else if (part['type'] === 'reasoning') reasoning += textOf(part, at);
    else if (part['type'] === 'tool-call' && part['providerExecuted'] !== true) toolCalls.push(toolCall(part, at));
    else throw invalidInput(at, `an assistant message takes text, reasoning and tool-call parts, not ${JSON.stringify(part['type'])}${part['providerExecuted'] === true ? ' (provider-executed)' : ''}`);
  });
  return { role: 'assistant', content: text, ...(toolCalls.length === 0 ? {} : { toolCalls }), ...(reasoning === '' ? {} : { reasoning }) };
}

function callIds(part: Record<string, unknown>, where: string): { id: string; name: string } {
  const id = part['toolCallId'];
  const name = part['toolName'];
  if (typeof id !== 'string' || id === '' || id.length > 256) throw invalidInput(where, 'toolCallId must be a non-empty string of at most 256 characters');
  if (typeof name !== 'string' || name === '' || name.length > 256) throw invalidInput(where, 'toolName must be a non-empty string of at most 256 characters');
  return { id, name };
}

function toolCall(part: Record<string, unknown>, where: string): ToolCall {
  const { id, name } = callIds(part, where);
  return { id, name, arguments: part['input'] === undefined ? {} : part['input'] };
}

function toolRows(content: unknown, where: string): ToolResultMessage[] {
  return partsOf(content, where).map((part, j) => {
    const at = `${where}, part ${j}`;
    if (part['type'] !== 'tool-result') throw invalidInput(at, `a tool message takes tool-result parts, not ${JSON.stringify(part['type'])}`);
    const { id, name } = callIds(part, at);
    return { role: 'tool', toolCallId: id, toolName: name, ...toolOutput(part['output'], at) };
  });
}

function toolOutput(output: unknown, where: string): Pick<ToolResultMessage, 'content' | 'isError'> {
  const o = (typeof output === 'object' && output !== null ? output : {}) as Record<string, unknown>;
  switch (o['type']) {
    case 'text':
    case 'error-text':
      if (typeof o['value'] !== 'string') throw invalidInput(where, `a ${o['type']} output needs a string value`);
      return o['type'] === 'text' ? { content: o['value'] } : { content: o['value'], isError: true };
    case 'json':
      return { content: o['value'] ?? null };
    case 'error-json':
      return { content: o['value'] ?? null, isError: true };
    case 'execution-denied':
      return { content: typeof o['reason'] === 'string' ? o['reason'] : 'The call was denied.', isError: true };
    default:
      throw invalidInput(where, 'a tool result output must be text, json, error-text, error-json or execution-denied');
  }
}

/** Every tool call is answered by a later tool row before the next other message; the last message is the user's. */
function checkTranscript(rows: readonly Message[]): void {
  const open = new Map<string, string>();
  const seen = new Set<string>();
  rows.forEach((row, i) => {
    if (row.role === 'tool') {
      if (open.get(row.toolCallId) !== row.toolName) throw invalidInput(`row ${i}`, `the tool result for call "${row.toolCallId}" (${row.toolName}) answers no open call of that tool`);
      open.delete(row.toolCallId);
      return;
    }
    if (open.size > 0) throw invalidInput(`row ${i}`, `tool call(s) ${[...open.keys()].map((k) => JSON.stringify(k)).join(', ')} have no result before this message`);
    for (const call of row.role === 'assistant' ? (row.toolCalls ?? []) : []) {
      if (seen.has(call.id)) throw invalidInput(`row ${i}`, `tool call id "${call.id}" is used twice`);
      seen.add(call.id);
      open.set(call.id, call.name);
    }
  });
  if (rows[rows.length - 1]?.role !== 'user') throw invalidInput('the input', 'the last message must be a user message (the turn answers it)');
}

function checkSizes(rows: readonly Message[], bytes: number, limits: ResolvedLimits): void {
  if (bytes > limits.maxInputFileBytes) {
    throw new AgentError('run_input_too_large', `The input's images and files are ${bytes} bytes, over the limit of ${limits.maxInputFileBytes} (limits.maxInputFileBytes); nothing was written.`, {
      details: { what: 'input files', size: bytes, max: limits.maxInputFileBytes, limit: 'maxInputFileBytes' },
      hint: 'Send smaller or fewer files, pass a large file as an http(s) URL the provider fetches, or raise limits.maxInputFileBytes.',
    });
  }
  const text = safeJsonLength(rows.map((r) => (r.role === 'user' && r.attachments ? { ...r, attachments: r.attachments.length } : r)));
  if (text === undefined) throw invalidInput('the input', 'the messages cannot be stored as JSON (a BigInt or a cycle in a tool call or result)');
  if (text > limits.maxInputChars) throw inputTooLarge('input', text, limits.maxInputChars, 'maxInputChars');
}
