import type { AgentConfig } from '../define.js';
import { AgentError } from '../errors.js';
import type { ModelRegistry } from '../llm.js';
import type { Message } from '../messages.js';
import { GENESIS_CHECKPOINT, type PendingCall, type StateStore } from '../store.js';
import type { AuditHooks } from './hook-dispatch.js';
import type { ResourceLimits } from './limits.js';
import type { Logger } from './logger.js';
import type { ReconcileOptions } from './reconcile-options.js';
import type { RunHost } from './run-host.js';
import type { ChildStart } from './run-setup.js';

/** Which model replies a run journals before its step commit (see {@link JSAgentExecutorOptions.journalModelReplies}). */
export type ModelReplyJournaling = 'side-effects' | 'always';

/** Options of a {@link JSAgentExecutor}; the C2, C6 and C16 variants come from {@link ReconcileOptions}. */
export interface JSAgentExecutorOptions extends ReconcileOptions {
  /** Where observe-only hook errors and store trouble are reported (default: stderr). */
  readonly logger?: Logger;
  /** When true, a throwing onAgentComplete fails the run (onAgentFail follows; docs/rules.md, C5); by default the run completes without the hook's writes. */
  readonly strictTerminalHooks?: boolean;
  /**
   * Which model replies are journaled before the step commit (K3), so a run recovered after its process
   * died replays the reply instead of calling the model again. `side-effects` (the default on runtime-js):
   * only a reply that calls a side-effecting tool, which must see the same calls again; any other step of
   * a dead process calls the model again (its tokens are paid twice, and the reply may differ). `always`:
   * every reply, at the cost of one journal write per step. `DBOSAgentExecutor` uses `always`.
   * See docs/durability.md.
   */
  readonly journalModelReplies?: ModelReplyJournaling;
  /** Makes run, turn and session ids (default: random UUIDs). */
  readonly generateId?: (kind: 'run' | 'turn' | 'session') => string;
  /** This process's name on run leases (default: `<hostname>:<pid>:<random>`). */
  readonly instanceId?: string;
  /** Which hook invocations are written to the stream as `hook_decision` chunks: steering decisions and handled errors (default), every invocation, or none. */
  readonly auditHooks?: AuditHooks;
  /**
   * Resolves model ids: an agent with `llmConfig: { model: 'openai:gpt-4o-mini' }` runs on
   * `providers.languageModel('openai:gpt-4o-mini')`, typically the AI SDK's `createProviderRegistry({ openai })`.
   */
  readonly providers?: ModelRegistry;
  /** Signs approval requests and requires valid signatures on approve() / reject() (HMAC-SHA256). */
  readonly approvalSecret?: string;
  /** Agents whose sessions resume(), retry(), send() and recover() may continue. */
  readonly agents?: readonly AgentConfig<unknown, unknown>[];
  /** The most a tree of sub-agents may nest (default 5): a deeper sub-agent call gets `subagent_depth_exceeded`. */
  readonly maxSubAgentDepth?: number;
  /** The most sub-agent calls one step may make (default 16): the extra calls get `subagent_fanout_exceeded`. */
  readonly maxSubAgentsPerStep?: number;
  /**
   * How long a recovered parent waits for a child that another process continues (default 30 minutes):
   * then the child is asked to stop and the call fails with `subagent_timeout`.
   */
  readonly attachedSubAgentTimeoutMs?: number;
  /**
   * Size limits for every run of this executor: input, a stored tool result, tool calls per step, state and
   * message count (defaults in `DEFAULT_RESOURCE_LIMITS`). An agent's own `limits` win over these.
   */
  readonly limits?: ResourceLimits;
  /** How long a run's lease lasts without renewal (default 30 s); it is renewed every third of that. A process that dies is recovered once its leases expire. */
  readonly leaseMs?: number;
  /**
   * Where the loops of runs run (default: in this process, right after each entry). A durable-execution
   * runtime (such as `@helix-agents/runtime-dbos`) supplies one; see docs/runtime-seam.md.
   */
  readonly host?: RunHost;
}

/** Rows that cancel the calls a suspended run was waiting on (every tool call keeps a result). */
export function cancelledRows(pending: readonly PendingCall[]): Message[] {
  return pending.map((p) => {
    const info = new AgentError('tool_cancelled', `The call to "${p.toolName}" was cancelled: a new message started another turn.`, { details: { tool: p.toolName } }).info;
    return { role: 'tool', toolCallId: p.toolCallId, toolName: p.toolName, content: info.message, isError: true, errorInfo: info };
  });
}


/** A new session's state: `initialState` (default `{}`) checked by the agent's stateSchema, whose defaults apply. */
export function initialStateOf(agent: AgentConfig<unknown, unknown>, initialState: unknown): unknown {
  if (!agent.stateSchema) return initialState ?? {};
  const parsed = agent.stateSchema.safeParse(initialState ?? {});
  if (parsed.success) return parsed.data;
  throw new AgentError('run_invalid_input', `The initial state does not match ${agent.name}'s stateSchema: ${parsed.error.message}`, {
    details: { issues: parsed.error.issues.map((i) => ({ path: i.path.map(String), message: i.message })) },
  });
}

/** What a retry restores by default: the session's last step or turn-start checkpoint, else genesis. */
export async function lastRestorable(store: StateStore, sessionId: string): Promise<string> {
  const checkpoints = await store.listCheckpoints(sessionId);
  return [...checkpoints].reverse().find((c) => c.kind !== 'state')?.checkpointId ?? GENESIS_CHECKPOINT;
}

/** Refuses (`state_not_found`) a rewind to a checkpoint the session does not have. */
export async function checkRestorable(store: StateStore, sessionId: string, checkpointId: string): Promise<void> {
  if (checkpointId === GENESIS_CHECKPOINT) return;
  const checkpoints = await store.listCheckpoints(sessionId);
  if (!checkpoints.some((c) => c.checkpointId === checkpointId)) throw new AgentError('state_not_found', `Session ${sessionId} has no checkpoint ${checkpointId}.`, { details: { checkpointId } });
}

/** What a child run inherits of its parent's run besides hooks and attribution: dry run and hookContext (rules 156, 202). */
export function childRunOptions(child: Pick<ChildStart, 'dryRun' | 'hookContext'>): { dryRun?: boolean; hookContext?: unknown } {
  return { ...(child.dryRun ? { dryRun: true } : {}), ...(child.hookContext === undefined ? {} : { hookContext: child.hookContext }) };
}
