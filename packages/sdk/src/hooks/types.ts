import type { AgentConfig, ToolDefinition } from '../define.js';
import type { AgentError, AgentErrorInfo, RunSupersededError } from '../errors.js';
import type { LLMToolSpec, ModelParameters, StepResult, TokenUsage } from '../llm.js';
import type { Message, ToolCall } from '../messages.js';
import type { ApprovalDecisionInfo, CustomChunk, StatePatch, WarningChunk } from '../stream.js';

/** A chunk a hook may emit with `ctx.emit`: a custom event or a warning. Stream fields are filled in. */
export type EmittableChunk =
  | (Omit<CustomChunk, 'seq' | 'streamId' | 'runId' | 'agentId' | 'agentType' | 'timestamp'> &
      Partial<Pick<CustomChunk, 'agentId' | 'agentType' | 'timestamp'>>)
  | (Omit<WarningChunk, 'seq' | 'streamId' | 'runId' | 'agentId' | 'agentType' | 'timestamp'> &
      Partial<Pick<WarningChunk, 'agentId' | 'agentType' | 'timestamp'>>);

/**
 * The mutable view of a state inside `updateState` (Immer's draft: readonly removed, deeply). A
 * homomorphic mapped type, so contexts typed for one state stay assignable to untyped ones.
 */
export type Draft<T> = { -readonly [K in keyof T]: Draft<T[K]> };

/** Which run this is: of which agent, in which session. */
export interface RunIdentity {
  readonly sessionId: string;
  /** The executing run. */
  readonly runId: string;
  /** The agent's name. */
  readonly agentType: string;
  /** The parent's session id, for sub-agents. */
  readonly parentSessionId?: string;
  /** For a sub-agent's run: the parent's tool call that started it (tracing nests the child's spans under that call). */
  readonly parentToolCallId?: string;
}

/** Whom and what a run is for, as `execute()` was given them: every hook sees them (rule 123). */
export interface RunAttribution {
  readonly userId?: string;
  readonly tags?: readonly string[];
  readonly metadata?: Readonly<Record<string, string>>;
}

/** The token usage of a run's model calls so far (retried attempts included), as hooks read it (rule 203). */
export interface RunTokenUsage {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly totalTokens: number;
  readonly cacheReadTokens: number;
  readonly cacheWriteTokens: number;
  readonly reasoningTokens: number;
}

/**
 * The context every hook receives: who is running, the state, the stream, the run's tracked metadata
 * (rule 203) and the request-scoped `hookContext` (rule 202). `THookContext` types what `execute(...,
 * { hookContext })` passed.
 */
export interface HookContext<TState = unknown, TOutput = unknown, THookContext = unknown> extends RunIdentity, RunAttribution {
  readonly streamId: string;
  /** Steps completed by this run: the 0-based index of the current step. */
  readonly stepCount: number;
  /** Aborted when the run is stopped. */
  readonly abortSignal: AbortSignal;
  /**
   * Stable across recoveries and retries of the same work: `runId:step:callId|-:hookPoint`. A hook with
   * side effects outside helix state can use it to make them idempotent.
   */
  readonly idempotencyKey: string;
  /** The execution attempt of the run: 1, then +1 each time a process recovers it. */
  readonly attempt: number;
  /** The hook point being invoked. */
  readonly hookPoint: HookPoint;
  /** A read-only snapshot of the custom state. */
  getState(): TState;
  /** Changes the custom state through an Immer draft; persisted with the commit of the work the hook belongs to. */
  updateState(updater: (draft: Draft<TState>) => void): void;
  /**
   * Edits the conversation persistently (C4): the updater gets a copy of the conversation; rows of the
   * current step may be replaced and new rows appended (they fire onMessage and land in the step
   * commit). Committed rows cannot change and rows cannot be removed: for a one-call rewrite of earlier
   * rows, return `{ messages }` from beforeLLMCall instead.
   */
  updateMessages(updater: (messages: Message[]) => void): Promise<void>;
  /** Emits a chunk on the run's stream. */
  emit(chunk: EmittableChunk): Promise<void>;
  /** Emits `{ type: 'custom', eventName, data }` on the run's stream. */
  emitCustom(eventName: string, data: unknown): Promise<void>;
  /** Phantom marker tying the context to the agent's output type (never set at run time). */
  readonly __output?: TOutput;
  /**
   * The request-scoped resources given to the call that started (or resumed, or recovered) this run:
   * `execute(agent, input, { hookContext })`. The very object passed, by reference: never copied,
   * serialized, stored or streamed. Undefined when the call gave none.
   */
  readonly hookContext: THookContext | undefined;
  /** The run's model token usage so far (rule 203): every attempt of this run counted, in this process. */
  readonly tokenUsage: RunTokenUsage;
  /** Executed calls per tool name in this run so far (rule 203): blocked and invalid calls are not counted. */
  readonly toolCallCounts: Readonly<Record<string, number>>;
}

