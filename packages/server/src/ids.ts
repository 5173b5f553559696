import { ServerError } from './errors.js';

/**
 * What the server accepts as an id (sessions, runs, tool calls, checkpoints): 1 to 128 characters,
 * letters, digits and `. _ : -`, starting with a letter or a digit. Ids are opaque keys; this keeps
 * them safe in a URL path, a log line and a header, and rules out `.` and `..`.
 */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

/** Returns `value` when it is a valid id, else throws `http_invalid_id` (400) naming `what`. */
export function checkId(value: unknown, what: string): string {
  if (typeof value === 'string' && ID_PATTERN.test(value)) return value;
  const got = typeof value !== 'string' ? typeof value : value.length === 0 ? 'an empty string' : value.length > 128 ? `${value.length} characters` : 'characters outside [A-Za-z0-9._:-]';
  throw new ServerError('http_invalid_id', `Invalid ${what}: got ${got}.`, { field: what });
}
