import { AgentError, RunSupersededError, StateCommitError } from '../../errors.js';
import type { LLMAdapter } from '../../llm.js';
import { JSAgentExecutor, type JSAgentExecutorOptions } from '../../runtime/executor.js';
import { silentLogger } from '../../runtime/logger.js';
import type { Commit, StateStore } from '../../store.js';
import type { StreamManager } from '../../stream.js';
import type { UsageStore } from '../../usage.js';
import {
  RUNTIME_CAPABILITIES,
  runtimeFactory,
  type CrashControl,
  type CrashPoint,
  type DoomedRuntime,
  type LeaseControl,
  type ProcessControl,
  type RuntimeCapability,
  type RuntimeFactory,
  type StoreFault,
  type StoreFaults,
} from './factory.js';

/** The stores of one scenario, and how to release them. */
export interface ConformanceStores {
  readonly stateStore: StateStore;
  readonly streamManager: StreamManager;
  close(): void | Promise<void>;
}

/** Options of {@link jsRuntimeFactory}. */
export interface JSRuntimeFactoryOptions {
  /** Fresh, empty stores for one scenario (a new database, schema or in-memory pair). */
  readonly openStores: () => ConformanceStores | Promise<ConformanceStores>;
  /** The model adapter (e.g. `new VercelAIAdapter()`, which plays the scenarios' scripted models). */
  readonly llmAdapter: LLMAdapter;
  /** More executor options (logger defaults to silent; the lease is the suite's to set). */
  readonly executor?: Omit<JSAgentExecutorOptions, 'leaseMs'>;
  /** The capabilities to offer (default: all of them). */
  readonly capabilities?: readonly RuntimeCapability[];
  /**
   * Makes the executor under test (default: a `JSAgentExecutor`). A runtime built on runtime-js's loop
   * (one that supplies a `host`, such as runtime-dbos) passes its own subclass here.
   */
  readonly createExecutor?: (stateStore: StateStore, streamManager: StreamManager, llmAdapter: LLMAdapter, options: JSAgentExecutorOptions) => JSAgentExecutor;
}

/** Whether a state store is also a usage store (the durable ones and the in-memory one are). */
function isUsageStore(store: StateStore): store is StateStore & UsageStore {
  const candidate = store as Partial<UsageStore>;
  return typeof candidate.record === 'function' && typeof candidate.getRollup === 'function';
}

/** The lease of runs in scenarios that take a lease over (renewed every third of it). */
const SHORT_LEASE_MS = 90;
/** The lease of a doomed process's runs: short, so that recover() finds them soon after the death. */
const DOOMED_LEASE_MS = 60;

/**
 * Calls a method of `target` with `target` as `this` (class stores keep #private fields, which a Proxy
 * receiver cannot reach).
 */
function passThrough<T extends object>(target: T, overrides: Partial<Record<keyof T, unknown>>): T {
  return new Proxy(target, {
    get(object, property) {
      if (Object.prototype.hasOwnProperty.call(overrides, property)) return (overrides as Record<PropertyKey, unknown>)[property];
      const value: unknown = Reflect.get(object, property);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(object) : value;
    },
  });
}

class Faults implements StoreFaults {
  readonly armed = new Set<StoreFault>();
  inject(fault: StoreFault): void {
    this.armed.add(fault);
  }
  take(fault: StoreFault): boolean {
    return this.armed.delete(fault);
  }
}

function dies(commit: Commit, at: CrashPoint): boolean {
  if (at === 'turn_start') return commit.kind === 'turn_start';
  if (at === 'step') return commit.kind === 'step';
  return commit.kind === 'terminal';
}

/**
 * A {@link RuntimeFactory} of runtime-js (`JSAgentExecutor`) over the stores `openStores` makes, with
 * every capability: store faults through a store wrapper, lease loss through a short lease and a
 * `claimRun` by "another process", crashes through a second executor whose store stops answering,
 * second processes as more executors on the same stores.
 */
