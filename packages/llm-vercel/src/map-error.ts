import {
  APICallError,
  EmptyResponseBodyError,
  InvalidResponseDataError,
  JSONParseError,
  LoadAPIKeyError,
  NoContentGeneratedError,
  TypeValidationError,
} from '@ai-sdk/provider';
import { AgentError, ProviderError } from '@helix-agents/sdk';
import type { AgentErrorInfo, ERROR_CODES } from '@helix-agents/sdk';

type AgentErrorCode = keyof typeof ERROR_CODES;

/** What a classification needs besides the error: who was called, and the call's own abort signal. */
export interface ProviderErrorContext {
  readonly provider: string;
  readonly modelId: string;
  /** The request's signal: an error after it aborted is an interruption, not a provider failure. */
  readonly abortSignal?: AbortSignal;
}

/** A classified provider failure, with the provider's Retry-After when it sent one. */
export interface ClassifiedProviderError {
  readonly error: AgentErrorInfo;
  readonly retryAfterMs?: number;
}

// Error codes of Node, undici and Bun for a connection that failed or broke.
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'ConnectionRefused',
  'ConnectionClosed',
  'FailedToOpenSocket',
]);
const TIMEOUT_CODES = new Set(['ETIMEDOUT', 'ESOCKETTIMEDOUT', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);
const NETWORK_TEXT = /fetch failed|failed to fetch|socket hang up|cannot connect to api|network ?error|econnrefused|econnreset|enotfound|eai_again|^terminated$/i;
// Last-resort text matching for providers that throw plain errors, tried in this order: rate limit (quota
// included), then bad credentials, then timeout.
const RATE_LIMIT_TEXT = /rate.?limit|too many requests|quota/i;
const AUTH_TEXT = /invalid.{0,10}api.?key|incorrect api key|unauthori[sz]ed|authentication/i;
const TIMEOUT_TEXT = /timed? ?out|timeout/i;

const PROVIDER_MESSAGE_LIMIT = 200;
const RESPONSE_BODY_LIMIT = 500;
const MESSAGE_LIMIT = 399;

type CauseKind = 'timeout' | 'network' | 'invalid';

function slice(text: string, limit: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > limit ? `${flat.slice(0, limit - 3)}...` : flat;
}

function errorName(error: unknown): string | undefined {
  if (error instanceof Error || error instanceof DOMException) return error.name;
  return undefined;
}

function messageOf(error: unknown): string {
  if (error instanceof Error || error instanceof DOMException) return error.message;
  if (typeof error === 'string') return error;
  if (typeof error === 'object' && error !== null) {
    const message = (error as { message?: unknown }).message;
    if (typeof message === 'string') return message;
  }
  return '';
}

function isTimeoutReason(reason: unknown): boolean {
  return errorName(reason) === 'TimeoutError';
}

/** Walks `error` and its causes for the strongest hint of what broke: timeout, then network, then an unreadable reply. */
function causeKind(error: unknown): CauseKind | undefined {
  let network = false;
  let invalid = false;
  const seen = new Set<unknown>();
  let current: unknown = error;
  for (let depth = 0; depth < 8 && typeof current === 'object' && current !== null && !seen.has(current); depth++) {
    seen.add(current);
    if (errorName(current) === 'TimeoutError') return 'timeout';
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') {
      if (TIMEOUT_CODES.has(code)) return 'timeout';
      if (NETWORK_CODES.has(code)) network = true;
    }
    if (
      JSONParseError.isInstance(current) ||
      TypeValidationError.isInstance(current) ||
      InvalidResponseDataError.isInstance(current) ||
      EmptyResponseBodyError.isInstance(current) ||
      NoContentGeneratedError.isInstance(current)
    ) {
      invalid = true;
    } else if (NETWORK_TEXT.test(messageOf(current))) {
      network = true;
    }
    current = (current as { cause?: unknown }).cause;
  }
  return network ? 'network' : invalid ? 'invalid' : undefined;
}

/**
 * Milliseconds to wait from `retry-after-ms` or `retry-after` (seconds or an HTTP date), read the
 * way the AI SDK's own retry reads them; undefined when absent or unreadable.
 */
