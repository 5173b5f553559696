import { z } from 'zod';
import type { LocalSubAgentSpec, SubAgentSpec, ToolDefinition } from '../define.js';
import { AgentError, RunHandedOffError, RunSupersededError, ToolError, type AgentErrorInfo } from '../errors.js';
import type { RunAttribution, SubAgentCall } from '../hooks/types.js';
import type { ToolCall } from '../messages.js';
import type { StatePatch, StreamChunk } from '../stream.js';
import { childSessionId } from '../sub-agent-tool.js';
import type { AgentHandle } from './agent-runtime.js';
import { crashPoint } from './crash-points.js';
import type { WriteScope } from './hook-dispatch.js';
import type { AgentResult } from './result.js';
import { remoteChildHandle, startRemoteChild, type SpawnRecord as RemoteSpawn } from './remote-child.js';
import type { Run } from './run.js';
import type { ChildRunner } from './run-setup.js';

/** A child session a sub-agent call waits on. */
export interface AwaitedChild {
  readonly sessionId: string;
  readonly agentType: string;
}

/**
 * What a sub-agent call comes back with: the call's result for the parent's model, the error it gets,
 * or the child it still waits on (the child suspended, or this process is shutting down): the parent
 * suspends with reason `awaiting_children`.
 */
export type SubAgentOutcome = { readonly ok: true; readonly result: unknown } | { readonly ok: false; readonly error: AgentError } | { readonly waiting: readonly AwaitedChild[] };

/**
 * What a spawn records: the child's session (and, for a remote child, its run), the input the call ran
 * with (after beforeTool), and the writes of beforeTool and beforeSubAgent. A remote start that failed
 * (`error`) is not recorded: a recovered parent tries again, with the same idempotency key.
 */
interface SpawnRecord extends RemoteSpawn {
  readonly input?: unknown;
  readonly patches?: readonly StatePatch[];
}

const patchSchema = z.object({ op: z.enum(['replace', 'remove', 'add']), path: z.array(z.union([z.string(), z.number()])), value: z.unknown().optional() }) as z.ZodType<StatePatch>;
const spawnRecord: z.ZodType<SpawnRecord> = z.object({ subSessionId: z.string(), runId: z.string().optional(), input: z.unknown().optional(), patches: z.array(patchSchema).optional() });

/**
 * How a call reaches its child: `spawn` (a step's call: beforeSubAgent, then a new child run, or the
 * child a process that died spawned) or `attach` (a resumed parent delivering a call it suspended on:
 * the child already exists, beforeSubAgent does not fire again).
 */
export type SubAgentMode = 'spawn' | 'attach';

/**
 * A recovered step's sub-agent call whose child a process that died already spawned: the writes its
 * beforeTool and beforeSubAgent made come back, and the call goes on with the input it ran with (its
 * beforeTool chain does not run again). Undefined when the call was not spawned.
 */
export async function spawnedCall(run: Run, call: ToolCall, scope: WriteScope): Promise<ToolCall | undefined> {
  const prior = await run.recorder.replay({ kind: 'child_spawn', step: run.stepCount, callId: call.id }, spawnRecord);
  if (prior?.status !== 'replayed') return undefined;
  if (prior.value.patches) run.work.applyRecorded(prior.value.patches, scope.owner);
  return prior.value.input === undefined ? call : { ...call, arguments: prior.value.input };
}

/**
 * Runs a sub-agent call: beforeSubAgent, the child's whole run in its own session (its chunks forwarded
 * into the parent's stream, tagged), afterSubAgent. The spawn goes through the step recorder, so a
 * recovered parent re-attaches to the child (same derived session id) without firing beforeSubAgent
 * again. afterSubAgent's writes belong to the call: parallel children's folds run one after another on
 * the live state, in the order their outcomes arrive, so disjoint edits all survive and the same path
 * goes to the last writer. Stopping the parent stops the child. A child that suspends (a client tool,
 * an approval) or that this process lets go at shutdown is waited on: the parent suspends.
 */
