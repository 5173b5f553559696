import type { AgentHooks } from '@helix-agents/sdk';

/** The minimal logger the logging hooks need (pino, winston and console all fit). */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  debug(message: string, fields?: Record<string, unknown>): void;
}

/** The spec's logging pattern: lifecycle at info, tools at debug, failures at error. */
export function createLoggingHooks(logger: Logger): AgentHooks {
  return {
    onAgentStart: (payload, ctx) => {
      logger.info('Agent started', { sessionId: ctx.sessionId, agent: payload.agent.name, input: payload.input });
    },
    onAgentComplete: (payload, ctx) => {
      logger.info('Agent completed', { sessionId: ctx.sessionId, stepCount: payload.stepCount, durationMs: payload.durationMs });
    },
    onAgentFail: (payload, ctx) => {
      logger.error('Agent failed', { sessionId: ctx.sessionId, error: payload.error.message, recoverable: payload.recoverable });
    },
    beforeTool: (payload, ctx) => {
      logger.debug('Tool starting', { sessionId: ctx.sessionId, tool: payload.tool.name });
    },
    afterTool: (payload, ctx) => {
      logger.debug('Tool completed', { sessionId: ctx.sessionId, tool: payload.tool.name, success: payload.success, durationMs: payload.durationMs });
    },
  };
}
