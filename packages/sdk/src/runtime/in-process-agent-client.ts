import { createHash } from 'node:crypto';
import type { AgentConfig } from '../define.js';
import { AgentError } from '../errors.js';
import type { AgentHooks } from '../hooks/types.js';
import type { HookManager } from '../hooks/manager.js';
import type { UsageStore } from '../usage.js';
import type { AgentHandle, AgentRuntime } from './agent-runtime.js';
import type { RemoteAgentClient, RemoteAgentResult, RemoteCallOptions, RemoteRunRef, RemoteStartRequest, RemoteStreamItem, RemoteStreamOptions } from './remote-agent-client.js';
import { sleep } from './sleep.js';

/** Options of {@link createInProcessAgentClient}. */
export interface InProcessAgentClientOptions {
  /** Where the remote runs record usage; results then report it (`usage`), so the parent's rollup includes it. */
  readonly usageStore?: UsageStore;
  /** Execution-level hooks of the runs this client starts (the service's own hooks, not the caller's). */
  readonly hooks?: AgentHooks;
  readonly hookManager?: HookManager;
  /** How often `result()` looks at the store for a run this client did not start (default 20 ms, backing off to 500 ms). */
  readonly pollMs?: number;
}

/** The "remote" session of an idempotency key: derived, opaque, the same every time. */
export function remoteSessionId(idempotencyKey: string): string {
  return `remote-${createHash('sha256').update(idempotencyKey).digest('base64url').slice(0, 32)}`;
}

/**
 * A {@link RemoteAgentClient} over an {@link AgentRuntime} in this process: `defineRemoteSubAgentTool`
 * runs against it exactly as it would against a service, which makes it the client for tests (and for
 * wiring two runtimes in one process). The child's session is derived from the idempotency key, so a
 * second start with the same key returns the run the first one started. The remote runs get the
 * client's own hooks and usage store, not the caller's. Cursors are stream offsets.
 */
export function createInProcessAgentClient(
  runtime: AgentRuntime,
  agents: readonly AgentConfig<unknown, unknown>[] | ReadonlyMap<string, AgentConfig<unknown, unknown>>,
  options: InProcessAgentClientOptions = {},
): RemoteAgentClient {
  const byName = agents instanceof Map ? new Map(agents) : new Map((agents as readonly AgentConfig<unknown, unknown>[]).map((a) => [a.name, a] as const));
  const handles = new Map<string, AgentHandle>();
  const starting = new Map<string, Promise<RemoteRunRef>>();
  const basePoll = options.pollMs ?? 20;

  async function begin(request: RemoteStartRequest): Promise<RemoteRunRef> {
    const agent = byName.get(request.agentType);
    if (!agent) throw new AgentError('agent_not_registered', `No agent named "${request.agentType}" is served here.`, { details: { agentType: request.agentType } });
    const sessionId = remoteSessionId(request.idempotencyKey);
    const existing = await runtime.getSession(sessionId);
    if (existing?.currentRunId !== undefined) return { sessionId, runId: existing.currentRunId };
    const handle = await runtime.execute(agent, request.input, {
      sessionId,
      parentSessionId: request.parentSessionId,
      ...(request.userId === undefined ? {} : { userId: request.userId }),
      ...(request.tags === undefined ? {} : { tags: request.tags }),
      ...(request.metadata === undefined ? {} : { metadata: request.metadata }),
      ...(options.usageStore === undefined ? {} : { usageStore: options.usageStore }),
      ...(options.hooks === undefined ? {} : { hooks: options.hooks }),
      ...(options.hookManager === undefined ? {} : { hookManager: options.hookManager }),
    });
    handles.set(handle.runId, handle);
    return { sessionId, runId: handle.runId };
  }

  async function ended(ref: RemoteRunRef, signal: AbortSignal | undefined): Promise<RemoteAgentResult> {
    const handle = handles.get(ref.runId);
    if (handle) {
      try {
        const r = await abortable(handle.result(), signal);
        const usage = await handle.getUsageRollup();
        return { status: r.status === 'running' ? 'failed' : r.status, ...(r.output === undefined ? {} : { output: r.output }), ...(r.error === undefined ? {} : { error: r.error }), ...(usage === undefined ? {} : { usage }) };
      } finally {
        // A handle keeps its whole run alive: the first wait for it lets it go, and a later one reads the store below.
        handles.delete(ref.runId);
      }
    }
    // A run this client did not start (another client instance, or before a restart): read it from the store once it ended.
    const never = new AbortController().signal;
    for (let wait = basePoll; ; wait = Math.min(wait * 2, 500)) {
      signal?.throwIfAborted();
      const run = await runtime.getRun(ref.runId);
      if (!run || run.sessionId !== ref.sessionId) throw new AgentError('state_not_found', `No run ${ref.runId} in session ${ref.sessionId}.`, { details: { ...ref } });
      if (run.status !== 'running') {
        const usage = await options.usageStore?.getRollup({ runId: ref.runId });
        return { status: run.status, ...(run.output === undefined ? {} : { output: run.output }), ...(run.error === undefined ? {} : { error: run.error }), ...(usage === undefined ? {} : { usage }) };
      }
      await sleep(wait, signal ?? never);
    }
  }

  return {
    async start(request: RemoteStartRequest, callOptions?: RemoteCallOptions): Promise<RemoteRunRef> {
      callOptions?.signal?.throwIfAborted();
      // Two starts with one key at once share the first: a second execute on the session would supersede the first run.
      const key = request.idempotencyKey;
      let pending = starting.get(key);
      if (!pending) {
        pending = begin(request).finally(() => starting.delete(key));
        starting.set(key, pending);
      }
      return pending;
    },
    async *stream(ref: RemoteRunRef, streamOptions: RemoteStreamOptions = {}): AsyncIterable<RemoteStreamItem> {
      const after = streamOptions.after;
      if (after !== undefined && !/^\d{1,15}$/.test(after)) throw new AgentError('run_invalid_input', 'This client\'s cursors are stream offsets; the cursor given is not one.');
      const fromSeq = after === undefined ? 0 : Number(after) + 1;
      for await (const chunk of runtime.readStream(ref.sessionId, { fromSeq, untilRunEnds: ref.runId, ...(streamOptions.signal ? { signal: streamOptions.signal } : {}) })) {
        if (chunk.runId === ref.runId) yield { chunk, cursor: String(chunk.seq) };
      }
    },
    result: (ref: RemoteRunRef, callOptions?: RemoteCallOptions) => ended(ref, callOptions?.signal),
    async stop(ref: RemoteRunRef, reason?: string): Promise<void> {
      // Accepted once the stop began; the run's end is what result() reports.
      runtime.stop(ref.sessionId, reason).catch(() => undefined);
    },
  };
}

/** `promise`, or a rejection once `signal` aborts. */
function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  signal.throwIfAborted();
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason instanceof Error ? signal.reason : new AgentError('run_interrupted', 'The call was cancelled.'));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
