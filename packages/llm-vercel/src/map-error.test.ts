import { APICallError, LoadAPIKeyError, TypeValidationError } from '@ai-sdk/provider';
import { ProviderError } from '@helix-agents/sdk';
import { describe, expect, it } from 'vitest';
import { classifyProviderError, retryAfterMsFromHeaders } from './map-error.js';
import { toTokenUsage } from './map-usage.js';

const context = { provider: 'openai.chat', modelId: 'gpt-test' };
const classify = (error: unknown, signal?: AbortSignal): ReturnType<typeof classifyProviderError> =>
  classifyProviderError(error, signal === undefined ? context : { ...context, abortSignal: signal });
const apiError = (init: Partial<ConstructorParameters<typeof APICallError>[0]>): APICallError =>
  new APICallError({ message: 'failed', url: 'https://api.example/v1/chat/completions', requestBodyValues: {}, ...init });

describe('classifyProviderError', () => {
  it('reads network failures as the AI SDK wraps them, and as raw fetch errors', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    expect(classify(apiError({ message: 'Cannot connect to API: connect ECONNREFUSED', cause: refused, isRetryable: true })).error).toMatchObject({
      code: 'provider_network',
      retryable: true,
    });
    expect(classify(new TypeError('fetch failed', { cause: refused })).error.code).toBe('provider_network');
    expect(classify(new Error('socket hang up')).error.code).toBe('provider_network');
    // A stream that breaks after a 200 answer.
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    expect(classify(apiError({ message: 'Failed to process successful response', statusCode: 200, cause: reset })).error.code).toBe('provider_network');
    // Not our signal: the connection was cut elsewhere.
    expect(classify(new DOMException('aborted', 'AbortError')).error.code).toBe('provider_network');
  });

  it('reads undici timeouts and TimeoutErrors as provider_timeout', () => {
    const headersTimeout = Object.assign(new Error('Headers Timeout Error'), { code: 'UND_ERR_HEADERS_TIMEOUT' });
    expect(classify(new TypeError('fetch failed', { cause: headersTimeout })).error.code).toBe('provider_timeout');
    expect(classify(apiError({ message: 'Cannot connect to API: Headers Timeout Error', cause: headersTimeout, isRetryable: true })).error.code).toBe('provider_timeout');
    expect(classify(new DOMException('The operation was aborted due to timeout', 'TimeoutError')).error.code).toBe('provider_timeout');
  });

  it('reads an unparseable reply as provider_invalid_response', () => {
    const invalid = new TypeValidationError({ value: { choices: 'no' }, cause: new Error('expected array') });
    expect(classify(invalid).error).toMatchObject({ code: 'provider_invalid_response', retryable: true });
    expect(classify(apiError({ message: 'Invalid JSON response', statusCode: 200, cause: invalid })).error.code).toBe('provider_invalid_response');
  });

  it('reads a missing API key as provider_auth', () => {
    const info = classify(new LoadAPIKeyError({ message: 'OpenAI API key is missing.' })).error;
    expect(info).toMatchObject({ code: 'provider_auth', severity: 'fatal', retryable: false });
    expect(info.message).toMatch(/^No API key is configured/);
  });

  it('marks an exhausted quota as a rate limit that retrying will not fix', () => {
    const data = { error: { message: 'You exceeded your current quota.', type: 'insufficient_quota', code: 'insufficient_quota' } };
    const info = classify(apiError({ message: data.error.message, statusCode: 429, data, responseBody: JSON.stringify(data) })).error;
    expect(info).toMatchObject({ code: 'provider_rate_limited', retryable: false, details: { providerCode: 'insufficient_quota' } });
    expect(info.hint).toMatch(/billing/);
  });

  it('keeps the AI SDK retryability for other 4xx answers', () => {
    expect(classify(apiError({ statusCode: 409 })).error).toMatchObject({ code: 'provider_error', retryable: true });
    expect(classify(apiError({ statusCode: 418, isRetryable: false })).error).toMatchObject({ code: 'provider_error', retryable: false });
    expect(classify(apiError({ statusCode: 413 })).error.code).toBe('provider_bad_request');
  });

  it('classifies raw error objects of error stream parts by their code and type', () => {
    expect(classify({ message: 'The server had an error', type: 'server_error', code: null }).error).toMatchObject({ code: 'provider_server_error', details: { statusCode: 500 } });
    expect(classify({ message: 'Slow down', type: 'requests', code: 'rate_limit_exceeded' }).error.code).toBe('provider_rate_limited');
    expect(classify({ message: 'Context too long', code: 'context_length_exceeded' }).error.code).toBe('provider_bad_request');
    expect(classify({ message: 'odd', type: 'mystery' }).error.code).toBe('provider_error');
  });

  it('interrupts on our own abort whatever the error, and times out on a TimeoutError abort reason', () => {
    expect(classify(apiError({ statusCode: 500 }), AbortSignal.abort()).error).toMatchObject({ code: 'run_interrupted', layer: 'run', severity: 'info', retryable: true });
    const stop = new AbortController();
    stop.abort('user pressed stop');
    expect(classify(new Error('x'), stop.signal).error.code).toBe('run_interrupted');
    const timeout = new AbortController();
    timeout.abort(new DOMException('timed out', 'TimeoutError'));
    expect(classify(new DOMException('timed out', 'TimeoutError'), timeout.signal).error.code).toBe('provider_timeout');
  });

  it('keeps an already classified helix error', () => {
    const info = new ProviderError('provider_auth', 'Custom auth failure.').info;
    expect(classify(new ProviderError('provider_auth', 'Custom auth failure.')).error).toEqual(info);
  });

  it('falls back to text hints, then provider_error, for plain errors and non-errors', () => {
    expect(classify(new Error('429 Too Many Requests')).error.code).toBe('provider_rate_limited');
    expect(classify(new Error('Request timed out after 60s')).error.code).toBe('provider_timeout');
    const generic = classify(new Error('Something odd happened')).error;
    expect(generic).toMatchObject({ code: 'provider_error', retryable: false, message: 'The model provider failed: Something odd happened', details: { cause: 'Error' } });
    expect(classify(undefined).error).toMatchObject({ code: 'provider_error', message: 'The model provider failed.' });
    expect(classify('string failure').error.message).toBe('The model provider failed: string failure');
  });

  it('bounds the message and the response body', () => {
    const info = classify(apiError({ message: 'y'.repeat(5_000), statusCode: 500, responseBody: 'z'.repeat(5_000) })).error;
    expect(info.message.length).toBeLessThan(400);
    expect(String(info.details?.['responseBody']).length).toBeLessThanOrEqual(500);
    expect(info.details).toMatchObject({ provider: 'openai.chat', modelId: 'gpt-test', statusCode: 500 });
  });
});