/** onAgentStart: a turn starts (startSignal true) or a run owes the turn's start work (false). */
export interface AgentStartPayload<TState = unknown> {
  /** The agent's definition (typed loosely so that hook sets compose across agents). */
  readonly agent: AgentConfig<unknown, unknown>;
  readonly input: string;
  readonly initialState: TState;
  readonly startSignal: boolean;
}

/** How a completed run finished. */
export type ExitReason = 'finish_tool' | 'finish_with' | 'text' | 'max_steps';

/** onAgentComplete: the run produced its output. */
export interface AgentCompletePayload<TState = unknown, TOutput = unknown> {
  readonly output: TOutput;
  readonly finalState: TState;
  /** LLM steps this run completed. */
  readonly stepCount: number;
  readonly durationMs: number;
  readonly exitReason: ExitReason;
}

/** onAgentFail: the run failed (or was interrupted) after its start hook fired. */
export interface AgentFailPayload<TState = unknown> {
  readonly error: AgentError;
  readonly finalState: TState;
  readonly stepCount: number;
  readonly durationMs: number;
  /** True when a retry or resume could succeed (the error is retryable). */
  readonly recoverable: boolean;
}

/** onAgentSuperseded: another run took over the session. */
export interface AgentSupersededPayload<TState = unknown> {
  readonly error: RunSupersededError;
  readonly finalState: TState;
  readonly stepCount: number;
  readonly durationMs: number;
}

/** What the loop will do with a model reply (`afterLLMCall`'s `plan`). */
export type StepPlan =
  | { readonly kind: 'tool_calls'; readonly toolCalls: readonly ToolCall[] }
  | { readonly kind: 'finish'; readonly toolCalls: readonly ToolCall[] }
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'nudge'; readonly reason: 'empty_reply' | 'text_without_output' }
  | { readonly kind: 'retry'; readonly error: AgentErrorInfo; readonly delayMs: number }
  | { readonly kind: 'fail'; readonly error: AgentErrorInfo };

/** beforeLLMCall: a model call attempt is about to be made. */
export interface BeforeLLMCallPayload {
  /** What is sent: the system prompt (first, when there is one) and the conversation. */
  readonly messages: readonly Message[];
  readonly tools: readonly LLMToolSpec[];
  /** The agent's definition. */
  readonly config: AgentConfig<unknown, unknown>;
  /** The model id, e.g. `gpt-4o-mini`. */
  readonly model: string;
  readonly provider: string;
  readonly modelParameters: ModelParameters;
  /** 1-based attempt of this step's model call. */
  readonly attempt: number;
}

/** afterLLMCall: a model call attempt returned (successfully or with a provider error). */
export interface AfterLLMCallPayload {
  readonly result: StepResult;
  readonly plan: StepPlan;
  readonly durationMs: number;
  readonly model: string;
  readonly usage?: TokenUsage;
  readonly attempt: number;
  /** The classified provider error of a failed attempt. */
  readonly error?: AgentErrorInfo;
  /**
   * Set when this failed attempt's error report (the warning chunk of a retried attempt) could not be
   * written to the stream: `stream_write_failed` (rule 68). The write is settled before this hook fires.
   */
  readonly onErrorFailure?: AgentErrorInfo;
  /** True when the adapter threw instead of returning a result (only with `afterLLMCallOnThrow`, C2). */
  readonly threw?: boolean;
}

