import { randomUUID } from 'node:crypto';
import type { AgentConfig } from '../../define.js';
import { AgentError } from '../../errors.js';
import type { HookManager } from '../../hooks/manager.js';
import type { AgentHandle, AgentRuntime, ExecuteOptions, RecoverOptions, ResumeOptions, RetryOptions, RunCallOptions } from '../../runtime/agent-runtime.js';
import type { AgentResult } from '../../runtime/result.js';
import { InMemoryUsageStore } from '../../memory/usage-store.js';
import type { UsageStore } from '../../usage.js';
import type { CrashControl, LeaseControl, ProcessControl, RuntimeInstance, StoreFaults } from './factory.js';
import { TraceRecorder, orderParallelCalls, orderToolRows, traceMessage, type HookLayer } from './recorder.js';
import { toJson, type JsonValue, type RuntimeTrace, type TraceEntry, type TraceEntryName, type TraceNote, type TraceResult, type TraceRun, type TraceSession } from './trace.js';
import type { Writable } from '../../writable.js';

/** A promise a scenario resolves itself, to order a tool or a hook after something else happened. */
export interface Deferred<T = void> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  /** The promise, or a rejection naming the deferred after `timeoutMs` (default 5 s): a scenario never hangs. */
  wait(timeoutMs?: number): Promise<T>;
}

/** What a scenario drives the runtime with: the public API, recorded. */
export interface ScenarioContext {
  /** The runtime under test (calls made on it directly are not recorded as entries). */
  readonly runtime: AgentRuntime;
  /** A new session id, unique to this run of the scenario; sessions are numbered in the order they are made. */
  sessionId(): string;
  /** The hooks of an agent: the scenario's own handlers (wrapped to be recorded) and a recorder at every other point. */
  hooks<TState = unknown, TOutput = unknown>(...layers: HookLayer<TState, TOutput>[]): HookManager<TState, TOutput>;
  /** `runtime.execute`, recorded as an entry (a refusal is recorded and rethrown). */
  execute<TState, TOutput>(agent: AgentConfig<TState, TOutput>, input: string, options?: ExecuteOptions<NoInfer<TState>, NoInfer<TOutput>>): Promise<AgentHandle<TState, TOutput>>;
  /** `execute` on another runtime (e.g. a doomed one of capability `crashRecovery`), recorded the same way. */
  executeOn<TState, TOutput>(runtime: AgentRuntime, agent: AgentConfig<TState, TOutput>, input: string, options?: ExecuteOptions<NoInfer<TState>, NoInfer<TOutput>>): Promise<AgentHandle<TState, TOutput>>;
  /** `runtime.send`, recorded. */
  send(sessionId: string, message: string, options?: RunCallOptions): Promise<AgentHandle>;
  /** `runtime.resume`, recorded. */
  resume(sessionId: string, options: ResumeOptions): Promise<AgentHandle>;
  /** `runtime.submitToolResult`, recorded. */
  submitToolResult(sessionId: string, toolCallId: string, result: unknown, options?: RunCallOptions & { readonly isError?: boolean }): Promise<AgentHandle>;
  /** `runtime.approve`, recorded. */
  approve(sessionId: string, toolCallId: string, options?: RunCallOptions & { readonly input?: unknown; readonly reason?: string }): Promise<AgentHandle>;
  /** `runtime.reject`, recorded. */
  reject(sessionId: string, toolCallId: string, options?: RunCallOptions & { readonly reason?: string }): Promise<AgentHandle>;
  /** `runtime.retry`, recorded. */
  retry(sessionId: string, options?: RetryOptions): Promise<AgentHandle>;
  /** `runtime.recover`, called until it returns a run (a dead process's lease must expire first); each run is recorded. */
  recover(options: RecoverOptions): Promise<AgentHandle[]>;
  /** Awaits a run's result (bounded) and records it in the trace. */
  result<TState, TOutput>(handle: AgentHandle<TState, TOutput>): Promise<AgentResult<TState, TOutput>>;
  /** Records a value in the trace's notes. */
  note(label: string, value: unknown): void;
  /** A promise the scenario resolves itself. */
  deferred<T = void>(label: string): Deferred<T>;
  /** Waits `ms` milliseconds. */
  sleep(ms: number): Promise<void>;
  /** The store faults of the instance (capability `storeFaults`). */
  faults(): StoreFaults;
  /** Lease take-overs (capability `leaseLoss`). */
  leases(): LeaseControl;
  /** Doomed runtimes (capability `crashRecovery`). */
  crashes(): CrashControl;
  /** Second processes on the same stores (capability `secondProcess`). */
  processes(): ProcessControl;
  /** The usage store to pass to `execute({ usageStore })`: the instance's stores' own, else one in-memory store for the scenario. */
  usageStore(): UsageStore;
}

