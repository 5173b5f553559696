import { FINISH_TOOL_NAME, type ToolDefinition } from '../define.js';
import { AgentError, agentErrorFromInfo, HookError, RunInterruptedError, RunSupersededError, type AgentErrorInfo } from '../errors.js';
import type { AfterLLMCallPayload, BeforeLLMCallPayload, BeforeLLMCallResult, StepPlan } from '../hooks/types.js';
import type { LanguageModel, LLMAdapter, LLMToolSpec, StepFailure, StepResult, StepSuccess } from '../llm.js';
import type { AssistantMessage, Message } from '../messages.js';
import { afterLLMCallOnThrow, reportRetriedAttempt } from './attempt-reports.js';
import { crashPoint } from './crash-points.js';
import type { HookEntry } from '../hooks/manager.js';
import type { ChainEnd, Verdict, WriteScope } from './hook-dispatch.js';
import { modelReplyRecord } from './journal-records.js';
import { STEP_OWNER, type Run } from './run.js';
import { sleep } from './sleep.js';
import { streamCallbacks, type StreamCallbacks } from './stream-hooks.js';
import { firstTripped } from './stop-conditions.js';
import type { Writable } from '../writable.js';

const DEFAULT_ATTEMPTS = 3;
const DEFAULT_INITIAL_DELAY_MS = 500;
const DEFAULT_MAX_DELAY_MS = 8_000;

/** What the loop does with a successful reply (before any tool runs). */
export function planFor(result: StepSuccess, hasOutputSchema: boolean): StepPlan {
  if (result.toolCalls.length > 0) {
    const finishing = result.toolCalls.some((c) => c.name === FINISH_TOOL_NAME);
    return { kind: finishing ? 'finish' : 'tool_calls', toolCalls: result.toolCalls };
  }
  if (result.text.trim() === '') return { kind: 'nudge', reason: 'empty_reply' };
  if (hasOutputSchema) return { kind: 'nudge', reason: 'text_without_output' };
  return { kind: 'text', text: result.text };
}

function retryDelay(failure: StepFailure, attempt: number, initial: number, max: number): number {
  const backoff = Math.min(max, initial * 2 ** (attempt - 1));
  return failure.retryAfterMs === undefined ? backoff : Math.min(max, Math.max(backoff, failure.retryAfterMs));
}

/** The retry policy of a model call, with its defaults applied. */
interface Retries {
  readonly maxAttempts: number;
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
}

function retriesOf(run: Run): Retries {
  const retry = run.setup.agent.llmConfig.retry;
  return {
    maxAttempts: Math.max(1, retry?.maxAttempts ?? DEFAULT_ATTEMPTS),
    initialDelayMs: retry?.initialDelayMs ?? DEFAULT_INITIAL_DELAY_MS,
    maxDelayMs: retry?.maxDelayMs ?? DEFAULT_MAX_DELAY_MS,
  };
}

/** What the loop does after an attempt: go on with the reply, retry after a delay, or fail. */
function planAttempt(run: Run, result: StepResult, attempt: number): StepPlan {
  if (result.ok) return planFor(result, run.setup.agent.outputSchema !== undefined);
  // The retry policy is read only for a failed attempt: a successful step builds none of it.
  const retries = retriesOf(run);
  if (result.error.retryable && attempt < retries.maxAttempts && !run.aborted && result.error.code !== 'run_interrupted') {
    return { kind: 'retry', error: result.error, delayMs: retryDelay(result, attempt, retries.initialDelayMs, retries.maxDelayMs) };
  }
  return { kind: 'fail', error: result.error };
}

/**
 * One step's model call: every attempt fires beforeLLMCall and afterLLMCall (hooks see every billed
 * call), a failed attempt's afterLLMCall carries its error, retryable failures are retried with backoff
 * and announced once per distinct message by a warning chunk. The successful reply's row is appended
 * (onMessage fires for it) and the reply returned; else the last classified error is thrown.
 * Only the adapter call is always awaited: the steps around it (the hook chains, the chunks, the row)
 * return a promise only when they have something to wait for.
 */
