import type { UsageEntry, UsageFilter, UsageRollup, UsageStore } from '../usage.js';
import { rollupUsage } from '../usage.js';

/** The in-memory {@link UsageStore}. */
export class InMemoryUsageStore implements UsageStore {
  readonly #entries: UsageEntry[] = [];

  async record(entries: readonly UsageEntry[]): Promise<void> {
    for (const entry of entries) this.#entries.push(entry);
  }

  async getRollup(filter: UsageFilter = {}): Promise<UsageRollup> {
    return rollupUsage(this.entries(filter));
  }

  /** The recorded entries matching a filter. */
  entries(filter: UsageFilter = {}): UsageEntry[] {
    return this.#entries.filter(
      (e) => (filter.sessionId === undefined || e.sessionId === filter.sessionId) && (filter.runId === undefined || e.runId === filter.runId),
    );
  }
}
