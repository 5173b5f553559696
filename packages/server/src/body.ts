import type { z } from 'zod';
import { ServerError } from './errors.js';

/**
 * Reads a request's JSON body, refusing it with 413 (`http_payload_too_large`) once it passes
 * `maxBytes` (by its Content-Length, or while it streams in) and with 400 when it is not JSON or does
 * not match `schema`. An empty body reads as `{}`.
 */
export async function readJson<T>(request: Request, maxBytes: number, schema: z.ZodType<T>): Promise<T> {
  const declared = request.headers.get('content-length');
  if (declared !== null && Number(declared) > maxBytes) throw tooLarge(maxBytes);
  const text = await readText(request, maxBytes);
  let value: unknown = {};
  if (text.trim() !== '') {
    try {
      value = JSON.parse(text);
    } catch {
      throw new ServerError('http_bad_request', 'The request body is not valid JSON.');
    }
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issues = parsed.error.issues.slice(0, 5).map((i) => ({ path: i.path.map(String).join('.'), message: i.message }));
    throw new ServerError('http_bad_request', `The request body is invalid: ${issues.map((i) => `${i.path || '(body)'}: ${i.message}`).join('; ')}.`, { issues });
  }
  return parsed.data;
}

async function readText(request: Request, maxBytes: number): Promise<string> {
  if (request.body === null) return '';
  const reader = request.body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge(maxBytes);
    }
    parts.push(value);
  }
  return Buffer.concat(parts).toString('utf8');
}

function tooLarge(maxBytes: number): ServerError {
  return new ServerError('http_payload_too_large', `The request body is larger than ${maxBytes} bytes.`, { maxBytes });
}

/** Throws 413 when a message is longer than `maxChars` characters. */
export function checkMessageSize(text: string, maxChars: number): string {
  if (text.length > maxChars) throw new ServerError('http_payload_too_large', `The message is ${text.length} characters long; the limit is ${maxChars}.`, { maxChars, length: text.length });
  return text;
}
