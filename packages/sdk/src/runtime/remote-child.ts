import { z } from 'zod';
import type { RemoteSubAgentSpec } from '../define.js';
import { AgentError, isAgentErrorInfo, RunInterruptedError, type AgentErrorInfo } from '../errors.js';
import type { ToolCall } from '../messages.js';
import { isTerminalChunk, type StreamChunk } from '../stream.js';
import { childSessionId } from '../sub-agent-tool.js';
import type { UsageRollup } from '../usage.js';
import type { AgentHandle } from './agent-runtime.js';
import { jsonLength, unserializable } from './json-value.js';
import type { Logger } from './logger.js';
import type { RemoteAgentResult, RemoteRunRef, RemoteStartRequest, RemoteStreamItem } from './remote-agent-client.js';
import type { AgentResult } from './result.js';
import type { Run } from './run.js';
import { sleep } from './sleep.js';

/** What a sub-agent call's spawn records: the child's session (and, for a remote child, its run), or why a remote start failed (not recorded). */
export interface SpawnRecord {
  readonly subSessionId: string;
  readonly runId?: string;
  readonly error?: AgentErrorInfo;
}

/** The largest forwarded chunk of a remote child (as JSON); a bigger one is dropped with a warning. */
const MAX_CHUNK_JSON = 1_000_000;
/** How often a broken remote stream is opened again (with the last cursor) before forwarding gives up. */
const MAX_STREAM_REOPENS = 5;
/** How long forwarding may trail the child's result before the stream is let go. */
const STREAM_GRACE_MS = 2_000;
const MAX_MESSAGE = 400;

const id = z.string().min(1).max(256);
const refSchema = z.object({ sessionId: id, runId: id });
const count = z.number().finite().nonnegative();
const usageSchema = z.object({
  tokens: z.object({ prompt: count, completion: count, total: count, cached: count, cacheWrite: count, reasoning: count }),
  modelCalls: count,
  failedModelCalls: count,
  toolStats: z.object({ totalCalls: count, failures: count, byTool: z.record(z.string().max(64), z.object({ calls: count, failures: count, totalDurationMs: count })) }),
});
const resultSchema = z.object({
  status: z.enum(['completed', 'failed', 'interrupted', 'superseded', 'suspended']),
  output: z.unknown().optional(),
  error: z.unknown().optional(),
  usage: z.unknown().optional(),
});
const itemSchema = z.object({ cursor: z.string().min(1).max(1024), chunk: z.looseObject({ type: z.string().min(1).max(64) }) });

/** The error for a value a remote client returned that does not have the promised shape. */
function invalid(what: string, problem: string): AgentErrorInfo {
  return new AgentError('subagent_remote_invalid', `The remote agent client returned an invalid ${what}: ${problem.slice(0, 200)}`, { details: { what } }).info;
}

/** A rejection of a client method as an AgentErrorInfo: a helix error keeps its (bounded) info, anything else is `subagent_remote_error`. */
export function remoteFailure(error: unknown, method: string): AgentErrorInfo {
  if (AgentError.isInstance(error) || isAgentErrorInfo(error)) return boundedInfo(AgentError.isInstance(error) ? error.info : error);
  const message = error instanceof Error ? error.message : String(error);
  return new AgentError('subagent_remote_error', `The remote agent client's ${method}() failed: ${message.slice(0, 300)}`, { details: { method } }).info;
}

/** A remote error info, trimmed: a bounded message and hint, and details only when they are small JSON. */
function boundedInfo(info: AgentErrorInfo): AgentErrorInfo {
  const details = info.details !== undefined && unserializable(info.details) === undefined && jsonLength(info.details) <= 4_000 ? info.details : undefined;
  return {
    code: info.code.slice(0, 64),
    layer: info.layer,
    severity: info.severity,
    message: info.message.slice(0, MAX_MESSAGE),
    retryable: info.retryable,
    ...(typeof info.hint === 'string' ? { hint: info.hint.slice(0, MAX_MESSAGE) } : {}),
    ...(details === undefined ? {} : { details }),
  };
}