export async function runSubAgent(run: Run, tool: ToolDefinition, call: ToolCall, scope: WriteScope, mode: SubAgentMode = 'spawn'): Promise<SubAgentOutcome> {
  const spec = tool.subAgent;
  const children = run.setup.children;
  if (!spec || !children) return refused('subagent_unavailable', `The sub-agent tool "${tool.name}" needs a runtime that starts child runs.`);
  const depth = run.setup.depth + 1;
  const limit = beyondLimits(run, spec.agentType, depth, mode);
  if (limit) return limit;
  const parentSessionId = run.setup.sessionId;
  const subCall: SubAgentCall = { id: call.id, toolName: tool.name, input: call.arguments, agentType: spec.agentType };
  const agentConfig = spec.kind === 'local' ? spec.agent : undefined;
  const subSessionId = childSessionId(parentSessionId, call.id);
  const { attach, spawned } = mode === 'attach' ? { attach: true, spawned: { subSessionId } } : await spawn(run, spec, call, depth, scope, async () => run.hooks.fire('beforeSubAgent', { call: subCall, agentConfig, parentSessionId }, scope));
  const startedAt = performance.now();
  const handle = spec.kind === 'remote' ? remoteChildHandle(spec, spawned, run.setup.logger) : await startLocalChild(run, children, spec, call, depth, attach);
  // A remote child is not let go at shutdown (no local run of it ends to resume the parent): the parent is handed off instead.
  const result = await childResult(run, handle, { parentToolCallId: call.id, depth, all: spec.stream !== false }, spec.kind === 'local');
  if (result === 'released' || result.status === 'suspended' || result.status === 'running') return { waiting: [{ sessionId: handle.sessionId, agentType: spec.agentType }] };
  crashPoint('after_child_end');
  run.books.addChild(handle);
  const success = result.status === 'completed';
  const error: AgentErrorInfo | undefined = success ? undefined : (result.error ?? new AgentError('subagent_failed', `The sub-agent "${spec.agentType}" ended ${result.status}.`).info);
  const durationMs = performance.now() - startedAt;
  if (run.hooks.has('afterSubAgent')) {
    await run.hooks.fire('afterSubAgent', { call: subCall, agentConfig, result: success ? result.output : undefined, success, ...(error ? { error } : {}), durationMs, subSessionId: handle.sessionId }, scope);
  }
  if (success) return { ok: true, result: spec.output(result.output) };
  return refused('subagent_failed', `The sub-agent "${spec.agentType}" ended ${result.status}: ${error?.message ?? 'no reason given'}`, { subSessionId: handle.sessionId, status: result.status, ...(error ? { cause: error.code } : {}) });
}

/** Starts (or re-attaches to) a local child in its derived session, with the parent's attribution, usage store and execution-level hooks. */
function startLocalChild(run: Run, children: ChildRunner, spec: LocalSubAgentSpec, call: ToolCall, depth: number, attach: boolean): Promise<AgentHandle> {
  const s = run.setup;
  return children.start(spec.agent, spec.input(call.arguments), {
    sessionId: childSessionId(s.sessionId, call.id),
    parentSessionId: s.sessionId,
    parentToolCallId: call.id,
    depth,
    attribution: attributionOf(run),
    attach,
    ...(s.usageStore ? { usageStore: s.usageStore } : {}),
    ...(s.executionHooks ? { executionHooks: s.executionHooks } : {}),
    // A dry run's children are dry too, and see the same request-scoped resources (rules 156, 202).
    ...(s.dryRun ? { dryRun: true } : {}),
    ...(s.hookContext === undefined ? {} : { hookContext: s.hookContext }),
  });
}

/**
 * The spawn of a step's call: beforeSubAgent, then (for a remote child) its start, recorded together. A
 * spawn a process that died recorded means the child may exist already: the call re-attaches.
 */
async function spawn(run: Run, spec: SubAgentSpec, call: ToolCall, depth: number, scope: WriteScope, beforeSubAgent: () => Promise<unknown>): Promise<{ attach: boolean; spawned: RemoteSpawn }> {
  const subSessionId = childSessionId(run.setup.sessionId, call.id);
  const outcome = await run.recorder.replayOrRun(
    { kind: 'child_spawn', step: run.stepCount, callId: call.id },
    spawnRecord,
    async (): Promise<SpawnRecord> => {
      if (run.hooks.has('beforeSubAgent')) await beforeSubAgent();
      const started = spec.kind === 'remote' ? await startRemoteChild(run, spec, call, depth) : { subSessionId };
      return { ...started, input: call.arguments, patches: run.work.patchesOf(scope.owner) };
    },
    { persist: (record) => record.error === undefined },
  );
  crashPoint('after_child_spawn');
  return { attach: outcome.status !== 'ran', spawned: outcome.status === 'interrupted' ? { subSessionId } : outcome.value };
}

/**
 * Waits for the child's run to end while forwarding its chunks. A stop of the parent stops the child;
 * the executor shutting down lets go of the wait (`released`): the parent suspends on the child, which
 * the executor hands off.
 */
