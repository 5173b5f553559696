import { applyPatches, enablePatches, freeze, produce, produceWithPatches, type Patch } from 'immer';
import type { Draft } from '../hooks/types.js';
import type { Message } from '../messages.js';
import type { StatePatch } from '../stream.js';
import { safeJsonLength } from './limits.js';

enablePatches();

/** An updater as hooks and tools pass it to `updateState()`. */
export type StateUpdater = (draft: Draft<unknown>) => void;

const NO_PATCHES: readonly StatePatch[] = Object.freeze([]);

/** One state write since the last commit, with who made it (a tool call id, or a run-level owner). */
interface StateWrite {
  readonly owner: string;
  /** The updater itself, so that a subset of the writes can be run again one after another. */
  readonly updater: StateUpdater | undefined;
  readonly patches: readonly StatePatch[];
  /** The state right after this write. */
  readonly after: unknown;
  /** Its place among the run's writes (in this process, or as recorded by the process that made it). */
  readonly seq: number;
}

/** A point in the working copy that {@link WorkingCopy.rollbackTo} returns to. */
export interface WorkingMark {
  readonly rows: number;
  readonly state: unknown;
  readonly writes: number;
}

/**
 * A run's working copy: the custom state and the conversation as the run sees them, the committed
 * snapshot they started from, and the writes made since (by owner). State values are immutable (Immer,
 * frozen); every write replaces the state. Nothing outside this class changes these fields: the loop
 * appends, replaces, marks and rolls back through its methods.
 */
export class WorkingCopy {
  #state: unknown;
  #committedState: unknown;
  readonly #messages: Message[];
  #committedRows: number;
  readonly #writes: StateWrite[] = [];
  /** An upper bound of the working state's JSON length (undefined: unknown, measured at the next check). */
  #sizeBound: number | undefined;
  /** The next write's {@link StateWrite.seq}: it only grows, across commits and replays. */
  #seq = 0;

  constructor(state: unknown, messages: readonly Message[]) {
    this.#state = freeze(state, true);
    this.#committedState = this.#state;
    this.#messages = messages.slice();
    this.#committedRows = this.#messages.length;
  }

  /** The working custom state (immutable). */
  get state(): unknown {
    return this.#state;
  }

  /** The state as of the last commit. */
  get committedState(): unknown {
    return this.#committedState;
  }

  /** The working conversation: committed rows, then the rows appended since. */
  get messages(): readonly Message[] {
    return this.#messages;
  }

  /** How many rows of {@link messages} are committed. */
  get committedRows(): number {
    return this.#committedRows;
  }

  /** How many rows were appended since the last commit. */
  get pendingCount(): number {
    return this.#messages.length - this.#committedRows;
  }

  /** The rows appended since the last commit (a copy). */
  pendingRows(): Message[] {
    return this.#messages.slice(this.#committedRows);
  }

