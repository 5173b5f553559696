/**
 * The error taxonomy of helix-agents (docs/rules.md, section 1.15): every error the runtime raises
 * or records carries an {@link AgentErrorInfo}, and every error class has a stable code and a static
 * `isInstance()` that works across duplicated copies of this package.
 */

/** Who is to blame for an error: the model provider, a tool, the run loop, a hook, a human's permission, or the transport. */
export type AgentErrorLayer = 'provider' | 'tool' | 'run' | 'hook' | 'permission' | 'transport';

/** How bad an error is: `info` and `warning` never end a run by themselves; `error` and `fatal` do when unhandled. */
export type AgentErrorSeverity = 'info' | 'warning' | 'error' | 'fatal';

/** The structured description of any failure, never an opaque string. */
export interface AgentErrorInfo {
  /** Stable machine code, e.g. `provider_rate_limited`. */
  readonly code: string;
  /** Which layer failed. */
  readonly layer: AgentErrorLayer;
  /** How severe it is. */
  readonly severity: AgentErrorSeverity;
  /** A user-facing message (never a raw stack trace). */
  readonly message: string;
  /** True when an immediate or delayed retry could succeed. */
  readonly retryable: boolean;
  /** Actionable advice for the user or a UI. */
  readonly hint?: string;
  /** Optional debug details (status codes, the failing hook, the cause's message, ...). */
  readonly details?: Readonly<Record<string, unknown>>;
}

interface CodeDefaults {
  readonly layer: AgentErrorLayer;
  readonly severity: AgentErrorSeverity;
  readonly retryable: boolean;
  readonly hint?: string;
}

/**
 * Every code the runtime itself raises, with its default layer, severity, retryability and hint.
 * Severities follow docs/rules.md, C14.
 */