/** beforeTool: a validated tool call is about to run (before any approval prompt). */
export interface BeforeToolPayload {
  /** The call; `arguments` are the validated input (as rewritten by earlier handlers in the chain). */
  readonly toolCall: ToolCall;
  readonly tool: ToolDefinition;
}

/** afterTool: a tool call ended (ran, failed, or was blocked by beforeTool). */
export interface AfterToolPayload {
  /** The call as it ran: `arguments` are the effective (possibly rewritten) input. */
  readonly toolCall: ToolCall;
  readonly tool: ToolDefinition;
  /** The tool's return value (undefined when it failed or was blocked). */
  readonly result: unknown;
  readonly success: boolean;
  /** True when a beforeTool hook blocked the call: the tool did not run. */
  readonly blocked: boolean;
  readonly error?: AgentError;
  readonly durationMs: number;
}

/** What changed the custom state. */
export type StateChangeSource = 'tool' | 'hook' | 'system';

/** onStateChange: the custom state changed. */
export interface StateChangePayload<TState = unknown> {
  readonly previousState: TState;
  readonly newState: TState;
  readonly source: StateChangeSource;
  /** Set when source is 'tool'. */
  readonly toolName?: string;
  readonly patches: readonly StatePatch[];
}

/** onMessage: a message was appended to the conversation. */
export interface MessagePayload {
  readonly message: Message;
  /** The message's index in the session's conversation. */
  readonly messageIndex: number;
}

/**
 * A hook handler: awaited where it fires. Its error policy decides what a throw does (fail-run by
 * default, see `HookErrorPolicy`). Declared through a method so its parameters are bivariant: hook sets
 * typed for one state compose with untyped ones (`AgentHooks`) in both directions.
 */
export type HookHandler<TPayload, TState = unknown, TOutput = unknown, TResult = void, THookContext = unknown> = {
  bivarianceHack(payload: TPayload, ctx: HookContext<TState, TOutput, THookContext>): TResult | void | Promise<TResult | void>;
}['bivarianceHack'];

/** A refusal: `beforeLLMCall` fails the run with `hook_blocked`; `beforeTool` skips the call and tells the model why. */
export interface HookBlock {
  readonly block: true;
  /** Why; a blank reason becomes "Blocked by beforeLLMCall." / "Blocked by beforeTool.". */
  readonly reason?: string;
}

/** What `beforeLLMCall` may return: nothing (allow), a rewrite of this call's messages and/or tools, or a block. */
export type BeforeLLMCallResult = { readonly messages?: readonly Message[]; readonly tools?: readonly LLMToolSpec[]; readonly block?: false } | HookBlock;

/** What `beforeTool` may return: nothing (allow), replacement arguments (the whole input; validated again), or a block. */
export type BeforeToolResult = { readonly input: unknown; readonly block?: false } | HookBlock;

/** What `afterTool` may return: a replacement result, which the model sees and the step commit stores. */
export interface AfterToolResult {
  readonly result: unknown;
}

/** A child session a suspended run waits on. */
export interface SuspendedChildWait {
  readonly sessionId: string;
  readonly agentType: string;
  /** The tool call whose result the child's outcome becomes. */
  readonly toolCallId: string;
}

/** onAgentSuspended's context: the run reached a suspension boundary (committed before the hook fires, D10). */
export interface AgentSuspendedHookContext<TState = unknown, TOutput = unknown, THookContext = unknown> extends HookContext<TState, TOutput, THookContext> {
  readonly reason: 'client_tool' | 'awaiting_children' | 'step_partial';
  /** Calls awaiting a client result or a human decision (empty unless reason is client_tool). */
  readonly pendingToolCallIds: readonly string[];
  /** Child sessions awaited (empty unless reason is awaiting_children). */
  readonly awaitingChildren: readonly SuspendedChildWait[];
  /** Steps completed before the suspension. */
  readonly stepCount: number;
}

