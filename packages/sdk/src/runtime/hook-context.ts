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

/** The HookContext of one hook point invocation; stepCount and state read the live run. */
export class HookCallContext implements HookContext<unknown, unknown> {
  // Declared, not defined: the constructor writes each field once, in this order (the optional ones as
  // undefined when unset), instead of a class-field definition followed by an assignment.
  declare readonly sessionId: string;
  declare readonly runId: string;
  declare readonly agentType: string;
  declare readonly streamId: string;
  declare readonly parentSessionId?: string;
  declare readonly parentToolCallId?: string;
  declare readonly userId?: string;
  declare readonly tags?: readonly string[];
  declare readonly metadata?: Readonly<Record<string, string>>;
  declare readonly idempotencyKey: string;
  declare readonly attempt: number;
  declare readonly hookPoint: HookPoint;
  // Not #private: keeps the object cheap to build on every invocation.
  declare private readonly host: HookHost;
  declare private readonly scope: WriteScope;

  constructor(host: HookHost, point: HookPoint, scope: WriteScope) {
    const s = host.setup;
    this.sessionId = s.sessionId;
    this.runId = s.runId;
    this.agentType = s.agent.name;
    this.streamId = s.streamId;
    this.parentSessionId = s.parentSessionId;
    this.parentToolCallId = s.parentToolCallId;
    this.userId = s.userId;
    this.tags = s.tags;
    this.metadata = s.metadata;
    this.idempotencyKey = `${s.runId}:${host.stepCount}:${scope.callId ?? '-'}:${point}`;
    this.attempt = s.epoch;
    this.hookPoint = point;
    this.host = host;
    this.scope = scope;
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
}
