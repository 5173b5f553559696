/** @helix-agents/server: the AI SDK UI message stream protocol and a native JSON + SSE API over any AgentRuntime, on hono. */
export { createHelixApp, helixAppInfo } from './app.js';
export type { HelixAppInfo, HelixAppOptions, HelixCorsOptions, HelixEnv } from './app.js';
export { serve } from './serve.js';
export type { FetchApp, HelixServer, ServeOptions } from './serve.js';
export { bearerAuth, LOCAL_USER_ID } from './auth.js';
export type { AuthFunction, AuthIdentity, AuthOption } from './auth.js';
export { InMemorySessionOwners, KVSessionOwners } from './owners.js';
export type { OwnedSession, OwnedSessionQuery, SessionOwners } from './owners.js';
export { DEFAULT_LIMITS, HelixServerContext } from './server-context.js';
export type { ApprovalSigner, HelixLimits } from './server-context.js';
export { ServerError, httpStatusFor, errorBody } from './errors.js';
export type { ServerErrorCode } from './errors.js';
export { ID_PATTERN, checkId } from './ids.js';
export { UI_STREAM_HEADERS } from './chat-routes.js';
export { ERROR_DATA_PART, WARNING_DATA_PART, RunUiMapper, parsePositionId, positionId } from './ui-chunks.js';
export type { PositionedUiChunk, UiMessageChunk, UiPosition } from './ui-chunks.js';
export type { RunResultView, SessionDetails, UsageTotals } from './session-views.js';
