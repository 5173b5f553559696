// The opening of a recovered run (runtime/run-start.ts), as the mutation runs found it loosely pinned: a run
// whose finishing step was committed before its process died completes with the exit reason of its kind
// of agent (finish_tool with an outputSchema, text without), and with no start signal fired again.
import { describe, expect, it } from 'vitest';
import { InMemoryStateStore } from '../index.js';
import { createHookRecorder } from '../testing/index.js';
import { counterAgent, deadCounterRun, setup, textAgent } from './harness.js';

async function recoverFinished(output: unknown, agent: (hooks: ReturnType<typeof createHookRecorder>['hooks']) => unknown) {
  const store = new InMemoryStateStore();
  const dead = await deadCounterRun(store);
  await store.commit({ ...dead, kind: 'turn_start', appendMessages: [{ role: 'user', content: 'go' }], committedAt: Date.now() });
  await store.commit({ ...dead, kind: 'step', stepIndex: 0, output, appendMessages: [{ role: 'assistant', content: 'x' }], committedAt: Date.now() });
  const rec = createHookRecorder();
  const { executor } = setup({ stateStore: store });
  const [handle] = await executor.recover({ agents: [agent(rec.hooks) as never] });
  return { result: await handle!.result(), rec };
}

describe('a recovered run whose finishing step was committed', () => {
  it('an agent with an outputSchema completes with exitReason finish_tool, and onAgentComplete sees it', async () => {
    const { result, rec } = await recoverFinished({ answer: 'early' }, (hooks) => counterAgent([], { hooks }));
    expect(result).toMatchObject({ status: 'completed', output: { answer: 'early' }, exitReason: 'finish_tool' });
    expect(rec.of('onAgentComplete')[0]!.payload).toMatchObject({ exitReason: 'finish_tool', output: { answer: 'early' } });
    expect(rec.of('onAgentStart')).toHaveLength(0);
  });

  it('an agent without an outputSchema completes with exitReason text', async () => {
    const { result, rec } = await recoverFinished('the text', (hooks) => textAgent([], { name: 'counter', hooks }));
    expect(result).toMatchObject({ status: 'completed', output: 'the text', exitReason: 'text' });
    expect(rec.of('onAgentComplete')[0]!.payload).toMatchObject({ exitReason: 'text' });
  });
});
