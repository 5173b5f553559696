import type { HookObject } from '../hooks/manager.js';
import type { Logger } from './logger.js';

/** An execution's class-based hook while runs here use it: how many, and its warm-up / close chain. */
interface Lent {
  runs: number;
  /** Its last warm-up (a failure rejects the runs that wait for it). */
  ready: Promise<void>;
  /** Its warm-ups and closes, one after another (never rejects). */
  settled: Promise<void>;
}

/**
 * The class-based hooks an executor warmed, and when they are closed. Two lifetimes:
 * - **kept**: the hooks of agents (`defineAgent({ hooks })`) and those given to `executor.warmUp()`: warmed
 *   once, closed once by `close()` (newest first);
 * - **lent**: hooks that only an execution brought (`execute(..., { hooks, hookManager })`, inherited by its
 *   sub-agents): warmed before the first run here that uses them, closed once the last of those runs has
 *   ended (completed, failed, suspended, handed off), then forgotten. An object given again later is warmed
 *   again: every warm-up is followed by exactly one close, and nothing is held for finished runs.
 * An object that becomes kept while lent is not closed when its runs end, only by `close()`.
 */
export class WarmHooks {
  /** Kept objects, oldest first. */
  readonly #kept = new Set<HookObject>();
  /** Lent objects with runs here, or whose close is under way. */
  readonly #lent = new Map<HookObject, Lent>();
  readonly #logger: Logger;

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /** Warms up (once) and keeps until close() every object not kept yet; a lent one becomes kept. */
  async keep(objects: readonly HookObject[]): Promise<void> {
    for (const object of objects) {
      if (this.#kept.has(object)) continue;
      this.#kept.add(object);
      const lent = this.#lent.get(object);
      this.#lent.delete(object);
      if (lent && lent.runs > 0) {
        // Warm (or warming) for its runs: it stays so.
        await lent.ready;
      } else {
        // Never warmed here, or its close is under way: warmed (again) after it.
        await lent?.settled;
        await object.warmUp?.();
      }
    }
  }

  /**
   * Lends the objects not kept to one run: the first run to borrow an object warms it up (after its close,
   * when one is under way). Resolves with the function that gives them back (when the run ended, or its
   * entry failed; a second call does nothing); a warm-up that throws gives back what was borrowed and rethrows.
   */
  async lend(objects: readonly HookObject[]): Promise<() => Promise<void>> {
    const borrowed: HookObject[] = [];
    let given: Promise<void> | undefined;
    // Once: the entry's failure and the run's end cannot both give the objects back.
    const giveBack = (): Promise<void> => (given ??= this.#giveBack(borrowed));
    try {
      for (const object of objects) {
        if (this.#kept.has(object) || borrowed.includes(object)) continue;
        let lent = this.#lent.get(object);
        if (!lent) this.#lent.set(object, (lent = { runs: 0, ready: Promise.resolve(), settled: Promise.resolve() }));
        borrowed.push(object);
        if (lent.runs++ === 0) {
          lent.ready = lent.settled.then(async () => object.warmUp?.());
          lent.settled = lent.ready.catch(() => undefined);
        }
        await lent.ready;
      }
    } catch (error) {
      await giveBack();
      throw error;
    }
    return giveBack;
  }

  /** Closes every kept object, newest first, and forgets them; waits for the closes of lent objects under way. */
  async close(): Promise<void> {
    const kept = [...this.#kept].reverse();
    this.#kept.clear();
    for (const object of kept) await object.close?.();
    await Promise.all([...this.#lent.values()].filter((l) => l.runs === 0).map((l) => l.settled));
  }

  /** A run gives its objects back, newest first: the last run of an object closes it (a throw is logged). */
  async #giveBack(borrowed: readonly HookObject[]): Promise<void> {
    for (const object of [...borrowed].reverse()) {
      const lent = this.#lent.get(object);
      // Kept since it was lent: close() closes it.
      if (!lent || --lent.runs > 0) continue;
      const closed = lent.settled.then(async () => {
        try {
          await object.close?.();
        } catch (error) {
          this.#logger.warn(`close() of a class-based hook (${object.constructor.name}) threw: ${error instanceof Error ? error.message : String(error)}`);
        }
      });
      lent.settled = closed;
      await closed;
      // Forgotten unless a run borrowed it again meanwhile.
      if (lent.runs === 0 && this.#lent.get(object) === lent) this.#lent.delete(object);
    }
  }
}