/** onAgentResumed's context: a fresh run resumes a suspended run, or rewinds to a checkpoint. */
export interface AgentResumedHookContext<TState = unknown, TOutput = unknown, THookContext = unknown> extends HookContext<TState, TOutput, THookContext> {
  /** The run that suspended (or, for a rewind, the session's previous run). Always set. */
  readonly previousRunId: string;
  /** The checkpoint restored, for a from_checkpoint rewind. */
  readonly resumedFromCheckpointId?: string;
  /** The approvals and rejections this run delivers (`approve()`, `reject()`, `with_confirmation` decisions), with their reasons; empty when none. */
  readonly decisions: readonly ApprovalDecisionInfo[];
}

/** onAgentRetry's context: the start signal of a run that retry() began. */
export interface AgentRetryHookContext<TState = unknown, TOutput = unknown, THookContext = unknown> extends HookContext<TState, TOutput, THookContext> {
  /** The failed run it re-runs. */
  readonly retriedRunId: string;
  /** The checkpoint it restored (absent: genesis). */
  readonly checkpointId?: string;
  readonly hasMessage: boolean;
}

/** A suspension-family hook: one context object carrying its fields (rule 2). Observe-only: a throw is logged. */
export type SuspensionHookHandler<TContext> = { bivarianceHack(ctx: TContext): void | Promise<void> }['bivarianceHack'];

/** What `onExit` may return: keep the run going, usually with a message telling the model what to do. */
export interface ExitHookResult {
  readonly continue: true;
  /** Appended as a user message before the next model call. */
  readonly message?: string;
}

/** onExit: the run is about to finish on an exit condition (not on maxSteps). */
export interface ExitPayload<TOutput = unknown> {
  readonly reason: Exclude<ExitReason, 'max_steps'>;
  /** The output the run would finish with. */
  readonly output: TOutput;
  /** Steps completed, the exiting one included. */
  readonly stepCount: number;
  /** Executed calls per tool in this run (blocked and invalid calls are not counted). */
  readonly toolCallCounts: Readonly<Record<string, number>>;
}

/** A sub-agent call: the tool call that started a child run, and who the child is. */
export interface SubAgentCall {
  /** The parent's tool call id. */
  readonly id: string;
  /** The tool's name. */
  readonly toolName: string;
  /** The tool input the model sent (validated). */
  readonly input: unknown;
  /** The child agent's name. */
  readonly agentType: string;
}

/** beforeSubAgent: a child run is about to start (after the call's beforeTool). */
export interface BeforeSubAgentPayload {
  readonly call: SubAgentCall;
  /** The child agent's configuration (undefined for a remote sub-agent). */
  readonly agentConfig: AgentConfig<unknown, unknown> | undefined;
  readonly parentSessionId: string;
}

/** afterSubAgent: the child run ended; fold its result into the parent's state with ctx.updateState. */
export interface AfterSubAgentPayload {
  readonly call: SubAgentCall;
  readonly agentConfig: AgentConfig<unknown, unknown> | undefined;
  /** The child's output (completed), or undefined. */
  readonly result: unknown;
  readonly success: boolean;
  readonly error?: AgentErrorInfo;
  readonly durationMs: number;
  /** The child's session id (derived from the parent session and the call id). */
  readonly subSessionId: string;
}

/**
 * The inline hooks of an agent, typed by its state and output. All are optional and may be async.
 * `onTextDelta` and `onThinking` observe the model's stream as it arrives (observe-only; a point nobody
 * handles costs nothing per delta).
 */