export function jsRuntimeFactory(options: JSRuntimeFactoryOptions): RuntimeFactory {
  const capabilities = options.capabilities ?? RUNTIME_CAPABILITIES;
  return runtimeFactory(async (needs) => {
    const stores = await options.openStores();
    const faults = new Faults();
    const stateStore = passThrough(stores.stateStore, {
      beginRun: (request: Parameters<StateStore['beginRun']>[0]) => {
        if (faults.take('run_start')) return Promise.reject(new StateCommitError('The run-start commit failed (injected fault).'));
        return stores.stateStore.beginRun(request);
      },
      commit: (commit: Commit) => {
        if (commit.kind === 'terminal' && commit.runStatus === 'completed' && faults.take('terminal_commit')) {
          return Promise.reject(new Error('disk full (injected fault)'));
        }
        return stores.stateStore.commit(commit);
      },
    });
    const streamManager = passThrough(stores.streamManager, {
      claim: (streamId: string, runId: string) => {
        if (faults.take('stream_claim')) return Promise.reject(new AgentError('stream_closed', 'The stream could not be claimed (injected fault).'));
        return stores.streamManager.claim(streamId, runId);
      },
    });
    const executorOptions: JSAgentExecutorOptions = {
      logger: silentLogger,
      ...options.executor,
      ...(needs.capabilities.includes('leaseLoss') ? { leaseMs: SHORT_LEASE_MS } : {}),
      ...needs.limits,
    };
    const executor = options.createExecutor
      ? options.createExecutor(stateStore, streamManager, options.llmAdapter, executorOptions)
      : new JSAgentExecutor(stateStore, streamManager, options.llmAdapter, executorOptions);
    const doomed: JSAgentExecutor[] = [];

    const leases: LeaseControl = {
      async takeOver(runId) {
        // Another process decides this one is dead (its clock is ahead of the lease) and claims the run.
        await stores.stateStore.claimRun(runId, 'conformance:another-process', 60_000, Date.now() + 10 * 60_000);
      },
    };
    const crashes: CrashControl = {
      async startDoomed(dieAt): Promise<DoomedRuntime> {
        let dead = false;
        let died!: () => void;
        const diedPromise = new Promise<void>((resolve) => (died = resolve));
        const never = new Promise<never>(() => {});
        const dying = passThrough(stores.stateStore, {
          commit: (commit: Commit) => {
            if (dead) return never;
            if (dies(commit, dieAt)) {
              dead = true;
              died();
              return never;
            }
            return stores.stateStore.commit(commit);
          },
          appendJournal: (entry: Parameters<StateStore['appendJournal']>[0]) => (dead ? never : stores.stateStore.appendJournal(entry)),
          renewLease: (runId: string, epoch: number, leaseMs: number, now: number) => {
            // A dead process renews nothing: its lease runs out and recover() may claim the run.
            if (dead) return Promise.reject(new RunSupersededError('', runId, undefined));
            return stores.stateStore.renewLease(runId, epoch, leaseMs, now);
          },
        });
        const runtime = new JSAgentExecutor(dying, streamManager, options.llmAdapter, { logger: silentLogger, ...options.executor, leaseMs: DOOMED_LEASE_MS });
        doomed.push(runtime);
        return { runtime, died: diedPromise };
      },
    };
    const others: JSAgentExecutor[] = [];
    const processes: ProcessControl = {
      async start() {
        const runtime = new JSAgentExecutor(stateStore, streamManager, options.llmAdapter, executorOptions);
        others.push(runtime);
        return runtime;
      },
    };
    return {
      runtime: executor,
      ...(isUsageStore(stores.stateStore) ? { usageStore: stateStore as StateStore & UsageStore } : {}),
      ...(capabilities.includes('storeFaults') ? { faults } : {}),
      ...(capabilities.includes('leaseLoss') ? { leases } : {}),
      ...(capabilities.includes('crashRecovery') ? { crashes } : {}),
      ...(capabilities.includes('secondProcess') ? { processes } : {}),
      async close() {
        await executor.close();
        for (const runtime of [...doomed, ...others]) await runtime.close();
        await stores.close();
      },
    };
  }, capabilities);
}