export const ERROR_CODES = {
  provider_rate_limited: { layer: 'provider', severity: 'error', retryable: true, hint: 'The model provider is rate limiting requests; wait and retry, or lower the request rate.' },
  provider_auth: { layer: 'provider', severity: 'fatal', retryable: false, hint: 'Check the API key and the account the model provider is configured with.' },
  provider_timeout: { layer: 'provider', severity: 'error', retryable: true, hint: 'The model provider did not answer in time; retry, or raise llmConfig.timeoutMs.' },
  provider_server_error: { layer: 'provider', severity: 'error', retryable: true, hint: 'The model provider had an internal error; retrying usually helps.' },
  provider_network: { layer: 'provider', severity: 'error', retryable: true, hint: 'The model provider could not be reached; check the network and the base URL.' },
  provider_bad_request: { layer: 'provider', severity: 'fatal', retryable: false, hint: 'The provider refused the request; check the model id, the parameters and the prompt size.' },
  provider_invalid_response: { layer: 'provider', severity: 'error', retryable: true, hint: 'The model returned a reply that could not be read; retrying usually helps.' },
  provider_error: { layer: 'provider', severity: 'error', retryable: false, hint: 'The model provider failed; see details for its answer.' },
  tool_failed: { layer: 'tool', severity: 'error', retryable: false, hint: 'The tool threw; the error went back to the model, which can try again.' },
  tool_not_found: { layer: 'tool', severity: 'error', retryable: false, hint: 'The model called a tool the agent does not have.' },
  tool_invalid_input: { layer: 'tool', severity: 'error', retryable: false, hint: 'The model sent arguments that do not match the tool input schema; the errors went back to the model.' },
  tool_invalid_output: { layer: 'tool', severity: 'error', retryable: false, hint: 'The tool returned a value that does not match its outputSchema.' },
  tool_blocked: { layer: 'tool', severity: 'warning', retryable: false },
  tool_result_too_large: { layer: 'tool', severity: 'error', retryable: false, hint: 'Offload large results: createToolResultOffloadHook with OffloadOverChars(n), plus createReadOffloadedResultTool, gives the model a reference it reads in parts; or return less, or raise limits.maxToolResultChars.' },
  tool_calls_exceeded: { layer: 'tool', severity: 'error', retryable: false, hint: 'One reply asked for more tool calls than limits.maxToolCallsPerStep allows; the first ones ran and the model was told to make the rest in a later step.' },
  subagent_failed: { layer: 'tool', severity: 'error', retryable: false, hint: "The sub-agent's run did not complete; its error went back to the parent's model, which can try another way." },
  subagent_depth_exceeded: { layer: 'tool', severity: 'error', retryable: false, hint: 'Sub-agents nest deeper than maxSubAgentDepth allows; flatten the delegation or raise the limit.' },
  subagent_fanout_exceeded: { layer: 'tool', severity: 'error', retryable: false, hint: 'One step called more sub-agents than maxSubAgentsPerStep allows; the extra calls were refused.' },
  subagent_timeout: { layer: 'tool', severity: 'error', retryable: true, hint: 'The sub-agent did not end within its time limit and was stopped; give it a smaller task or a longer timeout.' },
  subagent_remote_error: { layer: 'transport', severity: 'error', retryable: true, hint: "The remote agent client failed (a network or service error); see details for the method. The parent's model got a subagent_failed result." },
  subagent_remote_invalid: { layer: 'transport', severity: 'error', retryable: false, hint: 'The remote agent client returned something that is not what RemoteAgentClient promises (an id, a chunk, a result); fix the client or the service.' },
  subagent_unavailable: { layer: 'tool', severity: 'error', retryable: false, hint: 'This runtime cannot start child runs; run the agent on JSAgentExecutor (or a runtime that supports sub-agents).' },
  tool_call_not_pending: { layer: 'run', severity: 'error', retryable: false, hint: 'Only calls the suspended run is waiting on can be answered, once each.' },
  tool_call_ambiguous: { layer: 'run', severity: 'error', retryable: false, hint: "Several sessions of this tree wait on a call with this id; answer it on the child's own session (the subagent_chunk's childSessionId)." },
  approval_invalid_signature: { layer: 'permission', severity: 'error', retryable: false, hint: 'The approval was signed for another session, call or arguments.' },
  session_not_suspended: { layer: 'run', severity: 'error', retryable: false, hint: 'Only a suspended session can be resumed this way; use execute() or send() for a new turn.' },
  session_not_retryable: { layer: 'run', severity: 'error', retryable: false, hint: 'retry() re-runs a failed or interrupted run.' },
  agent_not_registered: { layer: 'run', severity: 'error', retryable: false, hint: 'Pass the agent to the executor (options.agents or registerAgent()) before resuming its sessions.' },
  permission_denied: { layer: 'permission', severity: 'warning', retryable: false, hint: 'A human rejected this call; the reason went back to the model.' },
  tool_cancelled: { layer: 'tool', severity: 'info', retryable: false, hint: 'The call was waiting for an answer when a new message started another turn.' },
  hook_failed: { layer: 'hook', severity: 'fatal', retryable: false, hint: 'A hook threw. Catch errors inside hooks that must not fail the run.' },
  hook_blocked: { layer: 'hook', severity: 'fatal', retryable: false },
  hook_timeout: { layer: 'hook', severity: 'fatal', retryable: true, hint: 'A hook did not settle within its time limit; give outbound calls in hooks a timeout.' },
  run_max_steps: { layer: 'run', severity: 'fatal', retryable: false, hint: 'The agent reached maxSteps without finishing; raise maxSteps or make the task smaller.' },
  run_interrupted: { layer: 'run', severity: 'info', retryable: true, hint: 'The run was stopped; your work so far is saved.' },
  run_repeated_error: { layer: 'run', severity: 'fatal', retryable: false },
  run_hard_stop: { layer: 'run', severity: 'fatal', retryable: false },
  run_empty_responses: { layer: 'run', severity: 'fatal', retryable: true, hint: 'The model kept returning empty replies; this is often a hidden rate limit.' },
  run_handed_off: { layer: 'run', severity: 'info', retryable: true, hint: 'This process let the run go (it shut down); recover() in a process on the same store continues it from its last commit.' },
  run_internal_error: { layer: 'run', severity: 'fatal', retryable: true, hint: 'An unexpected error ended the run. Your work so far is saved.' },
  run_invalid_input: { layer: 'run', severity: 'fatal', retryable: false, hint: 'The input or the initial state does not match the agent definition.' },
  run_input_too_large: { layer: 'run', severity: 'fatal', retryable: false, hint: 'Send less: split the input, or pass a large document by reference for a tool to read; or raise the limit named in details (the executor or agent `limits`).' },
  run_state_too_large: { layer: 'run', severity: 'fatal', retryable: false, hint: 'Keep large data out of the state (in a store or a file, with a reference in the state), or raise limits.maxStateChars.' },
  run_too_many_messages: { layer: 'run', severity: 'fatal', retryable: false, hint: 'Start a new session (carry a summary over), rewind this one to an earlier checkpoint, or raise limits.maxMessages.' },
  config_invalid: { layer: 'run', severity: 'fatal', retryable: false, hint: 'Fix the agent, tool or hook definition named in the message.' },
  worker_id_in_use: { layer: 'run', severity: 'fatal', retryable: false, hint: 'Give every worker process its own executor id: another live worker holds this one.' },
  state_run_superseded: { layer: 'run', severity: 'info', retryable: false, hint: 'Another run took over this session; follow that run instead.' },
  state_commit_failed: { layer: 'transport', severity: 'fatal', retryable: true, hint: 'The state store refused or lost a write; check the store and retry the run.' },
  state_invalid: { layer: 'run', severity: 'error', retryable: false, hint: "A write would make the state violate the agent's stateSchema; it was dropped. Fix the tool or hook named in details." },
  state_not_found: { layer: 'run', severity: 'error', retryable: false },
  session_running: { layer: 'run', severity: 'error', retryable: true, hint: 'The session has a running run: stop it (stop(sessionId)) and wait for it to end, then delete the session.' },
  state_conflict: { layer: 'run', severity: 'error', retryable: true, hint: 'The session changed while this call was on its way (another resume or run came first); reload it and try again.' },
  state_run_not_recoverable: { layer: 'run', severity: 'error', retryable: false, hint: 'The run is not running, not current, or its lease has not expired yet.' },
  state_schema_too_new: { layer: 'transport', severity: 'fatal', retryable: false, hint: 'The database was written by a newer helix-agents; upgrade this process before opening it.' },
  tool_interrupted: { layer: 'tool', severity: 'error', retryable: false, hint: 'The process running this tool stopped before its result was recorded; it was not run again because it has side effects.' },
  run_stopped: { layer: 'tool', severity: 'info', retryable: true, hint: 'The run was stopped before this call finished.' },
  stream_closed: { layer: 'transport', severity: 'error', retryable: false },
  stream_write_failed: { layer: 'transport', severity: 'warning', retryable: true, hint: 'A report could not be written to the run\'s stream (the stream store failed, or another run took the stream); the run went on. Check the stream store.' },
} as const satisfies Record<string, CodeDefaults>;

