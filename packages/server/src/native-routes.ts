import { randomUUID } from 'node:crypto';
import type { Context, Hono } from 'hono';
import { z } from 'zod';
import { MAX_INPUT_MESSAGES, type AgentHandle, type RunCallOptions, type TurnInput } from '@helix-agents/sdk';
import { checkMessageSize, readJson } from './body.js';
import { ServerError } from './errors.js';
import { checkId } from './ids.js';
import { runResult, sessionDetails } from './session-views.js';
import type { HelixServerContext } from './server-context.js';
import { sseResponse, type SseEvent } from './sse.js';
import type { HelixEnv } from './app.js';

const id = z.string().max(200);
const text = z.string();
// A turn's input: text, or ModelMessages / UIMessages (images and files included), which the runtime checks (400 run_invalid_input).
const turnInput = z.union([text, z.array(z.unknown()).min(1).max(MAX_INPUT_MESSAGES)]);
const attribution = { tags: z.array(z.string().max(100)).max(20).optional(), metadata: z.record(z.string().max(100), z.string().max(1000)).optional() };
const startBody = z.strictObject({ agent: z.string().max(200).optional(), input: turnInput, sessionId: id.optional(), initialState: z.unknown().optional(), ifExists: z.enum(['new-turn', 'return']).optional(), ...attribution });
const messageBody = z.strictObject({ message: turnInput, ...attribution });
const toolResult = z.strictObject({ toolCallId: id, result: z.unknown(), isError: z.boolean().optional() });
const decision = z.strictObject({ toolCallId: id, decision: z.enum(['approve', 'reject']), input: z.unknown().optional(), reason: z.string().max(10_000).optional() });
const resumeBody = z.discriminatedUnion('mode', [
  z.strictObject({ mode: z.enum(['continue', 'with_confirmation']), toolResults: z.array(toolResult).max(100).optional(), decisions: z.array(decision).max(100).optional(), ...attribution }),
  z.strictObject({ mode: z.literal('with_message'), message: text, ...attribution }),
  z.strictObject({ mode: z.literal('from_checkpoint'), checkpointId: id, ...attribution }),
]);
const approveBody = z.strictObject({ toolCallId: id, input: z.unknown().optional(), reason: z.string().max(10_000).optional(), ...attribution });
const rejectBody = z.strictObject({ toolCallId: id, reason: z.string().max(10_000).optional(), ...attribution });
const retryBody = z.strictObject({ message: text.optional(), checkpointId: id.optional(), ...attribution });
const rewindBody = z.strictObject({ checkpointId: id, ...attribution });
const stopBody = z.strictObject({ reason: z.string().max(1000).optional() });

type Ctx = Context<HelixEnv>;

/** A text input within `maxChars` (413 past it); an array goes to the runtime, which checks it (its text against the runtime's limits). */
function inputWithin(input: string | unknown[], maxChars: number): TurnInput {
  return typeof input === 'string' ? checkMessageSize(input, maxChars) : (input as TurnInput);
}

/**
 * The native API for programs and remote sub-agents, under /api/sessions: list, read, stream (SSE of
 * the session's chunks from an offset), and every entry of the runtime. Entries answer 202 with the
 * new run's ids and `streamFrom`, the offset its chunks start at.
 */
