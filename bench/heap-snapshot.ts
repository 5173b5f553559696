// Reads two V8 heap snapshots of one process (node:v8 writeHeapSnapshot) and says what the second holds that
// the first did not, by category. V8 keeps an object's snapshot id while it lives, so "new" is "an id the
// first snapshot does not have" and "gone" the reverse; a category's figure is new minus gone, in bytes of
// the objects' own (shallow) size.
//
// The categories:
// - compiled code: machine code, bytecode and their tables, function metadata (all of V8's `code` nodes but
//   the feedback ones);
// - feedback and inline caches: feedback vectors and cells, allocation sites, IC handlers and their lists;
// - hidden classes: V8 maps (object shapes), descriptor and transition arrays;
// - held by VM metadata: other objects that only code, feedback or hidden classes reach (allocation-site
//   boilerplates), and V8's weak lists of the code that depends on a hidden class or protector;
// - program data: every other object, reachable from the roots without passing through code, feedback
//   or hidden classes. This is where finished work would show: records, strings of ids, Map and Set
//   entries, closures, listeners, timers.
import { readFileSync } from 'node:fs';

/** The parts of a V8 heap snapshot file this module reads. */
interface SnapshotFile {
  readonly snapshot: { readonly meta: { readonly node_fields: readonly string[]; readonly node_types: readonly [readonly string[]]; readonly edge_fields: readonly string[]; readonly edge_types: readonly [readonly string[]] } };
  readonly nodes: readonly number[];
  readonly edges: readonly number[];
  readonly strings: readonly string[];
}

/** The categories a new or gone object falls into. */
export const HEAP_CATEGORIES = ['compiled code', 'feedback and inline caches', 'hidden classes', 'held by VM metadata', 'program data'] as const;
/** One of {@link HEAP_CATEGORIES}. */
export type HeapCategory = (typeof HEAP_CATEGORIES)[number];

const FEEDBACK = new Set([
  'system / FeedbackVector',
  'system / FeedbackCell',
  'system / ClosureFeedbackCellArray',
  'system / AllocationSite',
  'system / LoadHandler',
  'system / StoreHandler',
  'system / WeakFixedArray',
  'system / WeakArrayList',
]);

/** Node's own records in a snapshot (environment, realms, handles): they get new ids in every snapshot. */
const EMBEDDER = new Set(['native', 'synthetic']);

/** A parsed snapshot: per node its type, name, id, own size, and the range of its edges. */
class Snapshot {
  readonly count: number;
  readonly type: string[] = [];
  readonly name: string[] = [];
  readonly id: Float64Array;
  readonly size: Float64Array;
  readonly #firstEdge: Uint32Array;
  readonly #file: SnapshotFile;
  readonly #nodeFields: number;
  readonly #edgeFields: number;

  constructor(path: string) {
    const file = JSON.parse(readFileSync(path, 'utf8')) as SnapshotFile;
    const meta = file.snapshot.meta;
    this.#file = file;
    this.#nodeFields = meta.node_fields.length;
    this.#edgeFields = meta.edge_fields.length;
    const at = (field: string): number => meta.node_fields.indexOf(field);
    const [iType, iName, iId, iSize, iEdges] = [at('type'), at('name'), at('id'), at('self_size'), at('edge_count')];
    this.count = file.nodes.length / this.#nodeFields;
    this.id = new Float64Array(this.count);
    this.size = new Float64Array(this.count);
    this.#firstEdge = new Uint32Array(this.count + 1);
    let edge = 0;
    for (let i = 0; i < this.count; i++) {
      const base = i * this.#nodeFields;
      this.type.push(meta.node_types[0][file.nodes[base + iType]!]!);
      this.name.push(file.strings[file.nodes[base + iName]!]!);
      this.id[i] = file.nodes[base + iId]!;
      this.size[i] = file.nodes[base + iSize]!;
      this.#firstEdge[i] = edge;
      edge += file.nodes[base + iEdges]! * this.#edgeFields;
    }
    this.#firstEdge[this.count] = edge;
  }