/** Starts the remote child of a sub-agent call (idempotently, keyed by the parent session and the call); never throws. */
export async function startRemoteChild(run: Run, spec: RemoteSubAgentSpec, call: ToolCall, depth: number): Promise<SpawnRecord> {
  const s = run.setup;
  const key = childSessionId(s.sessionId, call.id);
  const request: RemoteStartRequest = {
    agentType: spec.agentType,
    input: spec.input(call.arguments),
    idempotencyKey: key,
    parentSessionId: s.sessionId,
    parentToolCallId: call.id,
    depth,
    ...(s.userId === undefined ? {} : { userId: s.userId }),
    ...(s.tags === undefined ? {} : { tags: s.tags }),
    ...(s.metadata === undefined ? {} : { metadata: s.metadata }),
  };
  let raw: unknown;
  try {
    raw = await spec.client.start(request, { signal: run.signal });
  } catch (error) {
    return { subSessionId: key, error: remoteFailure(error, 'start') };
  }
  const ref = refSchema.safeParse(raw);
  if (!ref.success) return { subSessionId: key, error: invalid('run reference from start()', ref.error.message) };
  return { subSessionId: ref.data.sessionId, runId: ref.data.runId };
}

/**
 * The handle of a remote child: its stream (validated, reopened after a break with the last cursor),
 * its result (bounded by the tool's `timeoutMs`), its usage as the service reported it, and a stop
 * that asks the service to stop the run and waits at most `stopTimeoutMs` for its end.
 */
export function remoteChildHandle(spec: RemoteSubAgentSpec, spawned: SpawnRecord, logger: Logger): AgentHandle {
  const startedAt = Date.now();
  const base = { sessionId: spawned.subSessionId, runId: spawned.runId ?? spawned.subSessionId };
  const ended = (status: AgentResult['status'], fields: { output?: unknown; error?: AgentErrorInfo }): AgentResult => ({ ...base, status, state: undefined, stepCount: 0, durationMs: Date.now() - startedAt, ...fields });
  if (spawned.runId === undefined || spawned.error !== undefined) {
    const failed = Promise.resolve(ended('failed', { error: spawned.error ?? invalid('spawn record', 'no run id') }));
    return { ...base, streamId: base.sessionId, result: () => failed, stream: async function* () {}, getUsageRollup: async () => undefined, stop: () => failed, interrupt: () => failed };
  }
  const ref: RemoteRunRef = { sessionId: spawned.subSessionId, runId: spawned.runId };
  const client = spec.client;
  const calls = new AbortController();
  let usage: UsageRollup | undefined;
  let settle!: (result: AgentResult) => void;
  const outcome = new Promise<AgentResult>((resolve) => (settle = resolve));
  let done = false;
  let expired = false;
  const timers: ReturnType<typeof setTimeout>[] = [];
  const finish = (result: AgentResult): void => {
    if (done) return;
    done = true;
    for (const timer of timers) clearTimeout(timer);
    calls.abort();
    settle(result);
  };
  const timeoutError = (): AgentErrorInfo => new AgentError('subagent_timeout', `The remote sub-agent "${spec.agentType}" did not end within ${spec.timeoutMs} ms; it was stopped.`, { details: { timeoutMs: spec.timeoutMs } }).info;
  const askStop = (reason: string, orElse: () => AgentResult): void => {
    if (done) return;
    Promise.resolve()
      .then(() => client.stop(ref, reason))
      .catch((error: unknown) => logger.warn(`stopping remote child ${ref.sessionId} failed: ${remoteFailure(error, 'stop').message}`));
    timers.push(setTimeout(() => finish(orElse()), spec.stopTimeoutMs));
  };
  Promise.resolve()
    .then(() => client.result(ref, { signal: calls.signal }))
    .then(
      (raw) => finish(expired ? ended('failed', { error: timeoutError() }) : fromRemote(raw)),
      (error: unknown) => finish(ended('failed', { error: expired ? timeoutError() : remoteFailure(error, 'result') })),
    );
  if (spec.timeoutMs !== undefined) {
    timers.push(
      setTimeout(() => {
        expired = true;
        askStop('The sub-agent took longer than its timeout.', () => ended('failed', { error: timeoutError() }));
      }, spec.timeoutMs),
    );
  }

  function fromRemote(raw: unknown): AgentResult {
    const parsed = resultSchema.safeParse(raw);
    if (!parsed.success) return ended('failed', { error: invalid('result', parsed.error.message) });
    const r = parsed.data as RemoteAgentResult & { readonly error?: unknown; readonly usage?: unknown };
    if (r.usage !== undefined) {
      const checked = usageSchema.safeParse(r.usage);
      // The breakdown of the remote child's own children is not kept (its totals include them).
      if (checked.success) usage = checked.data;
      else logger.warn(`remote child ${ref.sessionId} reported usage of an invalid shape; it is left out of the rollup`);
    }
    if (r.status === 'completed') return ended('completed', { output: r.output });
    const error = r.error === undefined ? undefined : isAgentErrorInfo(r.error) ? boundedInfo(r.error) : invalid('error', 'not an AgentErrorInfo');
    return ended(r.status, error === undefined ? {} : { error });
  }

  const stop = (reason?: string): Promise<AgentResult> => {
    const why = reason ?? 'The parent run was stopped.';
    askStop(why, () => ended('interrupted', { error: new RunInterruptedError(why).info }));
    return outcome;
  };
  return {
    ...base,
    streamId: ref.sessionId,
    result: () => outcome,
    stream: () => remoteChunks(spec, ref, outcome, logger),
    getUsageRollup: async () => usage,
    stop,
    interrupt: stop,
  };
}