/** A code the runtime raises itself; {@link AgentErrorInfo.code} also accepts any other string for user codes. */
export type AgentErrorCode = keyof typeof ERROR_CODES;

const MARKER = Symbol.for('helix-agents.error');

/** Options for constructing an {@link AgentError}. */
export interface AgentErrorOptions {
  readonly hint?: string;
  readonly details?: Record<string, unknown>;
  readonly retryable?: boolean;
  readonly severity?: AgentErrorSeverity;
  readonly layer?: AgentErrorLayer;
  readonly cause?: unknown;
}

/** The base class of every error helix-agents raises. `info` is its {@link AgentErrorInfo}. */
export class AgentError extends Error {
  /** The structured description of this error. */
  readonly info: AgentErrorInfo;
  private readonly [MARKER] = true;

  constructor(code: AgentErrorCode | (string & {}), message: string, options: AgentErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    const defaults: CodeDefaults | undefined = (ERROR_CODES as Record<string, CodeDefaults>)[code];
    const hint = options.hint ?? defaults?.hint;
    this.name = new.target.name;
    this.info = Object.freeze({
      code,
      layer: options.layer ?? defaults?.layer ?? 'run',
      severity: options.severity ?? defaults?.severity ?? 'error',
      message,
      retryable: options.retryable ?? defaults?.retryable ?? false,
      ...(hint === undefined ? {} : { hint }),
      ...(options.details === undefined ? {} : { details: Object.freeze({ ...options.details }) }),
    });
  }

