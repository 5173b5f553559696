import { describe, expect, it } from 'vitest';
import { InMemoryStateStore } from '../index.js';
import type { StateStore } from '../store.js';
import { counterAgent, finish, setup } from './harness.js';

/** A store whose commit answers with a thenable that is not a native promise, settled on a later timer turn. */
function thenableCommits(store: InMemoryStateStore): { store: StateStore; commits: () => number } {
  let commits = 0;
  const wrapped = new Proxy(store, {
    get(target, prop) {
      if (prop === 'commit') {
        return (c: Parameters<StateStore['commit']>[0]) => ({
          then(resolve: (value: unknown) => void, reject: (error: unknown) => void) {
            setTimeout(() => {
              commits++;
              target.commit(c).then(resolve, reject);
            }, 2);
          },
        });
      }
      const value: unknown = Reflect.get(target, prop);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store: wrapped as unknown as StateStore, commits: () => commits };
}

describe('a store whose commit returns a thenable that is not a native promise (its then returns nothing)', () => {
  it('the loop waits for each step commit before it goes on, so a finishing step ends the run', async () => {
    const { store, commits } = thenableCommits(new InMemoryStateStore());
    const { executor } = setup({ stateStore: store });
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 2 } }] }, finish('done')]);
    const handle = await executor.execute(agent, 'go');
    const result = await handle.result();
    // A loop that took the thenable for the step's end would call the model a third time, past its script.
    expect(result).toMatchObject({ status: 'completed', output: { answer: 'done' } });
    expect(result.state.count).toBe(2);
    expect(result.stepCount).toBe(2);
    expect(commits()).toBeGreaterThanOrEqual(2);
  });
});
