import type { Draft, EmittableChunk, HookContext, HookPoint, RunTokenUsage, StateChangeSource } from '../hooks/types.js';
import type { Message } from '../messages.js';
import type { StreamChunkInput } from '../stream.js';
import type { WriteScope } from './hook-dispatch.js';
import type { RunBooks } from './run-books.js';
import type { RunSetup } from './run-setup.js';
import { tokenUsageOf } from './run-metadata.js';

/** The fields every chunk of a run carries. */
export interface ChunkFields {
  readonly streamId: string;
  readonly agentId: string;
  readonly agentType: string;
  readonly runId: string;
  readonly timestamp: number;
}

/** What a hook context reads and writes through: the run, seen from its hooks and tools. */
export interface HookHost {
  readonly setup: RunSetup;
  /** Steps this run has committed: the 0-based index of the current step. */
  readonly stepCount: number;
  readonly signal: AbortSignal;
  /** The working custom state. */
  readonly state: unknown;
  updateState(updater: (draft: Draft<unknown>) => void, source: StateChangeSource, scope: WriteScope, toolName?: string): void;
  updateMessages(updater: (messages: Message[]) => void, scope: WriteScope): Promise<void>;
  emit(chunk: StreamChunkInput): void | Promise<unknown>;
  emitNoWait(chunk: StreamChunkInput): void;
  chunkBase(): ChunkFields;
  /** The run's books: its spend and tool call counts (the run metadata of rule 203). */
  readonly books: Pick<RunBooks, 'spend' | 'toolCallCounts'>;
}

/**
 * The HookContext of one hook point invocation. Building one writes four fields (and the run's optional
 * attribution, when it has some): the run's required fields (sessionId, runId, agentType, streamId, attempt)
 * are accessors that read the run's setup, which does not change while the run lives, and stepCount and
 * state read the live run. `toJSON()` gives every field as a plain object.
 */
export class HookCallContext implements HookContext<unknown, unknown> {
  declare readonly hookPoint: HookPoint;
  // The optional fields are own properties, set only when the run has them (an optional field is absent, not
  // undefined); the run's required fields are accessors below.
  declare readonly parentSessionId?: string;
  declare readonly parentToolCallId?: string;
  declare readonly userId?: string;
  declare readonly tags?: readonly string[];
  declare readonly metadata?: Readonly<Record<string, string>>;
  // Not #private: keeps the object cheap to build on every invocation.
  declare private readonly host: HookHost;
  declare private readonly scope: WriteScope;
  /** The step this invocation belongs to, read when it began (its idempotency key's step). */
  declare private readonly step: number;

  constructor(host: HookHost, point: HookPoint, scope: WriteScope) {
    this.hookPoint = point;
    this.host = host;
    this.scope = scope;
    this.step = host.stepCount;
    const s = host.setup;
    if (s.parentSessionId !== undefined) this.parentSessionId = s.parentSessionId;
    if (s.parentToolCallId !== undefined) this.parentToolCallId = s.parentToolCallId;
    if (s.userId !== undefined) this.userId = s.userId;
    if (s.tags !== undefined) this.tags = s.tags;
    if (s.metadata !== undefined) this.metadata = s.metadata;
  }

  get sessionId(): string {
    return this.host.setup.sessionId;
  }

  get runId(): string {
    return this.host.setup.runId;
  }

  get agentType(): string {
    return this.host.setup.agent.name;
  }

  get streamId(): string {
    return this.host.setup.streamId;
  }

  /** `runId:step:toolCallId-or-dash:hookPoint`, the same for every retry of the same invocation. */
  get idempotencyKey(): string {
    return `${this.host.setup.runId}:${this.step}:${this.scope.callId ?? '-'}:${this.hookPoint}`;
  }

  get attempt(): number {
    return this.host.setup.epoch;
  }

  get stepCount(): number {
    return this.host.stepCount;
  }

  get abortSignal(): AbortSignal {
    return this.host.signal;
  }

  get hookContext(): unknown {
    return this.host.setup.hookContext;
  }

  get tokenUsage(): RunTokenUsage {
    return tokenUsageOf(this.host.books.spend);
  }

  get toolCallCounts(): Readonly<Record<string, number>> {
    return this.host.books.toolCallCounts();
  }

  getState(): unknown {
    return this.host.state;
  }

  updateState(updater: (draft: Draft<unknown>) => void): void {
    this.host.updateState(updater, 'hook', this.scope);
  }

  async updateMessages(updater: (messages: Message[]) => void): Promise<void> {
    await this.host.updateMessages(updater, this.scope);
  }

  async emit(chunk: EmittableChunk): Promise<void> {
    const base = this.host.chunkBase();
    await this.host.emit({ ...base, ...chunk, streamId: base.streamId, runId: base.runId } as StreamChunkInput);
  }

  async emitCustom(eventName: string, data: unknown): Promise<void> {
    await this.host.emit({ type: 'custom', eventName, data, ...this.host.chunkBase() });
  }

  /** The context's fields as a plain object (what `JSON.stringify(ctx)` writes); methods and the abort signal are left out. */
  toJSON(): Record<string, unknown> {
    const fields: Record<string, unknown> = {
      sessionId: this.sessionId,
      runId: this.runId,
      agentType: this.agentType,
      streamId: this.streamId,
      idempotencyKey: this.idempotencyKey,
      attempt: this.attempt,
      hookPoint: this.hookPoint,
      stepCount: this.stepCount,
      tokenUsage: this.tokenUsage,
      toolCallCounts: this.toolCallCounts,
    };
    // The own fields: the run's attribution it has, and a signal hook's fields (onAgentResumed's decisions, ...).
    for (const key of Object.keys(this)) if (key !== 'host' && key !== 'scope' && key !== 'step') fields[key] = (this as unknown as Record<string, unknown>)[key];
    return fields;
  }
}
