import type { AgentConfig } from '../define.js';
import type { HookManager } from '../hooks/manager.js';
import type { RunAttribution } from '../hooks/types.js';
import type { StateStore } from '../store.js';
import type { StreamWriter } from '../stream.js';
import type { UsageStore } from '../usage.js';
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
}
