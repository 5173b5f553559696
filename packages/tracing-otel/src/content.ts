import type { Message, StepSuccess } from '@helix-agents/sdk';

/** One part of a GenAI message (the conventions' input/output messages JSON schema). */
export type GenAiPart =
  | { readonly type: 'text'; readonly content: string }
  | { readonly type: 'reasoning'; readonly content: string }
  | { readonly type: 'tool_call'; readonly id: string; readonly name: string; readonly arguments: unknown }
  | { readonly type: 'tool_call_response'; readonly id: string; readonly result: unknown };

/** A message in the GenAI conventions' shape: a role and its parts. */
export interface GenAiMessage {
  readonly role: 'user' | 'assistant' | 'tool' | 'system';
  readonly parts: readonly GenAiPart[];
  readonly finish_reason?: string;
}

/** Converts a helix message to the GenAI conventions' message shape. */
export function toGenAiMessage(message: Message): GenAiMessage {
  switch (message.role) {
    case 'system':
    case 'user':
      return { role: message.role, parts: [{ type: 'text', content: message.content }] };
    case 'assistant': {
      const parts: GenAiPart[] = [];
      if (message.reasoning) parts.push({ type: 'reasoning', content: message.reasoning });
      if (message.content !== '') parts.push({ type: 'text', content: message.content });
      for (const call of message.toolCalls ?? []) parts.push({ type: 'tool_call', id: call.id, name: call.name, arguments: call.arguments });
      return { role: 'assistant', parts };
    }
    case 'tool':
      return { role: 'tool', parts: [{ type: 'tool_call_response', id: message.toolCallId, result: message.content }] };
  }
}

/**
 * Splits a model call's messages into `gen_ai.system_instructions` (the leading system prompt, which
 * the provider receives separately) and `gen_ai.input.messages` (the conversation).
 */
export function splitPrompt(messages: readonly Message[]): { readonly system: readonly GenAiPart[] | undefined; readonly input: readonly GenAiMessage[] } {
  const first = messages[0];
  const hasSystem = first !== undefined && first.role === 'system';
  const input: GenAiMessage[] = [];
  for (let i = hasSystem ? 1 : 0; i < messages.length; i++) input.push(toGenAiMessage(messages[i] as Message));
  return { system: hasSystem ? [{ type: 'text', content: first.content }] : undefined, input };
}

/** The reply of a successful model call as `gen_ai.output.messages`. */
export function replyMessages(result: StepSuccess): readonly GenAiMessage[] {
  const reply = toGenAiMessage({
    role: 'assistant',
    content: result.text,
    ...(result.toolCalls.length > 0 ? { toolCalls: result.toolCalls } : {}),
    ...(result.reasoning === undefined ? {} : { reasoning: result.reasoning }),
  });
  return [{ ...reply, finish_reason: result.finishReason }];
}

/**
 * JSON for a span attribute (span attributes cannot hold structured values in the JS API, so the
 * conventions allow a JSON string). Never throws: a value that cannot be serialised is described.
 */
export function toJson(value: unknown): string {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value) ?? 'null';
  } catch {
    return '"[unserializable]"';
  }
}
