import type { StateStore } from '../store.js';
import type { StreamChunk, StreamManager } from '../stream.js';
import type { AgentHandle } from './agent-runtime.js';
import type { AgentResult } from './result.js';
import { sleep } from './sleep.js';

const POLL_MS = 50;
const NEVER = new AbortController().signal;

/**
 * A handle on a run this process does not run (a child a recovered parent re-attaches to): its result
 * is read from the store once the run has ended (another process, or recover(), runs it meanwhile). Its
 * stream follows the run's chunks from now on; stopping it is not possible from here.
 */
export function attachedHandle(store: StateStore, streams: StreamManager, sessionId: string, runId: string): AgentHandle {
  let ended: Promise<AgentResult> | undefined;
  const result = (): Promise<AgentResult> => (ended ??= waitForEnd(store, sessionId, runId));
  return {
    sessionId,
    runId,
    streamId: sessionId,
    result,
    stream: (options) => followFromNow(store, streams, sessionId, runId, options?.signal),
    getUsageRollup: async () => undefined,
    stop: result,
    interrupt: result,
  };
}

async function waitForEnd(store: StateStore, sessionId: string, runId: string): Promise<AgentResult> {
  for (;;) {
    const run = await store.getRun(runId);
    if (run && run.status !== 'running') {
      const session = await store.loadSession(sessionId);
      return {
        status: run.status,
        sessionId,
        runId,
        state: session?.state,
        stepCount: run.stepCount,
        durationMs: (run.endedAt ?? Date.now()) - run.startedAt,
        ...(run.output === undefined ? {} : { output: run.output }),
        ...(run.error === undefined ? {} : { error: run.error }),
        ...(run.suspension === undefined ? {} : { suspension: run.suspension }),
      };
    }
    await sleep(POLL_MS, NEVER);
  }
}

async function* followFromNow(store: StateStore, streams: StreamManager, sessionId: string, runId: string, signal?: AbortSignal): AsyncIterable<StreamChunk> {
  const run = await store.getRun(runId);
  if (!run || run.status !== 'running') return;
  let last = -1;
  for await (const chunk of streams.read(sessionId, { follow: false })) last = chunk.seq;
  yield* streams.read(sessionId, { fromSeq: last + 1, untilRunEnds: runId, ...(signal ? { signal } : {}) });
}