async function childResult(run: Run, handle: AgentHandle, forwarded: Forwarding, releasable: boolean): Promise<AgentResult | 'released'> {
  const shutdown = releasable ? run.setup.children?.shutdown : undefined;
  const stopForwarding = new AbortController();
  const stopChild = (): void => void handle.stop('The parent run was stopped.');
  const supersedeChild = (): void => void handle.stop('The parent run was superseded.');
  run.signal.addEventListener('abort', stopChild, { once: true });
  run.newerRun.addEventListener('abort', supersedeChild, { once: true });
  if (run.aborted) stopChild();
  else if (run.newerRun.aborted) supersedeChild();
  const forwarding = forward(run, handle, forwarded, stopForwarding.signal);
  let release = (): void => {};
  const released = new Promise<'released'>((resolve) => (release = () => resolve('released')));
  if (shutdown?.aborted) release();
  else shutdown?.addEventListener('abort', release, { once: true });
  if (releasable) run.books.waitingOnChildren(1);
  try {
    const result = await Promise.race([handle.result(), released]);
    if (result === 'released') stopForwarding.abort();
    await forwarding;
    // Superseded while it waited (a newer run here, or a lost lease): the child was stopped for it, and the parent ends superseded at once (no afterSubAgent).
    const supersede = supersedeOf(run);
    if (supersede && result !== 'released' && result.status === 'interrupted') throw supersede;
    return result;
  } finally {
    if (releasable) run.books.waitingOnChildren(-1);
    shutdown?.removeEventListener('abort', release);
    run.signal.removeEventListener('abort', stopChild);
    run.newerRun.removeEventListener('abort', supersedeChild);
  }
}

/** This run's supersede, if it has one: a newer run of its session began here, or its lease was refused (another run took the session). A hand-off is not one. */
function supersedeOf(run: Run): RunSupersededError | undefined {
  for (const reason of [run.newerRun.reason, run.aborted ? run.signal.reason : undefined] as unknown[]) {
    if (RunSupersededError.isInstance(reason) && !RunHandedOffError.isHandOff(reason)) return reason;
  }
  return undefined;
}

/** The depth and fan-out limits: a refusal for a call beyond them (fan-out counts spawns only). */
function beyondLimits(run: Run, agentName: string, depth: number, mode: SubAgentMode): SubAgentOutcome | undefined {
  const children = run.setup.children;
  if (!children) return undefined;
  if (depth > children.maxDepth) return refused('subagent_depth_exceeded', `The sub-agent "${agentName}" would run at depth ${depth}, deeper than ${children.maxDepth}.`, { depth, maxDepth: children.maxDepth });
  if (mode === 'spawn' && run.books.countChild(run.stepCount) > children.maxPerStep) return refused('subagent_fanout_exceeded', `Step ${run.stepCount} called more than ${children.maxPerStep} sub-agents.`, { maxPerStep: children.maxPerStep });
  return undefined;
}

/** The parent's user, tags and metadata, which its children carry too. */
function attributionOf(run: Run): RunAttribution {
  const s = run.setup;
  return { ...(s.userId === undefined ? {} : { userId: s.userId }), ...(s.tags === undefined ? {} : { tags: s.tags }), ...(s.metadata === undefined ? {} : { metadata: s.metadata }) };
}

function refused(code: string, message: string, details: Record<string, unknown> = {}): SubAgentOutcome {
  return { ok: false, error: new ToolError(code, message, { details }) };
}

/** How a child's chunks reach the parent's stream: tagged with the call and the depth; all of them, or only its requests for an answer. */
interface Forwarding {
  readonly parentToolCallId: string;
  readonly depth: number;
  /** False for a sub-agent tool with `stream: false`. */
  readonly all: boolean;
}

/** The chunks a `stream: false` child still forwards: what a reader of the parent must answer. */
const ANSWER_REQUESTS: ReadonlySet<StreamChunk['type']> = new Set<StreamChunk['type']>(['tool_approval_request', 'suspended']);

/** Whether a chunk (or, for a grandchild's forwarded chunk, the chunk it carries) asks a reader for an answer. */
function asksForAnswer(chunk: StreamChunk): boolean {
  return chunk.type === 'subagent_chunk' ? asksForAnswer(chunk.chunk) : ANSWER_REQUESTS.has(chunk.type);
}

/** Copies the child's chunks into the parent's stream as they come, tagged with the child, the call and the depth. */
async function forward(run: Run, handle: AgentHandle, { parentToolCallId, depth, all }: Forwarding, signal: AbortSignal): Promise<void> {
  try {
    for await (const chunk of handle.stream({ signal })) {
      if (!all && !asksForAnswer(chunk)) continue;
      run.emitNoWait({ type: 'subagent_chunk', childSessionId: handle.sessionId, parentToolCallId, depth, chunk, ...run.chunkBase() });
    }
  } catch (error) {
    if (signal.aborted) return;
    run.setup.logger.warn(`forwarding the chunks of child session ${handle.sessionId} failed: ${error instanceof Error ? error.message : String(error)}`, { runId: run.setup.runId });
  }
}