export function nativeRoutes(app: Hono<HelixEnv>, ctx: HelixServerContext): void {
  const body = <T>(c: Ctx, schema: z.ZodType<T>): Promise<T> => readJson(c.req.raw, ctx.limits.bodyBytes, schema);
  const owned = async (c: Ctx): Promise<string> => {
    const sessionId = checkId(c.req.param('id'), 'session id');
    await ctx.owned(c.get('userId'), sessionId);
    return sessionId;
  };
  const opts = (c: Ctx, b: { tags?: string[] | undefined; metadata?: Record<string, string> | undefined }): RunCallOptions => ({
    ...ctx.runOptions(c.get('userId')),
    ...(b.tags === undefined ? {} : { tags: b.tags }),
    ...(b.metadata === undefined ? {} : { metadata: b.metadata }),
  });
  const started = async (c: Ctx, handle: AgentHandle): Promise<Response> => c.json(await entryAnswer(ctx, handle), 202);

  app.get('/api/sessions', async (c) => {
    const limit = intParam(c.req.query('limit'), 'limit', 1, ctx.limits.listSessions) ?? Math.min(50, ctx.limits.listSessions);
    const beforeText = c.req.query('before');
    const before = beforeText === undefined ? undefined : checkId(beforeText, 'before');
    const owned = await ctx.owners.list(c.get('userId'), { limit, ...(before === undefined ? {} : { before }) });
    const sessions = [];
    for (const entry of owned) {
      const session = await ctx.runtime.getSession(entry.sessionId);
      if (!session) continue;
      const run = session.currentRunId === undefined ? undefined : await ctx.runtime.getRun(session.currentRunId);
      sessions.push({ sessionId: entry.sessionId, agentType: session.agentType, createdAt: entry.createdAt, messageCount: session.messages.length, stepCount: session.stepCount, status: run?.status, currentRunId: session.currentRunId });
    }
    return c.json({ sessions, ...(owned.length === limit ? { next: owned[owned.length - 1]?.sessionId } : {}) });
  });

  app.post('/api/sessions', async (c) => {
    const b = await body(c, startBody);
    const userId = c.get('userId');
    const sessionId = b.sessionId === undefined ? randomUUID() : checkId(b.sessionId, 'session id');
    const input = inputWithin(b.input, ctx.limits.messageChars);
    const begin = async (): Promise<Response> => {
      const session = await ctx.ownedOrNew(userId, sessionId);
      const agent = session ? ctx.agentOfSession(session, b.agent) : ctx.agent(b.agent);
      // ifExists: 'return' makes a start idempotent: the caller's existing session answers with its current run.
      if (session?.currentRunId !== undefined && b.ifExists === 'return') {
        const streamFrom = (await ctx.runStartSeq(sessionId, session.currentRunId)) ?? 0;
        return c.json({ sessionId, runId: session.currentRunId, streamId: sessionId, streamFrom }, 200);
      }
      return started(c, await ctx.runtime.execute(agent, input, { ...opts(c, b), sessionId, ...(b.initialState === undefined ? {} : { initialState: b.initialState }) }));
    };
    return b.ifExists === 'return' ? ctx.serialized(`start:${sessionId}`, begin) : begin();
  });

  app.get('/api/sessions/:id', async (c) => c.json(await sessionDetails(ctx, await owned(c))));

  app.get('/api/sessions/:id/checkpoints', async (c) => c.json({ checkpoints: await ctx.runtime.listCheckpoints(await owned(c)) }));

  app.get('/api/sessions/:id/runs/:runId', async (c) => {
    const sessionId = await owned(c);
    return c.json(await ctx.run(sessionId, checkId(c.req.param('runId'), 'run id')));
  });

  app.get('/api/sessions/:id/runs/:runId/result', async (c) => {
    const sessionId = await owned(c);
    const run = await ctx.run(sessionId, checkId(c.req.param('runId'), 'run id'));
    const waitMs = intParam(c.req.query('waitMs'), 'waitMs', 0, 300_000) ?? 30_000;
    return c.json(await runResult(ctx, run, waitMs, c.req.raw.signal));
  });

  app.get('/api/sessions/:id/stream', async (c) => stream(c, ctx, await owned(c)));

  app.post('/api/sessions/:id/messages', async (c) => {
    const sessionId = await owned(c);
    const b = await body(c, messageBody);
    return started(c, await ctx.runtime.send(sessionId, inputWithin(b.message, ctx.limits.messageChars), opts(c, b)));
  });

  app.post('/api/sessions/:id/resume', async (c) => {
    const sessionId = await owned(c);
    const b = await body(c, resumeBody);
    if (b.mode === 'with_message') return started(c, await ctx.runtime.resume(sessionId, { ...opts(c, b), mode: 'with_message', message: checkMessageSize(b.message, ctx.limits.messageChars) }));
    if (b.mode === 'from_checkpoint') return started(c, await ctx.runtime.resume(sessionId, { ...opts(c, b), mode: 'from_checkpoint', checkpointId: b.checkpointId }));
    const run = await ctx.suspendedRun(await ctx.owned(c.get('userId'), sessionId));
    const decisions = ctx.sign(sessionId, run, b.decisions ?? []);
    return started(c, await ctx.runtime.resume(sessionId, { ...opts(c, b), mode: b.mode, toolResults: b.toolResults ?? [], decisions }));
  });

  app.post('/api/sessions/:id/approve', async (c) => {
    const sessionId = await owned(c);
    const b = await body(c, approveBody);
    const run = await ctx.suspendedRun(await ctx.owned(c.get('userId'), sessionId));
    const [signed] = ctx.sign(sessionId, run, [{ toolCallId: b.toolCallId, decision: 'approve', ...(b.input === undefined ? {} : { input: b.input }) }]);
    const { signature } = signed ?? {};
    return started(c, await ctx.runtime.approve(sessionId, b.toolCallId, { ...opts(c, b), ...(b.input === undefined ? {} : { input: b.input }), ...(b.reason === undefined ? {} : { reason: b.reason }), ...(signature === undefined ? {} : { signature }) }));
  });

  app.post('/api/sessions/:id/reject', async (c) => {
    const sessionId = await owned(c);
    const b = await body(c, rejectBody);
    const run = await ctx.suspendedRun(await ctx.owned(c.get('userId'), sessionId));
    const [signed] = ctx.sign(sessionId, run, [{ toolCallId: b.toolCallId, decision: 'reject' }]);
    const { signature } = signed ?? {};
    return started(c, await ctx.runtime.reject(sessionId, b.toolCallId, { ...opts(c, b), ...(b.reason === undefined ? {} : { reason: b.reason }), ...(signature === undefined ? {} : { signature }) }));
  });

  app.post('/api/sessions/:id/tool-results', async (c) => {
    const sessionId = await owned(c);
    const b = await body(c, toolResult);
    return started(c, await ctx.runtime.submitToolResult(sessionId, b.toolCallId, b.result, { ...opts(c, {}), ...(b.isError === undefined ? {} : { isError: b.isError }) }));
  });

  app.post('/api/sessions/:id/retry', async (c) => {
    const sessionId = await owned(c);
    const b = await body(c, retryBody);
    const message = b.message === undefined ? undefined : checkMessageSize(b.message, ctx.limits.messageChars);
    return started(c, await ctx.runtime.retry(sessionId, { ...opts(c, b), ...(message === undefined ? {} : { message }), ...(b.checkpointId === undefined ? {} : { checkpointId: b.checkpointId }) }));
  });

  app.post('/api/sessions/:id/rewind', async (c) => {
    const sessionId = await owned(c);
    const b = await body(c, rewindBody);
    return started(c, await ctx.runtime.resume(sessionId, { ...opts(c, b), mode: 'from_checkpoint', checkpointId: b.checkpointId }));
  });

  app.post('/api/sessions/:id/stop', async (c) => {
    const sessionId = await owned(c);
    const b = await body(c, stopBody);
    const result = await ctx.runtime.stop(sessionId, b.reason ?? 'Stopped through the API.');
    return c.json({ stopped: result !== undefined, ...(result === undefined ? {} : { result }) });
  });
}

