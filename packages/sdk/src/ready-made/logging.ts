import type { AgentHooks } from '../hooks/types.js';
import type { Logger } from '../runtime/logger.js';

/** The logger the logging hooks need: the SDK's Logger, console, pino and winston all fit. */
export type LoggingHooksLogger = Pick<Logger, 'debug' | 'info' | 'error'>;

/** The spec's logging pattern: the run's lifecycle at info, tool calls at debug, failures at error. */
export function createLoggingHooks<TState = unknown, TOutput = unknown>(logger: LoggingHooksLogger): AgentHooks<TState, TOutput> {
  return {
    onAgentStart: (payload, ctx) => {
      logger.info('Agent started', { sessionId: ctx.sessionId, runId: ctx.runId, agent: payload.agent.name, input: payload.input });
    },
    onAgentComplete: (payload, ctx) => {
      logger.info('Agent completed', { sessionId: ctx.sessionId, runId: ctx.runId, stepCount: payload.stepCount, durationMs: payload.durationMs });
    },
    onAgentFail: (payload, ctx) => {
      logger.error('Agent failed', {
        sessionId: ctx.sessionId,
        runId: ctx.runId,
        code: payload.error.code,
        error: payload.error.message,
        recoverable: payload.recoverable,
      });
    },
    beforeTool: (payload, ctx) => {
      logger.debug('Tool starting', { sessionId: ctx.sessionId, tool: payload.tool.name, toolCallId: payload.toolCall.id });
    },
    afterTool: (payload, ctx) => {
      logger.debug('Tool completed', {
        sessionId: ctx.sessionId,
        tool: payload.tool.name,
        toolCallId: payload.toolCall.id,
        success: payload.success,
        blocked: payload.blocked,
        durationMs: payload.durationMs,
        ...(payload.error ? { code: payload.error.code } : {}),
      });
    },
  };
}
