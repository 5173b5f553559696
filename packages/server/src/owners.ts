import type { JsonValue, KVStore } from '@helix-agents/sdk/hooks';

/** A session a user owns, as the owner registry lists it. */
export interface OwnedSession {
  readonly sessionId: string;
  /** When the user claimed it (ms since the epoch). */
  readonly createdAt: number;
}

/** Options of {@link SessionOwners.list}. */
export interface OwnedSessionQuery {
  /** At most this many (the server caps it). */
  readonly limit: number;
  /** Only sessions claimed before this one (the previous page's last id), for paging. */
  readonly before?: string;
}

/**
 * Who owns which session. A session belongs to the user whose request created it; the server answers
 * 404 to everyone else. `claim` must be atomic: of two users claiming one new id, one wins.
 * Implementations: {@link InMemorySessionOwners} (the default; forgets on restart, so a durable
 * runtime's sessions become nobody's, and nobody's sessions are refused to everyone) and
 * {@link KVSessionOwners} over any `KVStore` (e.g. `SqliteKVStore`).
 */
export interface SessionOwners {
  /** The owner's user id, or undefined when nobody claimed the session. */
  ownerOf(sessionId: string): Promise<string | undefined>;
  /** Makes `userId` the owner unless someone owns it; returns the owner after the call. */
  claim(sessionId: string, userId: string, now: number): Promise<string>;
  /** The user's sessions, the most recently claimed first. */
  list(userId: string, query: OwnedSessionQuery): Promise<readonly OwnedSession[]>;
}

/** The default owner registry: in this process's memory. */
export class InMemorySessionOwners implements SessionOwners {
  readonly #owner = new Map<string, string>();
  readonly #byUser = new Map<string, OwnedSession[]>();

  async ownerOf(sessionId: string): Promise<string | undefined> {
    return this.#owner.get(sessionId);
  }

  async claim(sessionId: string, userId: string, now: number): Promise<string> {
    const owner = this.#owner.get(sessionId);
    if (owner !== undefined) return owner;
    this.#owner.set(sessionId, userId);
    const list = this.#byUser.get(userId) ?? [];
    list.push({ sessionId, createdAt: now });
    this.#byUser.set(userId, list);
    return userId;
  }

  async list(userId: string, query: OwnedSessionQuery): Promise<readonly OwnedSession[]> {
    const all = this.#byUser.get(userId) ?? [];
    let end = all.length;
    if (query.before !== undefined) {
      const at = all.findIndex((s) => s.sessionId === query.before);
      end = at < 0 ? 0 : at;
    }
    return all.slice(Math.max(0, end - query.limit), end).reverse();
  }
}

const NAMESPACE = 'helix-server:owners';

/**
 * An owner registry in a `KVStore`, so ownership survives a restart (use the same database as the
 * runtime's store: `new SqliteKVStore(stores.database)`, or `new PostgresKVStore(stores.pool)` for
 * several server processes on one Postgres). A claim uses the store's atomic `setIfAbsent` when it has
 * one (the SQLite, Postgres and in-memory kv stores do): of two claims of one new id, in this process or
 * another, exactly one wins, and both callers are told the same owner. A kv store without `setIfAbsent`
 * is serialized within this process only; put one server process in front of it.
 */
export class KVSessionOwners implements SessionOwners {
  readonly #kv: KVStore;
  readonly #claims = new Map<string, Promise<string>>();

  constructor(kv: KVStore) {
    this.#kv = kv;
  }

  async ownerOf(sessionId: string): Promise<string | undefined> {
    return ownerIn(await this.#kv.get(NAMESPACE, `s:${sessionId}`));
  }

  claim(sessionId: string, userId: string, now: number): Promise<string> {
    const previous = this.#claims.get(sessionId) ?? Promise.resolve('');
    const next = previous.catch(() => '').then(() => this.#claimOnce(sessionId, userId, now));
    this.#claims.set(sessionId, next);
    void next.finally(() => {
      if (this.#claims.get(sessionId) === next) this.#claims.delete(sessionId);
    }).catch(() => undefined);
    return next;
  }

  async #claimOnce(sessionId: string, userId: string, now: number): Promise<string> {
    const claim = { userId, createdAt: now };
    let owner: string | undefined;
    if (this.#kv.setIfAbsent) {
      owner = ownerIn(await this.#kv.setIfAbsent(NAMESPACE, `s:${sessionId}`, claim));
    } else {
      owner = await this.ownerOf(sessionId);
      if (owner === undefined) await this.#kv.set(NAMESPACE, `s:${sessionId}`, claim);
      owner ??= userId;
    }
    if (owner === undefined) throw new Error(`The owner record of session ${JSON.stringify(sessionId)} is not an owner record.`);
    // The user's index entry follows the claim it lists (a process that dies between them leaves a session
    // its owner reaches by id and does not see listed; never one listed for a user who does not own it).
    if (owner === userId) await this.#kv.set(NAMESPACE, `u:${userKey(userId)}:${String(now).padStart(15, '0')}:${sessionId}`, now);
    return owner;
  }

  async list(userId: string, query: OwnedSessionQuery): Promise<readonly OwnedSession[]> {
    const prefix = `u:${userKey(userId)}:`;
    const keys = await this.#kv.list(NAMESPACE, prefix);
    const all = keys.map((key) => {
      const rest = key.slice(prefix.length);
      const colon = rest.indexOf(':');
      return { sessionId: rest.slice(colon + 1), createdAt: Number(rest.slice(0, colon)) };
    });
    let end = all.length;
    if (query.before !== undefined) {
      const at = all.findIndex((s) => s.sessionId === query.before);
      end = at < 0 ? 0 : at;
    }
    return all.slice(Math.max(0, end - query.limit), end).reverse();
  }
}

/** The user id of an owner record, or undefined when `value` is not one. */
function ownerIn(value: JsonValue | undefined): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const userId = (value as { readonly [key: string]: JsonValue })['userId'];
  return typeof userId === 'string' ? userId : undefined;
}

// A user id may hold any character; encoded, it cannot end the key's user part early.
function userKey(userId: string): string {
  return encodeURIComponent(userId);
}
