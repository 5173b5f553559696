import type { Hono } from 'hono';
import type { FileUIPart, UIMessage } from 'ai';
import { z } from 'zod';
import type { AgentHandle, ApprovalDecision, SessionSnapshot, ToolResultSubmission } from '@helix-agents/sdk';
import { checkMessageSize, readJson } from './body.js';
import { ServerError } from './errors.js';
import { checkId } from './ids.js';
import type { HelixServerContext } from './server-context.js';
import { sseResponse } from './sse.js';
import { turnUiChunks, uiSseEvents } from './turn-stream.js';
import { parsePositionId, type UiPosition } from './ui-chunks.js';
import { uiMessagesOf } from './ui-messages.js';
import type { HelixEnv } from './app.js';

/** The header that tells the AI SDK the body is a UI message stream. */
export const UI_STREAM_HEADERS: Readonly<Record<string, string>> = { 'x-vercel-ai-ui-message-stream': 'v1' };

const part = z.looseObject({ type: z.string().max(200) });
const uiMessage = z.looseObject({ id: z.string().max(200).optional(), role: z.enum(['user', 'assistant', 'system']), parts: z.array(part).max(10_000) });
const chatBody = z.looseObject({
  id: z.string(),
  messages: z.array(uiMessage).min(1).optional(),
  message: uiMessage.optional(),
  trigger: z.string().max(64).optional(),
  agent: z.string().max(200).optional(),
});
type UiMessage = z.infer<typeof uiMessage>;

const toolPart = z.looseObject({
  type: z.string(),
  toolCallId: z.string(),
  state: z.string(),
  output: z.unknown().optional(),
  errorText: z.string().optional(),
  approval: z.looseObject({ approved: z.boolean().optional(), reason: z.string().max(10_000).optional() }).optional(),
});

/**
 * The AI SDK UI message stream endpoints (what `useChat` calls): POST /api/chat starts a turn or
 * answers the suspended run; GET /api/chat/:id/stream resumes; POST /api/chat/:id/stop stops;
 * GET /api/chat/:id/messages gives the conversation as UI messages (for `useChat({ messages })`).
 */
export function chatRoutes(app: Hono<HelixEnv>, ctx: HelixServerContext): void {
  app.post('/api/chat', async (c) => {
    const userId = c.get('userId');
    const body = await readJson(c.req.raw, ctx.limits.bodyBytes, chatBody);
    const sessionId = checkId(body.id, 'chat id');
    if (body.trigger === 'regenerate-message') {
      throw new ServerError('http_unsupported', 'Regenerating a message is not supported: the server keeps the conversation; send a new message, or retry or rewind the session through /api/sessions.');
    }
    const last = body.message ?? body.messages?.[body.messages.length - 1];
    if (!last) throw new ServerError('http_bad_request', 'The request carries no message (send `messages` or `message`).');
    const handle = last.role === 'assistant' ? await answer(ctx, userId, sessionId, last) : await startTurn(ctx, userId, sessionId, last, body.agent);
    return uiResponse(ctx, handle, c.req.raw.signal);
  });

  app.get('/api/chat/:id/stream', async (c) => {
    const userId = c.get('userId');
    const sessionId = checkId(c.req.param('id'), 'chat id');
    const session = await ctx.owned(userId, sessionId);
    const cursorText = c.req.header('last-event-id');
    const cursor = cursorText === undefined || cursorText === '' ? undefined : parseCursor(cursorText);
    const start = cursor === undefined ? await resumeStart(ctx, session) : await cursorStart(ctx, sessionId, cursor);
    if (!start) return c.body(null, 204);
    const abort = new AbortController();
    const chunks = turnUiChunks(ctx, { sessionId, turnId: start.turnId, fromSeq: start.fromSeq, ...(cursor === undefined ? {} : { after: cursor }), signal: abort.signal });
    return sseResponse(uiSseEvents(chunks), { headers: UI_STREAM_HEADERS, keepAliveMs: ctx.keepAliveMs, onClose: () => abort.abort() });
  });

  app.get('/api/chat/:id/messages', async (c) => {
    const session = await ctx.owned(c.get('userId'), checkId(c.req.param('id'), 'chat id'));
    const run = session.currentRunId === undefined ? undefined : await ctx.runtime.getRun(session.currentRunId);
    return c.json({ messages: uiMessagesOf(session, run?.status === 'suspended' ? (run.suspension?.pending ?? []) : []) });
  });

  app.post('/api/chat/:id/stop', async (c) => {
    const userId = c.get('userId');
    const sessionId = checkId(c.req.param('id'), 'chat id');
    await ctx.owned(userId, sessionId);
    const result = await ctx.runtime.stop(sessionId, 'Stopped by the user.');
    return c.json({ stopped: result !== undefined, ...(result === undefined ? {} : { status: result.status }) });
  });
}

async function startTurn(ctx: HelixServerContext, userId: string, sessionId: string, message: UiMessage, agentName: string | undefined): Promise<AgentHandle> {
  if (message.role !== 'user') throw new ServerError('http_bad_request', 'The last message must be a user message (or an assistant message carrying tool outputs or approval responses).');
  const input = userInput(message, ctx.limits.messageChars);
  const session = await ctx.ownedOrNew(userId, sessionId);
  const agent = session ? ctx.agentOfSession(session, agentName) : ctx.agent(agentName);
  return ctx.runtime.execute(agent, input, { ...ctx.runOptions(userId), sessionId });
}

/**
 * The turn input of the client's user message: its text, or, when it carries file parts (images and
 * files `useChat` sends as data: or http(s) URLs), the message itself as a UIMessage for the runtime to
 * check and convert (a bad file is a 400 `run_invalid_input`). Other parts are not input.
 */
