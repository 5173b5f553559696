import { createHash, timingSafeEqual } from 'node:crypto';
import { ConfigError } from '@helix-agents/sdk';

/** Who sent a request. `userId` owns the sessions the request creates. */
export interface AuthIdentity {
  readonly userId: string;
}

/**
 * Decides who sent a request, from the standard `Request` (headers, cookies, URL): an identity, or
 * null to refuse it (401). May be async (a token lookup, a session store).
 */
export type AuthFunction = (request: Request) => AuthIdentity | null | undefined | Promise<AuthIdentity | null | undefined>;

/**
 * The `auth` option: a function, or the explicit `'none'`, which serves every request as the user
 * `local` and is only allowed on 127.0.0.1 (serve() binds there and warns).
 */
export type AuthOption = AuthFunction | 'none';

/** The user of every request when the app runs with `auth: 'none'`. */
export const LOCAL_USER_ID = 'local';

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/**
 * Bearer tokens to users: `bearerAuth({ [token]: userId })` accepts `Authorization: Bearer <token>`
 * for each listed token. Tokens are compared in constant time (as SHA-256 digests, against every
 * entry), so the answer's timing does not tell how much of a token was right.
 */
export function bearerAuth(tokens: Readonly<Record<string, string>>): AuthFunction {
  const entries = Object.entries(tokens).map(([token, userId]) => {
    if (token.length < 16) throw new ConfigError('bearerAuth: every token must be at least 16 characters long.');
    if (typeof userId !== 'string' || userId.length === 0) throw new ConfigError('bearerAuth: every token must map to a non-empty user id.');
    return { digest: digest(token), userId };
  });
  if (entries.length === 0) throw new ConfigError('bearerAuth: give at least one token.');
  return (request) => {
    const header = request.headers.get('authorization');
    const match = header === null ? null : /^Bearer ([\x21-\x7e]{1,512})$/i.exec(header);
    if (!match) return null;
    const given = digest(match[1] as string);
    let found: string | undefined;
    for (const entry of entries) if (timingSafeEqual(entry.digest, given) && found === undefined) found = entry.userId;
    return found === undefined ? null : { userId: found };
  };
}
