// The run's working copy (runtime/working-copy.ts) method by method, as the mutation run of that file
// found it loosely pinned through the run loop: which rows count as pending, what a write, a replayed
// write, a mark, a rollback, a discarded step and a stop's recomposition (keepWrites) leave behind, and
// the bound that lets stateOver skip measuring.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Message } from '../index.js';
import { WorkingCopy, type StateUpdater } from '../runtime/working-copy.js';

type S = { n: number; list: string[]; map: Record<string, string> };

const user = (content: string): Message => ({ role: 'user', content });
const set =
  (f: (d: S) => void): StateUpdater =>
  (d) =>
    void f(d as S);

function fresh(messages: readonly Message[] = []): WorkingCopy {
  return new WorkingCopy({ n: 0, list: [], map: {} }, messages);
}

describe('WorkingCopy: rows', () => {
  it('starts with the given rows committed, copies them, and appends after them', () => {
    const given = [user('a'), user('b')];
    const work = fresh(given);
    given.push(user('not seen'));
    expect(work.messages).toEqual([user('a'), user('b')]);
    expect(work.committedRows).toBe(2);
    expect(work.pendingCount).toBe(0);
    expect(work.pendingRows()).toEqual([]);
    expect(work.pendingMessages()).toBeUndefined();
    expect(work.append(user('c'))).toBe(2);
    expect(work.append(user('d'))).toBe(3);
    expect(work.pendingCount).toBe(2);
    const pending = work.pendingRows();
    expect(pending).toEqual([user('c'), user('d')]);
    pending.pop();
    expect(work.pendingRows()).toEqual([user('c'), user('d')]);
    expect(work.pendingMessages()).toEqual([user('c'), user('d')]);
    work.committed();
    expect(work.committedRows).toBe(4);
    expect(work.pendingCount).toBe(0);
    expect(work.pendingMessages()).toBeUndefined();
  });

  it('replaces a pending row, and refuses to replace a committed one or one past the end', () => {
    const work = fresh([user('a')]);
    work.append(user('b'));
    work.replace(1, user('B'));
    expect(work.messages).toEqual([user('a'), user('B')]);
    expect(() => work.replace(0, user('A'))).toThrow('Row 0 is already committed and cannot be replaced.');
    expect(() => work.replace(2, user('C'))).toThrow('Row 2 is already committed and cannot be replaced.');
    expect(work.messages).toEqual([user('a'), user('B')]);
  });
});

