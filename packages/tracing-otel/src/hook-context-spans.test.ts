import { z } from 'zod';
import { defineAgent, defineTool, type StreamChunk } from '@helix-agents/sdk';
import { createScriptedModel } from '@helix-agents/sdk/testing';
import { describe, expect, it } from 'vitest';
import { memoryTracing, setup } from './__tests__/harness.js';
import { createOtelHooks } from './index.js';

// Rule 202: the request-scoped hookContext is read by reference and never written anywhere: not in the
// spans of the OpenTelemetry hooks (content capture on), the stored session or the stream.

describe('hookContext and tracing', () => {
  it('rule 202: a hookContext read by the tool and the hooks appears in no span attribute, stored row or chunk', async () => {
    const secret = 'hookctx-secret-91c4e2';
    const request = { db: { password: secret, query: () => [] as unknown[] }, token: secret };
    const seen: unknown[] = [];
    const probe = defineTool({
      name: 'probe',
      description: 'Uses the request resources',
      inputSchema: z.object({}),
      execute: (_input, ctx) => {
        seen.push(ctx.hookContext);
        return 'probed';
      },
    });
    const agent = defineAgent({
      name: 'traced',
      llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'probe', args: {}, id: 'p1' }] }, { text: 'Done.' }]) },
      tools: [probe],
    });
    const { executor, stateStore, streams } = setup();
    const tracing = memoryTracing();
    const otel = createOtelHooks({ tracerProvider: tracing.provider, captureContent: true });
    const handle = await executor.execute(agent, 'go', { hooks: otel.hooks, hookContext: request });
    const result = await handle.result();
    await otel.flush();
    expect(result.status).toBe('completed');
    expect(seen).toEqual([request]);
    expect(seen[0]).toBe(request);
    const spans = tracing.spans();
    expect(spans.length).toBeGreaterThan(2);
    const chunks: readonly StreamChunk[] = streams.chunks(handle.sessionId);
    const written = JSON.stringify({ spans: spans.map((s) => ({ name: s.name, attributes: s.attributes, events: s.events })), session: await stateStore.loadSession(handle.sessionId), chunks });
    expect(written).toContain('probed');
    expect(written).not.toContain(secret);
  });
});
