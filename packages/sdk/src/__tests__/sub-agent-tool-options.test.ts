import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AgentError, childSessionId, defineAgent, defineSubAgentTool, defineTool, type StreamChunk } from '../index.js';
import { createScriptedModel } from '../testing/index.js';
import { collect, setup } from './harness.js';

// The options of defineSubAgentTool (issue 11 item 1): stream, output and the default input mapping.

type Forwarded = Extract<StreamChunk, { type: 'subagent_chunk' }>;
const forwardedOf = (chunks: readonly StreamChunk[]): Forwarded[] => chunks.filter((c): c is Forwarded => c.type === 'subagent_chunk');

/** A parent that calls `tool` once (call id `c1`) with `args`, then replies `done`. */
function parentOf(tool: ReturnType<typeof defineSubAgentTool>, args: Record<string, unknown>) {
  return defineAgent({ name: 'lead', llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: tool.name, args, id: 'c1' }] }, { text: 'done' }]) }, tools: [tool] });
}

describe('defineSubAgentTool stream option', () => {
  it("stream: false: the parent's stream gets none of the child's chunks (no text, no end) while the child's own stream has them all; the call's result and hooks are unchanged", async () => {
    const seen: string[] = [];
    const child = defineAgent({ name: 'quiet', llmConfig: { model: createScriptedModel([{ text: 'child text' }]) } });
    const parent = defineAgent({
      name: 'lead',
      llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'quiet', args: { input: 'x' }, id: 'c1' }] }, { text: 'parent text' }]) },
      tools: [defineSubAgentTool({ agent: child, stream: false })],
      hooks: { afterSubAgent: (p) => void seen.push(`afterSubAgent ${String(p.success)} ${String(p.result)}`) },
    });
    const { executor } = setup();
    const handle = await executor.execute(parent, 'go', { sessionId: 'quiet-1' });
    const chunks = await collect(handle.stream());
    expect(await handle.result()).toMatchObject({ status: 'completed', output: 'parent text' });
    expect(forwardedOf(chunks)).toEqual([]);
    expect(chunks.filter((c) => c.type === 'text_delta').map((c) => (c as { delta: string }).delta).join('')).toBe('parent text');
    expect(seen).toEqual(['afterSubAgent true child text']);
    const own = await collect(executor.readStream(childSessionId('quiet-1', 'c1'), { follow: false }));
    expect(own.filter((c) => c.type === 'text_delta').map((c) => (c as { delta: string }).delta).join('')).toBe('child text');
    expect(own.at(-1)?.type).toBe('end');
  });

  it("the default (and stream: true) forwards every chunk of the child live: its run_started, text and end reach the parent's stream, tagged with the child session, the call and depth 1", async () => {
    for (const stream of [undefined, true] as const) {
      const child = defineAgent({ name: 'loud', llmConfig: { model: createScriptedModel([{ text: 'child text' }]) } });
      const { executor } = setup();
      const handle = await executor.execute(parentOf(defineSubAgentTool({ agent: child, ...(stream === undefined ? {} : { stream }) }), { input: 'x' }), 'go', { sessionId: `loud-${String(stream)}` });
      const forwarded = forwardedOf(await collect(handle.stream()));
      expect(forwarded.map((c) => c.chunk.type)).toEqual(expect.arrayContaining(['run_started', 'text_delta', 'end']));
      expect(new Set(forwarded.map((c) => `${c.childSessionId} ${c.parentToolCallId} ${c.depth}`))).toEqual(new Set([`${childSessionId(`loud-${String(stream)}`, 'c1')} c1 1`]));
    }
  });

  it("stream: false still forwards the child's requests for an answer (tool_approval_request, suspended): the approval is answered through the parent, and the resumed parent again forwards nothing else", async () => {
    const send = defineTool({ name: 'send', description: 'Sends (needs approval).', inputSchema: z.object({ to: z.string() }), needsApproval: true, execute: (i) => `sent to ${i.to}` });
    const child = defineAgent({ name: 'mailer', llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'send', args: { to: 'ana' }, id: 'm1' }] }, { text: 'mailed' }]) }, tools: [send] });
    const { executor } = setup();
    const handle = await executor.execute(parentOf(defineSubAgentTool({ agent: child, stream: false }), { input: 'mail ana' }), 'go', { sessionId: 'quiet-approval' });
    const first = forwardedOf(await collect(handle.stream()));
    expect((await handle.result()).status).toBe('suspended');
    expect(first.map((c) => c.chunk.type)).toEqual(['tool_approval_request', 'suspended']);
    expect(first[0]?.chunk).toMatchObject({ toolCallId: 'm1', toolName: 'send', arguments: { to: 'ana' } });
    const resumed = await executor.approve('quiet-approval', 'm1');
    const later = forwardedOf(await collect(resumed.stream()));
    expect(await resumed.result()).toMatchObject({ status: 'completed', output: 'done' });
    expect(later).toEqual([]);
  });

  it('a stream option that is not a boolean is refused with config_invalid', () => {
    const child = defineAgent({ name: 'x', llmConfig: { model: createScriptedModel([{ text: 'x' }]) } });
    const refused = (() => {
      try {
        defineSubAgentTool({ agent: child, stream: 'no' as unknown as boolean });
        return undefined;
      } catch (error) {
        return error;
      }
    })();
    expect(AgentError.isInstance(refused) && refused.code).toBe('config_invalid');
  });
});