export async function callModel(run: Run, adapter: LLMAdapter, warned: Set<string>, scope: WriteScope): Promise<StepSuccess> {
  for (let attempt = 1; ; attempt++) {
    if (run.aborted) throw new RunInterruptedError();
    const ready = beginAttempt(run, attempt, scope);
    const request = ready instanceof Promise ? await ready : ready;
    crashPoint('in_model_call');
    const config = run.setup.agent.llmConfig;
    const timeout = config.timeoutMs === undefined ? undefined : AbortSignal.timeout(config.timeoutMs);
    const abortSignal = timeout ? AbortSignal.any([run.signal, timeout]) : run.signal;
    const startedAt = performance.now();
    const callbacks = streamCallbacks(run, run.stepCount, scope);
    let result: StepResult;
    try {
      const { onTextDelta, onReasoningDelta, onReasoningEnd } = callbacks;
      result = await adapter.generateStep({ model: run.setup.model, systemPrompt: request.systemPrompt, messages: request.messages, tools: request.tools, modelParameters: config, abortSignal, onTextDelta, onReasoningDelta, onReasoningEnd });
    } catch (error) {
      throw await adapterThrew(run, callbacks, error, attempt, startedAt, scope);
    }
    const durationMs = performance.now() - startedAt;
    const drained = callbacks.drain();
    if (drained) await drained;
    const settled = afterAttempt(run, warned, attemptEnded(run, result, timeout, attempt, durationMs), durationMs, attempt, scope);
    const next = settled instanceof Promise ? await settled : settled;
    if (typeof next === 'number') {
      await sleep(next, run.signal);
      continue;
    }
    const appended = run.appendMessage(assistantMessage(next), scope);
    if (appended instanceof Promise) await appended;
    return next;
  }
}

/** An attempt's start: the beforeLLMCall chain (which may rewrite the request), then step_start. */
function beginAttempt(run: Run, attempt: number, scope: WriteScope): ModelRequest | Promise<ModelRequest> {
  const { agent } = run.setup;
  const systemPrompt = typeof agent.systemPrompt === 'function' ? agent.systemPrompt(run.state) : agent.systemPrompt;
  const messages = run.work.messages;
  const request: ModelRequest = { messages, systemPrompt, tools: agent.llmTools };
  if (!run.hooks.has('beforeLLMCall')) return announceAttempt(run, attempt, request);
  const chained = beforeLLMCallChain(run, new LLMCallPayload(messages, systemPrompt, agent, run.setup.model, attempt), scope, request);
  return chained instanceof Promise ? chained.then((rewritten) => announceAttempt(run, attempt, rewritten)) : announceAttempt(run, attempt, chained);
}

/** The step_start chunk of an attempt; the request once it is written (at once when it was queued). */
function announceAttempt(run: Run, attempt: number, request: ModelRequest): ModelRequest | Promise<ModelRequest> {
  const f = run.chunkFields;
  const started = run.emit({ type: 'step_start', stepIndex: run.stepCount, attempt, streamId: f.streamId, agentId: f.agentId, agentType: f.agentType, runId: f.runId, timestamp: Date.now() });
  return started ? started.then(() => request) : request;
}

