import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AgentError, childSessionId, defineAgent, defineRemoteSubAgentTool, type AgentErrorInfo, type RemoteAgentClient, type RemoteCallOptions, type RemoteStartRequest, type RemoteStreamItem, type StreamChunk } from '../index.js';
import type { RemoteSubAgentSpec } from '../define.js';
import { remoteChildHandle } from '../runtime/remote-child.js';
import { createScriptedModel } from '../testing/index.js';
import { collect, memoryLogger, setup } from './harness.js';

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

const spawned = { subSessionId: 'svc-s', runId: 'svc-r' } as const;
const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));
const info = (fields: Partial<AgentErrorInfo> = {}): AgentErrorInfo => ({ code: 'remote_broke', layer: 'tool', severity: 'error', retryable: false, message: 'it broke', ...fields });

describe('the start of a remote child, through a parent run', () => {
  /** Runs a parent that calls the remote tool once (call `r1`) over `client`; returns afterSubAgent's error and the run. */
  async function parentOver(client: RemoteAgentClient, options: { sessionId?: string; userId?: string; tags?: string[]; metadata?: Record<string, string> } = {}) {
    const errors: (AgentErrorInfo | undefined)[] = [];
    const tool = defineRemoteSubAgentTool({ name: 'research', description: 'Research on the service.', inputSchema: z.object({ input: z.string() }), agentType: 'researcher', client });
    const parent = defineAgent({
      name: 'lead',
      llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'research', args: { input: 'look into it' }, id: 'r1' }] }, { text: 'done' }]) },
      tools: [tool],
      hooks: { afterSubAgent: (p) => void errors.push(p.error) },
    });
    const { executor } = setup();
    const result = await (await executor.execute(parent, 'go', options)).result();
    return { errors, result };
  }

  it("asks the client with the child's agent type and input, the idempotency key of the parent session and call, the depth, the parent's attribution and the run's signal", async () => {
    const requests: RemoteStartRequest[] = [];
    const signals: (AbortSignal | undefined)[] = [];
    const recording = clientOf({
      start: async (request, options?: RemoteCallOptions) => (requests.push(request), signals.push(options?.signal), { sessionId: 'svc-s', runId: 'svc-r' }),
      result: async () => ({ status: 'completed', output: 'ok' }),
    });
    await parentOver(recording, { sessionId: 'p-req', userId: 'u-1', tags: ['t'], metadata: { k: 'v' } });
    await parentOver(recording, { sessionId: 'p-bare' });
    expect(requests).toStrictEqual([
      { agentType: 'researcher', input: 'look into it', idempotencyKey: childSessionId('p-req', 'r1'), parentSessionId: 'p-req', parentToolCallId: 'r1', depth: 1, userId: 'u-1', tags: ['t'], metadata: { k: 'v' } },
      { agentType: 'researcher', input: 'look into it', idempotencyKey: childSessionId('p-bare', 'r1'), parentSessionId: 'p-bare', parentToolCallId: 'r1', depth: 1 },
    ]);
    expect(signals.every((signal) => signal instanceof AbortSignal && !signal.aborted)).toBe(true);
  });

  it("a start that throws a plain error is subagent_remote_error naming start(), its message cut to 300 characters", async () => {
    const { errors, result } = await parentOver(clientOf({ start: () => Promise.reject(new Error(`boom ${'x'.repeat(1_000)}`)) }));
    expect(result.status).toBe('completed');
    expect(errors[0]).toMatchObject({ code: 'subagent_remote_error', details: { method: 'start' } });
    expect(errors[0]!.message.startsWith("The remote agent client's start() failed: boom x")).toBe(true);
    expect(errors[0]!.message).toHaveLength("The remote agent client's start() failed: ".length + 300);
    const { errors: thrownString } = await parentOver(clientOf({ start: () => Promise.reject('refused') as never }));
    expect(thrownString[0]?.message).toBe("The remote agent client's start() failed: refused");
  });

  it('a start that throws a helix error keeps its info, bounded: code to 64, message and hint to 400 characters, details only when small and JSON', async () => {
    const long = new AgentError('c'.repeat(100), 'm'.repeat(1_000), { hint: 'h'.repeat(1_000), details: { big: 'd'.repeat(5_000) }, layer: 'provider', severity: 'warning', retryable: true });
    const { errors } = await parentOver(clientOf({ start: () => Promise.reject(long) }));
    expect(errors[0]).toStrictEqual({ code: 'c'.repeat(64), layer: 'provider', severity: 'warning', message: 'm'.repeat(400), retryable: true, hint: 'h'.repeat(400) });
    const small = info({ hint: 'try later', details: { attempt: 2 } });
    const { errors: kept } = await parentOver(clientOf({ start: () => Promise.reject(small) }));
    expect(kept[0]).toStrictEqual(small);
    const { errors: unserializable } = await parentOver(clientOf({ start: () => Promise.reject(info({ details: { when: 10n } })) }));
    expect(unserializable[0]).toStrictEqual(info());
    const { errors: noHint } = await parentOver(clientOf({ start: () => Promise.reject({ ...info(), hint: 42 }) }));
    expect('hint' in noHint[0]!).toBe(false);
  });

  it('a run reference of the wrong shape is subagent_remote_invalid, saying what was invalid', async () => {
    for (const ref of [{ sessionId: 42, runId: 'r' }, { sessionId: '', runId: 'r' }, { sessionId: 's'.repeat(257), runId: 'r' }, { sessionId: 's', runId: 'r'.repeat(257) }]) {
      const { errors } = await parentOver(clientOf({ start: async () => ref as never }));
      expect(errors[0]).toMatchObject({ code: 'subagent_remote_invalid', details: { what: 'run reference from start()' } });
      expect(errors[0]!.message.startsWith('The remote agent client returned an invalid run reference from start(): ')).toBe(true);
    }
    const { errors } = await parentOver(clientOf({ start: async () => ({ sessionId: 's'.repeat(256), runId: 'r'.repeat(256) }), result: async () => ({ status: 'completed', output: 'fine' }) }));
    expect(errors).toEqual([undefined]);
  });
});

