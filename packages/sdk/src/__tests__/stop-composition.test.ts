import fc from 'fast-check';
import { produce } from 'immer';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, defineTool, type Draft } from '../index.js';
import { createGate, createScriptedModel } from '../testing/index.js';
import { setup } from './harness.js';

// A stop that arrives while a step's tools run keeps the writes of every call whose result is recorded
// and drops the rest (docs/rules.md, rules 125–127). The kept writes must compose as if their updaters
// had run one after another, in the order they were made: patches recorded against the live state of
// the moment do not compose once some of them are dropped or reordered.

const Item = z.object({ id: z.string(), done: z.boolean().default(false) });
const State = z.object({ notes: z.array(Item).default([]), count: z.number().default(0) });
type S = z.infer<typeof State>;

/** A write one tool makes. */
type Write = { readonly kind: 'push'; readonly id: string } | { readonly kind: 'remove'; readonly index: number } | { readonly kind: 'mark'; readonly index: number } | { readonly kind: 'inc'; readonly by: number };

function apply(draft: Draft<S>, write: Write): void {
  if (write.kind === 'push') draft.notes.push({ id: write.id, done: false });
  else if (write.kind === 'remove') draft.notes.splice(write.index, 1);
  else if (write.kind === 'mark') {
    const note = draft.notes[write.index];
    if (note) note.done = true;
  } else draft.count += write.by;
}

/** One call of the step: its write, and whether the stop ends it before its result is recorded. */
interface Plan {
  readonly write: Write;
  readonly stopped: boolean;
}

/**
 * Runs one step whose calls make their writes in `order` (call i of the model's list writes at turn
 * order.indexOf(i)); calls marked stopped then wait for the stop and throw; after the last write the
 * run is stopped. Returns the run's final state and the stored one.
 */
async function runStep(initial: S, plans: readonly Plan[], order: readonly number[]) {
  const controller = new AbortController();
  const turns = plans.map(() => createGate());
  const writeTool = defineTool({
    name: 'write',
    description: 'makes one write',
    inputSchema: z.object({ i: z.number().int() }),
    execute: async ({ i }, ctx) => {
      const position = order.indexOf(i);
      if (position > 0) await turns[order[position - 1] as number]!.opened;
      const plan = plans[i] as Plan;
      ctx.updateState<S>((draft) => apply(draft, plan.write));
      turns[i]!.open();
      if (position === order.length - 1) controller.abort();
      if (plan.stopped) {
        await new Promise<void>((resolve) => (ctx.abortSignal.aborted ? resolve() : ctx.abortSignal.addEventListener('abort', () => resolve())));
        throw new Error('stopped');
      }
      return { ok: i };
    },
  });
  const agent = defineAgent({
    name: 'composer',
    stateSchema: State,
    llmConfig: { model: createScriptedModel([{ toolCalls: plans.map((_p, i) => ({ name: 'write', args: { i }, id: `c${i}` })) }, { text: 'never reached' }]) },
    tools: [writeTool],
  });
  const { executor, stateStore } = setup();
  const handle = await executor.execute(agent, 'go', { initialState: initial, abortSignal: controller.signal });
  const result = await handle.result();
  const stored = await stateStore.loadSession(handle.sessionId);
  return { result, stored };
}

/** The sequential model: the kept calls' updaters, one after another, in the order they wrote. */
function sequential(initial: S, plans: readonly Plan[], order: readonly number[]): S {
  let state = initial;
  for (const i of order) {
    const plan = plans[i] as Plan;
    if (!plan.stopped) state = produce(state, (draft) => apply(draft as Draft<S>, plan.write));
  }
  return state;
}

const notes = (...ids: string[]) => ids.map((id) => ({ id, done: false }));

describe('a stop during tools keeps the recorded calls\' writes, composed as if run one after another', () => {
  it('a splice and an index edit made in a different order than the model listed them both survive', async () => {
    // Model order: mark notes[1], remove notes[0]; they run remove first, then mark.
    const plans: Plan[] = [
      { write: { kind: 'mark', index: 1 }, stopped: false },
      { write: { kind: 'remove', index: 0 }, stopped: false },
    ];
    const { result, stored } = await runStep({ notes: notes('a', 'b', 'c'), count: 0 }, plans, [1, 0]);
    expect(result.status).toBe('interrupted');
    const expected = { notes: [{ id: 'b', done: false }, { id: 'c', done: true }], count: 0 };
    expect(result.state).toEqual(expected);
    expect(stored?.state).toEqual(expected);
  });

  it('two increments around a stopped call\'s write give 2, not the stopped call\'s value plus one', async () => {
    const plans: Plan[] = [
      { write: { kind: 'inc', by: 1 }, stopped: false },
      { write: { kind: 'inc', by: 100 }, stopped: true },
      { write: { kind: 'inc', by: 1 }, stopped: false },
    ];
    const { result, stored } = await runStep({ notes: [], count: 0 }, plans, [0, 1, 2]);
    expect(result.status).toBe('interrupted');
    expect((result.state as S).count).toBe(2);
    expect((stored?.state as S).count).toBe(2);
  });

  it('a push after a stopped call\'s push lands as the next element, not in the dropped one\'s slot', async () => {
    const plans: Plan[] = [
      { write: { kind: 'push', id: 'x' }, stopped: true },
      { write: { kind: 'push', id: 'y' }, stopped: false },
    ];
    const { stored } = await runStep({ notes: notes('a'), count: 0 }, plans, [0, 1]);
    expect(stored?.state).toEqual({ notes: notes('a', 'y'), count: 0 });
  });

  it('property: for any writes, completion order and stopped subset, the kept state equals the sequential model', async () => {
    const write = fc.oneof(
      fc.record({ kind: fc.constant('push' as const), id: fc.string({ minLength: 1, maxLength: 3 }) }),
      fc.record({ kind: fc.constant('remove' as const), index: fc.integer({ min: 0, max: 4 }) }),
      fc.record({ kind: fc.constant('mark' as const), index: fc.integer({ min: 0, max: 4 }) }),
      fc.record({ kind: fc.constant('inc' as const), by: fc.integer({ min: 1, max: 9 }) }),
    );
    const scenario = fc
      .array(fc.record({ write, stopped: fc.boolean() }), { minLength: 1, maxLength: 6 })
      .chain((plans) => fc.tuple(fc.constant(plans), fc.shuffledSubarray(plans.map((_p, i) => i), { minLength: plans.length, maxLength: plans.length })));
    await fc.assert(
      fc.asyncProperty(fc.array(fc.string({ minLength: 1, maxLength: 2 }), { maxLength: 4 }), scenario, async (ids, [plans, order]) => {
        const initial: S = { notes: notes(...ids), count: 0 };
        const { result, stored } = await runStep(initial, plans, order);
        const expected = sequential(initial, plans, order);
        expect(result.status).toBe('interrupted');
        expect(result.state).toEqual(expected);
        expect(stored?.state).toEqual(expected);
      }),
      { numRuns: 150 },
    );
  });
});
