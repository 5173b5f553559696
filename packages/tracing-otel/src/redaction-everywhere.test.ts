import { z } from 'zod';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { createHookManager, defineAgent, defineTool, InMemoryStateStore, InMemoryStreamManager, JSAgentExecutor, silentLogger, type StreamChunk } from '@helix-agents/sdk';
import { createHookDispatcher, defineHook, mountHook, type SessionEvent } from '@helix-agents/sdk/hooks';
import { createRedactingStores, createRedactingTracerProvider, createRedactionHook } from '@helix-agents/sdk/ready-made';
import { createScriptedModel } from '@helix-agents/sdk/testing';
import { describe, expect, it } from 'vitest';
import { memoryTracing } from './__tests__/harness.js';
import { createOtelHooks } from './index.js';

// Issue 14 item 3: a secret planted in the input, a tool argument, a tool result and the state is found in
// none of the stored session, the stream chunks, the subscriber events and the span attributes.

const SECRETS = {
  input: 'sk-input0000AAAABBBBCCCCDDDDEEEE',
  argument: 'sk-argument0000AAAABBBBCCCCDDDD',
  result: 'sk-result0000AAAABBBBCCCCDDDDEE',
  state: 'sk-state0000AAAABBBBCCCCDDDDEEEE',
};

function leaks(where: string, value: unknown): string[] {
  const text = JSON.stringify(value);
  return Object.entries(SECRETS).flatMap(([kind, secret]) => (text.includes(secret) ? [`${kind} in ${where}`] : []));
}

describe('redaction covers every place a value is written', () => {
  it('input, tool argument, tool result and state: not in the store, the stream, subscriber events or spans', async () => {
    const stateStore = new InMemoryStateStore();
    const streams = new InMemoryStreamManager();
    const redacted = createRedactingStores({ stateStore, streamManager: streams });
    const executor = new JSAgentExecutor(redacted.stateStore, redacted.streamManager, new VercelAIAdapter(), { logger: silentLogger });
    const events: SessionEvent[] = [];
    const dispatcher = createHookDispatcher({ source: executor, hooks: [mountHook('spy', defineHook({ events: { '*': (event) => void events.push(event) } }))], logger: silentLogger });
    const tracing = memoryTracing();
    const otel = createOtelHooks({ tracerProvider: createRedactingTracerProvider(tracing.provider), captureContent: true });

    let toolSaw: string | undefined;
    const lookup = defineTool({
      name: 'lookup',
      description: 'Looks a key up',
      inputSchema: z.object({ key: z.string() }),
      execute: async (input, ctx) => {
        toolSaw = input.key;
        ctx.updateState<{ note?: string }>((draft) => {
          draft.note = `token ${SECRETS.state}`;
        });
        return `found ${SECRETS.result}`;
      },
    });
    const agent = defineAgent({
      name: 'redacted',
      stateSchema: z.object({ note: z.string().optional() }),
      llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'lookup', args: { key: `use ${SECRETS.argument}` }, id: 'k1' }] }, { text: 'Done.' }]) },
      tools: [lookup],
    });
    const hookManager = createHookManager(createRedactionHook()).register(otel.hooks);
    const handle = await executor.execute(agent, `my key is ${SECRETS.input}`, { hookManager });
    const result = await handle.result();
    await dispatcher.idle();
    await otel.flush();

    expect(result.status).toBe('completed');
    // The tool still got its real argument: only what is written is redacted.
    expect(toolSaw).toBe(`use ${SECRETS.argument}`);

    const session = await stateStore.loadSession(handle.sessionId);
    const chunks: readonly StreamChunk[] = streams.chunks(handle.sessionId);
    const found = [
      ...leaks('stored state', session?.state),
      ...leaks('stored messages', session?.messages),
      ...chunks.flatMap((c) => leaks(`${c.type} chunk`, c)),
      ...leaks('subscriber events', events),
      ...tracing.spans().flatMap((span) => leaks(`span ${span.name}`, span.attributes)),
    ];
    expect(found).toEqual([]);
    expect(chunks.some((c) => c.type === 'run_started')).toBe(true);
    expect(events.length).toBeGreaterThan(0);
    expect(tracing.spans().length).toBeGreaterThan(0);
  });
});
