import type { z } from 'zod';
import { StateCommitError } from '../errors.js';
import type { JournalEntry, JournalKind, StateStore } from '../store.js';

/**
 * Work that must not run twice, named by what it is. A key is the same in every runtime; how it is
 * stored (a journal row, a durable engine's step) is the recorder's business.
 */
export type StepKey =
  /** The run's start signal is about to fire (staged before the hook, so a recovery does not fire it twice). */
  | { readonly kind: 'start_signal'; readonly step: number }
  /** A model reply that calls a side-effecting tool (a recovery replays the same calls). */
  | { readonly kind: 'model_reply'; readonly step: number }
  /** A side-effecting tool call: recorded at its start and at its result (at most once). */
  | { readonly kind: 'tool_call'; readonly step: number; readonly callId: string }
  /** A sub-agent call's child was spawned (beforeSubAgent fired): a recovered parent re-attaches to it. */
  | { readonly kind: 'child_spawn'; readonly step: number; readonly callId: string }
  /** onAgentComplete's outcome, recorded before the terminal commit. */
  | { readonly kind: 'terminal_hook'; readonly step: number };

/** What {@link StepRecorder.replay} and {@link StepRecorder.replayOrRun} come back with. */
export type StepOutcome<T> =
  /** The work ran now (and was recorded when the caller asked for it). */
  | { readonly status: 'ran'; readonly value: T }
  /** A process that died recorded it: the recorded value, validated by the schema. */
  | { readonly status: 'replayed'; readonly value: T }
  /** At-most-once work that started in a process that died and recorded no result: it must not run again. */
  | { readonly status: 'interrupted' };

/** How {@link StepRecorder.replayOrRun} records. */
export interface RecordOptions<T> {
  /**
   * Whether the loop needs this value recorded (default true). A recorder may record more than asked
   * (a durable engine records every step); runtime-js skips the write when it is not needed.
   */
  readonly persist?: boolean | ((value: T) => boolean);
  /** A start marker is recorded before `run`, so work that started and recorded no result is reported `interrupted`, never run twice. */
  readonly atMostOnce?: boolean;
}

/**
 * The port for exactly-once work between commits. runtime-js implements it as a journal in the state
 * store ({@link JournalStepRecorder}); another runtime (a durable-execution engine) supplies its own
 * without touching the loop. Replayed data is validated with the caller's schema, never cast.
 */
export interface StepRecorder {
  /** What a process that died recorded for `key`, or undefined when the work has to run. */
  replay<T>(key: StepKey, schema: z.ZodType<T>): Promise<Exclude<StepOutcome<T>, { status: 'ran' }> | undefined>;
  /** Replays `key` when it was recorded; otherwise runs `run` and records its value. */
  replayOrRun<T>(key: StepKey, schema: z.ZodType<T>, run: () => Promise<T>, options?: RecordOptions<T>): Promise<StepOutcome<T>>;
  /**
   * The step's commit landed: its records are no longer needed. A recorder may return a promise to hold
   * the loop there (a durable engine ends one of its own steps at each commit and lets the loop go on when
   * it starts the next); runtime-js returns nothing.
   */
  stepCommitted(step: number): void | Promise<void>;
  /** Whether a process that died already recorded this key (any kind of record). */
  has(key: StepKey): boolean;
  /**
   * The keys among `keys` whose work a process that died recorded a value for, in the order it recorded
   * them. Work whose writes were made one after another on the live state (parallel calls' results,
   * sub-agents' folds) must be replayed in this order: their patches hold absolute values.
   */
  recordedOrder(keys: readonly StepKey[]): StepKey[];
}

/** The journal key and kind of a step key (one encoding for every store). */
function journalKey(key: StepKey): { readonly key: string; readonly kind: JournalKind; readonly startKey?: string } {
  switch (key.kind) {
    case 'start_signal':
      return { key: 'start_signal', kind: 'start_signal' };
    case 'terminal_hook':
      return { key: 'terminal_hook', kind: 'terminal_hook' };
    case 'model_reply':
      return { key: `model_reply:${key.step}`, kind: 'model_reply' };
    case 'child_spawn':
      return { key: `child_spawn:${key.step}:${key.callId}`, kind: 'child_spawn' };
    case 'tool_call':
      return { key: `call_result:${key.step}:${key.callId}`, kind: 'call_result', startKey: `call_started:${key.step}:${key.callId}` };
  }
}