  /** The stable code. */
  get code(): string {
    return this.info.code;
  }
  /** The layer that failed. */
  get layer(): AgentErrorLayer {
    return this.info.layer;
  }
  /** Whether a retry could succeed. */
  get retryable(): boolean {
    return this.info.retryable;
  }

  /** True for any helix-agents error, even one created by another copy of this package. */
  static isInstance(value: unknown): value is AgentError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[MARKER] === true;
  }

  /** The JSON form is the {@link AgentErrorInfo}. */
  toJSON(): AgentErrorInfo {
    return this.info;
  }
}

function isCode(value: unknown, codes: readonly string[]): boolean {
  return AgentError.isInstance(value) && codes.includes(value.code);
}

/** A model provider failed (rate limit, auth, timeout, server, network, bad reply). */
export class ProviderError extends AgentError {
  /** True for a ProviderError from any copy of this package. */
  static override isInstance(value: unknown): value is ProviderError {
    return AgentError.isInstance(value) && value.layer === 'provider';
  }
}

/**
 * A tool call failed; the error goes back to the model as an error tool result and the run goes on. A
 * code of your own (not one of {@link ERROR_CODES}) is in the `tool` layer unless `layer` says otherwise,
 * so a tool that throws it keeps its code.
 */
export class ToolError extends AgentError {
  constructor(code: AgentErrorCode | (string & {}), message: string, options: AgentErrorOptions = {}) {
    super(code, message, options.layer !== undefined || Object.hasOwn(ERROR_CODES, code) ? options : { ...options, layer: 'tool' });
  }
  /** True for a ToolError from any copy of this package. */
  static override isInstance(value: unknown): value is ToolError {
    return AgentError.isInstance(value) && value.layer === 'tool';
  }
}

/** A hook threw (`hook_failed`) or blocked a call (`hook_blocked`). */
export class HookError extends AgentError {
  /** True for a HookError from any copy of this package. */
  static override isInstance(value: unknown): value is HookError {
    return isCode(value, ['hook_failed', 'hook_blocked', 'hook_timeout']);
  }
}

/** The run reached its step limit without an output (`run_max_steps`). */
export class MaxStepsError extends AgentError {
  constructor(maxSteps: number) {
    super('run_max_steps', `The agent reached its limit of ${maxSteps} steps without producing an output.`, { details: { maxSteps } });
  }
  /** True for a MaxStepsError from any copy of this package. */
  static override isInstance(value: unknown): value is MaxStepsError {
    return isCode(value, ['run_max_steps']);
  }
}

/** The run was stopped by an abort signal (`run_interrupted`). */
export class RunInterruptedError extends AgentError {
  constructor(message = 'The run was interrupted.', options: AgentErrorOptions = {}) {
    super('run_interrupted', message, options);
  }
  /** True for a RunInterruptedError from any copy of this package. */
  static override isInstance(value: unknown): value is RunInterruptedError {
    return isCode(value, ['run_interrupted']);
  }
}

/** A fenced write came from a run that is no longer the session's current run (`state_run_superseded`). */
export class RunSupersededError extends AgentError {
  constructor(
    readonly sessionId: string,
    readonly runId: string,
    readonly currentRunId: string | undefined,
  ) {
    super('state_run_superseded', `Run ${runId} is no longer the current run of session ${sessionId}${currentRunId ? ` (run ${currentRunId} took over)` : ''}.`, {
      details: { sessionId, runId, currentRunId },
    });
  }
  /** True for a RunSupersededError from any copy of this package. */
  static override isInstance(value: unknown): value is RunSupersededError {
    return isCode(value, ['state_run_superseded']);
  }
}