/** An adapter that threw: the error the attempt ends with, after its stream hooks settled (and afterLLMCall, with afterLLMCallOnThrow). */
async function adapterThrew(run: Run, callbacks: StreamCallbacks, error: unknown, attempt: number, startedAt: number, scope: WriteScope): Promise<AgentError> {
  await callbacks.drain();
  // An adapter must return provider failures; a throw is a bug and fires no afterLLMCall (unless afterLLMCallOnThrow, C2).
  const thrown = AgentError.isInstance(error) ? error : new AgentError('run_internal_error', `The model adapter threw: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  await afterLLMCallOnThrow(run, thrown, attempt, performance.now() - startedAt, scope);
  return thrown;
}

/** The attempt's result (a failure the timeout caused says so) after its usage entry is booked. */
function attemptEnded(run: Run, result: StepResult, timeout: AbortSignal | undefined, attempt: number, durationMs: number): StepResult {
  let ended = result;
  if (!result.ok && timeout?.aborted && !run.aborted) {
    const timeoutMs = run.setup.agent.llmConfig.timeoutMs;
    ended = { ...result, error: new AgentError('provider_timeout', `The model did not answer within ${timeoutMs} ms.`, { details: { timeoutMs } }).info };
  }
  if (run.keepsUsage) run.books.addUsage({ kind: 'llm', sessionId: run.setup.sessionId, runId: run.setup.runId, stepIndex: run.stepCount, attempt, model: ended.model, usage: ended.usage, success: ended.ok, durationMs, at: Date.now() });
  return ended;
}

/**
 * After an attempt: the budgets are charged, the plan made, a retried failure reported, afterLLMCall fired.
 * Gives the reply to go on with, or the delay before the next attempt; throws the error that ends the call.
 */
function afterAttempt(run: Run, warned: Set<string>, result: StepResult, durationMs: number, attempt: number, scope: WriteScope): StepSuccess | number | Promise<StepSuccess | number> {
  // The attempt that trips a budget still reaches afterLLMCall (docs/rules.md, rule 69).
  const spend = run.books.charge(result, run.setup.agent.limits?.pricing);
  const budgetError = run.guards.afterAttempt.length > 0 ? firstTripped(run.guards.afterAttempt, { rows: [], emptyReply: false, spend }) : undefined;
  const plan = planAttempt(run, result, attempt);
  // The error report is settled before afterLLMCall, which carries a failed write (rule 68).
  if (plan.kind === 'retry' && !result.ok) {
    const { maxAttempts } = retriesOf(run);
    return reportRetriedAttempt(run, warned, result.error, attempt, maxAttempts).then((onErrorFailure) => afterLLMCall(run, { result, plan, durationMs, attempt, onErrorFailure }, scope, budgetError));
  }
  return afterLLMCall(run, { result, plan, durationMs, attempt, onErrorFailure: undefined }, scope, budgetError);
}

/** What afterLLMCall is told of an attempt. */
interface AttemptReport {
  readonly result: StepResult;
  readonly plan: StepPlan;
  readonly durationMs: number;
  readonly attempt: number;
  readonly onErrorFailure: AgentErrorInfo | undefined;
}

/** afterLLMCall for the attempt, then its verdict: the reply, the retry's delay, or the error thrown. */
function afterLLMCall(run: Run, report: AttemptReport, scope: WriteScope, budgetError: AgentError | undefined): StepSuccess | number | Promise<StepSuccess | number> {
  if (run.hooks.has('afterLLMCall')) {
    const { result, plan, durationMs, attempt, onErrorFailure } = report;
    // Built field by field: a conditional spread allocates and copies an object of its own.
    const payload: Writable<AfterLLMCallPayload> = { result, plan, durationMs, model: result.model, attempt };
    if (result.usage !== undefined) payload.usage = result.usage;
    if (!result.ok) payload.error = result.error;
    if (onErrorFailure) payload.onErrorFailure = onErrorFailure;
    const fired = run.hooks.fire('afterLLMCall', payload, scope);
    if (fired) return fired.then(() => attemptVerdict(report, budgetError));
  }
  return attemptVerdict(report, budgetError);
}

function attemptVerdict(report: AttemptReport, budgetError: AgentError | undefined): StepSuccess | number {
  if (budgetError) throw budgetError;
  const { result, plan } = report;
  if (result.ok) return result;
  if (plan.kind !== 'retry') throw failureError(result.error, report.attempt);
  return plan.delayMs;
}

/** What a model attempt sends. */
interface ModelRequest {
  readonly messages: readonly Message[];
  readonly systemPrompt: string | undefined;
  readonly tools: readonly LLMToolSpec[];
}

/** beforeLLMCall's interpret step: `{ block }` ends the chain (the first block wins); `{ messages, tools }` rewrites this attempt for later handlers. */
function interpretBeforeLLMCall(value: unknown, payload: LLMCallPayload, entry: HookEntry): Verdict<LLMCallPayload, { reason: string; name: string }> {
  const v = value as BeforeLLMCallResult | undefined;
  if (!v || typeof v !== 'object') return undefined;
  if (v.block === true) {
    const reason = v.reason?.trim() || 'Blocked by beforeLLMCall.';
    return { decision: 'block', reason, end: { reason, name: entry.name } };
  }
  if (v.messages !== undefined || v.tools !== undefined) return { decision: 'rewrite', payload: payload.rewrite(v.messages, v.tools) };
  return undefined;
}

/**
 * The beforeLLMCall chain: a `{ messages, tools }` return rewrites this attempt only (each later handler
 * sees it); the first `{ block }` fails the run with `hook_blocked` and no model call is made. A throw
 * follows the handler's policy (fail-closed also gives `hook_blocked`).
 */
function beforeLLMCallChain(run: Run, payload: LLMCallPayload, scope: WriteScope, request: ModelRequest): ModelRequest | Promise<ModelRequest> {
  const end = run.hooks.chain('beforeLLMCall', payload, scope, interpretBeforeLLMCall);
  return end instanceof Promise ? end.then((settled) => requestAfter(settled, payload, request)) : requestAfter(end, payload, request);
}

/** The attempt's request after the beforeLLMCall chain: its rewrite, or the chain's block as `hook_blocked`. */
function requestAfter(end: ChainEnd<LLMCallPayload, { reason: string; name: string }>, payload: LLMCallPayload, request: ModelRequest): ModelRequest {
  if (end.result !== undefined) {
    const { reason, name } = end.result;
    throw new HookError('hook_blocked', `The model call was blocked by an agent hook: ${reason}`, {
      hint: `Blocked by the \`beforeLLMCall\` hook "${name}".`,
      details: { hook: 'beforeLLMCall', name, reason, note: `Run blocked by an agent hook: ${reason}` },
    });
  }
  // A rewrite is the whole outgoing list, system prompt included.
  return end.payload === payload ? request : { messages: end.payload.messages, systemPrompt: undefined, tools: end.payload.tools };
}

