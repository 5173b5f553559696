import { describe, expect, it } from 'vitest';
import { defineSubAgentTool, type AgentConfig } from '@helix-agents/sdk';
import { createOtelHooks } from '../index.js';
import { agent, finish, interval, isChildOf, memoryTracing, named, only, setup } from './harness.js';

/** Resolves once `count` callers arrived: parallel children all start before any of them goes on. */
function barrier(count: number): () => Promise<void> {
  let arrived = 0;
  let release!: () => void;
  const all = new Promise<void>((resolve) => (release = resolve));
  return async () => {
    if (++arrived === count) release();
    await all;
  };
}

/** A child agent that waits at `wait` when it starts, then finishes with `answer`. */
function waitingChild(name: string, wait: () => Promise<void>, answer: string): AgentConfig<Record<string, unknown>, { answer: string }> {
  return agent([finish(answer)], { name, hooks: { onAgentStart: () => wait() } });
}

describe('createOtelHooks: child runs of sub-agent tools', () => {
  it('a step that fans out to three sub-agents at once: each child run is a child span of exactly the tool call that started it, in the parent trace', async () => {
    const { provider, spans } = memoryTracing();
    const tracing = createOtelHooks({ tracerProvider: provider });
    const { executor } = setup();
    const wait = barrier(3);
    const child = waitingChild('helper', wait, 'child answer');
    const parent = agent(
      [{ toolCalls: ['a', 'b', 'c'].map((id) => ({ name: 'helper', args: { input: `topic ${id}` }, id: `call-${id}` })) }, finish('parent answer')],
      { tools: [defineSubAgentTool({ agent: child })] },
    );
    // Execution-level hooks: the children inherit them, so one tracer sees the whole tree.
    const result = await (await executor.execute(parent, 'go', { sessionId: 'fan-out', hooks: tracing.hooks })).result();
    expect(result.status).toBe('completed');
    const all = spans();
    const parentRun = only(all, 'invoke_agent researcher');
    const toolSpans = named(all, 'execute_tool helper');
    const childRuns = named(all, 'invoke_agent helper');
    expect(toolSpans).toHaveLength(3);
    expect(childRuns).toHaveLength(3);
    for (const toolSpan of toolSpans) {
      expect(isChildOf(toolSpan, parentRun)).toBe(true);
      const callId = toolSpan.attributes['gen_ai.tool.call.id'];
      const mine = childRuns.filter((run) => isChildOf(run, toolSpan));
      expect(mine).toHaveLength(1);
      expect(mine[0]!.attributes['helix.tool_call.parent_id']).toBe(callId);
      expect(mine[0]!.attributes['helix.session.parent_id']).toBe('fan-out');
      expect(all.filter((s) => isChildOf(s, mine[0]!)).map((s) => s.name)).toEqual(['chat gpt-test']);
    }
    // The three tool calls really were open at once (the case a single open call cannot disambiguate).
    const [starts, ends] = [toolSpans.map((s) => interval(s)[0]), toolSpans.map((s) => interval(s)[1])];
    expect(Math.max(...starts)).toBeLessThan(Math.min(...ends));
    expect(new Set(all.map((s) => s.spanContext().traceId)).size).toBe(1);
    expect(tracing.stats()).toMatchObject({ activeRuns: 0, openSpans: 0 });
  });

  it('a grandchild run nests under its own parent call inside the child run: run → tool → run → tool → run', async () => {
    const { provider, spans } = memoryTracing();
    const tracing = createOtelHooks({ tracerProvider: provider });
    const { executor } = setup();
    const leaf = agent([finish('leaf')], { name: 'leaf' });
    const middle = agent([{ toolCalls: [{ name: 'leaf', args: { input: 'deeper' }, id: 'g1' }] }, finish('middle')], { name: 'middle', tools: [defineSubAgentTool({ agent: leaf })] });
    const top = agent([{ toolCalls: [{ name: 'middle', args: { input: 'go on' }, id: 'c1' }] }, finish('top')], { tools: [defineSubAgentTool({ agent: middle })] });
    await (await executor.execute(top, 'go', { hooks: tracing.hooks })).result();
    const all = spans();
    const topRun = only(all, 'invoke_agent researcher');
    const middleCall = only(all, 'execute_tool middle');
    const middleRun = only(all, 'invoke_agent middle');
    const leafCall = only(all, 'execute_tool leaf');
    const leafRun = only(all, 'invoke_agent leaf');
    expect([isChildOf(middleCall, topRun), isChildOf(middleRun, middleCall), isChildOf(leafCall, middleRun), isChildOf(leafRun, leafCall)]).toEqual([true, true, true, true]);
  });

  it('child agents that carry the tracing hooks themselves nest the same way (agent-level hooks on every agent)', async () => {
    const { provider, spans } = memoryTracing();
    const tracing = createOtelHooks({ tracerProvider: provider });
    const { executor } = setup();
    // The children's first model call takes a while, so both calls are open at once.
    const child = agent([{ ...finish('x'), delayMs: 50 }], { name: 'helper', hooks: tracing.hooks });
    const parent = agent([{ toolCalls: ['a', 'b'].map((id) => ({ name: 'helper', args: { input: id }, id })) }, finish('done')], { tools: [defineSubAgentTool({ agent: child })], hooks: tracing.hooks });
    await (await executor.execute(parent, 'go')).result();
    const all = spans();
    for (const id of ['a', 'b']) {
      const toolSpan = named(all, 'execute_tool helper').find((s) => s.attributes['gen_ai.tool.call.id'] === id)!;
      const childRun = named(all, 'invoke_agent helper').find((s) => s.attributes['helix.tool_call.parent_id'] === id)!;
      expect(isChildOf(childRun, toolSpan)).toBe(true);
    }
  });
});