/** How long a scenario waits for a run's result before giving up. */
const RESULT_TIMEOUT_MS = 8_000;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function bounded<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Numbers raw ids in order of first appearance and replaces them, wherever they occur as whole strings. */
class IdNumbering {
  readonly #placeholders = new Map<string, string>();
  readonly #counters = { run: 0, session: 0, call: 0 };
  constructor(
    readonly runs: ReadonlySet<string>,
    readonly sessions: ReadonlySet<string>,
    readonly calls: ReadonlySet<string>,
  ) {}

  number(kind: 'run' | 'session' | 'call', raw: string): string {
    let placeholder = this.#placeholders.get(raw);
    if (placeholder === undefined) {
      placeholder = `${kind}#${++this.#counters[kind]}`;
      this.#placeholders.set(raw, placeholder);
    }
    return placeholder;
  }

  placeholder(raw: string): string | undefined {
    return this.#placeholders.get(raw);
  }

  /** The value with every known id replaced by its placeholder (numbering new ones). */
  apply<T>(value: T): T {
    const walk = (v: unknown): unknown => {
      if (typeof v === 'string') {
        if (this.runs.has(v)) return this.number('run', v);
        if (this.sessions.has(v)) return this.number('session', v);
        if (this.calls.has(v)) return this.number('call', v);
        return v;
      }
      if (Array.isArray(v)) return v.map(walk);
      if (v !== null && typeof v === 'object') {
        const out: Record<string, unknown> = {};
        for (const [k, inner] of Object.entries(v)) out[k] = walk(inner);
        return out;
      }
      return v;
    };
    return walk(value) as T;
  }
}

/** The {@link ScenarioContext} of one scenario run; it also builds the trace. */
export class ScenarioRecorder implements ScenarioContext {
  readonly runtime: AgentRuntime;
  readonly #instance: RuntimeInstance;
  readonly #scenario: string;
  readonly #hooks = new TraceRecorder();
  readonly #entries: TraceEntry[] = [];
  readonly #notes: TraceNote[] = [];
  readonly #results = new Map<string, AgentResult>();
  readonly #madeSessions: string[] = [];
  readonly #prefix = randomUUID().slice(0, 8);
  #usage: UsageStore | undefined;

  constructor(scenario: string, instance: RuntimeInstance) {
    this.#scenario = scenario;
    this.#instance = instance;
    this.runtime = instance.runtime;
  }

  sessionId(): string {
    const id = `conf-${this.#prefix}-${this.#madeSessions.length + 1}`;
    this.#madeSessions.push(id);
    this.#hooks.sessionIds.add(id);
    return id;
  }

  hooks<TState = unknown, TOutput = unknown>(...layers: HookLayer<TState, TOutput>[]): HookManager<TState, TOutput> {
    return this.#hooks.manager(layers);
  }

