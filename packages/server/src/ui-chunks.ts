import type { AgentErrorInfo, StreamChunk } from '@helix-agents/sdk';

/**
 * The parts of the AI SDK UI message stream protocol (v1, what `ai@6`'s `useChat` and
 * `readUIMessageStream` read) that the server sends. Written out here so the package does not depend
 * on `ai` at run time; the tests check them against `ai`'s own parser.
 */
export type UiMessageChunk =
  | { readonly type: 'start'; readonly messageId: string }
  | { readonly type: 'start-step' }
  | { readonly type: 'finish-step' }
  | { readonly type: 'text-start'; readonly id: string }
  | { readonly type: 'text-delta'; readonly id: string; readonly delta: string }
  | { readonly type: 'text-end'; readonly id: string }
  | { readonly type: 'reasoning-start'; readonly id: string }
  | { readonly type: 'reasoning-delta'; readonly id: string; readonly delta: string }
  | { readonly type: 'reasoning-end'; readonly id: string }
  | { readonly type: 'tool-input-available'; readonly toolCallId: string; readonly toolName: string; readonly input: unknown }
  | { readonly type: 'tool-approval-request'; readonly approvalId: string; readonly toolCallId: string }
  | { readonly type: 'tool-output-available'; readonly toolCallId: string; readonly output: unknown }
  | { readonly type: 'tool-output-error'; readonly toolCallId: string; readonly errorText: string }
  | { readonly type: 'tool-output-denied'; readonly toolCallId: string }
  | { readonly type: `data-${string}`; readonly data: unknown; readonly transient?: boolean }
  | { readonly type: 'error'; readonly errorText: string }
  | { readonly type: 'abort'; readonly reason?: string }
  | { readonly type: 'finish'; readonly finishReason: 'stop' | 'tool-calls' | 'error' | 'other' };

/** The data part that carries a failed run's {@link AgentErrorInfo} (before the protocol's `error` part). */
export const ERROR_DATA_PART = 'data-helix-error';
/** The transient data part that carries a warning's {@link AgentErrorInfo} (a retried provider error). */
export const WARNING_DATA_PART = 'data-helix-warning';

/** A UI chunk and its position: `[runStartSeq, seq, k]` is the k-th UI chunk made from the chunk at `seq`. */
export interface PositionedUiChunk {
  readonly position: UiPosition;
  readonly chunk: UiMessageChunk;
}

/** Where a UI chunk comes from in the session's stream; the SSE event id is its text form. */
export interface UiPosition {
  /** The offset of the `run_started` chunk of the run the UI chunk belongs to. */
  readonly runStartSeq: number;
  readonly seq: number;
  readonly index: number;
}

/** The SSE event id of a position: `runStartSeq.seq.index`. */
export function positionId(p: UiPosition): string {
  return `${p.runStartSeq}.${p.seq}.${p.index}`;
}

/** Parses an SSE event id made by {@link positionId}; undefined when it is not one. */
export function parsePositionId(text: string): UiPosition | undefined {
  const match = /^(\d{1,15})\.(\d{1,15})\.(\d{1,4})$/.exec(text);
  if (!match) return undefined;
  const [runStartSeq, seq, index] = [Number(match[1]), Number(match[2]), Number(match[3])];
  if (seq < runStartSeq) return undefined;
  return { runStartSeq, seq, index };
}

/** True when `a` comes after `b`. */
export function isAfter(a: UiPosition, b: UiPosition): boolean {
  if (a.seq !== b.seq) return a.seq > b.seq;
  return a.index > b.index;
}

/**
 * Turns one run's chunks into UI message chunks, in order. Deterministic: the same chunks give the
 * same UI chunks with the same positions, which is what lets a resumed stream continue exactly where
 * a dropped one stopped (replay the run from its start, skip what the client has). One mapper per run;
 * the UI message of a turn is the concatenation of its runs' segments.
 */
export class RunUiMapper {
  readonly #messageId: string;
  #runStartSeq: number | undefined;
  #text: string | undefined;
  #reasoning: string | undefined;
  #stepOpen = false;
  #ended = false;

  constructor(messageId: string) {
    this.#messageId = messageId;
  }

  /** True once the run's terminal chunk was mapped. */
  get ended(): boolean {
    return this.#ended;
  }

