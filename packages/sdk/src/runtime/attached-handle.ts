import { AgentError, RunInterruptedError } from '../errors.js';
import type { RunRecord, StateStore } from '../store.js';
import type { StreamChunk, StreamManager } from '../stream.js';
import type { UsageStore } from '../usage.js';
import type { AgentHandle } from './agent-runtime.js';
import type { Logger } from './logger.js';
import type { AgentResult } from './result.js';
import { sleep } from './sleep.js';

/** How an attached handle waits. */
export interface AttachOptions {
  /** The most the handle waits for the run to end: then it asks the run to stop and resolves with `subagent_timeout`. */
  readonly timeoutMs: number;
  /** After a stop request, how long it waits for the run to end before resolving `interrupted` anyway. */
  readonly stopWaitMs: number;
  readonly logger: Logger;
  /** Where the run records its usage (the parent's usage store), for `getUsageRollup()`. */
  readonly usageStore?: UsageStore;
}

const FIRST_POLL_MS = 50;
const MAX_POLL_MS = 1_000;
/** How long the stream may trail the result before it is let go (a run that never ends never ends its stream). */
const STREAM_GRACE_MS = 1_000;

/**
 * A handle on a run this process does not run (a child a recovered parent re-attaches to, which another
 * process or recover() runs meanwhile): its result is read from the store once the run has ended
 * (polled, backing off from 50 ms to 1 s), within `timeoutMs`; past it, the handle asks the run to stop
 * and resolves `failed` with `subagent_timeout`. `stop()` works across processes: it records a stop
 * request in the store, which the process holding the run's lease acts on at its next renewal (a
 * process that recovers the run later stops it at once), and resolves once the run ended, or
 * `interrupted` after `stopWaitMs`. Its stream follows the run's chunks from now on.
 */
export function attachedHandle(store: StateStore, streams: StreamManager, sessionId: string, runId: string, options: AttachOptions): AgentHandle {
  const release = new AbortController();
  const startedAt = Date.now();
  let stopDeadline: number | undefined;
  let stopReason = 'The parent run was stopped.';
  const ask = (reason: string): void => {
    store.requestStop(runId, { reason, requestedAt: Date.now() }).catch((error: unknown) => {
      options.logger.warn(`asking run ${runId} to stop failed: ${error instanceof Error ? error.message : String(error)}`);
    });
  };
  const base = { sessionId, runId, state: undefined, stepCount: 0 };
  const ended = (async (): Promise<AgentResult> => {
    const deadline = startedAt + options.timeoutMs;
    for (let wait = FIRST_POLL_MS; ; wait = Math.min(wait * 2, MAX_POLL_MS)) {
      const run = await store.getRun(runId).catch(() => undefined);
      if (run && run.status !== 'running') return resultOf(run, sessionId, await store.loadSession(sessionId).catch(() => undefined));
      const now = Date.now();
      if (stopDeadline !== undefined && now >= stopDeadline) {
        return { ...base, status: 'interrupted', durationMs: now - startedAt, error: new RunInterruptedError(stopReason, { details: { stopRequested: true, childStatus: run?.status ?? 'unknown' } }).info };
      }
      if (now >= deadline) {
        ask('The parent stopped waiting for this run: its deadline passed.');
        const error = new AgentError('subagent_timeout', `The sub-agent run ${runId}, continued by another process, did not end within ${options.timeoutMs} ms; it was asked to stop.`, {
          details: { timeoutMs: options.timeoutMs, childStatus: run?.status ?? 'unknown' },
        });
        return { ...base, status: 'failed', durationMs: now - startedAt, error: error.info };
      }
      await sleep(Math.max(1, Math.min(wait, deadline - now)), release.signal);
    }
  })();
  void ended.then(() => setTimeout(() => release.abort(), STREAM_GRACE_MS).unref());
  const stop = (reason?: string): Promise<AgentResult> => {
    if (stopDeadline === undefined) {
      stopReason = reason ?? stopReason;
      stopDeadline = Date.now() + options.stopWaitMs;
      ask(stopReason);
    }
    return ended;
  };
  return {
    sessionId,
    runId,
    streamId: sessionId,
    result: () => ended,
    stream: (streamOptions) => followFromNow(store, streams, sessionId, runId, streamOptions?.signal ? AbortSignal.any([release.signal, streamOptions.signal]) : release.signal),
    getUsageRollup: async () => options.usageStore?.getRollup({ runId }),
    stop,
    interrupt: stop,
  };
}

/** The result of an ended run, as stored (its record and its session's state). */
export function resultOf(run: RunRecord, sessionId: string, session: { readonly state: unknown } | undefined): AgentResult {
  return {
    status: run.status,
    sessionId,
    runId: run.runId,
    state: session?.state,
    stepCount: run.stepCount,
    durationMs: (run.endedAt ?? Date.now()) - run.startedAt,
    ...(run.output === undefined ? {} : { output: run.output }),
    ...(run.error === undefined ? {} : { error: run.error }),
    ...(run.suspension === undefined ? {} : { suspension: run.suspension }),
  };
}

async function* followFromNow(store: StateStore, streams: StreamManager, sessionId: string, runId: string, signal: AbortSignal): AsyncIterable<StreamChunk> {
  const run = await store.getRun(runId);
  if (!run || run.status !== 'running') return;
  let last = -1;
  for await (const chunk of streams.read(sessionId, { follow: false })) last = chunk.seq;
  yield* streams.read(sessionId, { fromSeq: last + 1, untilRunEnds: runId, signal });
}