export function retryAfterMsFromHeaders(headers: Readonly<Record<string, string | undefined>> | undefined, now: number = Date.now()): number | undefined {
  if (headers === undefined) return undefined;
  let retryAfterMs: string | undefined;
  let retryAfter: string | undefined;
  for (const key in headers) {
    const lower = key.toLowerCase();
    if (lower === 'retry-after-ms') retryAfterMs = headers[key];
    else if (lower === 'retry-after') retryAfter = headers[key];
  }
  if (retryAfterMs !== undefined) {
    const ms = Number.parseFloat(retryAfterMs);
    if (Number.isFinite(ms) && ms >= 0) return Math.round(ms);
  }
  if (retryAfter !== undefined) {
    const trimmed = retryAfter.trim();
    if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number.parseFloat(trimmed) * 1000);
    const date = Date.parse(trimmed);
    if (!Number.isNaN(date)) return Math.max(0, date - now);
  }
  return undefined;
}

// The status an OpenAI-style error object implies, for errors that arrive as stream parts rather than HTTP answers.
function statusOfErrorObject(error: object): number | undefined {
  const record = error as Record<string, unknown>;
  for (const key of ['statusCode', 'status', 'code']) {
    const value = record[key];
    const status = typeof value === 'number' ? value : typeof value === 'string' && /^\d{3}$/.test(value) ? Number(value) : undefined;
    if (status !== undefined && status >= 400 && status <= 599) return status;
  }
  const discriminator = [record['code'], record['type']].filter((value) => typeof value === 'string').join(' ').toLowerCase();
  if (discriminator === '') return undefined;
  if (/insufficient_quota|rate_limit/.test(discriminator)) return 429;
  if (/authentication|invalid_api_key/.test(discriminator)) return 401;
  if (discriminator.includes('permission')) return 403;
  if (discriminator.includes('not_found')) return 404;
  if (/invalid|bad_request|context_length/.test(discriminator)) return 400;
  if (discriminator.includes('overload')) return 503;
  if (discriminator.includes('timeout')) return 504;
  if (/server_error|internal/.test(discriminator)) return 500;
  return undefined;
}

function providerCodeOf(data: unknown): string | undefined {
  if (typeof data !== 'object' || data === null) return undefined;
  const record = data as Record<string, unknown>;
  const inner = typeof record['error'] === 'object' && record['error'] !== null ? (record['error'] as Record<string, unknown>) : record;
  const code = inner['code'] ?? inner['type'];
  return typeof code === 'string' || typeof code === 'number' ? String(code) : undefined;
}

interface Classification {
  readonly code: AgentErrorCode;
  readonly lead: string;
  readonly retryable?: boolean;
  readonly hint?: string;
}

function byStatus(status: number, quotaExhausted: boolean, sdkRetryable: boolean | undefined): Classification {
  const http = `(HTTP ${status})`;
  if (status === 429) {
    if (quotaExhausted) {
      return {
        code: 'provider_rate_limited',
        lead: `The model provider account has no quota left ${http}`,
        retryable: false,
        hint: 'Check the plan and billing of the model provider account; retrying will not help until the quota is raised.',
      };
    }
    return { code: 'provider_rate_limited', lead: `The model provider rate-limited the request ${http}` };
  }
  if (status === 401 || status === 403) return { code: 'provider_auth', lead: `The model provider rejected the credentials ${http}` };
  if (status === 408 || status === 504 || status === 524) return { code: 'provider_timeout', lead: `The model provider did not answer in time ${http}` };
  if (status >= 500) return { code: 'provider_server_error', lead: `The model provider had an internal error ${http}` };
  if (status === 400 || status === 404 || status === 413 || status === 422) {
    return { code: 'provider_bad_request', lead: `The model provider refused the request ${http}` };
  }
  return { code: 'provider_error', lead: `The model provider failed ${http}`, retryable: sdkRetryable === true };
}

function byCause(kind: CauseKind): Classification {
  if (kind === 'timeout') return { code: 'provider_timeout', lead: 'The model provider did not answer in time' };
  if (kind === 'network') return { code: 'provider_network', lead: 'Could not reach the model provider' };
  return { code: 'provider_invalid_response', lead: 'The model provider returned a reply that could not be read' };
}

function byText(text: string): Classification | undefined {
  if (RATE_LIMIT_TEXT.test(text)) return { code: 'provider_rate_limited', lead: 'The model provider rate-limited the request' };
  if (AUTH_TEXT.test(text)) return { code: 'provider_auth', lead: 'The model provider rejected the credentials' };
  if (TIMEOUT_TEXT.test(text)) return { code: 'provider_timeout', lead: 'The model provider did not answer in time' };
  return undefined;
}