/**
 * The remote run's chunks, validated. A stream that breaks off (throws, or ends before the run's terminal
 * chunk while the run's result is not in yet) is reopened after the last cursor, a few times with
 * backoff; the stream is let go shortly after the run's result.
 */
async function* remoteChunks(spec: RemoteSubAgentSpec, ref: RemoteRunRef, outcome: Promise<AgentResult>, logger: Logger): AsyncGenerator<StreamChunk> {
  const release = new AbortController();
  let settled = false;
  void outcome.then(() => {
    settled = true;
    setTimeout(() => release.abort(), STREAM_GRACE_MS).unref();
  });
  let after: string | undefined;
  for (let reopened = 0; !release.signal.aborted; ) {
    try {
      const items = spec.client.stream(ref, { ...(after === undefined ? {} : { after }), signal: release.signal });
      for await (const item of untilAborted(items, release.signal)) {
        const checked = checkItem(item);
        if (typeof checked === 'string') {
          logger.warn(`dropped a chunk of remote child ${ref.sessionId}: ${checked}`);
          continue;
        }
        after = checked.cursor;
        reopened = 0;
        yield checked.chunk;
        if (isTerminalChunk(checked.chunk)) return;
      }
      // Ended before the terminal chunk: a dropped connection, unless the run is over anyway.
      if (settled || ++reopened > MAX_STREAM_REOPENS) return;
      await sleep(50 * 2 ** reopened, release.signal);
    } catch (error) {
      if (release.signal.aborted || ++reopened > MAX_STREAM_REOPENS) {
        if (!release.signal.aborted) logger.warn(`the stream of remote child ${ref.sessionId} broke off: ${remoteFailure(error, 'stream').message}`);
        return;
      }
      await sleep(50 * 2 ** reopened, release.signal);
    }
  }
}

/** Why a stream item is refused, or the item. */
function checkItem(item: unknown): RemoteStreamItem | string {
  const parsed = itemSchema.safeParse(item);
  if (!parsed.success) return `not a stream item (${parsed.error.issues[0]?.message ?? 'invalid'})`;
  const problem = unserializable(parsed.data.chunk);
  if (problem !== undefined) return `its chunk cannot be stored as JSON (${problem})`;
  if (jsonLength(parsed.data.chunk) > MAX_CHUNK_JSON) return `its chunk is larger than ${MAX_CHUNK_JSON} characters of JSON`;
  return { cursor: parsed.data.cursor, chunk: parsed.data.chunk as unknown as StreamChunk };
}

/** Iterates `items` until `signal` aborts, even when the iterator itself ignores the signal. */
async function* untilAborted<T>(items: AsyncIterable<T>, signal: AbortSignal): AsyncGenerator<T> {
  const iterator = items[Symbol.asyncIterator]();
  let onAbort = (): void => {};
  const aborted = new Promise<'aborted'>((resolve) => {
    onAbort = () => resolve('aborted');
    if (signal.aborted) resolve('aborted');
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    for (;;) {
      const next = await Promise.race([iterator.next(), aborted]);
      if (next === 'aborted' || next.done === true) return;
      yield next.value;
    }
  } finally {
    // The signal outlives this pass (a reopened stream makes another): leave no listener on it.
    signal.removeEventListener('abort', onAbort);
    void Promise.resolve()
      .then(() => iterator.return?.())
      .catch(() => undefined);
  }
}
