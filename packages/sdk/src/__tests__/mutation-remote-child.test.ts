import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineRemoteSubAgentTool, type RemoteAgentClient, type RemoteStreamItem, type StreamChunk } from '../index.js';
import type { RemoteSubAgentSpec } from '../define.js';
import { remoteChildHandle } from '../runtime/remote-child.js';
import { memoryLogger } from './harness.js';

// The handle of a remote child (runtime/remote-child.ts), driven directly with scripted clients: its
// stream (validated, reopened after a break), its result (timeout, stop), its usage.

const never = <T>(): Promise<T> => new Promise<T>(() => {});

/** The remote spec of a tool over `client` (its defaults: stopTimeoutMs 10 s, no timeout). */
function specOf(client: RemoteAgentClient, extra: { timeoutMs?: number; stopTimeoutMs?: number } = {}): RemoteSubAgentSpec {
  const tool = defineRemoteSubAgentTool({ name: 'research', description: 'Research on the service.', inputSchema: z.object({ input: z.string() }), agentType: 'researcher', client, ...extra });
  return tool.subAgent as RemoteSubAgentSpec;
}

function clientOf(overrides: Partial<RemoteAgentClient>): RemoteAgentClient {
  return {
    start: async () => ({ sessionId: 'svc-s', runId: 'svc-r' }),
    stream: async function* () {},
    result: never,
    stop: async () => {},
    ...overrides,
  };
}

const item = (cursor: string, chunk: Record<string, unknown>): RemoteStreamItem => ({ cursor, chunk: chunk as unknown as StreamChunk });

describe('the stream of a remote child', () => {
  it('a stream reopened after it broke off leaves no abort listener of an earlier pass on the signal it shares, nor one once it ended', async () => {
    const listeners: number[] = [];
    let signal: AbortSignal | undefined;
    let opens = 0;
    const client = clientOf({
      stream: (_ref, options) => {
        signal = options?.signal;
        listeners.push(getEventListeners(options!.signal!, 'abort').length);
        opens++;
        const n = opens;
        return (async function* () {
          yield item(String(n), { type: 'custom', eventName: `pass ${n}`, data: n, seq: n });
          if (n === 3) yield item('9', { type: 'end', seq: 9 });
        })();
      },
    });
    const handle = remoteChildHandle(specOf(client), { subSessionId: 'svc-s', runId: 'svc-r' }, memoryLogger());
    const chunks: StreamChunk[] = [];
    for await (const chunk of handle.stream()) chunks.push(chunk);
    expect(chunks.map((c) => c.type)).toEqual(['custom', 'custom', 'custom', 'end']);
    expect(listeners).toEqual([0, 0, 0]);
    expect(getEventListeners(signal!, 'abort')).toHaveLength(0);
  });
});