/**
 * Classifies anything a model call threw or streamed as an `error` part into an {@link AgentErrorInfo}
 * (provider_rate_limited, provider_auth, provider_timeout, ...; run_interrupted for our own abort).
 * Never throws. The message stays stable across retries of the same failure (docs/rules.md, D12).
 */
export function classifyProviderError(error: unknown, context: ProviderErrorContext): ClassifiedProviderError {
  const base = { provider: context.provider, modelId: context.modelId };
  const signal = context.abortSignal;
  if (signal?.aborted === true) {
    // The loop's per-call timeout aborts with a TimeoutError reason; a stop aborts with anything else.
    if (isTimeoutReason(signal.reason)) {
      return build({ code: 'provider_timeout', lead: 'The model provider did not answer before the call timed out' }, '', { ...base, cause: 'TimeoutError' });
    }
    return { error: new AgentError('run_interrupted', 'The model call was interrupted.', { details: base }).info };
  }
  if (AgentError.isInstance(error)) return { error: error.info };

  const providerMessage = messageOf(error);
  const name = errorName(error);
  const details: Record<string, unknown> = { ...base };
  if (name !== undefined) details['cause'] = name;

  if (APICallError.isInstance(error)) {
    const status = error.statusCode;
    if (status !== undefined) details['statusCode'] = status;
    const providerCode = providerCodeOf(error.data);
    if (providerCode !== undefined) details['providerCode'] = providerCode;
    if (error.responseBody !== undefined && error.responseBody !== '') details['responseBody'] = slice(error.responseBody, RESPONSE_BODY_LIMIT);
    const retryAfterMs = retryAfterMsFromHeaders(error.responseHeaders);
    if (retryAfterMs !== undefined) details['retryAfterMs'] = retryAfterMs;
    let classification: Classification;
    if (status !== undefined && status >= 400) {
      const quotaExhausted = providerCode === 'insufficient_quota' || (error.responseBody?.includes('insufficient_quota') ?? false);
      classification = byStatus(status, quotaExhausted, error.isRetryable);
    } else {
      // No HTTP error: the request never got an answer, or the answer broke or could not be parsed.
      const kind = causeKind(error.cause) ?? causeKind(error);
      if (kind !== undefined) classification = byCause(kind);
      else if (status === undefined && error.isRetryable) classification = byCause('network');
      else if (status !== undefined) classification = byCause('invalid');
      else classification = { code: 'provider_error', lead: 'The model provider failed' };
    }
    return build(classification, providerMessage, details, retryAfterMs);
  }

  if (name === 'AbortError') {
    // Not our signal: the provider or the runtime cut the connection.
    return build({ code: 'provider_network', lead: 'The connection to the model provider was aborted' }, providerMessage, details);
  }
  const kind = causeKind(error);
  if (kind !== undefined) return build(byCause(kind), providerMessage, details);
  if (LoadAPIKeyError.isInstance(error)) {
    return build({ code: 'provider_auth', lead: 'No API key is configured for the model provider' }, providerMessage, details);
  }
  if (typeof error === 'object' && error !== null && !(error instanceof Error)) {
    // An `error` stream part often carries the provider's raw error object, e.g. { message, type, code }.
    const status = statusOfErrorObject(error);
    const providerCode = providerCodeOf(error);
    if (providerCode !== undefined) details['providerCode'] = providerCode;
    if (status !== undefined) {
      details['statusCode'] = status;
      return build(byStatus(status, providerCode === 'insufficient_quota', undefined), providerMessage, details);
    }
  }
  const textual = byText(providerMessage);
  if (textual !== undefined) return build(textual, providerMessage, details);
  return build({ code: 'provider_error', lead: 'The model provider failed' }, providerMessage, details);
}

function build(classification: Classification, providerMessage: string, details: Record<string, unknown>, retryAfterMs?: number): ClassifiedProviderError {
  const shown = providerMessage === '' ? '' : slice(providerMessage, PROVIDER_MESSAGE_LIMIT);
  const message = shown === '' ? `${classification.lead}.` : `${classification.lead}: ${shown}`;
  const info = new ProviderError(classification.code, slice(message, MESSAGE_LIMIT), {
    details,
    ...(classification.retryable === undefined ? {} : { retryable: classification.retryable }),
    ...(classification.hint === undefined ? {} : { hint: classification.hint }),
  }).info;
  return retryAfterMs === undefined ? { error: info } : { error: info, retryAfterMs };
}
