import type { StreamChunk } from '@helix-agents/sdk';
import type { HelixServerContext } from './server-context.js';
import type { SseEvent } from './sse.js';
import { isAfter, positionId, RunUiMapper, type UiMessageChunk, type UiPosition } from './ui-chunks.js';

/** Where a UI stream starts and when it ends. */
export interface TurnStreamRequest {
  readonly sessionId: string;
  /** The turn: the UI message's id, and the runs the stream may follow. */
  readonly turnId: string;
  /** The offset of a `run_started` chunk of the turn (the stream's first chunk). */
  readonly fromSeq: number;
  /** Skip what the client has: every UI chunk at or before this position. */
  readonly after?: UiPosition;
  /** End after this run (the run a POST started), even when a newer run of the turn follows. */
  readonly onlyRun?: string;
  readonly signal: AbortSignal;
}

/**
 * The UI message of a turn, from a run's start: each run of the turn maps to its own segment (`start`
 * ... `finish`), and the stream ends after the terminal chunk of the session's current run, at the
 * first run of another turn, or (with `onlyRun`) after that run. A run superseded without a terminal
 * chunk is closed with a `finish` of its own.
 */
export async function* turnUiChunks(ctx: HelixServerContext, request: TurnStreamRequest): AsyncGenerator<{ readonly id?: string; readonly chunk: UiMessageChunk }> {
  const { sessionId, turnId, after, onlyRun, signal } = request;
  let mapper: RunUiMapper | undefined;
  const chunks = ctx.runtime.readStream(sessionId, { fromSeq: request.fromSeq, signal, ...(onlyRun === undefined ? {} : { untilRunEnds: onlyRun }) });
  try {
    for await (const chunk of chunks) {
      if (chunk.type === 'run_started') {
        ctx.noteRunStart(chunk.runId, chunk.seq);
        if (mapper && !mapper.ended) for (const c of mapper.close('other')) yield { chunk: c };
        if (chunk.seq !== request.fromSeq && !(await belongsToTurn(ctx, chunk, turnId))) return;
        mapper = new RunUiMapper(turnId);
      }
      if (!mapper) continue;
      for (const p of mapper.map(chunk)) if (after === undefined || isAfter(p.position, after)) yield { id: positionId(p.position), chunk: p.chunk };
      if (mapper.ended && (onlyRun === chunk.runId || (await isCurrentRun(ctx, sessionId, chunk.runId)))) return;
    }
    if (mapper && !mapper.ended && !signal.aborted) for (const c of mapper.close('other')) yield { chunk: c };
  } catch (error) {
    if (signal.aborted) return;
    ctx.logger.error('server: a UI stream failed', { sessionId, error: error instanceof Error ? error.message : String(error) });
    yield { chunk: { type: 'error', errorText: 'The stream failed on the server; resume it to continue.' } };
  }
}

async function belongsToTurn(ctx: HelixServerContext, chunk: StreamChunk, turnId: string): Promise<boolean> {
  const run = await ctx.runtime.getRun(chunk.runId);
  return run?.turnId === turnId;
}

async function isCurrentRun(ctx: HelixServerContext, sessionId: string, runId: string): Promise<boolean> {
  const session = await ctx.runtime.getSession(sessionId);
  return session?.currentRunId === runId;
}

/** The SSE events of a UI stream: one `data:` per UI chunk with its position as the event id, then `[DONE]`. */
export async function* uiSseEvents(chunks: AsyncIterable<{ readonly id?: string; readonly chunk: UiMessageChunk }>): AsyncGenerator<SseEvent> {
  for await (const { id, chunk } of chunks) yield { ...(id === undefined ? {} : { id }), data: JSON.stringify(chunk) };
  yield { data: '[DONE]' };
}