/** What an entry answers: the run's ids and where its chunks start in the session's stream. */
async function entryAnswer(ctx: HelixServerContext, handle: AgentHandle): Promise<{ sessionId: string; runId: string; streamId: string; streamFrom: number }> {
  let streamFrom = 0;
  for await (const chunk of handle.stream()) {
    streamFrom = chunk.seq;
    break;
  }
  ctx.noteRunStart(handle.runId, streamFrom);
  return { sessionId: handle.sessionId, runId: handle.runId, streamId: handle.streamId, streamFrom };
}

/** GET /api/sessions/:id/stream: the session's chunks as SSE (`id:` is the chunk's seq), from `?from` or after `Last-Event-ID`. */
function stream(c: Ctx, ctx: HelixServerContext, sessionId: string): Response {
  const fromQuery = intParam(c.req.query('from'), 'from', 0, Number.MAX_SAFE_INTEGER);
  const last = c.req.header('last-event-id');
  let fromSeq = fromQuery ?? 0;
  if (fromQuery === undefined && last !== undefined && last !== '') {
    if (!/^\d{1,15}$/.test(last)) throw new ServerError('http_invalid_cursor', 'The Last-Event-ID of a session stream is the seq of the last chunk read.');
    fromSeq = Number(last) + 1;
  }
  const followText = c.req.query('follow');
  if (followText !== undefined && followText !== 'true' && followText !== 'false') throw new ServerError('http_bad_request', '`follow` is true or false.');
  const runText = c.req.query('run');
  const run = runText === undefined ? undefined : checkId(runText, 'run id');
  const abort = new AbortController();
  const chunks = ctx.runtime.readStream(sessionId, { fromSeq, follow: followText !== 'false', signal: abort.signal, ...(run === undefined ? {} : { untilRunEnds: run }) });
  async function* events(): AsyncGenerator<SseEvent> {
    let next = fromSeq;
    try {
      for await (const chunk of chunks) {
        next = chunk.seq + 1;
        yield { id: String(chunk.seq), data: JSON.stringify(chunk) };
      }
    } catch (error) {
      if (abort.signal.aborted) return;
      ctx.logger.error('server: a session stream failed', { sessionId, error: error instanceof Error ? error.message : String(error) });
      yield { event: 'error', data: JSON.stringify({ code: 'stream_closed', message: 'The stream failed on the server; read it again from the last id.' }) };
      return;
    }
    yield { event: 'done', data: JSON.stringify({ nextSeq: next }) };
  }
  return sseResponse(events(), { keepAliveMs: ctx.keepAliveMs, onClose: () => abort.abort() });
}

function intParam(value: string | undefined, name: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d{1,16}$/.test(value) || Number(value) < min || Number(value) > max) throw new ServerError('http_bad_request', `\`${name}\` must be an integer from ${min} to ${max}.`);
  return Number(value);
}