/** Where a journal entry's run and fence come from. */
export interface JournalOwner {
  readonly runId: string;
  readonly epoch: number;
}

/**
 * runtime-js's {@link StepRecorder}: entries in the state store's journal, fenced like commits (a
 * superseded run cannot record), loaded when a process claims a run for recovery. A step commit (and
 * the terminal commit) drops the entries it covers, in the store and here.
 */
export class JournalStepRecorder implements StepRecorder {
  readonly #store: StateStore;
  readonly #owner: JournalOwner;
  readonly #entries: Map<string, JournalEntry>;

  constructor(store: StateStore, owner: JournalOwner, recovered: readonly JournalEntry[] = []) {
    this.#store = store;
    this.#owner = owner;
    this.#entries = new Map(recovered.map((e) => [e.key, e]));
  }

  has(key: StepKey): boolean {
    if (this.#entries.size === 0) return false;
    const { key: id, startKey } = journalKey(key);
    return this.#entries.has(id) || (startKey !== undefined && this.#entries.has(startKey));
  }

  recordedOrder(keys: readonly StepKey[]): StepKey[] {
    if (this.#entries.size === 0 || keys.length === 0) return [];
    const byId = new Map(keys.map((k) => [journalKey(k).key, k] as const));
    const ordered: StepKey[] = [];
    // The map keeps the order the entries were loaded in (oldest first) and appended in.
    for (const id of this.#entries.keys()) {
      const key = byId.get(id);
      if (key) ordered.push(key);
    }
    return ordered;
  }

  async replay<T>(key: StepKey, schema: z.ZodType<T>): Promise<Exclude<StepOutcome<T>, { status: 'ran' }> | undefined> {
    if (this.#entries.size === 0) return undefined;
    const { key: id, startKey } = journalKey(key);
    const entry = this.#entries.get(id);
    if (entry) return { status: 'replayed', value: this.#validate(entry, schema) };
    if (startKey !== undefined && this.#entries.has(startKey)) return { status: 'interrupted' };
    return undefined;
  }

  async replayOrRun<T>(key: StepKey, schema: z.ZodType<T>, run: () => Promise<T>, options: RecordOptions<T> = {}): Promise<StepOutcome<T>> {
    const prior = await this.replay(key, schema);
    if (prior) return prior;
    const { key: id, kind, startKey } = journalKey(key);
    if (options.atMostOnce && startKey !== undefined) await this.#append(key.step, 'call_started', startKey, null);
    const value = await run();
    const persist = options.persist ?? true;
    if (persist === true || (persist !== false && persist(value))) {
      const entry = await this.#append(key.step, kind, id, value);
      // Two writers of one key: the first record wins, and the replay of it is what the run goes on with.
      if (entry.data !== value) return { status: 'replayed', value: this.#validate(entry, schema) };
    }
    return { status: 'ran', value };
  }

  stepCommitted(step: number): void {
    for (const [id, entry] of this.#entries) if (entry.stepIndex <= step) this.#entries.delete(id);
  }

  async #append(step: number, kind: JournalKind, key: string, data: unknown): Promise<JournalEntry> {
    const entry = await this.#store.appendJournal({ runId: this.#owner.runId, epoch: this.#owner.epoch, stepIndex: step, kind, key, data, at: Date.now() });
    this.#entries.set(key, entry);
    return entry;
  }

  #validate<T>(entry: JournalEntry, schema: z.ZodType<T>): T {
    const parsed = schema.safeParse(entry.data);
    if (!parsed.success) {
      throw new StateCommitError(`The journal entry "${entry.key}" of run ${entry.runId} does not match what this version records; it cannot be replayed.`, {
        details: { key: entry.key, issues: parsed.error.issues.map((i) => ({ path: i.path.map(String), message: i.message })) },
      });
    }
    return parsed.data;
  }
}
