import { rollupUsage } from '@helix-agents/sdk';
import type { UsageEntry, UsageFilter, UsageRollup, UsageStore } from '@helix-agents/sdk';
import type BetterSqlite3 from 'better-sqlite3';
import type { SqliteDatabase } from './database.js';
import { deferred, handleOf, immediate } from './database.js';

/**
 * The `commits.usage` column for a commit's entries, or null for none. An entry of the commit's own session
 * and run is stored without its `sessionId` and `runId`: the row's session and `run_id` say them, so a step
 * does not write them again for every entry (about 70 bytes an entry with a short session id and a UUID run
 * id, 100 with both UUIDs). An entry of another session or run is stored whole.
 */
export function usageColumn(entries: readonly UsageEntry[] | undefined, sessionId: string, runId: string): string | null {
  if (entries === undefined || entries.length === 0) return null;
  let text = '[';
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i]!;
    if (i > 0) text += ',';
    if (entry.sessionId === sessionId && entry.runId === runId) {
      const { sessionId: _session, runId: _run, ...own } = entry;
      text += JSON.stringify(own);
    } else text += JSON.stringify(entry);
  }
  return `${text}]`;
}

/**
 * The entries of a `commits.usage` column (see {@link usageColumn}), each with its `sessionId` and `runId`:
 * its own when it has them (every entry of a row written before entries were stored without them), else the
 * row's. The two keys come right after `kind`, where a recorded entry has them.
 */
export function usageEntries(column: string, sessionId: string, runId: string): UsageEntry[] {
  const stored = JSON.parse(column) as (UsageEntry | Omit<UsageEntry, 'sessionId' | 'runId'>)[];
  return stored.map((entry) => ('sessionId' in entry ? entry : (Object.assign({ kind: entry.kind, sessionId, runId }, entry) as UsageEntry)));
}

/** A commits row's usage column with the session and run it belongs to. */
interface CommittedUsage {
  usage: string;
  session_id: string;
  run_id: string;
}

/**
 * Usage lives in two places: entries recorded with a commit are a column of that commit's row (no
 * extra row or index to write on the hot path); entries recorded on their own (`record`) are rows of
 * the `usage` table. A rollup folds both, exactly as {@link rollupUsage} does.
 */
export class UsageTable {
  readonly #insert: BetterSqlite3.Statement<[string, string, string]>;
  readonly #recordMany: (entries: readonly UsageEntry[]) => void;
  readonly #rollup: (filter: UsageFilter) => UsageEntry[];
  readonly #deleteSession: BetterSqlite3.Statement<[string]>;

  constructor(db: BetterSqlite3.Database) {
    this.#insert = db.prepare<[string, string, string]>('INSERT INTO usage (session_id, run_id, body) VALUES (?, ?, ?)');
    this.#deleteSession = db.prepare<[string]>('DELETE FROM usage WHERE session_id = ?');
    const standaloneAll = db.prepare<[], string>('SELECT body FROM usage ORDER BY id').pluck();
    const standaloneBySession = db.prepare<[string], string>('SELECT body FROM usage WHERE session_id = ? ORDER BY id').pluck();
    const standaloneByRun = db.prepare<[string], string>('SELECT body FROM usage WHERE run_id = ? ORDER BY id').pluck();
    const committedAll = db.prepare<[], CommittedUsage>(
      'SELECT c.usage, s.session_id, c.run_id FROM commits c JOIN sessions s ON s.sid = c.sid WHERE c.usage IS NOT NULL ORDER BY c.id',
    );
    const committedOfSession = db.prepare<[number], CommittedUsage>(
      'SELECT c.usage, s.session_id, c.run_id FROM commits c JOIN sessions s ON s.sid = c.sid WHERE c.sid = ? AND c.usage IS NOT NULL ORDER BY c.version',
    );
    const sidOfSession = db.prepare<[string], number>('SELECT sid FROM sessions WHERE session_id = ?').pluck();
    const sidOfRun = db.prepare<[string], number>('SELECT s.sid FROM runs r JOIN sessions s ON s.session_id = r.session_id WHERE r.run_id = ?').pluck();
    // The usage table is in no read cache (read-cache.ts): its writes keep them.
    this.#recordMany = immediate(db, (entries: readonly UsageEntry[]) => this.insert(entries), 'keeps');
    this.#rollup = deferred(db, (filter: UsageFilter) => {
      // A run's committed usage is in its session's commits rows; a session's, in its own.
      const sid = filter.sessionId !== undefined ? sidOfSession.get(filter.sessionId) : filter.runId !== undefined ? sidOfRun.get(filter.runId) : undefined;
      const entries: UsageEntry[] = [];
      const committed = filter.sessionId === undefined && filter.runId === undefined ? committedAll.all() : sid === undefined ? [] : committedOfSession.all(sid);
      for (const row of committed) entries.push(...usageEntries(row.usage, row.session_id, row.run_id));
      const standalone = filter.runId !== undefined ? standaloneByRun.all(filter.runId) : filter.sessionId !== undefined ? standaloneBySession.all(filter.sessionId) : standaloneAll.all();
      for (const body of standalone) entries.push(JSON.parse(body) as UsageEntry);
      return entries.filter((e) => (filter.sessionId === undefined || e.sessionId === filter.sessionId) && (filter.runId === undefined || e.runId === filter.runId));
    });
  }

  /** Inserts entries in their own transaction. */
  record(entries: readonly UsageEntry[]): void {
    this.#recordMany(entries);
  }

  /** Inserts entries inside the caller's transaction. */
  insert(entries: readonly UsageEntry[]): void {
    for (const entry of entries) this.#insert.run(entry.sessionId, entry.runId, JSON.stringify(entry));
  }

  /** Deletes the session's rows of the `usage` table (a commit's usage goes with its commit); true when there were some. */
  deleteSession(sessionId: string): boolean {
    return this.#deleteSession.run(sessionId).changes > 0;
  }

  /** Folds the matching entries exactly as {@link rollupUsage} does. */
  rollup(filter: UsageFilter): UsageRollup {
    return rollupUsage(this.#rollup(filter));
  }
}

/** A standalone SQLite {@link UsageStore} (the SqliteStateStore is one too, and records usage atomically with commits). */
export class SqliteUsageStore implements UsageStore {
  /** The database this store writes. */
  readonly database: SqliteDatabase;
  readonly #table: UsageTable;

  constructor(database: SqliteDatabase) {
    this.database = database;
    this.#table = new UsageTable(handleOf(database));
  }

  async record(entries: readonly UsageEntry[]): Promise<void> {
    if (entries.length > 0) this.#table.record(entries);
  }

  async getRollup(filter: UsageFilter = {}): Promise<UsageRollup> {
    return this.#table.rollup(filter);
  }

  /** Drops the session's entries (`JSAgentExecutor.deleteSession` calls it); true when there were some. */
  async deleteSession(sessionId: string): Promise<boolean> {
    return this.#table.deleteSession(sessionId);
  }
}
