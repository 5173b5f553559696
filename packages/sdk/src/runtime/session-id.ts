import { AgentError } from '../errors.js';

/** The longest session id an entry accepts (characters). */
export const MAX_SESSION_ID_LENGTH = 256;

/** Refuses a session id that is not a non-empty string of at most {@link MAX_SESSION_ID_LENGTH} characters (`run_invalid_input`). */
export function checkSessionId(sessionId: unknown, what = 'session id'): string {
  if (typeof sessionId !== 'string' || sessionId.length === 0 || sessionId.length > MAX_SESSION_ID_LENGTH) {
    const got = typeof sessionId !== 'string' ? typeof sessionId : sessionId.length === 0 ? 'an empty string' : `${sessionId.length} characters`;
    throw new AgentError('run_invalid_input', `A ${what} must be a non-empty string of at most ${MAX_SESSION_ID_LENGTH} characters, got ${got}.`, {
      hint: `Pass a non-empty ${what} of at most ${MAX_SESSION_ID_LENGTH} characters.`,
      details: { maxLength: MAX_SESSION_ID_LENGTH },
    });
  }
  return sessionId;
}
