import type pg from 'pg';
import { quoteIdentifier } from './sql.js';

/** What a reader waits on: a counter that moves whenever its stream may have changed. */
export interface StreamInterest {
  version: number;
  refs: number;
  readonly waiters: Set<() => void>;
}

/** A notification payload: a chunk was written to a stream, a run claimed it, or (`*`) anything changed. */
export type StreamEvent = { readonly kind: 'write'; readonly streamId: string } | { readonly kind: 'claim'; readonly streamId: string; readonly runId: string; readonly generation: number } | { readonly kind: 'all' };

// Postgres refuses a NOTIFY payload of 8000 bytes or more; longer ids fall back to a wake-everyone event.
const MAX_PAYLOAD = 7_000;

/** Encodes a write event as a NOTIFY payload (claims build theirs in SQL, with the claim's generation). */
export function encodeWrite(streamId: string): string {
  const payload = JSON.stringify(['w', streamId]);
  return Buffer.byteLength(payload) < MAX_PAYLOAD ? payload : '*';
}

function decodeEvent(payload: string | undefined): StreamEvent {
  if (payload === undefined || payload === '*') return { kind: 'all' };
  try {
    const parsed = JSON.parse(payload) as unknown;
    if (Array.isArray(parsed) && typeof parsed[1] === 'string') {
      if (parsed[0] === 'w') return { kind: 'write', streamId: parsed[1] };
      if (parsed[0] === 'c' && typeof parsed[2] === 'string' && typeof parsed[3] === 'number') return { kind: 'claim', streamId: parsed[1], runId: parsed[2], generation: parsed[3] };
    }
  } catch {
    // Not ours: wake everyone, a spurious wake-up only costs one query.
  }
  return { kind: 'all' };
}

/**
 * One LISTEN connection per stream manager, shared by all its readers. It turns notifications into
 * wake-ups of the readers of that stream; while it is down (connecting, or the connection broke) readers
 * fall back to polling, and it reconnects on its own. Readers never spin: they sleep until a wake-up,
 * their poll interval, or their abort signal.
 */
export class StreamNotifier {
  readonly channel: string;
  readonly #pool: pg.Pool;
  readonly #retryMs: number;
  readonly #interests = new Map<string, StreamInterest>();
  readonly #onClaim: (streamId: string, runId: string, generation: number) => void;
  #client: pg.PoolClient | undefined;
  #starting: Promise<void> | undefined;
  #retry: ReturnType<typeof setTimeout> | undefined;
  #closed = false;

  constructor(pool: pg.Pool, channel: string, retryMs: number, onClaim: (streamId: string, runId: string, generation: number) => void) {
    this.#pool = pool;
    this.channel = channel;
    this.#retryMs = retryMs;
    this.#onClaim = onClaim;
  }

  /** True while the LISTEN connection is up. */
  get listening(): boolean {
    return this.#client !== undefined;
  }

  /** Connects and listens, once; resolves when listening or when connecting failed (readers then poll). */
  ready(): Promise<void> {
    if (this.#closed || this.#client) return Promise.resolve();
    this.#starting ??= this.#connect().finally(() => {
      this.#starting = undefined;
    });
    return this.#starting;
  }

  async #connect(): Promise<void> {
    let client: pg.PoolClient | undefined;
    try {
      client = await this.#pool.connect();
      const listening = client;
      listening.on('notification', (message) => {
        if (message.channel === this.channel) this.#dispatch(decodeEvent(message.payload));
      });
      listening.on('error', () => this.#lost(listening));
      listening.on('end', () => this.#lost(listening));
      await listening.query(`LISTEN ${quoteIdentifier(this.channel)}`);
      if (this.#closed) {
        listening.release(true);
        return;
      }
      this.#client = listening;
      // Whatever happened while we were not listening is unknown: every reader looks again.
      this.#wakeAll();
    } catch {
      client?.release(true);
      this.#scheduleRetry();
    }
  }

  #lost(client: pg.PoolClient): void {
    if (this.#client !== client) return;
    this.#client = undefined;
    client.release(true);
    this.#wakeAll();
    this.#scheduleRetry();
  }

  #scheduleRetry(): void {
    if (this.#closed || this.#retry || this.#interests.size === 0) return;
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      if (this.#interests.size > 0) void this.ready();
    }, this.#retryMs);
    this.#retry.unref();
  }

  #dispatch(event: StreamEvent): void {
    if (event.kind === 'all') {
      this.#wakeAll();
      return;
    }
    if (event.kind === 'claim') this.#onClaim(event.streamId, event.runId, event.generation);
    this.wake(event.streamId);
  }

  /** Registers a reader's interest in a stream. */
  subscribe(streamId: string): StreamInterest {
    let interest = this.#interests.get(streamId);
    if (!interest) {
      interest = { version: 0, refs: 0, waiters: new Set() };
      this.#interests.set(streamId, interest);
    }
    interest.refs++;
    return interest;
  }

  /** Drops a reader's interest. */
  unsubscribe(streamId: string): void {
    const interest = this.#interests.get(streamId);
    if (interest && --interest.refs <= 0) this.#interests.delete(streamId);
  }

  /** Wakes the readers of a stream (a local write, or a notification). */
  wake(streamId: string): void {
    const interest = this.#interests.get(streamId);
    if (interest) bump(interest);
  }

  #wakeAll(): void {
    for (const interest of this.#interests.values()) bump(interest);
  }

  /** Sleeps until the stream moves past `seen`, `timeoutMs` passes (the polling fallback) or `signal` aborts. */
  wait(interest: StreamInterest, seen: number, timeoutMs: number, signal: AbortSignal | undefined): Promise<void> {
    if (interest.version !== seen || this.#closed || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        interest.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      signal?.addEventListener('abort', done, { once: true });
      interest.waiters.add(done);
    });
  }

  /** Stops listening and wakes every reader (they see the manager closed and end). */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#retry) clearTimeout(this.#retry);
    await this.#starting;
    const client = this.#client;
    this.#client = undefined;
    this.#wakeAll();
    if (client) {
      try {
        await client.query(`UNLISTEN ${quoteIdentifier(this.channel)}`);
        client.release();
      } catch {
        client.release(true);
      }
    }
  }
}

function bump(interest: StreamInterest): void {
  interest.version++;
  if (interest.waiters.size === 0) return;
  const waiters = [...interest.waiters];
  interest.waiters.clear();
  for (const wake of waiters) wake();
}
