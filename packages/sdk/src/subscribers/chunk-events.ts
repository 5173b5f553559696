import { FINISH_TOOL_NAME } from '../define.js';
import type { RunUsageSummary, StreamChunk } from '../stream.js';
import type { ActionResult, SessionEvent, SessionEventDataMap, SessionEventType, TurnCost, TurnUsage } from './events.js';

/** What the mapping needs to know about the run a chunk belongs to. */
export interface ChunkEventContext {
  readonly sessionId: string;
  readonly turnId: string | undefined;
  /**
   * True for a run continued by recover(): its run_started repeats the turn's input, which the log
   * already holds, so no second `message.received` is made (docs/rules.md, C11).
   */
  readonly recovered: boolean;
}

function event<T extends SessionEventType>(type: T, chunk: StreamChunk, context: ChunkEventContext, data: SessionEventDataMap[T]): SessionEvent {
  const made = {
    type,
    index: chunk.seq,
    sessionId: context.sessionId,
    ...(context.turnId === undefined ? {} : { turnId: context.turnId }),
    at: chunk.timestamp,
    data: Object.freeze(data),
  };
  return Object.freeze(made) as SessionEvent;
}

function usageOf(summary: RunUsageSummary | undefined): { usage?: TurnUsage; cost?: TurnCost } {
  if (!summary) return {};
  const usage: TurnUsage = Object.freeze({
    inputTokens: summary.inputTokens,
    outputTokens: summary.outputTokens,
    cacheReadTokens: summary.cacheReadTokens,
    cacheWriteTokens: summary.cacheWriteTokens,
    reasoningTokens: summary.reasoningTokens,
  });
  if (summary.costUsd === undefined) return { usage };
  return { usage, cost: Object.freeze({ totalUsd: summary.costUsd, model: summary.model ?? 'unknown' }) };
}

/**
 * The session event a recorded stream chunk stands for (docs/rules.md, D8), or undefined for chunks that
 * are not in the vocabulary (step starts, tool starts, state patches, custom chunks, warnings, hook
 * decisions). `index` is the chunk's offset in the session's stream. The internal `__finish__` call is
 * left out of the action envelopes; an envelope it leaves empty is not made.
 */
export function toSessionEvent(chunk: StreamChunk, context: ChunkEventContext): SessionEvent | undefined {
  switch (chunk.type) {
    case 'run_started':
      if (chunk.signal !== 'start' || chunk.input === undefined || context.recovered) return undefined;
      return event('message.received', chunk, context, { text: chunk.input });
    case 'text_delta':
      return event('message.appended', chunk, context, { delta: chunk.delta, stepIndex: chunk.stepIndex });
    case 'actions_requested': {
      const calls = chunk.calls.filter((c) => c.toolName !== FINISH_TOOL_NAME).map((c) => Object.freeze({ callId: c.callId, toolName: c.toolName, args: c.args }));
      if (calls.length === 0) return undefined;
      return event('actions.requested', chunk, context, { calls: Object.freeze(calls), stepIndex: chunk.stepIndex });
    }
    case 'tool_end': {
      const stubbed = chunk.stubbed === true ? { stubbed: true } : {};
      const result: ActionResult = chunk.success
        ? { callId: chunk.toolCallId, toolName: chunk.toolName, output: chunk.result, isError: false, ...stubbed }
        : { callId: chunk.toolCallId, toolName: chunk.toolName, output: chunk.error?.message, isError: true, ...stubbed, ...(chunk.error ? { error: chunk.error } : {}) };
      return event('action.result', chunk, context, result);
    }
    case 'tool_retry': {
      return event('action.tool_retry', chunk, context, { callId: chunk.toolCallId, toolName: chunk.toolName, attempt: chunk.attempt, reason: chunk.reason });
    }
    case 'actions_completed': {
      const results = chunk.results
        .filter((r) => r.toolName !== FINISH_TOOL_NAME)
        .map((r): ActionResult => Object.freeze({ callId: r.callId, toolName: r.toolName, output: r.output, isError: r.isError, ...(r.stubbed === true ? { stubbed: true } : {}) }));
      if (results.length === 0) return undefined;
      return event('actions.completed', chunk, context, { results: Object.freeze(results), stepIndex: chunk.stepIndex });
    }
    case 'end':
      return event('turn.completed', chunk, context, { result: chunk.output, ...usageOf(chunk.usage) });
    case 'error':
      return event('turn.failed', chunk, context, {
        message: chunk.errorInfo.message,
        status: chunk.status === 'interrupted' ? 'cancelled' : 'error',
        error: chunk.errorInfo,
      });
    default:
      return undefined;
  }
}
