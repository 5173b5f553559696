/**
 * Builders for hand-written expected traces: one function per trace item, so an expectation reads as
 * the sequence of hooks it asserts. They only spell values out; nothing here is derived from a run.
 */
import type { JsonValue, TraceEvent, TraceMessage, TraceRun, TraceSession, TraceToolCall } from './trace.js';

/** `run#n`. */
export const run = (n: number): string => `run#${n}`;
/** `session#n`. */
export const session = (n: number): string => `session#${n}`;
/** `call#n`. */
export const call = (n: number): string => `call#${n}`;

/** The first runs, sessions and tool calls of a scenario, in order of first appearance. */
export const R1 = run(1);
export const R2 = run(2);
export const R3 = run(3);
export const R4 = run(4);
export const S1 = session(1);
export const S2 = session(2);
export const C1 = call(1);
export const C2 = call(2);
export const C3 = call(3);
export const C4 = call(4);

/** A tool call in an assistant row. */
export const toolCall = (id: string, tool: string, args: JsonValue): TraceToolCall => ({ call: id, tool, args });

/** Conversation rows. */
export const row = {
  user: (text: string): TraceMessage => ({ role: 'user', text }),
  system: (text: string): TraceMessage => ({ role: 'system', text }),
  assistant: (text: string, ...calls: TraceToolCall[]): TraceMessage => ({ role: 'assistant', text, ...(calls.length > 0 ? { calls } : {}) }),
  tool: (id: string, tool: string, content: JsonValue): TraceMessage => ({ role: 'tool', call: id, tool, content }),
  toolError: (id: string, tool: string, error: string): TraceMessage => ({ role: 'tool', call: id, tool, error }),
};

/** afterTool of `call`, with its outcome (an error code and a result only when given). */
function afterTool(runId: string, step: number, call: TraceToolCall, success: boolean, blocked: boolean, error?: string, result?: JsonValue): TraceEvent {
  return { point: 'afterTool', run: runId, step, ...call, success, blocked, ...(error === undefined ? {} : { error }), ...(result === undefined ? {} : { result }) };
}

/** Hook events of one run at one step (`ctx.stepCount`). */
export function at(runId: string, step: number) {
  return {
    start: (input: string, startSignal = true): TraceEvent => ({ point: 'onAgentStart', run: runId, step, startSignal, input }),
    message: (index: number, message: TraceMessage): TraceEvent => ({ point: 'onMessage', run: runId, step, index, message }),
    beforeLLM: (messages: number, tools: number, attempt = 1): TraceEvent => ({ point: 'beforeLLMCall', run: runId, step, attempt, messages, tools }),
    afterLLM: (plan: string, error?: string, attempt = 1): TraceEvent => ({ point: 'afterLLMCall', run: runId, step, attempt, plan, ...(error === undefined ? {} : { error }) }),
    beforeTool: (id: string, tool: string, args: JsonValue): TraceEvent => ({ point: 'beforeTool', run: runId, step, call: id, tool, args }),
    /** A call that succeeded with `result` (undefined: the tool returned nothing). */
    afterTool: (id: string, tool: string, args: JsonValue, result?: JsonValue): TraceEvent => afterTool(runId, step, { call: id, tool, args }, true, false, undefined, result),
    /** A call that failed with `error` (blocked: refused by a hook or a human, it did not run). */
    afterToolError: (id: string, tool: string, args: JsonValue, error: string, blocked = false, result?: JsonValue): TraceEvent => afterTool(runId, step, { call: id, tool, args }, false, blocked, error, result),
    state: (source: string, state: JsonValue, toolName?: string): TraceEvent => ({ point: 'onStateChange', run: runId, step, source, ...(toolName === undefined ? {} : { toolName }), state }),
    exit: (reason: string, stepCount: number, toolCallCounts: { readonly [tool: string]: number } = {}): TraceEvent => ({ point: 'onExit', run: runId, step, reason, stepCount, toolCallCounts }),
    suspended: (reason: string, pending: readonly string[], children: readonly string[] = []): TraceEvent => ({ point: 'onAgentSuspended', run: runId, step, reason, pending, children }),
    resumed: (previousRun: string, checkpoint = false): TraceEvent => ({ point: 'onAgentResumed', run: runId, step, previousRun, checkpoint }),
    retry: (retriedRun: string, checkpoint: boolean, hasMessage: boolean): TraceEvent => ({ point: 'onAgentRetry', run: runId, step, retriedRun, checkpoint, hasMessage }),
  };
}

/** onAgentComplete. */
export const complete = (runId: string, stepCount: number, exitReason: string, output: JsonValue): TraceEvent => ({ point: 'onAgentComplete', run: runId, stepCount, exitReason, output });
/** onAgentFail. */
export const fail = (runId: string, stepCount: number, error: string, recoverable: boolean): TraceEvent => ({ point: 'onAgentFail', run: runId, stepCount, error, recoverable });
/** onAgentSuperseded. */
export const superseded = (runId: string): TraceEvent => ({ point: 'onAgentSuperseded', run: runId, error: 'state_run_superseded' });

/** An event recorded by a named handler layer. */
export const by = (handler: string, event: TraceEvent): TraceEvent => ({ ...event, handler });

/** A stored run. */
export function storedRun(runId: string, sessionId: string, signal: string, status: string, extra: Partial<Pick<TraceRun, 'error' | 'output' | 'result'>> = {}): TraceRun {
  return { run: runId, session: sessionId, found: true, signal, status, ...extra };
}

/** A stored session. */
export function storedSession(sessionId: string, currentRun: string, state: JsonValue, transcript: readonly TraceMessage[]): TraceSession {
  return { session: sessionId, found: true, currentRun, state, transcript };
}
