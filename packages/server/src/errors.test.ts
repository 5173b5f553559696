// Errors as JSON AgentErrorInfo with fitting HTTP statuses (issue 13, item 3), and nothing of a server's
// internals in a 500.
import { afterEach, describe, expect, it } from 'vitest';
import { HTTPException } from 'hono/http-exception';
import { AgentError, silentLogger, type Logger } from '@helix-agents/sdk';
import { errorBody, httpStatusFor, ServerError, type ServerErrorCode } from './index.js';
import { closeAll, get, startHarness } from './__tests__/harness.js';

afterEach(closeAll);

describe('error statuses', () => {
  it('each server code has its status; runtime codes get fitting ones; anything else is 500', () => {
    const expected: Record<ServerErrorCode, number> = {
      http_unauthorized: 401,
      http_not_found: 404,
      http_payload_too_large: 413,
      http_invalid_id: 400,
      http_bad_request: 400,
      http_invalid_cursor: 400,
      http_unknown_agent: 400,
      http_nothing_to_answer: 409,
      http_unsupported: 400,
    };
    for (const [code, status] of Object.entries(expected)) {
      const error = new ServerError(code as ServerErrorCode, 'x');
      expect(httpStatusFor(error), code).toBe(status);
      expect(errorBody(error)).toMatchObject({ code, layer: 'transport', retryable: false, hint: expect.any(String) });
      expect(ServerError.isInstance(error)).toBe(true);
    }
    for (const [code, status] of [['run_invalid_input', 400], ['state_not_found', 404], ['session_not_suspended', 409], ['state_conflict', 409], ['tool_call_not_pending', 409], ['approval_invalid_signature', 403], ['run_internal_error', 500]] as const) {
      expect(httpStatusFor(new AgentError(code, 'x')), code).toBe(status);
    }
    expect(httpStatusFor(new HTTPException(400))).toBe(400);
    expect(errorBody(new HTTPException(400))).toMatchObject({ code: 'http_bad_request' });
    expect(httpStatusFor(new Error('boom'))).toBe(500);
    expect(errorBody(new Error('the database password is hunter2'))).toMatchObject({ code: 'run_internal_error', message: 'The server failed to handle the request.' });
  });

  it('a failure inside the runtime answers 500 with a generic AgentErrorInfo and logs the cause', async () => {
    const logged: string[] = [];
    const logger: Logger = { ...silentLogger, error: (message, fields) => void logged.push(`${message} ${JSON.stringify(fields)}`) };
    const h = await startHarness({
      script: [],
      app: { logger },
      runtime: (executor) =>
        new Proxy(executor, {
          get(target, key) {
            if (key === 'getSession') return () => Promise.reject(new Error('connection to db-7 refused: password hunter2'));
            const value = Reflect.get(target, key, target) as unknown;
            return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
          },
        }),
    });
    const response = await fetch(`${h.url}/api/chat`, { method: 'POST', headers: { authorization: 'Bearer alice-token-0123456789', 'content-type': 'application/json' }, body: JSON.stringify({ id: 'e-1', messages: [{ id: 'u', role: 'user', parts: [{ type: 'text', text: 'hi' }] }] }) });
    expect(response.status).toBe(500);
    const text = await response.text();
    expect(text).not.toMatch(/hunter2|db-7/);
    expect(JSON.parse(text)).toMatchObject({ code: 'run_internal_error', layer: 'run' });
    expect(logged.join('\n')).toMatch(/hunter2/);
    expect((await get(h, '/api/sessions/e-1')).status).toBe(404);
  });
});