/**
 * beforeLLMCall's payload. `messages` is built on first read: copying the conversation for every call
 * would make a step's cost grow with the history even when no hook looks at it.
 */
class LLMCallPayload implements BeforeLLMCallPayload {
  readonly #conversation: readonly Message[];
  readonly #length: number;
  readonly #systemPrompt: string | undefined;
  #messages: readonly Message[] | undefined;
  readonly tools: readonly LLMToolSpec[];
  readonly config: BeforeLLMCallPayload['config'];
  readonly model: string;
  readonly provider: string;
  readonly modelParameters: BeforeLLMCallPayload['modelParameters'];
  readonly attempt: number;

  readonly #languageModel: LanguageModel;

  constructor(conversation: readonly Message[], systemPrompt: string | undefined, agent: BeforeLLMCallPayload['config'], languageModel: LanguageModel, attempt: number, tools?: readonly LLMToolSpec[]) {
    this.#conversation = conversation;
    this.#length = conversation.length;
    this.#systemPrompt = systemPrompt;
    this.tools = tools ?? agent.llmTools;
    this.config = agent;
    this.#languageModel = languageModel;
    this.model = languageModel.modelId;
    this.provider = languageModel.provider;
    this.modelParameters = agent.llmConfig;
    this.attempt = attempt;
  }