describe('the handle of a remote child', () => {
  it('a spawn that failed gives a handle that is already failed with its error: same session and run id, no stream, no usage; stop and interrupt give the same', async () => {
    const error = info({ code: 'agent_not_registered' });
    const handle = remoteChildHandle(specOf(clientOf({})), { subSessionId: 'child-1', error }, memoryLogger());
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'failed', sessionId: 'child-1', runId: 'child-1', state: undefined, stepCount: 0, error });
    expect(result.durationMs).toBeLessThan(1_000);
    expect({ sessionId: handle.sessionId, runId: handle.runId, streamId: handle.streamId }).toEqual({ sessionId: 'child-1', runId: 'child-1', streamId: 'child-1' });
    expect(await collect(handle.stream())).toEqual([]);
    expect(await handle.getUsageRollup()).toBeUndefined();
    expect(await handle.stop()).toBe(result);
    expect(await handle.interrupt()).toBe(result);
    const noRun = await remoteChildHandle(specOf(clientOf({})), { subSessionId: 'child-2' }, memoryLogger()).result();
    expect(noRun.error).toMatchObject({ code: 'subagent_remote_invalid', message: 'The remote agent client returned an invalid spawn record: no run id', details: { what: 'spawn record' } });
  });

  it('a completed result gives the output; other statuses their bounded error, an error that is not an AgentErrorInfo is invalid, no error no key', async () => {
    const run = async (result: unknown) => remoteChildHandle(specOf(clientOf({ result: async () => result as never })), spawned, memoryLogger()).result();
    const completed = await run({ status: 'completed', output: { x: 1 } });
    expect(completed).toMatchObject({ status: 'completed', sessionId: 'svc-s', runId: 'svc-r', state: undefined, stepCount: 0, output: { x: 1 } });
    expect('error' in completed).toBe(false);
    const failed = await run({ status: 'failed', error: info({ message: 'y'.repeat(1_000) }) });
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'remote_broke', message: 'y'.repeat(400) } });
    const junkError = await run({ status: 'interrupted', error: { code: 1 } });
    expect(junkError).toMatchObject({ status: 'interrupted', error: { code: 'subagent_remote_invalid', message: 'The remote agent client returned an invalid error: not an AgentErrorInfo' } });
    const bare = await run({ status: 'superseded' });
    expect(bare.status).toBe('superseded');
    expect('error' in bare || 'output' in bare).toBe(false);
    const invalid = await run({ status: 'running' });
    expect(invalid).toMatchObject({ status: 'failed', error: { code: 'subagent_remote_invalid', details: { what: 'result' } } });
    expect(invalid.error!.message.startsWith('The remote agent client returned an invalid result: ')).toBe(true);
  });

  it('usage of the promised shape is the handle\'s rollup; another shape is left out with a warning', async () => {
    const usage = { tokens: { prompt: 1, completion: 2, total: 3, cached: 0, cacheWrite: 0, reasoning: 0 }, modelCalls: 1, failedModelCalls: 0, toolStats: { totalCalls: 0, failures: 0, byTool: {} } };
    const good = remoteChildHandle(specOf(clientOf({ result: async () => ({ status: 'completed', output: 1, usage }) })), spawned, memoryLogger());
    await good.result();
    expect(await good.getUsageRollup()).toEqual(usage);
    const logger = memoryLogger();
    const bad = remoteChildHandle(specOf(clientOf({ result: async () => ({ status: 'completed', output: 1, usage: { tokens: 'many' } }) as never })), spawned, logger);
    expect((await bad.result()).status).toBe('completed');
    expect(await bad.getUsageRollup()).toBeUndefined();
    expect(logger.lines.some((l) => l.includes('remote child svc-s reported usage of an invalid shape; it is left out of the rollup'))).toBe(true);
  });

  it("a result() that rejects is subagent_remote_error naming result(); the signal given to result() is aborted once the handle settled", async () => {
    let signal: AbortSignal | undefined;
    const handle = remoteChildHandle(specOf(clientOf({ result: (_ref, options) => ((signal = options?.signal), Promise.reject(new Error('reset'))) })), spawned, memoryLogger());
    expect((await handle.result()).error).toMatchObject({ code: 'subagent_remote_error', message: "The remote agent client's result() failed: reset", details: { method: 'result' } });
    expect(signal?.aborted).toBe(true);
  });

  it('past timeoutMs the child is asked to stop with the timeout reason, and after stopTimeoutMs the call fails with subagent_timeout, naming the agent and the limit', async () => {
    const stops: (string | undefined)[] = [];
    const handle = remoteChildHandle(specOf(clientOf({ stop: async (_ref, reason) => void stops.push(reason) }), { timeoutMs: 60, stopTimeoutMs: 60 }), spawned, memoryLogger());
    const before = Date.now();
    const result = await handle.result();
    expect(Date.now() - before).toBeGreaterThanOrEqual(110);
    expect(result).toMatchObject({ status: 'failed', error: { code: 'subagent_timeout', message: 'The remote sub-agent "researcher" did not end within 60 ms; it was stopped.', details: { timeoutMs: 60 } } });
    expect(stops).toEqual(['The sub-agent took longer than its timeout.']);
  });

  it('a result that comes, or a result() that rejects, after the timeout still fails with subagent_timeout', async () => {
    for (const late of [{ status: 'interrupted' }, new Error('cancelled')]) {
      let answer!: (value: unknown) => void;
      const client = clientOf({ result: () => new Promise((resolve, reject) => (answer = late instanceof Error ? () => reject(late) : () => resolve(late as never))) });
      const handle = remoteChildHandle(specOf(client, { timeoutMs: 40, stopTimeoutMs: 5_000 }), spawned, memoryLogger());
      await tick(80);
      answer(undefined);
      expect(await handle.result()).toMatchObject({ status: 'failed', error: { code: 'subagent_timeout' } });
    }
  });

  it('a result within the timeout clears it: the child is not asked to stop afterwards', async () => {
    const stops: (string | undefined)[] = [];
    const handle = remoteChildHandle(specOf(clientOf({ result: async () => ({ status: 'completed', output: 'quick' }), stop: async (_r, reason) => void stops.push(reason) }), { timeoutMs: 50 }), spawned, memoryLogger());
    expect((await handle.result()).status).toBe('completed');
    await tick(100);
    expect(stops).toEqual([]);
    await handle.stop('too late');
    expect(stops).toEqual([]);
  });

  it('stop() asks the service to stop (the default reason, or the one given) and, with no end reported, resolves interrupted after stopTimeoutMs', async () => {
    const stops: (string | undefined)[] = [];
    const client = clientOf({ stop: async (_ref, reason) => void stops.push(reason) });
    const before = Date.now();
    const result = await remoteChildHandle(specOf(client, { stopTimeoutMs: 80 }), spawned, memoryLogger()).stop();
    expect(Date.now() - before).toBeGreaterThanOrEqual(75);
    expect(result).toMatchObject({ status: 'interrupted', error: { code: 'run_interrupted', message: 'The parent run was stopped.' } });
    const custom = await remoteChildHandle(specOf(client, { stopTimeoutMs: 20 }), spawned, memoryLogger()).interrupt('the user left');
    expect(custom.error?.message).toBe('the user left');
    expect(stops).toEqual(['The parent run was stopped.', 'the user left']);
  });

  it('a stop() the client rejects is logged, and the handle still ends', async () => {
    const logger = memoryLogger();
    const handle = remoteChildHandle(specOf(clientOf({ stop: () => Promise.reject(new Error('nope')) }), { stopTimeoutMs: 20 }), spawned, logger);
    expect((await handle.stop()).status).toBe('interrupted');
    expect(logger.lines.some((l) => l.includes("stopping remote child svc-s failed: The remote agent client's stop() failed: nope"))).toBe(true);
  });
});

