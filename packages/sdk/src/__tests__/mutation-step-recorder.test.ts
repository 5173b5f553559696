// The journal step recorder (runtime/step-recorder.ts) over the real in-memory state store, as the
// mutation run of that file found it pinned only through whole runs: the key of each kind of work, what
// a recovered journal replays (or reports interrupted), what is recorded and when, the first record of
// a key winning, a step commit forgetting its entries, and a record this version cannot read.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AgentError } from '../index.js';
import type { JournalEntry } from '../store.js';
import { JournalStepRecorder, type StepKey } from '../runtime/step-recorder.js';
import { begunMemoryRun } from './harness.js';

const value = z.object({ v: z.number() });

/** A store with run r1 begun. */
const started = begunMemoryRun;

function entry(key: string, stepIndex: number, data: unknown, kind: JournalEntry['kind'] = 'call_result'): JournalEntry {
  return { runId: 'r1', epoch: 1, stepIndex, kind, key, data, at: 0 };
}

const keys: readonly [StepKey, string, JournalEntry['kind']][] = [
  [{ kind: 'start_signal', step: 0 }, 'start_signal', 'start_signal'],
  [{ kind: 'terminal_hook', step: 3 }, 'terminal_hook', 'terminal_hook'],
  [{ kind: 'model_reply', step: 2 }, 'model_reply:2', 'model_reply'],
  [{ kind: 'child_spawn', step: 1, callId: 'c1' }, 'child_spawn:1:c1', 'child_spawn'],
  [{ kind: 'tool_call', step: 4, callId: 'c2' }, 'call_result:4:c2', 'call_result'],
];