describe('WorkingCopy: state writes', () => {
  it('the initial state is frozen deeply; a write replaces it by a new frozen value and returns its patches', () => {
    const work = fresh();
    expect(Object.isFrozen(work.state)).toBe(true);
    expect(Object.isFrozen((work.state as S).list)).toBe(true);
    const before = work.state;
    const patches = work.update(set((d) => void d.list.push('x')), 'a');
    expect(patches).toEqual([{ op: 'add', path: ['list', 0], value: 'x' }]);
    expect(work.state).not.toBe(before);
    expect(work.state).toEqual({ n: 0, list: ['x'], map: {} });
    expect(work.committedState).toBe(before);
    expect(work.changedState()).toBe(work.state);
    work.committed();
    expect(work.committedState).toBe(work.state);
    expect(work.changedState()).toBeUndefined();
  });

  it('a write that changes nothing returns undefined, keeps the state object, and records no patch for its owner', () => {
    const work = fresh();
    const before = work.state;
    expect(work.update(() => undefined, 'a')).toBeUndefined();
    expect(work.state).toBe(before);
    expect(work.changedState()).toBeUndefined();
    expect(work.patchesOf('a')).toEqual([]);
    expect(work.seqsOf('a')).toEqual([]);
  });

  it('patchesOf, seqsOf and patchesSince give each owner its own patches in order, with the place of each write', () => {
    const work = fresh();
    work.update(set((d) => void (d.n = 1)), 'a');
    work.update(set((d) => void (d.map['k'] = 'v')), 'b');
    const mark = work.mark();
    work.update(set((d) => void d.list.push('x', 'y')), 'a');
    work.update(() => undefined, 'b');
    expect(work.patchesOf('a')).toEqual([
      { op: 'replace', path: ['n'], value: 1 },
      { op: 'add', path: ['list', 0], value: 'x' },
      { op: 'add', path: ['list', 1], value: 'y' },
    ]);
    expect(work.seqsOf('a')).toEqual([0, 2, 2]);
    expect(work.seqsOf('b')).toEqual([1]);
    expect(work.patchesSince(mark, 'a')).toEqual([
      { op: 'add', path: ['list', 0], value: 'x' },
      { op: 'add', path: ['list', 1], value: 'y' },
    ]);
    expect(work.patchesSince(mark, 'b')).toEqual([]);
    expect(work.patchesOf('nobody')).toEqual([]);
    // A commit drops the writes, not the places: the next write comes after them.
    work.committed();
    expect(work.patchesOf('a')).toEqual([]);
    work.update(set((d) => void (d.n = 2)), 'a');
    expect(work.seqsOf('a')).toEqual([4]);
  });

  it('applyRecorded applies a replayed write as recorded (frozen), at its recorded place; later writes come after it; no patches do nothing', () => {
    const work = fresh();
    const before = work.state;
    work.applyRecorded([], 'r', 7);
    expect(work.state).toBe(before);
    expect(work.seqsOf('r')).toEqual([]);
    // No patches, no write: the next write's place does not move past the recorded one.
    const probe = fresh();
    probe.applyRecorded([], 'r', 7);
    probe.update(set((d) => void (d.n = 1)), 'a');
    expect(probe.seqsOf('a')).toEqual([0]);
    work.applyRecorded([{ op: 'replace', path: ['n'], value: 5 }], 'r', 7);
    expect(work.state).toEqual({ n: 5, list: [], map: {} });
    expect(Object.isFrozen(work.state)).toBe(true);
    expect(work.patchesOf('r')).toEqual([{ op: 'replace', path: ['n'], value: 5 }]);
    expect(work.seqsOf('r')).toEqual([7]);
    work.update(set((d) => void (d.n = 6)), 'a');
    expect(work.seqsOf('a')).toEqual([8]);
    // Recorded earlier than what this process wrote since: the next place does not go back.
    work.applyRecorded([{ op: 'replace', path: ['n'], value: 1 }], 'r', 2);
    work.update(set((d) => void (d.n = 9)), 'a');
    expect(work.seqsOf('a')).toEqual([8, 9]);
    // Without a recorded place, the next one.
    work.applyRecorded([{ op: 'replace', path: ['n'], value: 3 }], 'q');
    expect(work.seqsOf('q')).toEqual([10]);
    work.update(set((d) => void (d.n = 4)), 'a');
    expect(work.seqsOf('a')).toEqual([8, 9, 11]);
  });

  it('revertState goes back to the committed state and drops the writes, keeping the pending rows', () => {
    const work = fresh([user('a')]);
    const committed = work.state;
    work.append(user('b'));
    work.update(set((d) => void (d.n = 1)), 'a');
    work.revertState();
    expect(work.state).toBe(committed);
    expect(work.patchesOf('a')).toEqual([]);
    expect(work.messages).toEqual([user('a'), user('b')]);
  });
});

describe('WorkingCopy: marks, rollbacks and discarded steps', () => {
  it('rollbackTo drops the rows and writes after the mark and restores its state, never below the committed rows', () => {
    const work = fresh([user('a')]);
    work.append(user('b'));
    work.update(set((d) => void (d.n = 1)), 'a');
    const mark = work.mark();
    expect(mark).toEqual({ rows: 2, state: work.state, writes: 1 });
    work.append(user('c'));
    work.update(set((d) => void (d.n = 2)), 'a');
    work.rollbackTo(mark);
    expect(work.messages).toEqual([user('a'), user('b')]);
    expect(work.state).toBe(mark.state);
    expect(work.patchesOf('a')).toEqual([{ op: 'replace', path: ['n'], value: 1 }]);
    // A mark taken before rows that were committed since: the committed rows stay.
    const early = work.mark();
    work.committed();
    work.append(user('d'));
    work.rollbackTo({ ...early, rows: 0 });
    expect(work.messages).toEqual([user('a'), user('b')]);
    // A mark with more rows than there are now changes no row.
    work.append(user('e'));
    work.rollbackTo({ rows: 10, state: work.state, writes: 10 });
    expect(work.messages).toEqual([user('a'), user('b'), user('e')]);
  });

  it('discardStep drops the pending rows; without a mark the state and writes go back to the commit, with one they go back to the mark', () => {
    const work = fresh([user('a')]);
    const committed = work.state;
    work.append(user('b'));
    work.update(set((d) => void (d.n = 1)), 'llm');
    const kept = work.mark();
    work.update(set((d) => void (d.n = 2)), 'tool');
    work.discardStep(kept);
    expect(work.messages).toEqual([user('a')]);
    expect(work.state).toBe(kept.state);
    expect(work.patchesOf('llm')).toEqual([{ op: 'replace', path: ['n'], value: 1 }]);
    expect(work.patchesOf('tool')).toEqual([]);
    work.append(user('c'));
    work.discardStep();
    expect(work.messages).toEqual([user('a')]);
    expect(work.state).toBe(committed);
    expect(work.patchesOf('llm')).toEqual([]);
  });
});