const HANDOFF = Symbol.for('helix-agents.handoff');

/**
 * Why a run that this process let go (its executor shut down) stops: it ends like a superseded run
 * (it writes nothing more) but fires no hook, and `recover()` in another process continues it.
 */
export class RunHandedOffError extends RunSupersededError {
  private readonly [HANDOFF] = true;

  constructor(sessionId: string, runId: string) {
    super(sessionId, runId, runId);
  }

  /** True for a RunHandedOffError from any copy of this package. */
  static isHandOff(value: unknown): value is RunHandedOffError {
    return RunSupersededError.isInstance(value) && (value as unknown as Record<symbol, unknown>)[HANDOFF] === true;
  }
}

/** A state store could not write a commit (`state_commit_failed`). */
export class StateCommitError extends AgentError {
  constructor(message: string, options: AgentErrorOptions = {}) {
    super('state_commit_failed', message, options);
  }
  /** True for a StateCommitError from any copy of this package. */
  static override isInstance(value: unknown): value is StateCommitError {
    return isCode(value, ['state_commit_failed']);
  }
}

/** An agent, tool or hook definition is invalid (`config_invalid`); raised when it is defined or registered. */
export class ConfigError extends AgentError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('config_invalid', message, details === undefined ? {} : { details });
  }
  /** True for a ConfigError from any copy of this package. */
  static override isInstance(value: unknown): value is ConfigError {
    return isCode(value, ['config_invalid']);
  }
}

const LAYERS: readonly AgentErrorLayer[] = ['provider', 'tool', 'run', 'hook', 'permission', 'transport'];
const SEVERITIES: readonly AgentErrorSeverity[] = ['info', 'warning', 'error', 'fatal'];

function boundedMessage(text: string): string {
  const trimmed = text.trim();
  if (trimmed === '') return 'Something went wrong.';
  return trimmed.length > 399 ? `${trimmed.slice(0, 396)}...` : trimmed;
}

/**
 * Turns anything thrown into an {@link AgentErrorInfo}. helix errors keep their info; other values
 * become `fallbackCode` (default `run_internal_error`) with a bounded message and the cause in details.
 */
export function toAgentErrorInfo(error: unknown, fallbackCode: AgentErrorCode = 'run_internal_error'): AgentErrorInfo {
  if (AgentError.isInstance(error)) return error.info;
  if (isAgentErrorInfo(error)) return error;
  const message = error instanceof Error ? error.message : typeof error === 'string' ? error : 'Something went wrong.';
  const info = new AgentError(fallbackCode, boundedMessage(message), {
    details: error instanceof Error ? { cause: error.name } : {},
  }).info;
  return info;
}

/** True when `value` has the shape of an {@link AgentErrorInfo}. */
export function isAgentErrorInfo(value: unknown): value is AgentErrorInfo {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v['code'] === 'string' &&
    typeof v['message'] === 'string' &&
    typeof v['retryable'] === 'boolean' &&
    LAYERS.includes(v['layer'] as AgentErrorLayer) &&
    SEVERITIES.includes(v['severity'] as AgentErrorSeverity)
  );
}

/** Rebuilds a throwable {@link AgentError} from a recorded {@link AgentErrorInfo}. */
export function agentErrorFromInfo(info: AgentErrorInfo, cause?: unknown): AgentError {
  const options: AgentErrorOptions = {
    layer: info.layer,
    severity: info.severity,
    retryable: info.retryable,
    ...(info.hint === undefined ? {} : { hint: info.hint }),
    ...(info.details === undefined ? {} : { details: { ...info.details } }),
    ...(cause === undefined ? {} : { cause }),
  };
  if (info.code === 'run_interrupted') return new RunInterruptedError(info.message, options);
  if (info.layer === 'provider') return new ProviderError(info.code, info.message, options);
  if (info.layer === 'tool') return new ToolError(info.code, info.message, options);
  if (info.layer === 'hook') return new HookError(info.code, info.message, options);
  return new AgentError(info.code, info.message, options);
}
