import type { AgentConfig } from '../define.js';
import type { HookManager } from '../hooks/manager.js';
import type { LanguageModel } from '../llm.js';
import type { RunAttribution } from '../hooks/types.js';
import type { StateStore } from '../store.js';
import type { StreamWriter } from '../stream.js';
import type { UsageStore } from '../usage.js';
import type { AgentHandle } from './agent-runtime.js';
import type { ModelReplyJournaling } from './executor-options.js';
import type { AuditHooks } from './hook-dispatch.js';
import type { ResolvedLimits } from './limits.js';
import type { Logger } from './logger.js';
import type { ResolvedReconcileOptions } from './reconcile-options.js';

/** Everything a run needs that does not change while it runs. */
export interface RunSetup extends RunAttribution {
  readonly agent: AgentConfig<unknown, unknown>;
  /** The model the run calls: the agent's, or what the executor's providers registry resolved its model id to. */
  readonly model: LanguageModel;
  readonly hooks: HookManager<unknown, unknown>;
  readonly stateStore: StateStore;
  readonly writer: StreamWriter;
  readonly usageStore: UsageStore | undefined;
  readonly logger: Logger;
  readonly sessionId: string;
  readonly runId: string;
  readonly streamId: string;
  readonly turnId: string;
  /** The run's lease generation: commits are fenced by it. */
  readonly epoch: number;
  readonly parentSessionId?: string;
  /** For a sub-agent's run: the parent's tool call that started it. */
  readonly parentToolCallId?: string;
  /**
   * The run's execution-level hooks (those of `execute()`, `resume()`, `recover()`, ... as opposed to the
   * agent's own): its children run with them too, after their own agent's hooks.
   */
  readonly executionHooks?: HookManager<unknown, unknown>;
  readonly abort: AbortController;
  readonly strictTerminalHooks: boolean;
  /** Which model replies are journaled before K3 (absent: `side-effects`, only those calling a side-effecting tool). */
  readonly journalModelReplies?: ModelReplyJournaling;
  /** Which hook invocations write a `hook_decision` chunk. */
  readonly auditHooks: AuditHooks;
  /** How deep this run is in a tree of sub-agents (0 for a root run). */
  readonly depth: number;
  /** The run's size limits (the agent's, then the executor's, then the defaults). */
  readonly limits: ResolvedLimits;
  /** Starts (or re-attaches to) child runs of sub-agent calls; absent where the runtime cannot. */
  readonly children?: ChildRunner;
  /** The request-scoped resources of the call that started this run (rule 202): held by reference, never stored. */
  readonly hookContext?: unknown;
  /** A dry run (rule 156): side-effecting tools are answered without running. */
  readonly dryRun?: boolean;
  /** The §2 reconciliation variants in force (C2, C6, C16; absent: the defaults). */
  readonly reconcile?: ResolvedReconcileOptions;
}

/** What a child run is started with. */
export interface ChildStart {
  readonly sessionId: string;
  readonly parentSessionId: string;
  /** The parent's tool call that starts the child. */
  readonly parentToolCallId: string;
  readonly depth: number;
  readonly attribution: RunAttribution;
  /** Where the child's usage goes (the parent's usage store). */
  readonly usageStore?: UsageStore;
  /** The parent's execution-level hooks: the child runs them after its own agent's hooks. */
  readonly executionHooks?: HookManager<unknown, unknown>;
  /** The child may exist already (a recovered or resumed parent): re-attach to its run instead of starting a new turn. */
  readonly attach: boolean;
  /** The parent is a dry run: so is the child (rule 156). */
  readonly dryRun?: boolean;
  /** The parent's request-scoped resources (rule 202), by reference. */
  readonly hookContext?: unknown;
}

/** The runtime's side of sub-agent calls: start a child run, or re-attach to the one a recovered parent spawned. */
export interface ChildRunner {
  /** The most a tree of sub-agents may nest (a deeper call gets `subagent_depth_exceeded`). */
  readonly maxDepth: number;
  /** The most sub-agent calls one step may make (more get `subagent_fanout_exceeded`). */
  readonly maxPerStep: number;
  start(agent: AgentConfig<unknown, unknown>, input: string, child: ChildStart): Promise<AgentHandle>;
  /** Aborted when the executor shuts down: sub-agent calls stop waiting for their children, and their parents suspend. */
  readonly shutdown?: AbortSignal;
}