  async #entry(entry: TraceEntryName, call: () => Promise<AgentHandle>): Promise<AgentHandle> {
    try {
      const handle = await call();
      this.#see(handle);
      this.#entries.push({ entry, session: handle.sessionId, run: handle.runId });
      return handle;
    } catch (error) {
      this.#entries.push({ entry, rejected: AgentError.isInstance(error) ? error.code : 'error' });
      throw error;
    }
  }

  #see(handle: AgentHandle): void {
    this.#hooks.runIds.add(handle.runId);
    this.#hooks.sessionIds.add(handle.sessionId);
  }

  async execute<TState, TOutput>(agent: AgentConfig<TState, TOutput>, input: string, options?: ExecuteOptions<NoInfer<TState>, NoInfer<TOutput>>): Promise<AgentHandle<TState, TOutput>> {
    return (await this.#entry('execute', () => this.runtime.execute(agent, input, options) as Promise<AgentHandle>)) as AgentHandle<TState, TOutput>;
  }

  async executeOn<TState, TOutput>(runtime: AgentRuntime, agent: AgentConfig<TState, TOutput>, input: string, options?: ExecuteOptions<NoInfer<TState>, NoInfer<TOutput>>): Promise<AgentHandle<TState, TOutput>> {
    return (await this.#entry('execute', () => runtime.execute(agent, input, options) as Promise<AgentHandle>)) as AgentHandle<TState, TOutput>;
  }

  send(sessionId: string, message: string, options?: RunCallOptions): Promise<AgentHandle> {
    return this.#entry('send', () => this.runtime.send(sessionId, message, options));
  }

  resume(sessionId: string, options: ResumeOptions): Promise<AgentHandle> {
    return this.#entry('resume', () => this.runtime.resume(sessionId, options));
  }

  submitToolResult(sessionId: string, toolCallId: string, result: unknown, options?: RunCallOptions & { readonly isError?: boolean }): Promise<AgentHandle> {
    return this.#entry('submitToolResult', () => this.runtime.submitToolResult(sessionId, toolCallId, result, options));
  }

  approve(sessionId: string, toolCallId: string, options?: RunCallOptions & { readonly input?: unknown; readonly reason?: string }): Promise<AgentHandle> {
    return this.#entry('approve', () => this.runtime.approve(sessionId, toolCallId, options));
  }

  reject(sessionId: string, toolCallId: string, options?: RunCallOptions & { readonly reason?: string }): Promise<AgentHandle> {
    return this.#entry('reject', () => this.runtime.reject(sessionId, toolCallId, options));
  }

  retry(sessionId: string, options?: RetryOptions): Promise<AgentHandle> {
    return this.#entry('retry', () => this.runtime.retry(sessionId, options));
  }

  async recover(options: RecoverOptions): Promise<AgentHandle[]> {
    const deadline = Date.now() + 5_000;
    for (;;) {
      const handles = await this.runtime.recover(options);
      if (handles.length > 0) {
        for (const handle of handles) {
          this.#see(handle);
          this.#entries.push({ entry: 'recover', session: handle.sessionId, run: handle.runId });
        }
        return handles;
      }
      if (Date.now() > deadline) {
        this.#entries.push({ entry: 'recover', rejected: 'nothing_recovered' });
        throw new Error('recover() found no run to continue within 5 s');
      }
      await sleep(25);
    }
  }

  async result<TState, TOutput>(handle: AgentHandle<TState, TOutput>): Promise<AgentResult<TState, TOutput>> {
    this.#see(handle as AgentHandle);
    const result = await bounded(handle.result(), RESULT_TIMEOUT_MS, `the result of run ${handle.runId}`);
    this.#results.set(handle.runId, result as AgentResult);
    return result;
  }

  note(label: string, value: unknown): void {
    this.#notes.push({ label, value: toJson(value) });
  }

  deferred<T = void>(label: string): Deferred<T> {
    let resolve!: (value: T) => void;
    const promise = new Promise<T>((r) => (resolve = r));
    return { promise, resolve, wait: (timeoutMs = 5_000) => bounded(promise, timeoutMs, label) };
  }

  sleep(ms: number): Promise<void> {
    return sleep(ms);
  }

  faults(): StoreFaults {
    if (!this.#instance.faults) throw new Error('the runtime instance has no `faults` (capability storeFaults)');
    return this.#instance.faults;
  }

  leases(): LeaseControl {
    if (!this.#instance.leases) throw new Error('the runtime instance has no `leases` (capability leaseLoss)');
    return this.#instance.leases;
  }

  crashes(): CrashControl {
    if (!this.#instance.crashes) throw new Error('the runtime instance has no `crashes` (capability crashRecovery)');
    return this.#instance.crashes;
  }

  usageStore(): UsageStore {
    this.#usage ??= this.#instance.usageStore ?? new InMemoryUsageStore();
    return this.#usage;
  }

  processes(): ProcessControl {
    if (!this.#instance.processes) throw new Error('the runtime instance has no `processes` (capability secondProcess)');
    return this.#instance.processes;
  }

  /** Builds the normalized trace: hooks (parallel calls listed per call), entries, notes, then every run and session as stored. */
  async trace(): Promise<RuntimeTrace> {
    const recorder = this.#hooks;
    recorder.freeze();
    const runtime = this.runtime;
    // Sessions first: their current runs and rows may name runs and calls no hook saw.
    const sessionIds = [...this.#madeSessions, ...[...recorder.sessionIds].filter((id) => !this.#madeSessions.includes(id))];
    const snapshots = new Map<string, Awaited<ReturnType<AgentRuntime['getSession']>>>();
    for (const id of sessionIds) {
      const snapshot = await runtime.getSession(id);
      snapshots.set(id, snapshot);
      if (snapshot?.currentRunId !== undefined) recorder.runIds.add(snapshot.currentRunId);
      for (const m of snapshot?.messages ?? []) {
        if (m.role === 'tool') recorder.callIds.add(m.toolCallId);
        if (m.role === 'assistant') for (const c of m.toolCalls ?? []) recorder.callIds.add(c.id);
      }
    }
    const records = new Map<string, Awaited<ReturnType<AgentRuntime['getRun']>>>();
    for (const id of recorder.runIds) records.set(id, await runtime.getRun(id));

    const ids = new IdNumbering(recorder.runIds, recorder.sessionIds, recorder.callIds);
    // Sessions the scenario made are numbered in the order it made them.
    for (const id of this.#madeSessions) ids.number('session', id);
    const entries = ids.apply(this.#entries);
    const hooks = ids.apply(orderParallelCalls(recorder.events, recorder.callOrder).map((e) => e.event));
    const notes = ids.apply(this.#notes);

    const sessions: TraceSession[] = sessionIds.map((id) => {
      const snapshot = snapshots.get(id);
      if (!snapshot) return ids.apply({ session: id, found: false });
      return ids.apply({
        session: id,
        found: true,
        ...(snapshot.currentRunId === undefined ? {} : { currentRun: snapshot.currentRunId }),
        state: toJson(snapshot.state),
        transcript: orderToolRows(snapshot.messages).map(traceMessage),
      });
    });
    const runs: TraceRun[] = [...recorder.runIds].map((id) => {
      const record = records.get(id);
      const result = this.#results.get(id);
      return ids.apply({
        run: id,
        ...(record ? { session: record.sessionId } : {}),
        found: record !== undefined,
        ...(record
          ? {
              signal: record.signal,
              status: record.status,
              ...(record.error === undefined ? {} : { error: record.error.code }),
              // The output of a run that did not complete is the store's bookkeeping, not part of the contract.
              ...(record.output === undefined || record.status !== 'completed' ? {} : { output: toJson(record.output) }),
            }
          : {}),
        ...(result ? { result: traceResult(result) } : {}),
      });
    });
    const byNumber = (placeholder: string): number => Number(placeholder.slice(placeholder.indexOf('#') + 1));
    runs.sort((a, b) => byNumber(a.run) - byNumber(b.run));
    sessions.sort((a, b) => byNumber(a.session) - byNumber(b.session));
    return { scenario: this.#scenario, hooks, entries, notes, runs, sessions };
  }
}

function traceResult(result: AgentResult): TraceResult {
  const superseded = result.status === 'superseded';
  const out: Writable<TraceResult> = { status: result.status };
  if (result.error !== undefined) out.error = result.error.code;
  if (result.exitReason !== undefined) out.exitReason = result.exitReason;
  if (result.output !== undefined) out.output = toJson(result.output) as JsonValue;
  if (!superseded) {
    out.steps = result.stepCount;
    out.state = toJson(result.state);
  }
  return out;
}
