// Issue 14, item 7, on Postgres: two executes issued at once on one session. The later start commit wins.
// The other entry either loses during its own entry (it is refused with a non-retryable state_run_superseded
// naming the winner: retrying would supersede the winner) or, when its entry finished first, its run is
// superseded by the winner like any older run. Which of the two happens depends on how the entries interleave
// on the database (on memory and SQLite, where both entries' steps run in one tick, the SDK's bad-input test
// sees the refusal); either way nothing is retryable, the winner completes and stays current.
import { defineAgent, JSAgentExecutor, silentLogger, type AgentError } from '@helix-agents/sdk';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { createScriptedModel } from '@helix-agents/sdk/testing';
import { describe, expect, it } from 'vitest';
import { useTestPostgres } from './__tests__/cluster.js';

const cluster = useTestPostgres();

describe('two executes at once on one session, on Postgres (issue 14, item 7)', () => {
  it('the loser is refused with a non-retryable state_run_superseded naming the winner, or its started run is superseded; the winner completes and stays current', async () => {
    const stores = await cluster.open();
    const executor = new JSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { logger: silentLogger });
    const agent = defineAgent({ name: 'texter', llmConfig: { model: createScriptedModel([{ text: 'a' }], { loop: true }) } });
    for (let round = 0; round < 5; round++) {
      const sessionId = `race-${round}`;
      const settled = await Promise.allSettled([executor.execute(agent, 'one', { sessionId }), executor.execute(agent, 'two', { sessionId })]);
      const winner = (await stores.stateStore.loadSession(sessionId))?.currentRunId;
      expect(winner).toBeDefined();
      let completed = 0;
      for (const s of settled) {
        if (s.status === 'rejected') {
          const info = (s.reason as AgentError).info;
          expect(info).toMatchObject({ code: 'state_run_superseded', retryable: false, details: { currentRunId: winner } });
          expect(info.message).toContain(winner);
          continue;
        }
        const result = await s.value.result();
        if (s.value.runId === winner) {
          expect(result.status).toBe('completed');
          completed++;
        } else expect(result.status).toBe('superseded');
      }
      expect(completed).toBe(1);
    }
    await executor.close();
  }, 120_000);
});
