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

/** A user's message. */
export interface UserMessage {
  readonly role: 'user';
  readonly content: string;
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
  /** True when a dry run answered the call without running the tool (rule 156). */
  readonly stubbed?: boolean;
}

/** One row of a conversation. Messages are immutable once appended. */
export type Message = SystemMessage | UserMessage | AssistantMessage | ToolResultMessage;

/** The role of a {@link Message}. */
export type MessageRole = Message['role'];