describe('JournalStepRecorder', () => {
  it.each(keys)('records %o under the key %s and kind %s, at its step, fenced by the run and its epoch', async (key, id, kind) => {
    const { store, epoch } = await started();
    const recorder = new JournalStepRecorder(store, { runId: 'r1', epoch });
    const outcome = await recorder.replayOrRun(key, value, async () => ({ v: 1 }));
    expect(outcome).toEqual({ status: 'ran', value: { v: 1 } });
    const journal = await store.loadJournal('r1');
    expect(journal).toHaveLength(1);
    expect(journal[0]).toMatchObject({ runId: 'r1', epoch, stepIndex: key.step, kind, key: id, data: { v: 1 } });
    expect(recorder.has(key)).toBe(true);
    // What this process recorded is replayed to itself too (a second writer of the key meets the first).
    expect(await recorder.replay(key, value)).toEqual({ status: 'replayed', value: { v: 1 } });
  });

  it('a recovered journal: each key replays its recorded value (validated), other keys and steps have nothing', async () => {
    const { store, epoch } = await started();
    const recovered = keys.map(([, id, kind], i) => entry(id, i, { v: i }, kind));
    const recorder = new JournalStepRecorder(store, { runId: 'r1', epoch }, recovered);
    for (const [i, [key]] of keys.entries()) {
      expect(recorder.has(key)).toBe(true);
      expect(await recorder.replay(key, value)).toEqual({ status: 'replayed', value: { v: i } });
      let ran = false;
      expect(
        await recorder.replayOrRun(key, value, async () => {
          ran = true;
          return { v: 99 };
        }),
      ).toEqual({ status: 'replayed', value: { v: i } });
      expect(ran).toBe(false);
    }
    expect(recorder.has({ kind: 'model_reply', step: 7 })).toBe(false);
    expect(recorder.has({ kind: 'tool_call', step: 4, callId: 'other' })).toBe(false);
    expect(await recorder.replay({ kind: 'tool_call', step: 5, callId: 'c2' }, value)).toBeUndefined();
    expect(await store.loadJournal('r1')).toEqual([]);
  });

  it('a side-effecting call that started and recorded no result is interrupted: never run again, nothing recorded', async () => {
    const { store, epoch } = await started();
    const key: StepKey = { kind: 'tool_call', step: 2, callId: 'c1' };
    const recorder = new JournalStepRecorder(store, { runId: 'r1', epoch }, [entry('call_started:2:c1', 2, null, 'call_started')]);
    expect(recorder.has(key)).toBe(true);
    expect(recorder.has({ kind: 'child_spawn', step: 2, callId: 'c1' })).toBe(false);
    expect(await recorder.replay(key, value)).toEqual({ status: 'interrupted' });
    let ran = false;
    const outcome = await recorder.replayOrRun(
      key,
      value,
      async () => {
        ran = true;
        return { v: 1 };
      },
      { atMostOnce: true },
    );
    expect(outcome).toEqual({ status: 'interrupted' });
    expect(ran).toBe(false);
    expect(await store.loadJournal('r1')).toEqual([]);
  });

  it('atMostOnce records a start marker before the work runs, then its result; without it (or for a key with no marker) only the result', async () => {
    const { store, epoch } = await started();
    const recorder = new JournalStepRecorder(store, { runId: 'r1', epoch });
    let seenDuringRun: readonly JournalEntry[] = [];
    await recorder.replayOrRun(
      { kind: 'tool_call', step: 1, callId: 'c1' },
      value,
      async () => {
        seenDuringRun = await store.loadJournal('r1');
        return { v: 1 };
      },
      { atMostOnce: true },
    );
    expect(seenDuringRun).toMatchObject([{ key: 'call_started:1:c1', kind: 'call_started', stepIndex: 1, data: null }]);
    expect((await store.loadJournal('r1')).map((e) => e.key)).toEqual(['call_started:1:c1', 'call_result:1:c1']);
    await recorder.replayOrRun({ kind: 'tool_call', step: 1, callId: 'c2' }, value, async () => ({ v: 2 }));
    await recorder.replayOrRun({ kind: 'child_spawn', step: 1, callId: 'c3' }, value, async () => ({ v: 3 }), { atMostOnce: true });
    expect((await store.loadJournal('r1')).map((e) => e.key)).toEqual(['call_started:1:c1', 'call_result:1:c1', 'call_result:1:c2', 'child_spawn:1:c3']);
  });

  it('persist: false, or a function that says no, records nothing; a function that says yes records', async () => {
    const { store, epoch } = await started();
    const recorder = new JournalStepRecorder(store, { runId: 'r1', epoch });
    expect(await recorder.replayOrRun({ kind: 'model_reply', step: 0 }, value, async () => ({ v: 1 }), { persist: false })).toEqual({ status: 'ran', value: { v: 1 } });
    expect(await recorder.replayOrRun({ kind: 'model_reply', step: 1 }, value, async () => ({ v: 2 }), { persist: (v) => v.v > 5 })).toEqual({ status: 'ran', value: { v: 2 } });
    expect(await store.loadJournal('r1')).toEqual([]);
    expect(recorder.has({ kind: 'model_reply', step: 0 })).toBe(false);
    await recorder.replayOrRun({ kind: 'model_reply', step: 2 }, value, async () => ({ v: 9 }), { persist: (v) => v.v > 5 });
    expect((await store.loadJournal('r1')).map((e) => e.key)).toEqual(['model_reply:2']);
  });

  it('two writers of one key: the first record wins, and the second goes on with the replay of it', async () => {
    const { store, epoch } = await started();
    const first = new JournalStepRecorder(store, { runId: 'r1', epoch });
    const second = new JournalStepRecorder(store, { runId: 'r1', epoch });
    const key: StepKey = { kind: 'child_spawn', step: 0, callId: 'c1' };
    await first.replayOrRun(key, value, async () => ({ v: 1 }));
    expect(await second.replayOrRun(key, value, async () => ({ v: 2 }))).toEqual({ status: 'replayed', value: { v: 1 } });
    expect((await store.loadJournal('r1')).map((e) => e.data)).toEqual([{ v: 1 }]);
  });

  it('a recorded value this version cannot read fails the replay with state_commit_failed naming the key, the run and the issues', async () => {
    const { store, epoch } = await started();
    const recorder = new JournalStepRecorder(store, { runId: 'r1', epoch }, [entry('model_reply:0', 0, { v: 'one' }, 'model_reply')]);
    const error = await recorder.replay({ kind: 'model_reply', step: 0 }, value).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(AgentError.isInstance(error)).toBe(true);
    const info = (error as AgentError).info;
    expect(info.code).toBe('state_commit_failed');
    expect(info.message).toBe('The journal entry "model_reply:0" of run r1 does not match what this version records; it cannot be replayed.');
    expect(info.details).toEqual({ key: 'model_reply:0', issues: [{ path: ['v'], message: expect.any(String) }] });
  });

  it('recordedOrder lists the recorded keys among those asked, in the order they were recorded (recovered first, then appended)', async () => {
    const { store, epoch } = await started();
    const a: StepKey = { kind: 'tool_call', step: 1, callId: 'a' };
    const b: StepKey = { kind: 'tool_call', step: 1, callId: 'b' };
    const c: StepKey = { kind: 'tool_call', step: 1, callId: 'c' };
    const d: StepKey = { kind: 'tool_call', step: 1, callId: 'd' };
    const empty = new JournalStepRecorder(store, { runId: 'r1', epoch });
    expect(empty.recordedOrder([a, b])).toEqual([]);
    const recorder = new JournalStepRecorder(store, { runId: 'r1', epoch }, [entry('call_result:1:c', 1, { v: 3 }), entry('call_result:1:a', 1, { v: 1 })]);
    expect(recorder.recordedOrder([])).toEqual([]);
    await recorder.replayOrRun(d, value, async () => ({ v: 4 }));
    expect(recorder.recordedOrder([a, b, c, d])).toEqual([c, a, d]);
    expect(recorder.recordedOrder([d, b])).toEqual([d]);
  });

  it('stepCommitted forgets the entries of that step and earlier ones, and keeps later ones', async () => {
    const { store, epoch } = await started();
    const recovered = [entry('call_result:0:a', 0, { v: 0 }), entry('call_result:1:b', 1, { v: 1 }), entry('call_result:2:c', 2, { v: 2 })];
    const recorder = new JournalStepRecorder(store, { runId: 'r1', epoch }, recovered);
    recorder.stepCommitted(1);
    expect(recorder.has({ kind: 'tool_call', step: 0, callId: 'a' })).toBe(false);
    expect(recorder.has({ kind: 'tool_call', step: 1, callId: 'b' })).toBe(false);
    expect(recorder.has({ kind: 'tool_call', step: 2, callId: 'c' })).toBe(true);
    expect(await recorder.replay({ kind: 'tool_call', step: 1, callId: 'b' }, value)).toBeUndefined();
    expect(await recorder.replay({ kind: 'tool_call', step: 2, callId: 'c' }, value)).toEqual({ status: 'replayed', value: { v: 2 } });
  });
});
