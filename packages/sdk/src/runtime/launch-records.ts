// What the launcher writes on a run record and reads back: how a run began, a turn's input text, and
// a run's usage rollup with its sub-agents'.
import type { HookEntry, HookManager } from '../hooks/manager.js';
import type { Message } from '../messages.js';
import type { RunOptionsRecord, StateStore } from '../store.js';
import { mergeRollups, type UsageRollup } from '../usage.js';
import type { AgentHandle, RunCallOptions } from './agent-runtime.js';
import type { BeginSpec } from './run-entry.js';
import type { ExecutionManagers } from './execution-managers.js';

/** What the run record keeps of how a run began, so any process can recover it. */
export function runOptionsRecord(spec: BeginSpec, options: RunCallOptions, dryRun = false): RunOptionsRecord {
  return {
    ...(dryRun ? { dryRun: true } : {}),
    ...(spec.input === undefined ? {} : { input: spec.input }),
    ...(options.userId === undefined ? {} : { userId: options.userId }),
    ...(options.tags === undefined ? {} : { tags: options.tags }),
    ...(options.metadata === undefined ? {} : { metadata: options.metadata }),
    ...(spec.parentSessionId === undefined ? {} : { parentSessionId: spec.parentSessionId }),
    ...(spec.parentToolCallId === undefined ? {} : { parentToolCallId: spec.parentToolCallId }),
    ...(spec.depth ? { depth: spec.depth } : {}),
    ...(spec.previousRunId === undefined ? {} : { previousRunId: spec.previousRunId }),
    ...(spec.restoreCheckpointId === undefined ? {} : { restoredCheckpointId: spec.restoreCheckpointId }),
    start: spec.start,
  };
}

/** A run's rollup with its sub-agents' (each child's own rollup includes its children). */
export async function rollupWithChildren(own: UsageRollup, children: readonly AgentHandle[]): Promise<UsageRollup> {
  const parts = [];
  for (const child of children) {
    const rollup = await child.getUsageRollup();
    if (rollup) parts.push({ sessionId: child.sessionId, runId: child.runId, rollup });
  }
  return mergeRollups(own, parts);
}

/** The text of the last user message among a turn's input rows (empty when there is none). */
export function turnInput(rows: readonly Message[] | undefined): string {
  if (rows === undefined) return '';
  for (let i = rows.length - 1; i >= 0; i--) {
    const row = rows[i]!;
    if (row.role === 'user') return row.content;
  }
  return '';
}

/** A run's execution-level hooks as one manager (its children inherit them), or nothing when it has none; `managers` builds it once per `hooks` object. */
export function executionHooks(options: Pick<RunCallOptions, 'hooks' | 'hookManager'>, managers: ExecutionManagers): { executionHooks?: HookManager<unknown, unknown> } {
  const execution = managers.executionOf(options.hooks, options.hookManager);
  return execution ? { executionHooks: execution } : {};
}

/** The same handler twice: the same function, or the same class-based hook at the same point. */
export function sameHandler(a: HookEntry, b: HookEntry): boolean {
  return a.handler === b.handler || (a.owner !== undefined && a.owner === b.owner);
}

/** A run's request-scoped `hookContext` (rule 202), by reference, or nothing. */
export function hookContextOf(options: Pick<RunCallOptions, 'hookContext'>): { hookContext?: unknown } {
  return options.hookContext === undefined ? {} : { hookContext: options.hookContext };
}

/** True when the run a new run continues (resume, retry, rewind) was a dry run: the new one stays dry (rule 156). */
export async function continuesDryRun(store: StateStore, previousRunId: string | undefined): Promise<boolean> {
  if (!previousRunId) return false;
  return (await store.getRun(previousRunId))?.options.dryRun === true;
}