describe('the stream of a remote child: checks and breaks', () => {
  it('items that are not stream items, chunks that are not JSON and chunks over 1,000,000 characters are dropped, each with its warning', async () => {
    const logger = memoryLogger();
    const client = clientOf({
      stream: async function* () {
        yield 'junk' as never;
        yield item('', { type: 'custom', seq: 0 });
        yield item('1', { type: 'custom', eventName: 'x', data: 1n, seq: 1 });
        yield item('2', { type: 'custom', eventName: 'x', data: 'z'.repeat(1_000_001), seq: 2 });
        yield item('3', { type: 'end', seq: 3 });
      },
    });
    const chunks = await collect(remoteChildHandle(specOf(client), spawned, logger).stream());
    expect(chunks.map((c) => c.type)).toEqual(['end']);
    const drops = logger.lines.filter((l) => l.includes('dropped a chunk of remote child svc-s: '));
    expect(drops).toHaveLength(4);
    expect(drops[0]).toContain('not a stream item (');
    expect(drops[2]).toContain('its chunk cannot be stored as JSON (');
    expect(drops[3]).toContain('its chunk is larger than 1000000 characters of JSON');
  });

  it('a stream that keeps throwing is opened again five times, then given up with a warning naming the failure', async () => {
    const logger = memoryLogger();
    let opens = 0;
    const client = clientOf({
      // eslint-disable-next-line require-yield -- a stream that fails before its first item
      stream: async function* () {
        opens++;
        throw new Error('socket hang up');
      },
    });
    const before = Date.now();
    expect(await collect(remoteChildHandle(specOf(client), spawned, logger).stream())).toEqual([]);
    // Backing off 100, 200, 400, 800 and 1600 ms between the opens.
    expect(Date.now() - before).toBeGreaterThanOrEqual(3_000);
    expect(opens).toBe(6);
    expect(logger.lines.filter((l) => l.includes("the stream of remote child svc-s broke off: The remote agent client's stream() failed: socket hang up"))).toHaveLength(1);
  }, 15_000);

  it("a stream that ends early once the child's result is in is not opened again", async () => {
    let opens = 0;
    const client = clientOf({
      result: async () => ({ status: 'completed', output: 'x' }),
      stream: async function* () {
        opens++;
        await tick(30);
        yield item('1', { type: 'custom', eventName: 'only', data: 1, seq: 1 });
      },
    });
    const chunks = await collect(remoteChildHandle(specOf(client), spawned, memoryLogger()).stream());
    expect(chunks.map((c) => c.type)).toEqual(['custom']);
    expect(opens).toBe(1);
  });

  it("a stream that hangs (ignoring its signal) is let go about two seconds after the child's result", async () => {
    const client = clientOf({
      result: async () => ({ status: 'completed', output: 'x' }),
      stream: () => ({ [Symbol.asyncIterator]: () => ({ next: () => new Promise<never>(() => {}) }) }),
    });
    const before = Date.now();
    expect(await collect(remoteChildHandle(specOf(client), spawned, memoryLogger()).stream())).toEqual([]);
    expect(Date.now() - before).toBeGreaterThanOrEqual(1_900);
    expect(Date.now() - before).toBeLessThan(4_000);
  });

  it('a stream that ends early without any chunk is opened again five times (backing off 100 ms to 1.6 s), then left without a warning', async () => {
    let opens = 0;
    const client = clientOf({
      // eslint-disable-next-line require-yield -- a stream that ends before its first item
      stream: async function* () {
        opens++;
      },
    });
    const logger = memoryLogger();
    const before = Date.now();
    expect(await collect(remoteChildHandle(specOf(client), spawned, logger).stream())).toEqual([]);
    expect(opens).toBe(6);
    expect(Date.now() - before).toBeGreaterThanOrEqual(3_000);
    expect(logger.lines).toEqual([]);
  }, 15_000);

  it("the client's stream is closed (its iterator returned) once the terminal chunk was read", async () => {
    let closed = false;
    const client = clientOf({
      stream: async function* () {
        try {
          yield item('1', { type: 'end', seq: 1 });
          yield item('2', { type: 'custom', eventName: 'after the end', data: 2, seq: 2 });
        } finally {
          closed = true;
        }
      },
    });
    expect((await collect(remoteChildHandle(specOf(client), spawned, memoryLogger()).stream())).map((c) => c.type)).toEqual(['end']);
    await tick(10);
    expect(closed).toBe(true);
  });

  it('a stream that fails because it was let go after the result is left without a warning', async () => {
    const logger = memoryLogger();
    const client = clientOf({
      result: async () => ({ status: 'completed', output: 'x' }),
      stream: (_ref, options) => ({
        [Symbol.asyncIterator]: () => ({
          next: () => new Promise<never>((_resolve, reject) => options!.signal!.addEventListener('abort', () => reject(new Error('aborted by the caller')), { once: true })),
        }),
      }),
    });
    expect(await collect(remoteChildHandle(specOf(client), spawned, logger).stream())).toEqual([]);
    await tick(20);
    expect(logger.lines).toEqual([]);
  });

  it('a chunk of exactly 1,000,000 characters of JSON is forwarded; one character more is dropped', async () => {
    const sized = (n: number) => {
      const chunk = { type: 'custom', eventName: 'big', data: '', seq: 1 };
      return { ...chunk, data: 'z'.repeat(n - JSON.stringify(chunk).length) };
    };
    const client = clientOf({
      stream: async function* () {
        yield item('1', sized(1_000_000));
        yield item('2', sized(1_000_001));
        yield item('3', { type: 'end', seq: 3 });
      },
    });
    const chunks = await collect(remoteChildHandle(specOf(client), spawned, memoryLogger()).stream());
    expect(chunks.map((c) => JSON.stringify(c).length)).toEqual([1_000_000, JSON.stringify({ type: 'end', seq: 3 }).length]);
  });
});

describe('bounded remote errors and usage at their edges', () => {
  it('error details of exactly 4,000 characters of JSON are kept; one more and they are dropped', async () => {
    const detailsOf = (n: number) => ({ pad: 'p'.repeat(n - JSON.stringify({ pad: '' }).length) });
    const run = async (details: Record<string, unknown>) => remoteChildHandle(specOf(clientOf({ result: async () => ({ status: 'failed', error: info({ details }) }) })), spawned, memoryLogger()).result();
    expect((await run(detailsOf(4_000))).error?.details).toEqual(detailsOf(4_000));
    const dropped = (await run(detailsOf(4_001))).error!;
    expect('details' in dropped).toBe(false);
  });

  it('a result without usage logs nothing and leaves the rollup undefined', async () => {
    const logger = memoryLogger();
    const handle = remoteChildHandle(specOf(clientOf({ result: async () => ({ status: 'completed', output: 1 }) })), spawned, logger);
    await handle.result();
    expect(await handle.getUsageRollup()).toBeUndefined();
    expect(logger.lines).toEqual([]);
  });
});
