/**
 * The trace the runtime conformance suite records for one scenario: every hook invocation (the point,
 * the run it belongs to, the payload fields that matter), the scenario's entry calls and notes, and
 * the end (each run's stored status and result, each session's state and transcript). A trace is a
 * plain JSON value without ids, timestamps or durations, so two runtimes' traces of one scenario can be
 * compared with deep equality.
 *
 * Ids are placeholders: `run#N`, `session#N`, `call#N`, numbered in order of first appearance (entries
 * first, then hooks, notes and the end). Tool calls of one step run in parallel and their hooks are
 * ordered only per call (docs/rules.md, D16), so within a step the events of different calls are listed
 * call by call, in the order the model asked for the calls, and the calls' result rows (their onMessage
 * indexes and their places in transcripts) are listed in that order as well.
 */

/** A JSON value, as the trace holds payloads, state and outputs. */
export type JsonValue = null | boolean | number | string | readonly JsonValue[] | { readonly [key: string]: JsonValue };

/** A tool call as the trace shows it (in assistant rows). */
export interface TraceToolCall {
  /** The normalized call id (`call#N`). */
  readonly call: string;
  readonly tool: string;
  readonly args: JsonValue;
}

/**
 * A conversation row as the trace shows it. Error tool rows carry their error code instead of their
 * text (the wording of runtime messages is not part of the contract).
 */
export type TraceMessage =
  | { readonly role: 'user' | 'system'; readonly text: string }
  | { readonly role: 'assistant'; readonly text: string; readonly calls?: readonly TraceToolCall[] }
  | { readonly role: 'tool'; readonly call: string; readonly tool: string; readonly content?: JsonValue; readonly error?: string };

/** Fields every hook event has. */
interface EventBase {
  /** The normalized run id of the hook context (`run#N`). */
  readonly run: string;
  /** The name of the scenario's handler layer that recorded it, when the scenario named it. */
  readonly handler?: string;
}

/** Fields of events whose hook context's `stepCount` is part of the contract. */
interface StepEventBase extends EventBase {
  /** The hook context's `stepCount`: steps this run completed, the 0-based index of the current step. */
  readonly step: number;
}

/** One hook invocation, with the fields of its payload (and context) that the contract fixes. */
export type TraceEvent =
  | (StepEventBase & { readonly point: 'onAgentStart'; readonly startSignal: boolean; readonly input: string })
  | (EventBase & { readonly point: 'onAgentComplete'; readonly stepCount: number; readonly exitReason: string; readonly output: JsonValue })
  | (EventBase & { readonly point: 'onAgentFail'; readonly stepCount: number; readonly error: string; readonly recoverable: boolean })
  /** Only the error code: the spec lets the payload's state and step count differ by runtime. */
  | (EventBase & { readonly point: 'onAgentSuperseded'; readonly error: string })
  | (StepEventBase & { readonly point: 'beforeLLMCall'; readonly attempt: number; readonly messages: number; readonly tools: number })
  | (StepEventBase & { readonly point: 'afterLLMCall'; readonly attempt: number; readonly plan: string; readonly error?: string })
  | (StepEventBase & { readonly point: 'beforeTool'; readonly call: string; readonly tool: string; readonly args: JsonValue })
  | (StepEventBase & {
      readonly point: 'afterTool';
      readonly call: string;
      readonly tool: string;
      readonly args: JsonValue;
      readonly success: boolean;
      readonly blocked: boolean;
      readonly error?: string;
      readonly result?: JsonValue;
    })
  | (StepEventBase & { readonly point: 'beforeSubAgent'; readonly call: string; readonly agentType: string })
  | (StepEventBase & { readonly point: 'afterSubAgent'; readonly call: string; readonly agentType: string; readonly success: boolean; readonly error?: string })
  | (StepEventBase & { readonly point: 'onStateChange'; readonly source: string; readonly toolName?: string; readonly state: JsonValue })
  | (StepEventBase & { readonly point: 'onMessage'; readonly index: number; readonly message: TraceMessage })
  | (StepEventBase & { readonly point: 'onExit'; readonly reason: string; readonly stepCount: number; readonly toolCallCounts: { readonly [tool: string]: number } })
  | (StepEventBase & { readonly point: 'onAgentSuspended'; readonly reason: string; readonly pending: readonly string[]; readonly children: readonly string[] })
  | (StepEventBase & { readonly point: 'onAgentResumed'; readonly previousRun: string; readonly checkpoint: boolean })
  | (StepEventBase & { readonly point: 'onAgentRetry'; readonly retriedRun: string; readonly checkpoint: boolean; readonly hasMessage: boolean })
  | (StepEventBase & { readonly point: 'onTextDelta' | 'onThinking' });

