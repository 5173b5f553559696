// Runs a tool's execute under its retry policy (docs/rules.md, rule 157). The tries happen inside one
// call: beforeTool and afterTool fire once, and a side-effecting call keeps its one start marker in the
// journal, so a crash between tries never runs the call again after recovery (at most once).
import type { ToolDefinition } from '../define.js';
import { RunSupersededError } from '../errors.js';
import type { ToolCall } from '../messages.js';
import type { WriteScope } from './hook-dispatch.js';
import { crashPoint } from './crash-points.js';
import type { Run } from './run.js';
import { sleep } from './sleep.js';
import { AwaitChildrenSignal, toolContext } from './tool-context.js';
import { retryDelay, TOOL_RETRY_DEFAULTS, wantsRetry } from './tool-retry-policy.js';

/** How many tries the failing call made, for errors whose call had a retry policy. */
const triesOf = new WeakMap<object, number>();
/** How many tries each call (by its write scope) has made so far. */
const triesOfCall = new WeakMap<WriteScope, number>();

/** `{ attempts }` for an error a call with a retry policy ended with (its AgentErrorInfo details carry it), else nothing. */
export function attemptDetails(thrown: unknown): { attempts?: number } {
  const tries = typeof thrown === 'object' && thrown !== null ? triesOf.get(thrown) : undefined;
  return tries === undefined ? {} : { attempts: tries };
}

/** True for what ends a call by itself (a stop, a supersede, a suspension): never retried. */
function endsTheCall(run: Run, thrown: unknown): boolean {
  return run.aborted || run.superseded !== undefined || RunSupersededError.isInstance(thrown) || thrown instanceof AwaitChildrenSignal;
}

function reasonOf(thrown: unknown): string {
  return thrown instanceof Error ? thrown.message : String(thrown);
}

/** Asks the policy, treating a throwing retryOn as "no". */
function retryable(run: Run, tool: ToolDefinition, thrown: unknown, attempt: number): boolean {
  try {
    return wantsRetry(tool.retry ?? {}, thrown, attempt);
  } catch (error) {
    run.setup.logger.warn(`retryOn of tool "${tool.name}" threw (${reasonOf(error)}); the call is not retried`, { runId: run.setup.runId });
    return false;
  }
}

/**
 * The tool's execute for `call`; with a retry policy, a try that throws runs again (after a
 * `tool_retry` chunk, the subscriber event `action.tool_retry`) while the policy allows. The error of the
 * last try is rethrown; {@link attemptDetails} tells how many tries there were. Returns what execute returned
 * (a value, or a promise of one; a retried call's is always a promise); a throw of the first try propagates as it is.
 */
export function executeWithRetry(run: Run, tool: ToolDefinition, call: ToolCall, scope: WriteScope): unknown {
  const execute = tool.execute;
  if (!execute) throw new Error(`Tool ${tool.name} has no execute function.`);
  const policy = tool.retry;
  // Without a policy, execute's own return (a value or a promise) is the call's: a tool that answers at once costs no promise.
  if (!policy) return execute(call.arguments, toolContext(run, tool, call.id, scope));
  return retried(run, tool, call, scope, execute, policy);
}

/** {@link executeWithRetry} under a retry policy: the tries, each awaited. */
async function retried(run: Run, tool: ToolDefinition, call: ToolCall, scope: WriteScope, execute: NonNullable<ToolDefinition['execute']>, policy: NonNullable<ToolDefinition['retry']>): Promise<unknown> {
  const max = policy.maxAttempts ?? TOOL_RETRY_DEFAULTS.maxAttempts;
  for (let attempt = 1; ; attempt++) {
    triesOfCall.set(scope, attempt);
    try {
      return await execute(call.arguments, toolContext(run, tool, call.id, scope));
    } catch (thrown) {
      if (attempt >= max || endsTheCall(run, thrown) || !retryable(run, tool, thrown, attempt)) throw withTries(thrown, attempt);
      const delayMs = retryDelay(policy, attempt + 1);
      await run.emit({ type: 'tool_retry', toolCallId: call.id, toolName: tool.name, attempt: attempt + 1, reason: reasonOf(thrown), delayMs, ...run.chunkBase() });
      // A crash between two tries: the journal's start marker keeps the call from running again.
      crashPoint('before_tool_retry');
      await sleep(delayMs, run.signal);
      if (run.aborted) throw withTries(thrown, attempt);
    }
  }
}

/** The error, noted with its call's number of tries (a non-object thrown value becomes an Error). */
function withTries(thrown: unknown, tries: number): unknown {
  const error = typeof thrown === 'object' && thrown !== null ? thrown : new Error(String(thrown));
  triesOf.set(error, tries);
  return error;
}

/** How many tries a call of a tool with a retry policy made (its tool_end chunk's `attempts`); undefined for a tool without one. */
export function attemptsOf(tool: ToolDefinition, scope: WriteScope): number | undefined {
  return tool.retry ? triesOfCall.get(scope) : undefined;
}