describe('retryAfterMsFromHeaders', () => {
  it('prefers retry-after-ms, then retry-after in seconds or as an HTTP date, case-insensitively', () => {
    expect(retryAfterMsFromHeaders({ 'retry-after-ms': '1500', 'retry-after': '9' })).toBe(1500);
    expect(retryAfterMsFromHeaders({ 'Retry-After': '2.5' })).toBe(2500);
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryAfterMsFromHeaders({ 'retry-after': 'Thu, 01 Jan 2026 00:00:30 GMT' }, now)).toBe(30_000);
    expect(retryAfterMsFromHeaders({ 'retry-after': 'Wed, 31 Dec 2025 00:00:00 GMT' }, now)).toBe(0);
    expect(retryAfterMsFromHeaders({ 'retry-after': 'soon' })).toBeUndefined();
    expect(retryAfterMsFromHeaders({})).toBeUndefined();
    expect(retryAfterMsFromHeaders(undefined)).toBeUndefined();
  });
});

describe('toTokenUsage', () => {
  it('maps nested V3 usage and keeps unknown counts out', () => {
    expect(
      toTokenUsage({ inputTokens: { total: 100, noCache: 20, cacheRead: 80, cacheWrite: undefined }, outputTokens: { total: 10, text: 10, reasoning: 0 } }),
    ).toEqual({ promptTokens: 100, completionTokens: 10, totalTokens: 110, cachedTokens: 80, reasoningTokens: 0 });
    expect(toTokenUsage({ inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: undefined, text: undefined, reasoning: undefined } })).toBeUndefined();
    expect(toTokenUsage(undefined)).toBeUndefined();
  });
});
