import type { Message, PendingCall, SessionSnapshot, ToolResultMessage } from '@helix-agents/sdk';

/** A part of a {@link UiMessageView}: what `useChat` renders. */
export type UiPartView =
  | { readonly type: 'step-start' }
  | { readonly type: 'text'; readonly text: string; readonly state: 'done' }
  | { readonly type: 'reasoning'; readonly text: string; readonly state: 'done' }
  | { readonly type: 'file'; readonly mediaType: string; readonly url: string; readonly filename?: string }
  | {
      readonly type: `tool-${string}`;
      readonly toolCallId: string;
      readonly state: 'input-available' | 'approval-requested' | 'output-available' | 'output-error' | 'output-denied';
      readonly input: unknown;
      readonly output?: unknown;
      readonly errorText?: string;
      readonly approval?: { readonly id: string; readonly approved?: false };
    };

/** A UI message (the AI SDK's `UIMessage` shape) built from a session's committed conversation. */
export interface UiMessageView {
  readonly id: string;
  readonly role: 'user' | 'assistant';
  readonly parts: UiPartView[];
}

/**
 * The committed conversation as UI messages, for `useChat({ messages })` after a page reload: each user
 * row is a user message, the rows after it one assistant message (a step per model reply, tool parts
 * with their results). The current turn's assistant message has the turn id, the id its stream uses,
 * so a resume replaces it in place. Custom data parts are not in the conversation and do not appear.
 */
export function uiMessagesOf(session: SessionSnapshot, pending: readonly PendingCall[]): UiMessageView[] {
  const results = new Map<string, ToolResultMessage>();
  for (const row of session.messages) if (row.role === 'tool') results.set(row.toolCallId, row);
  const waiting = new Map(pending.map((p) => [p.toolCallId, p.kind] as const));
  const turnStart = session.turn?.inputMessageIndex;
  const out: UiMessageView[] = [];
  let assistant: UiMessageView | undefined;
  session.messages.forEach((row: Message, index) => {
    if (row.role === 'user') {
      assistant = undefined;
      const parts: UiPartView[] = row.content === '' && row.attachments?.length ? [] : [{ type: 'text', text: row.content, state: 'done' }];
      // Images and files come back as useChat sent them: inline bytes as a data: URL, a URL as it is.
      for (const a of row.attachments ?? []) {
        parts.push({ type: 'file', mediaType: a.mediaType, url: a.url ?? `data:${a.mediaType};base64,${a.data}`, ...(a.filename === undefined ? {} : { filename: a.filename }) });
      }
      out.push({ id: `user-${index}`, role: 'user', parts });
      return;
    }
    if (row.role !== 'assistant') return;
    if (!assistant) {
      const current = turnStart !== undefined && index > turnStart && session.turn !== undefined;
      assistant = { id: current ? session.turn!.turnId : `assistant-${index}`, role: 'assistant', parts: [] };
      out.push(assistant);
    }
    assistant.parts.push({ type: 'step-start' });
    // A step's reasoning blocks are kept as one text: a reload shows them as one reasoning part.
    if (row.reasoning !== undefined && row.reasoning !== '') assistant.parts.push({ type: 'reasoning', text: row.reasoning, state: 'done' });
    if (row.content !== '') assistant.parts.push({ type: 'text', text: row.content, state: 'done' });
    for (const call of row.toolCalls ?? []) assistant.parts.push(toolPart(call.id, call.name, call.arguments, results.get(call.id), waiting.get(call.id)));
  });
  return out;
}

function toolPart(toolCallId: string, toolName: string, input: unknown, result: ToolResultMessage | undefined, waiting: PendingCall['kind'] | undefined): UiPartView {
  const base = { type: `tool-${toolName}` as const, toolCallId, input: input ?? null };
  if (!result) return waiting === 'approval' ? { ...base, state: 'approval-requested', approval: { id: toolCallId } } : { ...base, state: 'input-available' };
  if (result.errorInfo?.code === 'permission_denied') return { ...base, state: 'output-denied', approval: { id: toolCallId, approved: false } };
  if (result.isError === true) return { ...base, state: 'output-error', errorText: result.errorInfo?.message ?? String(result.content) };
  return { ...base, state: 'output-available', output: result.content };
}
