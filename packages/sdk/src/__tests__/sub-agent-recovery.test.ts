import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { defineAgent, defineSubAgentTool, InMemoryStateStore, InMemoryStreamManager, JSAgentExecutor, silentLogger, type Draft, type StateStore } from '../index.js';
import type { Commit, JournalEntry } from '../store/index.js';
import { createGate, createScriptedModel } from '../testing/index.js';

// A recovered step replays what its parallel sub-agent calls recorded. Their folds were made one after
// another on the live state and their patches hold the values they wrote (a counter's new value), so
// they must come back in the order they were made, which need not be the order they were recorded.

const Tally = z.object({ folds: z.number().default(0), order: z.array(z.string()).default([]) });
type TallyState = z.infer<typeof Tally>;

describe('a recovered step with parallel sub-agent calls', () => {
  it("replays the children's recorded folds in the order they ran, not the order they were recorded: the state equals an uncrashed run's", async () => {
    const store = new InMemoryStateStore();
    const streams = new InMemoryStreamManager();
    const aFolded = createGate();
    const bRecorded = createGate();
    const parentStepCommit = createGate();
    // The first process: b's result is recorded before a's, though a folded first; then it dies in the lead's step commit.
    const dying = new Proxy(store, {
      get(target, prop) {
        if (prop === 'commit')
          return (c: Commit) => {
            if (c.kind !== 'step' || c.sessionId !== 'lead-1') return target.commit(c);
            parentStepCommit.open();
            return new Promise(() => {});
          };
        if (prop === 'appendJournal')
          return async (entry: JournalEntry) => {
            const stored = await target.appendJournal(entry);
            if (entry.key === 'call_result:0:b') bRecorded.open();
            return stored;
          };
        if (prop === 'renewLease') return () => Promise.reject(new Error('network down'));
        const value: unknown = Reflect.get(target, prop);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    }) as StateStore;
    const child = defineAgent({
      name: 'worker',
      llmConfig: { model: createScriptedModel([{ text: 'done' }], { loop: true }) },
      // b's child ends only once a's fold ran.
      hooks: { onAgentStart: async (p) => (p.input === 'b' ? aFolded.opened : undefined) },
    });
    let crashed = true;
    const lead = defineAgent({
      name: 'lead',
      stateSchema: Tally,
      llmConfig: { model: createScriptedModel([(o) => (o.prompt.some((m) => m.role === 'tool') ? { text: 'all folded' } : { toolCalls: ['a', 'b'].map((id) => ({ name: 'worker', args: { input: id }, id })) })], { loop: true }) },
      tools: [defineSubAgentTool({ agent: child })],
      hooks: {
        afterSubAgent: (p, ctx) => {
          const id = (p.call.input as { input: string }).input;
          ctx.updateState((d: Draft<TallyState>) => {
            d.folds += 1;
            d.order.push(id);
          });
          if (id === 'a') aFolded.open();
        },
        // a's result is recorded after b's.
        afterTool: async (p) => (crashed && p.toolCall.id === 'a' ? bRecorded.opened : undefined),
      },
    });
    const first = new JSAgentExecutor(dying, streams, new VercelAIAdapter(), { logger: silentLogger, leaseMs: 60 });
    await first.execute(lead, 'go', { sessionId: 'lead-1' });
    await parentStepCommit.opened;
    crashed = false;
    await new Promise((r) => setTimeout(r, 150));

    const second = new JSAgentExecutor(store, streams, new VercelAIAdapter(), { logger: silentLogger });
    const [recovered] = await second.recover({ agents: [lead, child] });
    expect(recovered?.sessionId).toBe('lead-1');
    const result = await recovered!.result();
    expect(result).toMatchObject({ status: 'completed', output: 'all folded' });
    expect(result.state).toEqual({ folds: 2, order: ['a', 'b'] });
  });
});
