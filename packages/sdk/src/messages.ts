import type { AgentErrorInfo } from './errors.js';

/** A tool call the model asked for. `arguments` is the parsed JSON (or the raw text when it did not parse). */
export interface ToolCall {
  /** The provider's call id; identifies the same call in beforeTool and afterTool. */
  readonly id: string;
  /** The tool's name. */
  readonly name: string;
  /** The arguments, as the model sent them (before validation). */
  readonly arguments: unknown;
}

/** A system instruction in the conversation. */
export interface SystemMessage {
  readonly role: 'system';
  readonly content: string;
}

/**
 * An image or a file a user message carries, as stored: the bytes as base64 (`data`), or a URL that
 * helix passes to the provider as it is and never fetches itself (`url`, http or https). JSON-serializable,
 * so a SQLite or Postgres store keeps it with the row.
 */
export type MessageAttachment = InlineAttachment | UrlAttachment;

/** An attachment whose bytes travel with the message (base64, without a `data:` prefix). */
export interface InlineAttachment {
  /** `image` reaches the model as an image; `file` as a file of its media type (a PDF, a text file...). */
  readonly type: 'image' | 'file';
  /** The IANA media type (`image/png`, `application/pdf`); `image/*` for an image whose type is unknown. */
  readonly mediaType: string;
  /** The file's name, when the sender gave one. */
  readonly filename?: string;
  /** The bytes, base64-encoded. */
  readonly data: string;
  readonly url?: never;
}

/** An attachment the provider fetches from a URL (helix never fetches it). */
export interface UrlAttachment {
  /** `image` reaches the model as an image; `file` as a file of its media type. */
  readonly type: 'image' | 'file';
  /** The IANA media type; `image/*` for an image whose type is unknown. */
  readonly mediaType: string;
  /** The file's name, when the sender gave one. */
  readonly filename?: string;
  /** An http or https URL. */
  readonly url: string;
  readonly data?: never;
}

/** A user's message: its text, and the images and files that came with it. */
export interface UserMessage {
  readonly role: 'user';
  /** The message's text (the text parts of a multi-part message, joined by newlines; may be empty when it has attachments). */
  readonly content: string;
  /** Images and files, in the order they were given; the model sees them after the text. */
  readonly attachments?: readonly MessageAttachment[];
}

/** A model reply: text and/or tool calls. */
export interface AssistantMessage {
  readonly role: 'assistant';
  readonly content: string;
  readonly toolCalls?: readonly ToolCall[];
  /** Reasoning text, when the provider streams it. */
  readonly reasoning?: string;
}

/** The result of one tool call, as the model will see it. */
export interface ToolResultMessage {
  readonly role: 'tool';
  readonly toolCallId: string;
  readonly toolName: string;
  /** The tool's output (a JSON value), or the error text for a failed call. */
  readonly content: unknown;
  /** True when the call failed, was refused, or its input was invalid. */
  readonly isError?: boolean;
  /** The classified error of a failed call. */
  readonly errorInfo?: AgentErrorInfo;
}

/** One row of a conversation. Messages are immutable once appended. */
export type Message = SystemMessage | UserMessage | AssistantMessage | ToolResultMessage;

/** The role of a {@link Message}. */
export type MessageRole = Message['role'];
