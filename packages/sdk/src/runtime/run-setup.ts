import type { AgentConfig } from '../define.js';
import type { HookManager } from '../hooks/manager.js';
import type { RunAttribution } from '../hooks/types.js';
import type { StateStore } from '../store.js';
import type { StreamWriter } from '../stream.js';
import type { UsageStore } from '../usage.js';
import type { AgentHandle } from './agent-runtime.js';
import type { AuditHooks } from './hook-dispatch.js';
import type { Logger } from './logger.js';

/** Everything a run needs that does not change while it runs. */
export interface RunSetup extends RunAttribution {
  readonly agent: AgentConfig<unknown, unknown>;
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
  readonly abort: AbortController;
  readonly strictTerminalHooks: boolean;
  /** Which hook invocations write a `hook_decision` chunk. */
  readonly auditHooks: AuditHooks;
  /** How deep this run is in a tree of sub-agents (0 for a root run). */
  readonly depth: number;
  /** Starts (or re-attaches to) child runs of sub-agent calls; absent where the runtime cannot. */
  readonly children?: ChildRunner;
}

/** What a child run is started with. */
export interface ChildStart {
  readonly sessionId: string;
  readonly parentSessionId: string;
  readonly depth: number;
  readonly attribution: RunAttribution;
  /** Where the child's usage goes (the parent's usage store). */
  readonly usageStore?: UsageStore;
  /** The child may exist already (a recovered or resumed parent): re-attach to its run instead of starting a new turn. */
  readonly attach: boolean;
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
