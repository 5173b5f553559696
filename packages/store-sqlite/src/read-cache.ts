import type BetterSqlite3 from 'better-sqlite3';

/**
 * Read caches of one connection (docs/durability.md, "The read caches"). A step's commit reads its
 * session's fence and head, and its chunks read their stream's owner and next seq; both are what the
 * previous commit on this connection wrote, as long as nothing else wrote in between. A cache keeps
 * them, valid under two conditions checked at the start of every write transaction that uses them
 * (inside BEGIN IMMEDIATE, so no other writer can slip in between the check and the write):
 *
 * - `PRAGMA data_version` is unchanged: no other connection (in this process or another) committed.
 * - the connection's `total_changes()` is what it was when the last cache-keeping transaction ended:
 *   nothing on this connection wrote a row outside such a transaction (data_version does not move for
 *   the connection's own writes, so this catches a raw write through the handle, a test's UPDATE, or a
 *   write path of this package that does not keep the caches).
 *
 * Every write transaction of the package says what it does to the caches ({@link CacheEffect}): one
 * that keeps them updates or drops the entries its writes touch; any other clears them all; and one
 * that throws (rolled back) clears them all, so that no entry ever reflects a rolled-back write.
 */

/** What a write transaction does to the read caches of its connection. */
export type CacheEffect =
  /** It updates or drops every entry its writes touch: the caches stay valid past it. */
  | 'keeps'
  /** It may write what the caches hold: they are cleared (the default of every unaudited path). */
  | 'clears';

/**
 * The read caches of one connection and the stamp that says whether they still hold what the file holds.
 * Package-internal: the stores reach it through {@link connectionCaches}.
 */
export class ConnectionCaches {
  /** False when the database was opened with `readCaches: false`: every lookup misses, nothing is kept. */
  enabled = true;
  readonly #db: BetterSqlite3.Database;
  readonly #caches = new Map<string, ReadCache<unknown>>();
  /** The data_version and total_changes() at the end of the last cache-keeping transaction (-1: no valid stamp). */
  #dataVersion = -1;
  #changes = -1;
  /** True between {@link begin} and the end of the outermost write transaction that called it. */
  #open = false;
  #dataVersionStatement: BetterSqlite3.Statement<[], number> | undefined;
  #changesStatement: BetterSqlite3.Statement<[], number> | undefined;

  constructor(db: BetterSqlite3.Database) {
    this.#db = db;
  }

  /** The cache named `name` if it was made (for tests and benchmarks). */
  peek(name: string): ReadCache<unknown> | undefined {
    return this.#caches.get(name);
  }

  /** The cache named `name` on this connection (one per connection, shared by every store on it), made on first use. */
  cache<V>(name: string, capacity: number): ReadCache<V> {
    let cache = this.#caches.get(name);
    if (!cache) {
      cache = new ReadCache<unknown>(this, capacity);
      this.#caches.set(name, cache);
    }
    return cache as ReadCache<V>;
  }

  /** True while a cache-keeping write transaction that checked the stamp runs: only then may an entry be read or kept. */
  get usable(): boolean {
    return this.#open && this.enabled;
  }

  /**
   * Called first inside a cache-keeping write transaction (the write lock held): clears every cache when
   * another connection committed or this one wrote outside a cache-keeping transaction since the last.
   */
  begin(): void {
    if (!this.enabled) return;
    const dataVersion = (this.#dataVersionStatement ??= this.#db.prepare<[], number>('PRAGMA data_version').pluck()).get()!;
    const changes = (this.#changesStatement ??= this.#db.prepare<[], number>('SELECT total_changes()').pluck()).get()!;
    if (dataVersion !== this.#dataVersion || changes !== this.#changes) {
      this.#clearAll();
      this.#dataVersion = dataVersion;
    }
    this.#open = true;
  }

  /** Called last inside a cache-keeping write transaction that succeeded: the caches are valid as of its writes. */
  end(): void {
    if (!this.#open) return;
    this.#open = false;
    // data_version does not move for this connection's own commit; total_changes() does.
    this.#changes = this.#changesStatement!.get()!;
  }

  /** Clears every cache and the stamp: a write that does not keep them, a rolled-back transaction, a raw write. */
  invalidate(): void {
    this.#open = false;
    this.#changes = -1;
    this.#clearAll();
  }

  #clearAll(): void {
    for (const cache of this.#caches.values()) cache.clear();
  }
}

/**
 * A capped map of rows read (or written) by write transactions of one connection. It answers only inside
 * a cache-keeping transaction that checked its connection's stamp ({@link ConnectionCaches.usable}); the
 * oldest entry goes when it is full. Its keeper sets an entry to what its transaction wrote, and drops
 * one its transaction changed otherwise.
 */
export class ReadCache<V> {
  readonly #connection: ConnectionCaches;
  readonly #capacity: number;
  readonly #entries = new Map<string, V>();
  /** How many lookups it answered (for tests and benchmarks: proof that the cache is used). */
  hits = 0;

  constructor(connection: ConnectionCaches, capacity: number) {
    this.#connection = connection;
    this.#capacity = Math.max(1, capacity);
  }

  /** How many entries it holds now. */
  get size(): number {
    return this.#entries.size;
  }

  /** The entry of `key`, or undefined (always outside a checked cache-keeping transaction, or with the caches off). */
  get(key: string): V | undefined {
    if (!this.#connection.usable) return undefined;
    const entry = this.#entries.get(key);
    if (entry !== undefined) this.hits++;
    return entry;
  }

  /** Like {@link get}, without counting a hit: for a keeper that updates an entry it did not answer a lookup with. */
  current(key: string): V | undefined {
    return this.#connection.usable ? this.#entries.get(key) : undefined;
  }

  /** Whether it holds an entry of `key`, valid or not (for tests). */
  has(key: string): boolean {
    return this.#entries.has(key);
  }

  /** Sets the entry of `key` to what the running transaction wrote (a no-op outside a checked one); the oldest goes past the cap. */
  set(key: string, value: V): void {
    if (!this.#connection.usable) return;
    // Re-inserted, so that Map order is the order of last writes and the first entry is the stalest.
    this.#entries.delete(key);
    this.#entries.set(key, value);
    if (this.#entries.size > this.#capacity) this.#entries.delete(this.#entries.keys().next().value!);
  }

  /** Forgets the entry of `key` (whatever the transaction: a drop is always safe). */
  drop(key: string): void {
    this.#entries.delete(key);
  }

  /** Forgets every entry. */
  clear(): void {
    this.#entries.clear();
  }
}

const registry = new WeakMap<BetterSqlite3.Database, ConnectionCaches>();

/** The read caches of a connection (made on first use). */
export function connectionCaches(db: BetterSqlite3.Database): ConnectionCaches {
  let caches = registry.get(db);
  if (!caches) {
    caches = new ConnectionCaches(db);
    registry.set(db, caches);
  }
  return caches;
}
