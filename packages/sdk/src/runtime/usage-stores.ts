import type { UsageStore } from '../usage.js';

/**
 * The usage stores an executor's runs were given (`usageStore` of execute, resume, recover, ...), so
 * that deleting a session drops its entries there too. Held weakly: a store nobody else holds any more
 * can be collected (nobody can read it, so nothing of it needs deleting), and a fresh store per run
 * does not pile up here.
 */
export class KnownUsageStores {
  readonly #refs = new Set<WeakRef<UsageStore>>();
  readonly #known = new WeakSet<UsageStore>();
  readonly #collected = new FinalizationRegistry<WeakRef<UsageStore>>((ref) => this.#refs.delete(ref));

  /** Remembers a store a run was given (once per store). */
  remember(store: UsageStore | undefined): void {
    if (store === undefined || this.#known.has(store)) return;
    this.#known.add(store);
    const ref = new WeakRef(store);
    this.#refs.add(ref);
    this.#collected.register(store, ref);
  }

  /** The remembered stores still alive. */
  alive(): UsageStore[] {
    const stores: UsageStore[] = [];
    for (const ref of this.#refs) {
      const store = ref.deref();
      if (store === undefined) this.#refs.delete(ref);
      else stores.push(store);
    }
    return stores;
  }

  /** Drops the session's entries from every remembered store (and `extra`) that can, except `skip` (the state store, which deletes its own usage with the session). */
  async deleteSession(sessionId: string, skip: unknown, extra?: UsageStore): Promise<void> {
    const stores = new Set(this.alive());
    if (extra !== undefined) stores.add(extra);
    for (const store of stores) if (store !== skip) await store.deleteSession?.(sessionId);
  }
}