function userInput(message: UiMessage, maxChars: number): string | UIMessage[] {
  const texts: string[] = [];
  const parts: UIMessage['parts'] = [];
  for (const p of message.parts) {
    if (p.type === 'text' && typeof p['text'] === 'string') {
      texts.push(p['text']);
      parts.push({ type: 'text', text: p['text'] });
    } else if (p.type === 'file') {
      parts.push(p as unknown as FileUIPart);
    }
  }
  const text = checkMessageSize(texts.join('\n'), maxChars);
  if (parts.length === texts.length) {
    if (text.trim() === '') throw new ServerError('http_bad_request', 'The user message has no text.');
    return text;
  }
  return [{ id: message.id ?? 'user', role: 'user', parts }];
}

/** The tool outputs and approval responses of the client's last assistant message, for the calls the suspended run waits on. */
async function answer(ctx: HelixServerContext, userId: string, sessionId: string, message: UiMessage): Promise<AgentHandle> {
  const session = await ctx.owned(userId, sessionId);
  const run = await ctx.suspendedRun(session);
  const pending = new Map((run.suspension?.pending ?? []).map((p) => [p.toolCallId, p.kind] as const));
  const toolResults: ToolResultSubmission[] = [];
  const decisions: ApprovalDecision[] = [];
  for (const raw of message.parts) {
    if (!raw.type.startsWith('tool-') && raw.type !== 'dynamic-tool') continue;
    const parsed = toolPart.safeParse(raw);
    if (!parsed.success) continue;
    const p = parsed.data;
    const kind = pending.get(p.toolCallId);
    if (kind === 'client' && p.state === 'output-available') toolResults.push({ toolCallId: p.toolCallId, result: p.output ?? null });
    else if (kind === 'client' && p.state === 'output-error') toolResults.push({ toolCallId: p.toolCallId, result: p.errorText ?? 'The client tool failed.', isError: true });
    else if (kind === 'approval' && p.state === 'approval-responded' && p.approval?.approved !== undefined) {
      const reason = p.approval.reason;
      decisions.push({ toolCallId: p.toolCallId, decision: p.approval.approved ? 'approve' : 'reject', ...(reason === undefined ? {} : { reason }) });
    }
  }
  if (toolResults.length === 0 && decisions.length === 0) {
    throw new ServerError('http_nothing_to_answer', `The message answers none of the calls session ${sessionId} waits on.`, { pending: [...pending.keys()] });
  }
  return ctx.runtime.resume(sessionId, { ...ctx.runOptions(userId), mode: 'continue', toolResults, decisions: ctx.sign(sessionId, run, decisions) });
}

/** The UI stream of a run just started: its segment, from its `run_started` to its terminal chunk. */
async function uiResponse(ctx: HelixServerContext, handle: AgentHandle, requestSignal: AbortSignal): Promise<Response> {
  const first = await firstChunk(handle);
  const run = await ctx.runtime.getRun(handle.runId);
  const abort = new AbortController();
  if (first === undefined || !run) throw new ServerError('http_not_found', `Run ${handle.runId} has no stream.`);
  ctx.noteRunStart(handle.runId, first);
  const onAbort = (): void => abort.abort();
  requestSignal.addEventListener('abort', onAbort, { once: true });
  const chunks = turnUiChunks(ctx, { sessionId: handle.sessionId, turnId: run.turnId, fromSeq: first, onlyRun: handle.runId, signal: abort.signal });
  return sseResponse(uiSseEvents(chunks), {
    headers: UI_STREAM_HEADERS,
    keepAliveMs: ctx.keepAliveMs,
    onClose: () => {
      requestSignal.removeEventListener('abort', onAbort);
      abort.abort();
    },
  });
}

async function firstChunk(handle: AgentHandle): Promise<number | undefined> {
  for await (const chunk of handle.stream()) return chunk.seq;
  return undefined;
}

function parseCursor(text: string): UiPosition {
  const cursor = parsePositionId(text);
  if (!cursor) throw new ServerError('http_invalid_cursor', 'The Last-Event-ID is not one this server sent.');
  return cursor;
}

/** Without a cursor: the whole UI message of the turn whose run is running, or nothing (204). */
async function resumeStart(ctx: HelixServerContext, session: SessionSnapshot): Promise<{ turnId: string; fromSeq: number } | undefined> {
  const current = session.currentRunId === undefined ? undefined : await ctx.runtime.getRun(session.currentRunId);
  if (!current || current.status !== 'running' || !session.turn) return undefined;
  const fromSeq = await ctx.runStartSeq(session.sessionId, session.turn.firstRunId);
  return fromSeq === undefined ? undefined : { turnId: current.turnId, fromSeq };
}

/** With a cursor: from the run it points into, which must start there in this session's stream. */
async function cursorStart(ctx: HelixServerContext, sessionId: string, cursor: UiPosition): Promise<{ turnId: string; fromSeq: number }> {
  let startChunk;
  for await (const chunk of ctx.runtime.readStream(sessionId, { fromSeq: cursor.runStartSeq, follow: false })) {
    startChunk = chunk;
    break;
  }
  const run = startChunk?.type === 'run_started' && startChunk.seq === cursor.runStartSeq ? await ctx.runtime.getRun(startChunk.runId) : undefined;
  if (!run) throw new ServerError('http_invalid_cursor', 'The Last-Event-ID does not point into this session\u2019s stream.');
  return { turnId: run.turnId, fromSeq: cursor.runStartSeq };
}