describe('WorkingCopy: keepWrites (a stop keeps the writes of recorded calls)', () => {
  it('keeping every owner changes nothing; keeping none goes back to the committed state', () => {
    const work = fresh();
    work.update(set((d) => void (d.n = 1)), 'a');
    const state = work.state;
    expect(work.keepWrites(() => true).size).toBe(0);
    expect(work.state).toBe(state);
    expect(work.patchesOf('a')).toEqual([{ op: 'replace', path: ['n'], value: 1 }]);
    expect(work.keepWrites(() => false).size).toBe(0);
    expect(work.state).toEqual({ n: 0, list: [], map: {} });
    expect(work.patchesOf('a')).toEqual([]);
  });

  it('the writes before the first dropped one keep their state; the kept writes after it run again on the state without it', () => {
    const work = fresh();
    let firstRuns = 0;
    work.update(
      set((d) => {
        firstRuns++;
        d.list.push('a');
      }),
      'a',
    );
    const afterFirst = work.state;
    work.update(set((d) => void d.list.push('b')), 'b');
    work.update(set((d) => void (d.n += 10)), 'c');
    work.update(set((d) => void d.list.splice(0, 1)), 'c');
    expect(work.state).toEqual({ n: 10, list: ['b'], map: {} });
    const cPatches = work.patchesOf('c');
    const cSeqs = work.seqsOf('c');
    expect(cPatches.length).toBeGreaterThan(1);
    expect(work.keepWrites((owner) => owner !== 'b').size).toBe(0);
    // Run again on ['a']: the splice removes 'a' itself (its recorded patch would have removed index 0 of ['a', 'b']).
    expect(work.state).toEqual({ n: 10, list: [], map: {} });
    expect(firstRuns).toBe(1);
    expect(work.patchesOf('a')).toEqual([{ op: 'add', path: ['list', 0], value: 'a' }]);
    expect(work.patchesOf('b')).toEqual([]);
    // A write run again keeps its owner, its recorded patches and its place.
    expect(work.patchesOf('c')).toEqual(cPatches);
    expect(work.seqsOf('c')).toEqual(cSeqs);
    // The recomposed writes are what a later stop recomposes from.
    expect(work.keepWrites((owner) => owner === 'a').size).toBe(0);
    expect(work.state).toBe(afterFirst);
    expect(work.changedState()).toBe(afterFirst);
  });

  it('a write that changed nothing here is run again on the recomposed base, where it may change something', () => {
    const work = fresh();
    work.update(set((d) => void (d.n = 1)), 'a');
    // Sets n to 1 when it is not: nothing to do on top of a's write.
    work.update(
      set((d) => {
        if (d.n !== 1) d.map['fixed'] = 'yes';
      }),
      'b',
    );
    expect(work.state).toEqual({ n: 1, list: [], map: {} });
    work.keepWrites((owner) => owner === 'b');
    expect(work.state).toEqual({ n: 0, list: [], map: { fixed: 'yes' } });
  });

  it('a replayed write and a write whose updater throws when run again are applied as recorded; one that cannot apply is returned and nothing changes', () => {
    const work = fresh();
    work.update(set((d) => void d.list.push('x')), 'dropped');
    work.applyRecorded([{ op: 'add', path: ['map', 'r'], value: 'recorded' }], 'replayed');
    let calls = 0;
    work.update(
      set((d) => {
        calls++;
        if (calls > 1) throw new Error('not pure');
        d.n = 7;
      }),
      'impure',
    );
    expect(work.keepWrites((owner) => owner !== 'dropped').size).toBe(0);
    expect(calls).toBe(2);
    expect(work.state).toEqual({ n: 7, list: [], map: { r: 'recorded' } });

    const other = fresh();
    other.update((d) => void ((d as { map: Record<string, object> }).map['k'] = {}), 'maker');
    // Recorded against a state holding map.k: without maker's write its path leads nowhere.
    other.applyRecorded([{ op: 'add', path: ['map', 'k', 'deep'], value: 1 }], 'needs-maker');
    const state = other.state;
    const failed = other.keepWrites((owner) => owner !== 'maker');
    expect([...failed]).toEqual(['needs-maker']);
    expect(other.state).toBe(state);
    expect(other.patchesOf('maker')).toEqual([{ op: 'add', path: ['map', 'k'], value: {} }]);
  });
});