  /** The UI chunks of `chunk`. The first chunk must be the run's `run_started`. */
  map(chunk: StreamChunk): PositionedUiChunk[] {
    if (this.#runStartSeq === undefined) this.#runStartSeq = chunk.seq;
    const out: UiMessageChunk[] = [];
    this.#add(chunk, out);
    const runStartSeq = this.#runStartSeq;
    return out.map((c, index) => ({ position: { runStartSeq, seq: chunk.seq, index }, chunk: c }));
  }

  /** The chunks that close what is open (no position: they are not part of the run's record). */
  close(finishReason: 'stop' | 'tool-calls' | 'error' | 'other'): UiMessageChunk[] {
    if (this.#ended) return [];
    const out: UiMessageChunk[] = [];
    this.#closeStep(out);
    out.push({ type: 'finish', finishReason });
    this.#ended = true;
    return out;
  }

  #closeReasoning(out: UiMessageChunk[]): void {
    if (this.#reasoning === undefined) return;
    out.push({ type: 'reasoning-end', id: this.#reasoning });
    this.#reasoning = undefined;
  }

  /** Closes the open text and reasoning parts (at most one of them is open). */
  #closeText(out: UiMessageChunk[]): void {
    this.#closeReasoning(out);
    if (this.#text === undefined) return;
    out.push({ type: 'text-end', id: this.#text });
    this.#text = undefined;
  }

  #addText(chunk: Extract<StreamChunk, { type: 'text_delta' }>, out: UiMessageChunk[]): void {
    if (chunk.delta === '') return;
    this.#openStep(out);
    this.#closeReasoning(out);
    if (this.#text === undefined) {
      this.#text = `text-${chunk.seq}`;
      out.push({ type: 'text-start', id: this.#text });
    }
    out.push({ type: 'text-delta', id: this.#text, delta: chunk.delta });
  }

  // Reasoning becomes a reasoning part; text after it opens a new text part, so the parts keep the model's order.
  #addReasoning(chunk: Extract<StreamChunk, { type: 'reasoning_delta' }>, out: UiMessageChunk[]): void {
    if (chunk.blockEnd === true) return this.#closeReasoning(out);
    if (chunk.delta === '') return;
    this.#openStep(out);
    if (this.#reasoning === undefined) {
      this.#closeText(out);
      this.#reasoning = `reasoning-${chunk.seq}`;
      out.push({ type: 'reasoning-start', id: this.#reasoning });
    }
    out.push({ type: 'reasoning-delta', id: this.#reasoning, delta: chunk.delta });
  }

  #closeStep(out: UiMessageChunk[]): void {
    this.#closeText(out);
    if (this.#stepOpen) out.push({ type: 'finish-step' });
    this.#stepOpen = false;
  }

  #openStep(out: UiMessageChunk[]): void {
    if (this.#stepOpen) return;
    out.push({ type: 'start-step' });
    this.#stepOpen = true;
  }

  #add(chunk: StreamChunk, out: UiMessageChunk[]): void {
    if (this.#ended) return;
    switch (chunk.type) {
      case 'run_started':
        out.push({ type: 'start', messageId: this.#messageId });
        return;
      case 'step_start':
        // A retried attempt continues its step; a new step closes the previous one.
        if (chunk.attempt > 1) return this.#closeText(out);
        this.#closeStep(out);
        return this.#openStep(out);
      case 'text_delta':
        return this.#addText(chunk, out);
      case 'reasoning_delta':
        return this.#addReasoning(chunk, out);
      case 'actions_requested':
        this.#openStep(out);
        this.#closeText(out);
        for (const call of chunk.calls) out.push({ type: 'tool-input-available', toolCallId: call.callId, toolName: call.toolName, input: call.args ?? null });
        return;
      case 'tool_approval_request':
        out.push({ type: 'tool-approval-request', approvalId: chunk.toolCallId, toolCallId: chunk.toolCallId });
        return;
      case 'tool_end':
        this.#closeText(out);
        if (chunk.success) out.push({ type: 'tool-output-available', toolCallId: chunk.toolCallId, output: chunk.result ?? null });
        else if (chunk.error?.code === 'permission_denied') out.push({ type: 'tool-output-denied', toolCallId: chunk.toolCallId });
        else out.push({ type: 'tool-output-error', toolCallId: chunk.toolCallId, errorText: chunk.error?.message ?? 'The tool failed.' });
        return;
      case 'custom':
        out.push({ type: `data-${chunk.eventName}`, data: chunk.data ?? null });
        return;
      case 'warning':
        out.push({ type: WARNING_DATA_PART, data: chunk.errorInfo, transient: true });
        return;
      case 'suspended':
        this.#closeStep(out);
        out.push({ type: 'finish', finishReason: 'tool-calls' });
        this.#ended = true;
        return;
      case 'end':
        this.#closeStep(out);
        out.push({ type: 'finish', finishReason: 'stop' });
        this.#ended = true;
        return;
      case 'error':
        this.#closeStep(out);
        out.push(...errorChunks(chunk.status, chunk.errorInfo));
        this.#ended = true;
        return;
      default:
        return;
    }
  }
}

function errorChunks(status: 'failed' | 'interrupted', info: AgentErrorInfo): UiMessageChunk[] {
  if (status === 'interrupted') return [{ type: 'abort', reason: info.message }];
  return [{ type: ERROR_DATA_PART, data: info }, { type: 'error', errorText: info.message }, { type: 'finish', finishReason: 'error' }];
}