  get messages(): readonly Message[] {
    if (this.#messages === undefined) {
      const rows = this.#conversation.slice(0, this.#length);
      if (this.#systemPrompt !== undefined) rows.unshift({ role: 'system', content: this.#systemPrompt });
      this.#messages = Object.freeze(rows);
    }
    return this.#messages;
  }

  /** The payload the next handler of the chain sees after a rewrite. */
  rewrite(messages: readonly Message[] | undefined, tools: readonly LLMToolSpec[] | undefined): LLMCallPayload {
    const next = new LLMCallPayload(this.#conversation.slice(0, this.#length), this.#systemPrompt, this.config, this.#languageModel, this.attempt, tools ?? this.tools);
    next.#messages = Object.freeze((messages ?? this.messages).slice());
    return next;
  }

  toJSON(): Record<string, unknown> {
    return { messages: this.messages, tools: this.tools, model: this.model, provider: this.provider, modelParameters: this.modelParameters, attempt: this.attempt };
  }
}

function failureError(info: AgentErrorInfo, attempts: number): AgentError {
  if (attempts <= 1) return agentErrorFromInfo(info);
  return agentErrorFromInfo({ ...info, details: { ...info.details, attempts } });
}

/**
 * The step's model reply: replayed from the step recorder when a process that died recorded it, else a
 * model call (with retries). A reply that calls a side-effecting tool is recorded, so a recovery runs
 * the same calls instead of asking the model again; with `journalModelReplies: 'always'` every reply is,
 * so a recovered step never calls the model again.
 */
export function modelReply(run: Run, adapter: LLMAdapter, warned: Set<string>, scope: WriteScope): Promise<StepSuccess> {
  const always = run.setup.journalModelReplies === 'always';
  // Without `always`, an agent without side-effecting tools never needs its replies recorded, and a recovered run has none to replay.
  if (!always && !hasSideEffectTools(run.setup.agent.tools) && !run.recorder.has({ kind: 'model_reply', step: run.stepCount })) return callModel(run, adapter, warned, scope);
  return recordedReply(run, adapter, warned, scope, always);
}

/** {@link modelReply} through the step recorder: a recorded reply is replayed, a new one recorded when it has to be. */
async function recordedReply(run: Run, adapter: LLMAdapter, warned: Set<string>, scope: WriteScope, always: boolean): Promise<StepSuccess> {
  const toolsByName = run.setup.agent.toolsByName;
  const ask = (): Promise<StepSuccess> => callModel(run, adapter, warned, scope);
  const callsSideEffects = (reply: StepSuccess): boolean => reply.toolCalls.some((c) => c.name !== FINISH_TOOL_NAME && toolsByName.get(c.name)?.sideEffects === true);
  let live: StepSuccess | undefined;
  let outcome;
  try {
    outcome = await run.recorder.replayOrRun(
      { kind: 'model_reply', step: run.stepCount },
      modelReplyRecord,
      async () => {
        live = await ask();
        const { text, toolCalls, finishReason, model, usage, reasoning } = live;
        const kept: StepSuccess = { ok: true, text, toolCalls, finishReason, model, ...(usage ? { usage } : {}), ...(reasoning === undefined ? {} : { reasoning }) };
        return { reply: kept, patches: run.work.patchesOf(STEP_OWNER) };
      },
      { persist: always || (({ reply }) => callsSideEffects(reply)) },
    );
  } catch (error) {
    // A reply recorded only because of `always`, refused by the fence (a newer run took the session): the
    // step goes on in memory and its commit is refused, as without the record (D13), so both settings
    // leave the same hook trace. A reply that calls a side-effecting tool must not go on unrecorded.
    if (always && live !== undefined && !callsSideEffects(live) && RunSupersededError.isInstance(error)) return live;
    throw error;
  }
  if (outcome.status === 'ran') return live ?? outcome.value.reply;
  if (outcome.status === 'interrupted') throw new AgentError('run_internal_error', 'A model reply cannot be interrupted.');
  run.work.applyRecorded(outcome.value.patches, STEP_OWNER);
  const { reply } = outcome.value;
  // The dead process paid for the reply, and its usage went with the step it never committed: count it here, once.
  if (run.keepsUsage) run.books.addUsage({ kind: 'llm', sessionId: run.setup.sessionId, runId: run.setup.runId, stepIndex: run.stepCount, attempt: 1, model: reply.model, usage: reply.usage, success: true, durationMs: 0, at: Date.now() });
  await run.appendMessage(assistantMessage(reply), run.runScope, false);
  return reply;
}

function assistantMessage(reply: StepSuccess): AssistantMessage {
  // No conditional spread (it allocates and copies an object of its own), and the common rows built whole:
  // a field added to a literal after it is built costs the row a second object for as long as it is kept.
  if (reply.reasoning === undefined) return reply.toolCalls.length > 0 ? { role: 'assistant', content: reply.text, toolCalls: reply.toolCalls } : { role: 'assistant', content: reply.text };
  const message: Writable<AssistantMessage> = { role: 'assistant', content: reply.text };
  if (reply.toolCalls.length > 0) message.toolCalls = reply.toolCalls;
  message.reasoning = reply.reasoning;
  return message;
}

const sideEffectTools = new WeakMap<readonly ToolDefinition[], boolean>();

/** Whether any of an agent's tools is side-effecting (computed once per tool list). */
function hasSideEffectTools(tools: readonly ToolDefinition[]): boolean {
  let known = sideEffectTools.get(tools);
  if (known === undefined) {
    known = tools.some((t) => t.sideEffects);
    sideEffectTools.set(tools, known);
  }
  return known;
}
