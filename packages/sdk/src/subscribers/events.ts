import type { AgentErrorInfo } from '../errors.js';

/** One tool call of an `actions.requested` envelope. */
export interface RequestedAction {
  readonly callId: string;
  readonly toolName: string;
  /** The arguments the model sent (parsed JSON). */
  readonly args?: unknown;
  /** Set on sub-agent work: the parent's call that started it. */
  readonly parentCallId?: string;
}

/** The result of one tool call (`action.result`, and each entry of `actions.completed`). */
export interface ActionResult {
  readonly callId: string;
  readonly toolName: string;
  /** The result as the model saw it; for a failed call, the error message. */
  readonly output?: unknown;
  readonly isError: boolean;
  /** True when a dry run answered a side-effecting call without running it (rule 156). */
  readonly stubbed?: boolean;
  readonly parentCallId?: string;
  /** Why the call failed, when it did. */
  readonly error?: AgentErrorInfo;
}

/** Token counts of a turn (`turn.completed`), retried model attempts included. */
export interface TurnUsage {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cacheReadTokens: number;
  readonly cacheWriteTokens: number;
  readonly reasoningTokens?: number;
}

/** What a turn cost, priced with the agent's `limits.pricing`. */
export interface TurnCost {
  readonly totalUsd: number;
  /** The model the cost was priced against. */
  readonly model: string;
}

/**
 * `event.data` of every event type. The event vocabulary (docs/rules.md, rules 148–157); `message.appended`
 * is our one `*.appended` delta (assistant text as it streams).
 */
export interface SessionEventDataMap {
  /** The user's input of a turn. */
  'message.received': { readonly text: string };
  /** A piece of streamed assistant text. Skip deltas when you want the final text (it is in `turn.completed`). */
  'message.appended': { readonly delta: string; readonly stepIndex: number };
  /** The model asked for tool calls: one envelope per model step, before any of them runs. */
  'actions.requested': { readonly calls: readonly RequestedAction[]; readonly parentCallId?: string; readonly stepIndex: number };
  /** One tool call has its result (the live per-call envelope). */
  'action.result': ActionResult;
  /** Every call of a step has its result, in the order the model asked for them. */
  'actions.completed': { readonly results: readonly ActionResult[]; readonly parentCallId?: string; readonly stepIndex: number };
  /**
   * A read is running again after a transient failure; `attempt` is the try about to run. Part of the
   * vocabulary, but never emitted yet: the runtime does not retry tools.
   */
  'action.tool_retry': { readonly callId: string; readonly toolName: string; readonly attempt: number; readonly reason: string; readonly connection?: string };
  /** The turn's run completed. `result` is the agent's output. */
  'turn.completed': { readonly result?: unknown; readonly usage?: TurnUsage; readonly cost?: TurnCost };
  /** The turn's run failed (`error`) or was stopped (`cancelled`). */
  'turn.failed': { readonly message: string; readonly status?: 'error' | 'cancelled'; readonly error?: AgentErrorInfo };
}

/** The type of a session event: a key of the vocabulary. */
export type SessionEventType = keyof SessionEventDataMap;

/** Every event type, in the order a turn usually records them. */
export const SESSION_EVENT_TYPES: readonly SessionEventType[] = Object.freeze([
  'message.received',
  'message.appended',
  'actions.requested',
  'action.result',
  'actions.completed',
  'action.tool_retry',
  'turn.completed',
  'turn.failed',
] as const satisfies readonly SessionEventType[]);

/** One recorded event of type `T`. */
export interface SessionEventOf<T extends SessionEventType> {
  readonly type: T;
  /** The event's offset in the session's recorded log: increasing and stable, not gap-free. */
  readonly index: number;
  readonly sessionId: string;
  /** The turn the event belongs to. */
  readonly turnId?: string;
  /** When it was recorded (ms since the epoch). */
  readonly at: number;
  readonly data: Readonly<SessionEventDataMap[T]>;
}

/** A session event; `SessionEvent<'turn.completed'>` is one type, `SessionEvent` the union to switch on. */
export type SessionEvent<T extends SessionEventType = SessionEventType> = { [K in T]: SessionEventOf<K> }[T];

const TYPES = new Set<string>(SESSION_EVENT_TYPES);

/** True for a key of the event vocabulary. */
export function isSessionEventType(value: unknown): value is SessionEventType {
  return typeof value === 'string' && TYPES.has(value);
}