  /** Applies an Immer update owned by `owner`; returns its patches, or undefined when nothing changed. */
  update(updater: StateUpdater, owner: string): readonly StatePatch[] | undefined {
    const [next, patches] = produceWithPatches(this.#state, updater);
    // Kept even when it changed nothing here: run again on another base (a stop's recompose), it may.
    const statePatches = next === this.#state ? NO_PATCHES : (patches as unknown as readonly StatePatch[]);
    this.#writes.push({ owner, updater, patches: statePatches, after: next, seq: this.#seq++ });
    if (next === this.#state) return undefined;
    this.#state = next;
    this.#grow(statePatches);
    return statePatches;
  }

  /**
   * Applies recorded patches (a replayed journal entry) owned by `owner`; `seq` is the place the process
   * that made them gave them (later writes here come after it).
   */
  applyRecorded(patches: readonly StatePatch[], owner: string, seq?: number): void {
    if (patches.length === 0) return;
    this.#state = freeze(applyPatches(this.#state as object, patches as unknown as Patch[]), true);
    const at = seq ?? this.#seq;
    this.#writes.push({ owner, updater: undefined, patches, after: this.#state, seq: at });
    this.#seq = Math.max(this.#seq, at + 1);
    this.#grow(patches);
  }

  /**
   * The working state's JSON length when it is over `max`, else undefined. It is measured only when the
   * bound kept from the writes' patches says it may be over, so a step does not serialize the whole state.
   */
  stateOver(max: number): number | undefined {
    if (max === Infinity || (this.#sizeBound !== undefined && this.#sizeBound <= max)) return undefined;
    const size = safeJsonLength(this.#state);
    this.#sizeBound = size;
    return size !== undefined && size > max ? size : undefined;
  }

  /** Goes back to the committed state, dropping every write since the last commit (the pending rows stay). */
  revertState(): void {
    this.#setState(this.#committedState);
    this.#writes.length = 0;
  }

  /** A write adds at most its values and their keys to the JSON; removals only shrink it. */
  #grow(patches: readonly StatePatch[]): void {
    if (this.#sizeBound === undefined) return;
    for (const patch of patches) {
      if (patch.op === 'remove') continue;
      const size = safeJsonLength(patch.value);
      if (size === undefined) {
        this.#sizeBound = undefined;
        return;
      }
      const key = patch.path[patch.path.length - 1];
      this.#sizeBound += size + (key === undefined ? 0 : String(key).length * 6 + 4);
    }
  }

  /** Replaces the state by one the bound knows nothing about (a rollback, a recomposition). */
  #setState(state: unknown): void {
    if (state !== this.#state) this.#sizeBound = undefined;
    this.#state = state;
  }

  /** The patches `owner` wrote since the last commit, in order (what a journal record keeps). */
  patchesOf(owner: string): StatePatch[] {
    const out: StatePatch[] = [];
    for (const write of this.#writes) if (write.owner === owner) for (const p of write.patches) out.push(p);
    return out;
  }

  /** The place of each of {@link patchesOf}'s patches among the run's writes (one number per patch). */
  seqsOf(owner: string): number[] {
    const out: number[] = [];
    for (const write of this.#writes) if (write.owner === owner) for (let i = 0; i < write.patches.length; i++) out.push(write.seq);
    return out;
  }

  /** The patches `owner` wrote after `mark`, in order. */
  patchesSince(mark: WorkingMark, owner: string): StatePatch[] {
    const out: StatePatch[] = [];
    for (let i = mark.writes; i < this.#writes.length; i++) {
      const write = this.#writes[i] as StateWrite;
      if (write.owner === owner) for (const p of write.patches) out.push(p);
    }
    return out;
  }

  /** Appends a row; returns its index. */
  append(message: Message): number {
    this.#messages.push(message);
    return this.#messages.length - 1;
  }

  /** Replaces a row appended since the last commit. */
  replace(index: number, message: Message): void {
    if (index < this.#committedRows || index >= this.#messages.length) throw new Error(`Row ${index} is already committed and cannot be replaced.`);
    this.#messages[index] = message;
  }

  /** The current rows and state, to come back to. */
  mark(): WorkingMark {
    return { rows: this.#messages.length, state: this.#state, writes: this.#writes.length };
  }

  /** Drops the rows and writes made after `mark` and restores its state. */
  rollbackTo(mark: WorkingMark): void {
    this.#messages.length = Math.max(this.#committedRows, Math.min(this.#messages.length, mark.rows));
    this.#writes.length = Math.min(this.#writes.length, mark.writes);
    this.#setState(mark.state);
  }

  /**
   * Drops every row appended since the last commit. The state goes back to the committed one, or to
   * `keepState`'s (a failed step keeps what its afterLLMCall wrote).
   */
  discardStep(keepState?: WorkingMark): void {
    this.#messages.length = this.#committedRows;
    if (keepState === undefined) {
      this.#setState(this.#committedState);
      this.#writes.length = 0;
    } else {
      this.#setState(keepState.state);
      this.#writes.length = Math.min(this.#writes.length, keepState.writes);
    }
  }

  /**
   * Keeps only the writes whose owner `keep` accepts, as if their updaters had run one after another on
   * the committed state in the order they were made. Patches recorded against one snapshot do not
   * compose (a splice and an index edit, two increments), so the kept writes after the first dropped
   * one run again (those before it keep the state they made: nothing runs twice without need); a
   * replayed write (patches only) is applied as recorded, and so is a write whose updater throws when run
   * again. When a kept write cannot be applied at all, nothing changes and its owner is returned: the
   * caller drops that owner too and asks again.
   */
  keepWrites(keep: (owner: string) => boolean): ReadonlySet<string> {
    let start = 0;
    while (start < this.#writes.length && keep((this.#writes[start] as StateWrite).owner)) start++;
    if (start === this.#writes.length) return NONE;
    let state = start === 0 ? this.#committedState : (this.#writes[start - 1] as StateWrite).after;
    const kept: StateWrite[] = this.#writes.slice(0, start);
    for (let i = start; i < this.#writes.length; i++) {
      const write = this.#writes[i] as StateWrite;
      if (!keep(write.owner)) continue;
      const next = rerun(state, write);
      if (next === UNAPPLIABLE) return new Set([write.owner]);
      state = next;
      kept.push({ ...write, after: state });
    }
    this.#writes.length = 0;
    for (const write of kept) this.#writes.push(write);
    this.#setState(state);
    return NONE;
  }

  /** What the next commit writes: the rows appended since the last commit, or undefined when there are none. */
  pendingMessages(): Message[] | undefined {
    return this.pendingCount > 0 ? this.#messages.slice(this.#committedRows) : undefined;
  }

  /** The working state when it differs from the committed one, else undefined. */
  changedState(): unknown {
    return this.#state !== this.#committedState ? this.#state : undefined;
  }

  /** The commit landed: the working copy is now the committed snapshot. */
  committed(): void {
    this.#committedRows = this.#messages.length;
    this.#committedState = this.#state;
    this.#writes.length = 0;
  }
}

const NONE: ReadonlySet<string> = new Set();
const UNAPPLIABLE = Symbol('unappliable');

function rerun(state: unknown, write: StateWrite): unknown {
  if (write.updater) {
    try {
      return produce(state, write.updater);
    } catch {
      // An updater that is not pure enough to run twice: its recorded patches are the next best thing.
    }
  }
  try {
    return freeze(applyPatches(state as object, write.patches as unknown as Patch[]), true);
  } catch {
    return UNAPPLIABLE;
  }
}
