// The code that changed after the first rounds (the synchronous pass of a hook chain, a step's lone call),
// as round 5's run of its changed lines found it: the tool_start chunk of a lone call, and the audit of an
// async handler's allow under auditHooks 'all', with its own duration.
import { describe, expect, it } from 'vitest';
import type { StreamChunk } from '../index.js';
import { counterAgent, finish, setup, textAgent } from './harness.js';

describe('the hot path', () => {
  it("a lone call's tool_start chunk names the call, the tool and its arguments, before its tool_end", async () => {
    const { executor, streamManager } = setup();
    const handle = await executor.execute(counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 2 }, id: 'c1' }] }, finish('x')]), 'go');
    await handle.result();
    const chunks = streamManager.chunks(handle.sessionId);
    const start = chunks.findIndex((c) => c.type === 'tool_start');
    expect(chunks[start]).toMatchObject({ type: 'tool_start', toolCallId: 'c1', toolName: 'increment', arguments: { by: 2 }, runId: handle.runId });
    expect(start).toBeLessThan(chunks.findIndex((c) => c.type === 'tool_end'));
  });

  it("auditHooks 'all' audits an async handler's allow with its own duration", async () => {
    const { executor, streamManager } = setup({ executor: { auditHooks: 'all' } });
    const before = performance.now();
    const handle = await executor.execute(textAgent([{ text: 'x' }]), 'go', {
      hooks: {
        beforeLLMCall: async function slowAllow() {
          await new Promise((r) => setTimeout(r, 15));
        },
      },
    });
    await handle.result();
    const elapsed = performance.now() - before;
    const decision = streamManager.chunks(handle.sessionId).find((c) => c.type === 'hook_decision' && c.hookName === 'slowAllow') as StreamChunk & { decision: string; durationMs: number };
    expect(decision.decision).toBe('allow');
    expect(decision.durationMs).toBeGreaterThanOrEqual(10);
    expect(decision.durationMs).toBeLessThanOrEqual(elapsed);
  });
});
