import type { z } from 'zod';
import type { RecordOptions, StepKey, StepOutcome, StepRecorder } from './step-recorder.js';

/**
 * Lets a host drive a run's loop one step at a time: the loop does not start until the first
 * {@link Pacer.advance}, and it holds at every step commit until the next one. A durable-execution
 * engine uses it to make each of its own steps end at one of the loop's commits.
 */
export class Pacer {
  #ended = false;
  /** Lets the held loop go on (or start). */
  #release: (() => void) | undefined;
  /** Answers the advance() in flight: false at a hold, true at the end. */
  #answer: ((ended: boolean) => void) | undefined;
  readonly #started: Promise<void>;

  constructor() {
    this.#started = new Promise<void>((resolve) => {
      this.#release = resolve;
    });
  }

  /** Resolves at the first {@link advance}: the loop starts then. */
  started(): Promise<void> {
    return this.#started;
  }

  /** Whether the loop has ended. */
  get ended(): boolean {
    return this.#ended;
  }

  /**
   * Lets the loop run until its next step commit (resolves `false`) or its end (`true`). The first call
   * starts it. One advance at a time.
   */
  advance(): Promise<boolean> {
    if (this.#ended) return Promise.resolve(true);
    if (this.#answer) return Promise.reject(new Error('Pacer.advance() called while an advance is in flight'));
    const answered = new Promise<boolean>((resolve) => {
      this.#answer = resolve;
    });
    const release = this.#release;
    this.#release = undefined;
    release?.();
    return answered;
  }

  /** The loop reached a step commit: the advance in flight resolves, and the loop waits for the next. */
  hold(): Promise<void> {
    const held = new Promise<void>((resolve) => {
      this.#release = resolve;
    });
    const answer = this.#answer;
    this.#answer = undefined;
    answer?.(false);
    return held;
  }

  /** The loop ended: the advance in flight (and every later one) resolves `true`. */
  end(): void {
    this.#ended = true;
    const answer = this.#answer;
    this.#answer = undefined;
    answer?.(true);
    // A loop that never started is never released.
    this.#release = undefined;
  }
}

/** A recorder that holds the loop at each step commit for its {@link Pacer}, recording through `inner`. */
export class PacedRecorder implements StepRecorder {
  readonly #inner: StepRecorder;
  readonly #pacer: Pacer;

  constructor(inner: StepRecorder, pacer: Pacer) {
    this.#inner = inner;
    this.#pacer = pacer;
  }

  replay<T>(key: StepKey, schema: z.ZodType<T>): Promise<Exclude<StepOutcome<T>, { status: 'ran' }> | undefined> {
    return this.#inner.replay(key, schema);
  }

  replayOrRun<T>(key: StepKey, schema: z.ZodType<T>, run: () => Promise<T>, options?: RecordOptions<T>): Promise<StepOutcome<T>> {
    return this.#inner.replayOrRun(key, schema, run, options);
  }

  has(key: StepKey): boolean {
    return this.#inner.has(key);
  }

  recordedOrder(keys: readonly StepKey[]): StepKey[] {
    return this.#inner.recordedOrder(keys);
  }

  async stepCommitted(step: number): Promise<void> {
    await this.#inner.stepCommitted(step);
    await this.#pacer.hold();
  }
}