describe('defineSubAgentTool input and output mapping', () => {
  it("output(childOutput) is what the parent's model receives (its tool row and afterTool), while afterSubAgent gets the child's own output", async () => {
    const seen: unknown[] = [];
    const child = defineAgent({ name: 'summer', outputSchema: z.object({ total: z.number() }), llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: '__finish__', args: { total: 5 } }] }]) } });
    const tool = defineSubAgentTool({ agent: child, output: (out) => `the total is ${out.total}` });
    const parent = defineAgent({
      name: 'lead',
      llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'summer', args: { input: 'add' }, id: 'c1' }] }, { text: 'done' }]) },
      tools: [tool],
      hooks: { afterSubAgent: (p) => void seen.push({ afterSubAgent: p.result }), afterTool: (p) => void seen.push({ afterTool: p.result }) },
    });
    const { executor } = setup();
    const handle = await executor.execute(parent, 'go');
    await handle.result();
    expect(seen).toEqual([{ afterSubAgent: { total: 5 } }, { afterTool: 'the total is 5' }]);
    const row = (await executor.getSession(handle.sessionId))!.messages.find((m) => m.role === 'tool');
    expect(row).toMatchObject({ toolCallId: 'c1', content: 'the total is 5' });
  });

  it("the default input is the args' `input` field when it is a string, else the args as JSON (another schema, or an `input` that is not a string)", async () => {
    const inputs: string[] = [];
    const child = defineAgent({ name: 'echo', llmConfig: { model: createScriptedModel([{ text: 'ok' }], { loop: true }) }, hooks: { onAgentStart: (p) => void inputs.push(p.input) } });
    const cases: readonly [z.ZodObject<z.ZodRawShape> | undefined, Record<string, unknown>][] = [
      [undefined, { input: 'plain task' }],
      [z.object({ topic: z.string(), depth: z.number() }), { topic: 'hooks', depth: 2 }],
      [z.object({ input: z.number() }), { input: 7 }],
    ];
    for (const [inputSchema, args] of cases) {
      const { executor } = setup();
      const tool = defineSubAgentTool({ agent: child, ...(inputSchema ? { inputSchema } : {}) });
      await (await executor.execute(parentOf(tool, args), 'go')).result();
    }
    expect(inputs).toEqual(['plain task', JSON.stringify({ topic: 'hooks', depth: 2 }), JSON.stringify({ input: 7 })]);
  });

  it('a custom input(args) makes the child input from the tool input', async () => {
    const inputs: string[] = [];
    const child = defineAgent({ name: 'echo', llmConfig: { model: createScriptedModel([{ text: 'ok' }]) }, hooks: { onAgentStart: (p) => void inputs.push(p.input) } });
    const tool = defineSubAgentTool({ agent: child, inputSchema: z.object({ topic: z.string() }), input: (a) => `Research ${a.topic}` });
    const { executor } = setup();
    await (await executor.execute(parentOf(tool, { topic: 'folds' }), 'go')).result();
    expect(inputs).toEqual(['Research folds']);
  });
});
