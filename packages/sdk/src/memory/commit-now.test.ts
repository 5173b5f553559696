import { describe, expect, it } from 'vitest';
import { AgentError, InMemoryStateStore, type StateStore } from '../index.js';
import { commitNowOf } from '../store.js';
import { counterAgent, finish, setup } from '../__tests__/harness.js';

const inc = (by: number) => ({ toolCalls: [{ name: 'increment', args: { by } }] });
const SCRIPT = [inc(1), inc(2), inc(3), finish('done')];

/** A proxy that passes every member through, bound to the store, and counts the calls of `commit`. */
function countingProxy(store: InMemoryStateStore, onCommit: (n: number) => void = () => undefined): { store: StateStore; commits: () => number } {
  let commits = 0;
  const proxy = new Proxy(store, {
    get(target, key) {
      const value = Reflect.get(target, key) as unknown;
      if (key === 'commit') {
        return (...args: Parameters<StateStore['commit']>) => {
          commits++;
          onCommit(commits);
          return target.commit(...args);
        };
      }
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store: proxy, commits: () => commits };
}

async function runOn(stateStore: StateStore) {
  const { executor } = setup({ stateStore });
  const handle = await executor.execute(counterAgent(SCRIPT), 'count', { sessionId: 'sess' });
  const result = await handle.result();
  return { result, session: await stateStore.loadSession('sess'), checkpoints: await stateStore.listCheckpoints('sess') };
}

describe('the in-memory store commits a step without a promise, and only through its own commit', () => {
  it('offers a synchronous commit on its own method, and not through a subclass override, a proxy or a bound method', () => {
    const plain = new InMemoryStateStore();
    expect(commitNowOf(plain)).toBeTypeOf('function');
    class Inherits extends InMemoryStateStore {}
    expect(commitNowOf(new Inherits())).toBeTypeOf('function');
    class Overrides extends InMemoryStateStore {
      override async commit(...args: Parameters<InMemoryStateStore['commit']>) {
        return super.commit(...args);
      }
    }
    expect(commitNowOf(new Overrides())).toBeUndefined();
    expect(commitNowOf(countingProxy(plain).store)).toBeUndefined();
    const bound: StateStore = Object.assign(Object.create(plain) as InMemoryStateStore, { commit: plain.commit.bind(plain) });
    expect(commitNowOf(bound)).toBeUndefined();
  });

  it('a run on the synchronous path leaves exactly what the same run through commit leaves', async () => {
    const direct = await runOn(new InMemoryStateStore());
    const wrapped = countingProxy(new InMemoryStateStore());
    const through = await runOn(wrapped.store);
    expect(wrapped.commits()).toBeGreaterThanOrEqual(SCRIPT.length);
    expect(direct.result.status).toBe('completed');
    expect(through.result).toMatchObject({ status: direct.result.status, output: direct.result.output, state: direct.result.state, stepCount: direct.result.stepCount });
    const strip = (s: typeof direct.session) => s && { ...s, sessionId: 'x', currentRunId: 'x' };
    expect(strip(through.session)).toMatchObject({ messages: strip(direct.session)?.messages, state: strip(direct.session)?.state, stepCount: direct.session?.stepCount });
    expect(through.checkpoints.map((c) => [c.kind, c.stepCount, c.messageCount])).toEqual(direct.checkpoints.map((c) => [c.kind, c.stepCount, c.messageCount]));
  });

  it('a wrapper that refuses a step commit fails the run: the loop does not go around the wrapper', async () => {
    const wrapped = countingProxy(new InMemoryStateStore(), (n) => {
      if (n === 3) throw new AgentError('state_commit_failed', 'disk full on the third commit');
    });
    const { result } = await runOn(wrapped.store);
    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({ code: 'state_commit_failed' });
  });

  it('a subclass whose commit refuses a step fails the run the same way', async () => {
    let calls = 0;
    class Refusing extends InMemoryStateStore {
      override async commit(...args: Parameters<InMemoryStateStore['commit']>) {
        if (++calls === 3) throw new AgentError('state_commit_failed', 'refused');
        return super.commit(...args);
      }
    }
    const { result } = await runOn(new Refusing());
    expect(calls).toBeGreaterThanOrEqual(3);
    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({ code: 'state_commit_failed' });
  });

  it('a step commit the store itself refuses (a fenced-out run) throws on the synchronous path as it rejects on the other', async () => {
    const store = new InMemoryStateStore();
    const { executor } = setup({ stateStore: store });
    // After the first step's tool, an afterTool hook takes the run over (a new epoch): the step's commit is fenced.
    const handle = await executor.execute(
      counterAgent(SCRIPT, {
        hooks: {
          afterTool: async (_payload, ctx) => {
            const run = await store.getRun(ctx.runId);
            if (run && run.stepCount === 0) await store.claimRun(ctx.runId, 'someone-else', 60_000, Date.now(), { takeover: true });
          },
        },
      }),
      'count',
      { sessionId: 'sess' },
    );
    const result = await handle.result();
    expect(result.status).toBe('superseded');
    expect(result.error).toMatchObject({ code: 'state_run_superseded' });
    const run = await store.getRun(result.runId);
    expect(run?.stepCount).toBe(0);
  });
});
