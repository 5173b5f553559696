import type { HookObject } from '../hooks/manager.js';

/** One warmed object: held (strongly) or only remembered (weakly); its warm-up, which later runs wait for. */
interface Warmed {
  held: HookObject | undefined;
  readonly ref: WeakRef<HookObject>;
  readonly ready: Promise<void>;
}

/**
 * The class-based hooks an executor warmed up: each object is warmed up once, and `close()` closes
 * each once, newest first. Two ways of remembering one:
 * - **hold**: the hooks of agents (`defineAgent({ hooks })`) and those given to `executor.warmUp()`, which
 *   live as long as the executor anyway;
 * - **weak**: hooks that only an execution brought (`execute(..., { hooks, hookManager })`, inherited by its
 *   sub-agents). Its runs hold such an object while they run; once they ended, the executor no longer keeps
 *   it alive: while the caller still refers to it, it stays warm (passed again, it is not warmed again) and
 *   `close()` closes it; once nothing refers to it, it is collected and forgotten, without `close()` (nothing
 *   could call it any more). So a fresh object per execute costs nothing once its runs ended.
 * An object remembered weakly and then held (its agent, or `warmUp()`, brings it too) is held from then on.
 */
export class WarmHooks {
  /** Every warmed object still alive, oldest first. */
  readonly #order = new Set<Warmed>();
  #warmed = new WeakMap<HookObject, Warmed>();
  readonly #collected = new FinalizationRegistry<Warmed>((entry) => this.#order.delete(entry));

  /** Warms up the objects not warmed yet (in order, each once), remembered as `how` says; waits for warm-ups under way. */
  async warm(objects: readonly HookObject[], how: 'hold' | 'weak'): Promise<void> {
    for (const object of objects) {
      const known = this.#warmed.get(object);
      if (known !== undefined) {
        if (how === 'hold') known.held = object;
        // Another run's warm-up under way: wait for it (its failure is that run's).
        await known.ready.catch(() => undefined);
        continue;
      }
      // Remembered before its warm-up runs: a throw rejects this run's entry, and close() still closes it.
      const entry: Warmed = { held: how === 'hold' ? object : undefined, ref: new WeakRef(object), ready: (async () => object.warmUp?.())() };
      this.#warmed.set(object, entry);
      this.#order.add(entry);
      this.#collected.register(object, entry, entry);
      await entry.ready;
    }
  }

  /** Calls `close()` once on every warmed object still alive, newest first, and forgets them all (warmed again when next used). */
  async close(): Promise<void> {
    const entries = [...this.#order].reverse();
    this.#order.clear();
    this.#warmed = new WeakMap();
    for (const entry of entries) {
      this.#collected.unregister(entry);
      const object = entry.held ?? entry.ref.deref();
      if (object === undefined) continue;
      await entry.ready.catch(() => undefined);
      await object.close?.();
    }
  }
}