describe('WorkingCopy: stateOver', () => {
  it('is undefined for an infinite limit and at the limit; the size over it', () => {
    const work = fresh();
    const size = JSON.stringify(work.state).length;
    expect(work.stateOver(Infinity)).toBeUndefined();
    expect(work.stateOver(size)).toBeUndefined();
    expect(work.stateOver(size - 1)).toBe(size);
    expect(work.stateOver(0)).toBe(size);
  });

  it('a write after a measure raises the bound by what it adds, so an over-limit state is never missed (keys and values, replayed ones too)', () => {
    const work = fresh();
    const size0 = JSON.stringify(work.state).length;
    expect(work.stateOver(size0)).toBeUndefined();
    work.update(set((d) => void (d.map['a-long-key-name'] = 'v')), 'a');
    let size = JSON.stringify(work.state).length;
    expect(work.stateOver(size - 1)).toBe(size);
    work.applyRecorded([{ op: 'add', path: ['map', 'another-key'], value: 'x'.repeat(30) }], 'r');
    size = JSON.stringify(work.state).length;
    expect(work.stateOver(size - 1)).toBe(size);
    // A value JSON cannot measure: the state cannot be measured either; once it is gone, the next check measures.
    work.update((d) => void ((d as Record<string, unknown>)['big'] = 10n), 'a');
    expect(work.stateOver(0)).toBeUndefined();
    work.update((d) => void delete (d as Record<string, unknown>)['big'], 'a');
    work.update(set((d) => void (d.map['after'] = 'y'.repeat(20))), 'a');
    expect(work.stateOver(JSON.stringify(work.state).length - 1)).toBe(JSON.stringify(work.state).length);
    // A root replacement (a path with no key).
    work.update(() => ({ n: 2, list: ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'], map: {} }), 'a');
    size = JSON.stringify(work.state).length;
    expect(work.stateOver(size - 1)).toBe(size);
  });

  it('property: for any writes, replays, removals, rollbacks, reverts, recompositions and commits, stateOver(max) is the JSON length exactly when it is over max', () => {
    const key = fc.constantFrom('a', 'bb', 'a-much-longer-key', '\u0001');
    const text = fc.string({ maxLength: 30 });
    const op = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), key, text, owner: fc.constantFrom('x', 'y') }),
      fc.record({ kind: fc.constant('push' as const), text, owner: fc.constantFrom('x', 'y') }),
      fc.record({ kind: fc.constant('delete' as const), key }),
      fc.record({ kind: fc.constant('recorded' as const), key, text }),
      fc.record({ kind: fc.constant('mark' as const) }),
      fc.record({ kind: fc.constant('rollback' as const) }),
      fc.record({ kind: fc.constant('revert' as const) }),
      fc.record({ kind: fc.constant('discard' as const) }),
      fc.record({ kind: fc.constant('keep' as const), owner: fc.constantFrom('x', 'y') }),
      fc.record({ kind: fc.constant('commit' as const) }),
      fc.record({ kind: fc.constant('check' as const), max: fc.integer({ min: 1, max: 300 }) }),
    );
    fc.assert(
      fc.property(fc.array(op, { minLength: 5, maxLength: 60 }), (ops) => {
        const work = fresh();
        let mark = work.mark();
        for (const o of ops) {
          if (o.kind === 'set') work.update(set((d) => void (d.map[o.key] = o.text)), o.owner);
          else if (o.kind === 'push') work.update(set((d) => void d.list.push(o.text)), o.owner);
          else if (o.kind === 'delete') work.update(set((d) => void delete d.map[o.key]), 'x');
          else if (o.kind === 'recorded') work.applyRecorded([{ op: 'add', path: ['map', o.key], value: o.text }], 'r');
          else if (o.kind === 'mark') mark = work.mark();
          else if (o.kind === 'rollback') work.rollbackTo(mark);
          else if (o.kind === 'revert') work.revertState();
          else if (o.kind === 'discard') work.discardStep();
          else if (o.kind === 'keep') work.keepWrites((owner) => owner === o.owner);
          else if (o.kind === 'commit') work.committed();
          else {
            const size = JSON.stringify(work.state).length;
            expect(work.stateOver(size - 1)).toBe(size);
            expect(work.stateOver(o.max)).toBe(size > o.max ? size : undefined);
          }
        }
      }),
      { numRuns: 200 },
    );
  });
});