  /** True for the nodes V8 counts as code, feedback or hidden classes: the walk to program data does not enter them. */
  isMetadata(i: number): boolean {
    return this.type[i] === 'code' || this.type[i] === 'object shape';
  }

  /** The nodes reachable from the root over strong edges without entering code, feedback or hidden classes. */
  programData(): Uint8Array {
    const seen = new Uint8Array(this.count);
    const edges = this.#file.edges;
    const weak = this.#file.snapshot.meta.edge_types[0].indexOf('weak');
    const stack = [0];
    seen[0] = 1;
    while (stack.length > 0) {
      const i = stack.pop()!;
      for (let e = this.#firstEdge[i]!; e < this.#firstEdge[i + 1]!; e += this.#edgeFields) {
        if (edges[e] === weak) continue;
        const to = edges[e + 2]! / this.#nodeFields;
        if (seen[to] === 1 || this.isMetadata(to)) continue;
        seen[to] = 1;
        stack.push(to);
      }
    }
    return seen;
  }

  /**
   * For each of `targets`, a path of up to `depth` strong holders towards the roots (program data first), as
   * "edge name <- holder" steps: what keeps the object.
   */
  holders(targets: readonly number[], depth = 4): Map<number, string> {
    const edges = this.#file.edges;
    const meta = this.#file.snapshot.meta;
    const weak = meta.edge_types[0].indexOf('weak');
    const named = new Set(['context', 'property', 'internal', 'shortcut'].map((t) => meta.edge_types[0].indexOf(t)));
    const data = this.programData();
    // One pass over the edges: the strong holders of every node (a program-data holder first).
    const holderOf = new Map<number, { from: number; edge: string }>();
    for (let from = 0; from < this.count; from++) {
      for (let e = this.#firstEdge[from]!; e < this.#firstEdge[from + 1]!; e += this.#edgeFields) {
        if (edges[e] === weak) continue;
        const to = edges[e + 2]! / this.#nodeFields;
        const known = holderOf.get(to);
        if (known && (data[known.from] === 1 || data[from] !== 1)) continue;
        holderOf.set(to, { from, edge: named.has(edges[e]!) ? this.#file.strings[edges[e + 1]!]! : `[${edges[e + 1]}]` });
      }
    }
    const out = new Map<number, string>();
    for (const target of targets) {
      const steps: string[] = [];
      let at = target;
      for (let d = 0; d < depth; d++) {
        const holder = holderOf.get(at);
        if (!holder || holder.from === 0) break;
        steps.push(`${holder.edge} of ${this.label(holder.from)}`);
        at = holder.from;
      }
      out.set(target, steps.join(' <- '));
    }
    return out;
  }

  category(i: number, data: Uint8Array): HeapCategory {
    if (this.type[i] === 'code') return FEEDBACK.has(this.name[i]!) ? 'feedback and inline caches' : 'compiled code';
    if (this.type[i] === 'object shape') return 'hidden classes';
    // Lists of the code that depends on a hidden class or protector, and of a context's retained maps.
    if (this.name[i] === 'system / WeakArrayList') return 'held by VM metadata';
    return data[i] === 1 ? 'program data' : 'held by VM metadata';
  }

  /** A short name for a node of program data: its type and constructor (a string's text is left out). */
  label(i: number): string {
    const type = this.type[i]!;
    if (type.includes('string')) return 'string';
    if (type === 'array') return `array ${this.name[i] || '(a Map, Set or WeakMap table, or an elements store)'}`;
    return `${type} ${this.name[i]}`;
  }
}

/** What {@link diffHeapSnapshots} finds. */
export interface HeapDiff {
  /** The total own size of all nodes, before and after, in bytes. */
  readonly totalBefore: number;
  readonly totalAfter: number;
  /** Net bytes (new minus gone, plus what objects that live on grew in place) by category: they add up to totalAfter - totalBefore. */
  readonly byCategory: Record<HeapCategory, number>;
  /** Program data, net bytes and count by type and constructor, largest first. */
  readonly programData: readonly { readonly label: string; readonly bytes: number; readonly count: number }[];
  /** The largest new objects of program data (at least 512 bytes, up to ten), with what holds each. */
  readonly largest: readonly { readonly label: string; readonly bytes: number; readonly heldBy: string }[];
  /** New strings that match `idPattern` (ids of sessions or runs still held), with up to five examples. */
  readonly idStrings: { readonly count: number; readonly examples: readonly string[] };
}

/** The objects `afterPath` holds that `beforePath` (an earlier snapshot of the same process) did not, by category. */
export function diffHeapSnapshots(beforePath: string, afterPath: string, idPattern: RegExp): HeapDiff {
  const before = new Snapshot(beforePath);
  const after = new Snapshot(afterPath);
  const idsBefore = new Set(before.id);
  const idsAfter = new Set(after.id);
  const byCategory = Object.fromEntries(HEAP_CATEGORIES.map((c) => [c, 0])) as Record<HeapCategory, number>;
  const data = new Map<string, { bytes: number; count: number }>();
  const tally = (snapshot: Snapshot, reach: Uint8Array, i: number, sign: 1 | -1): void => {
    const category = snapshot.category(i, reach);
    byCategory[category] += sign * snapshot.size[i]!;
    if (category !== 'program data') return;
    const label = snapshot.label(i);
    const row = data.get(label) ?? { bytes: 0, count: 0 };
    row.bytes += sign * snapshot.size[i]!;
    row.count += sign;
    data.set(label, row);
  };
  const reachAfter = after.programData();
  const examples: string[] = [];
  let idCount = 0;
  for (let i = 0; i < after.count; i++) {
    if (idsBefore.has(after.id[i]!)) continue;
    tally(after, reachAfter, i, 1);
    if (after.type[i]!.includes('string') && idPattern.test(after.name[i]!)) {
      idCount++;
      if (examples.length < 5) examples.push(after.name[i]!);
    }
  }
  const big: number[] = [];
  for (let i = 0; i < after.count; i++) if (!idsBefore.has(after.id[i]!) && after.size[i]! >= 512 && !EMBEDDER.has(after.type[i]!) && after.category(i, reachAfter) === 'program data') big.push(i);
  big.sort((a, b) => after.size[b]! - after.size[a]!);
  const top = big.slice(0, 10);
  const held = after.holders(top);
  const reachBefore = before.programData();
  const sizeBefore = new Map<number, number>();
  for (let i = 0; i < before.count; i++) {
    if (!idsAfter.has(before.id[i]!)) tally(before, reachBefore, i, -1);
    else sizeBefore.set(before.id[i]!, before.size[i]!);
  }
  // An object that lives on may have grown or shrunk in place (an array trimmed, a string flattened).
  for (let i = 0; i < after.count; i++) {
    const was = sizeBefore.get(after.id[i]!);
    if (was !== undefined && was !== after.size[i]) byCategory[after.category(i, reachAfter)] += after.size[i]! - was;
  }
  const sum = (s: Snapshot): number => s.size.reduce((a, b) => a + b, 0);
  return {
    totalBefore: sum(before),
    totalAfter: sum(after),
    byCategory,
    programData: [...data.entries()].map(([label, v]) => ({ label, ...v })).filter((r) => r.bytes !== 0 || r.count !== 0).sort((a, b) => Math.abs(b.bytes) - Math.abs(a.bytes)),
    largest: top.map((i) => ({ label: after.label(i), bytes: after.size[i]!, heldBy: held.get(i) ?? '' })),
    idStrings: { count: idCount, examples },
  };
}