/** The name of an entry point the scenario called. */
export type TraceEntryName = 'execute' | 'send' | 'resume' | 'submitToolResult' | 'approve' | 'reject' | 'retry' | 'recover';

/** One entry call of the scenario, in call order: the run it began, or the error code it was refused with. */
export interface TraceEntry {
  readonly entry: TraceEntryName;
  readonly session?: string;
  readonly run?: string;
  /** The AgentError code of a refused entry (`error` when it was not an AgentError). */
  readonly rejected?: string;
}

/** A value the scenario recorded itself (a probe of the store during a hook, a model's view of its prompt), in the order recorded. */
export interface TraceNote {
  readonly label: string;
  readonly value: JsonValue;
}

/** What `handle.result()` resolved with, for the runs whose result the scenario awaited. */
export interface TraceResult {
  readonly status: string;
  readonly error?: string;
  readonly exitReason?: string;
  readonly output?: JsonValue;
  /** Steps the run committed (absent for a superseded run: the spec lets runtimes differ there). */
  readonly steps?: number;
  /** The state the run left (absent for a superseded run, same reason). */
  readonly state?: JsonValue;
}

/** A run as stored at the end of the scenario. */
export interface TraceRun {
  readonly run: string;
  readonly session?: string;
  /** False when the runtime has no record of the run. */
  readonly found: boolean;
  /** How the run began: start, resumed or retry. */
  readonly signal?: string;
  readonly status?: string;
  readonly error?: string;
  readonly output?: JsonValue;
  readonly result?: TraceResult;
}

/** A session as stored at the end of the scenario. */
export interface TraceSession {
  readonly session: string;
  readonly found: boolean;
  readonly currentRun?: string;
  readonly state?: JsonValue;
  readonly transcript?: readonly TraceMessage[];
}

/** The trace of one scenario. */
export interface RuntimeTrace {
  readonly scenario: string;
  /** Every hook invocation, in order (parallel calls of a step listed call by call). */
  readonly hooks: readonly TraceEvent[];
  readonly entries: readonly TraceEntry[];
  readonly notes: readonly TraceNote[];
  /** Every run the scenario saw (entries, hooks, sessions' current runs), by number. */
  readonly runs: readonly TraceRun[];
  /** Every session the scenario saw, by number. */
  readonly sessions: readonly TraceSession[];
}

/** A scenario's hand-written expectation: the trace without its name (`notes` default to none). */
export type ExpectedTrace = Omit<RuntimeTrace, 'scenario' | 'notes'> & { readonly notes?: readonly TraceNote[] };

/** Converts any value to JSON (undefined fields dropped, non-JSON values as JSON.stringify renders them). */
export function toJson(value: unknown): JsonValue {
  if (value === undefined) return null;
  const text = JSON.stringify(value);
  return text === undefined ? null : (JSON.parse(text) as JsonValue);
}

/** Stable JSON text (object keys sorted), for equality and diffs. */
export function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    return `{${Object.keys(record)
      .filter((k) => record[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableStringify(record[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** The differences between an expected and an actual value, as `path: expected … got …` lines (at most `limit`). */
export function diffValues(expected: unknown, actual: unknown, path = 'trace', limit = 12): string[] {
  const out: string[] = [];
  const walk = (e: unknown, a: unknown, at: string): void => {
    if (out.length >= limit) return;
    if (stableStringify(e) === stableStringify(a)) return;
    if (Array.isArray(e) && Array.isArray(a)) {
      const length = Math.max(e.length, a.length);
      for (let i = 0; i < length; i++) {
        if (i >= e.length) out.push(`${at}[${i}]: unexpected ${stableStringify(a[i])}`);
        else if (i >= a.length) out.push(`${at}[${i}]: missing ${stableStringify(e[i])}`);
        else walk(e[i], a[i], `${at}[${i}]`);
        if (out.length >= limit) return;
      }
      return;
    }
    if (e !== null && a !== null && typeof e === 'object' && typeof a === 'object' && !Array.isArray(e) && !Array.isArray(a)) {
      const er = e as Record<string, unknown>;
      const ar = a as Record<string, unknown>;
      // Two different kinds of item (another hook point, another row role): show both whole.
      if (er['point'] !== ar['point'] || er['role'] !== ar['role']) {
        out.push(`${at}: expected ${stableStringify(e)}, got ${stableStringify(a)}`);
        return;
      }
      const keys = new Set([...Object.keys(e), ...Object.keys(a)]);
      for (const key of [...keys].sort()) walk((e as Record<string, unknown>)[key], (a as Record<string, unknown>)[key], `${at}.${key}`);
      return;
    }
    out.push(`${at}: expected ${e === undefined ? '(absent)' : stableStringify(e)}, got ${a === undefined ? '(absent)' : stableStringify(a)}`);
  };
  walk(expected, actual, path);
  return out;
}
