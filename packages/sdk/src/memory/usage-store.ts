import type { UsageEntry, UsageFilter, UsageRollup, UsageStore } from '../usage.js';
import { rollupUsage } from '../usage.js';

/** The in-memory {@link UsageStore}. */
export class InMemoryUsageStore implements UsageStore {
  #entries: UsageEntry[] = [];

  async record(entries: readonly UsageEntry[]): Promise<void> {
    for (const entry of entries) this.#entries.push(entry);
  }

  async getRollup(filter: UsageFilter = {}): Promise<UsageRollup> {
    return rollupUsage(this.entries(filter));
  }

  /** Drops the session's entries (deleting a session through the executor does it); true when there were some. */
  async deleteSession(sessionId: string): Promise<boolean> {
    const kept = this.#entries.filter((e) => e.sessionId !== sessionId);
    if (kept.length === this.#entries.length) return false;
    this.#entries = kept;
    return true;
  }

  /** The recorded entries matching a filter. */
  entries(filter: UsageFilter = {}): UsageEntry[] {
    return this.#entries.filter(
      (e) => (filter.sessionId === undefined || e.sessionId === filter.sessionId) && (filter.runId === undefined || e.runId === filter.runId),
    );
  }
}