export interface AgentHooks<TState = unknown, TOutput = unknown, THookContext = unknown> {
  onAgentStart?: HookHandler<AgentStartPayload<TState>, TState, TOutput, void, THookContext>;
  onAgentComplete?: HookHandler<AgentCompletePayload<TState, TOutput>, TState, TOutput, void, THookContext>;
  /** Observe-only: a throw is logged (it cannot fail the run twice). */
  onAgentFail?: HookHandler<AgentFailPayload<TState>, TState, TOutput, void, THookContext>;
  /** Observe-only: a throw is logged. */
  onAgentSuperseded?: HookHandler<AgentSupersededPayload<TState>, TState, TOutput, void, THookContext>;
  /** May return `{ messages?, tools? }` (this call only) or `{ block: true, reason }`. */
  beforeLLMCall?: HookHandler<BeforeLLMCallPayload, TState, TOutput, BeforeLLMCallResult, THookContext>;
  afterLLMCall?: HookHandler<AfterLLMCallPayload, TState, TOutput, void, THookContext>;
  /** May return `{ input }` or `{ block: true, reason }`. */
  beforeTool?: HookHandler<BeforeToolPayload, TState, TOutput, BeforeToolResult, THookContext>;
  /** May return `{ result }` to replace what the model sees and what is stored. */
  afterTool?: HookHandler<AfterToolPayload, TState, TOutput, AfterToolResult, THookContext>;
  /** A sub-agent call is about to start its child run (after beforeTool). */
  beforeSubAgent?: HookHandler<BeforeSubAgentPayload, TState, TOutput, void, THookContext>;
  /** A sub-agent call's child run ended (before onStateChange, onMessage and afterTool); parallel children's folds compose. */
  afterSubAgent?: HookHandler<AfterSubAgentPayload, TState, TOutput, void, THookContext>;
  onStateChange?: HookHandler<StateChangePayload<TState>, TState, TOutput, void, THookContext>;
  onMessage?: HookHandler<MessagePayload, TState, TOutput, void, THookContext>;
  /** May return `{ continue: true, message }` to keep the run going (bounded by maxSteps). */
  onExit?: HookHandler<ExitPayload<TOutput>, TState, TOutput, ExitHookResult, THookContext>;
  /** The run reached a suspension boundary, after its suspension commit. Observe-only. */
  onAgentSuspended?: SuspensionHookHandler<AgentSuspendedHookContext<TState, TOutput, THookContext>>;
  /** A fresh run resumes a suspended run or rewinds (its start signal). Observe-only in-process. */
  onAgentResumed?: SuspensionHookHandler<AgentResumedHookContext<TState, TOutput, THookContext>>;
  /** A run retry() began (its start signal), after its run-start commit and before its first step. Observe-only. */
  onAgentRetry?: SuspensionHookHandler<AgentRetryHookContext<TState, TOutput, THookContext>>;
  /**
   * Each streamed text delta of a model call, in order. Observe-only: a throw is logged and never fails
   * the run; the adapter does not wait for it (the step waits for all of them before using the reply).
   */
  onTextDelta?: HookHandler<string, TState, TOutput, void, THookContext>;
  /**
   * The model's reasoning (thinking): `(delta, false)` for each streamed reasoning delta, then
   * `(wholeBlock, true)` when the reasoning block ends. Observe-only, like onTextDelta.
   */
  onThinking?: { bivarianceHack(content: string, isComplete: boolean, ctx: HookContext<TState, TOutput, THookContext>): void | Promise<void> }['bivarianceHack'];
}

/** The name of a hook point. */
export type HookPoint = keyof AgentHooks;

/** Every hook point, in lifecycle order. */
export const HOOK_POINTS: readonly HookPoint[] = Object.freeze([
  'onAgentStart',
  'onAgentComplete',
  'onAgentFail',
  'onAgentSuperseded',
  'beforeLLMCall',
  'afterLLMCall',
  'beforeTool',
  'afterTool',
  'beforeSubAgent',
  'afterSubAgent',
  'onStateChange',
  'onMessage',
  'onExit',
  'onAgentSuspended',
  'onAgentResumed',
  'onAgentRetry',
  'onTextDelta',
  'onThinking',
] as const);
