import { HTTPException } from 'hono/http-exception';
import { AgentError, type AgentErrorInfo } from '@helix-agents/sdk';

/** The codes of {@link ServerError}: what the HTTP layer refuses before a runtime sees the request. */
export type ServerErrorCode =
  | 'http_unauthorized'
  | 'http_not_found'
  | 'http_payload_too_large'
  | 'http_invalid_id'
  | 'http_bad_request'
  | 'http_invalid_cursor'
  | 'http_unknown_agent'
  | 'http_nothing_to_answer'
  | 'http_unsupported';

interface ServerCode {
  readonly status: number;
  readonly hint: string;
}

const SERVER_CODES: Readonly<Record<ServerErrorCode, ServerCode>> = {
  http_unauthorized: { status: 401, hint: 'Send the credentials the server expects (for bearerAuth: an `Authorization: Bearer <token>` header).' },
  http_not_found: { status: 404, hint: 'Check the path and the id; a session of another user is not found either.' },
  http_payload_too_large: { status: 413, hint: 'Send a smaller body or message, or raise the server limits (createHelixApp({ limits })).' },
  http_invalid_id: { status: 400, hint: 'Ids are 1 to 128 characters: letters, digits, and . _ : - (starting with a letter or digit).' },
  http_bad_request: { status: 400, hint: 'The request body does not match what the endpoint takes; see details.' },
  http_invalid_cursor: { status: 400, hint: 'Send back a Last-Event-ID (or ?from) exactly as the server sent it, or none to read from the start.' },
  http_unknown_agent: { status: 400, hint: 'Name one of the agents the server was created with, or omit the agent to use the default one.' },
  http_nothing_to_answer: { status: 409, hint: 'The message carries no tool output or approval response for a call the session waits on.' },
  http_unsupported: { status: 400, hint: 'The server does not support this request; see the message.' },
};

/** An error of the HTTP layer: a refused request, answered as JSON {@link AgentErrorInfo} with its HTTP status. */
export class ServerError extends AgentError {
  /** The HTTP status of the answer. */
  readonly status: number;

  constructor(code: ServerErrorCode, message: string, details?: Record<string, unknown>) {
    super(code, message, { layer: 'transport', severity: 'error', retryable: false, hint: SERVER_CODES[code].hint, ...(details === undefined ? {} : { details }) });
    this.status = SERVER_CODES[code].status;
  }

  /** True for a ServerError from any copy of this package. */
  static override isInstance(value: unknown): value is ServerError {
    return AgentError.isInstance(value) && value.code.startsWith('http_');
  }
}

// What the runtime's own codes mean for an HTTP client.
const RUNTIME_STATUS: Readonly<Record<string, number>> = {
  run_invalid_input: 400,
  config_invalid: 400,
  tool_invalid_input: 400,
  state_not_found: 404,
  session_not_suspended: 409,
  session_not_retryable: 409,
  tool_call_not_pending: 409,
  state_conflict: 409,
  state_run_superseded: 409,
  approval_invalid_signature: 403,
  agent_not_registered: 500,
};

/** The HTTP status for an error: its own for a {@link ServerError}, a fitting one for the runtime's codes, else 500. */
export function httpStatusFor(error: unknown): number {
  if (ServerError.isInstance(error) && 'status' in error && typeof error.status === 'number') return error.status;
  if (AgentError.isInstance(error)) return RUNTIME_STATUS[error.code] ?? 500;
  if (error instanceof HTTPException && error.status < 500) return error.status;
  return 500;
}

/**
 * The JSON body of an error answer. helix errors keep their info; anything else becomes a generic
 * `run_internal_error` whose message says nothing about the server's internals (the caller logs the cause).
 */
export function errorBody(error: unknown): AgentErrorInfo {
  if (AgentError.isInstance(error)) return error.info;
  // hono's own refusals (a malformed request it could not route or read).
  if (error instanceof HTTPException && error.status < 500) return new ServerError('http_bad_request', 'The request could not be read.').info;
  return new AgentError('run_internal_error', 'The server failed to handle the request.', { hint: 'Retry later; the server log has the cause.' }).info;
}
