import type { AgentRuntime } from '../../runtime/agent-runtime.js';
import type { UsageStore } from '../../usage.js';

/**
 * What a runtime under test may offer beyond its public API, for the scenarios that need it. A factory
 * declares the ones it provides; a scenario that needs one it lacks is reported as not covered.
 * - `storeFaults`: the stores can be made to fail one operation ({@link StoreFaults});
 * - `leaseLoss`: another process can take a running run over ({@link LeaseControl});
 * - `crashRecovery`: a second runtime on the same stores can be made to die at a named point, so that
 *   `recover()` continues its run ({@link CrashControl});
 * - `secondProcess`: a second runtime on the same stores, as another process would run, which the
 *   scenario may close (its process stops) while runs are going ({@link ProcessControl}).
 */
export type RuntimeCapability = 'storeFaults' | 'leaseLoss' | 'crashRecovery' | 'secondProcess';

/** Every capability, in a stable order. */
export const RUNTIME_CAPABILITIES: readonly RuntimeCapability[] = Object.freeze(['storeFaults', 'leaseLoss', 'crashRecovery', 'secondProcess'] as const);

/** A store operation {@link StoreFaults.inject} makes fail once. */
export type StoreFault =
  /** The run-start commit (K1) of the next entry: the entry fails before anything is written. */
  | 'run_start'
  /** The stream claim of the next entry (after its K1). */
  | 'stream_claim'
  /** The terminal commit (K5) of the next run that completes. */
  | 'terminal_commit';

/** Injects store failures (capability `storeFaults`). */
export interface StoreFaults {
  /** Makes the next such operation fail, once. */
  inject(fault: StoreFault): void;
}

/** Simulates another process taking a run over (capability `leaseLoss`). */
export interface LeaseControl {
  /**
   * Another process claims the running run, as if this one had died (it fences this process out). The
   * runtime must notice at its next lease check, within a few hundred milliseconds.
   */
  takeOver(runId: string): Promise<void>;
}

/** The commit a doomed runtime's process dies in (it never returns): K2, the first K3, or K5. */
export type CrashPoint = 'turn_start' | 'step' | 'terminal';

/** A runtime whose process will die, on the same stores as the runtime under test. */
export interface DoomedRuntime {
  readonly runtime: AgentRuntime;
  /** Resolves when the process died (reached its crash point); its lease then expires within a second. */
  readonly died: Promise<void>;
}

/** Crashes for recovery scenarios (capability `crashRecovery`). */
export interface CrashControl {
  /** A second runtime on the same stores whose process dies in the first commit of this kind. */
  startDoomed(dieAt: CrashPoint): Promise<DoomedRuntime>;
}

/** Second processes (capability `secondProcess`). */
export interface ProcessControl {
  /**
   * A second runtime on the same stores, as another process would run. Its `close()` is its process
   * stopping: runs it still has must be left so that the runtime under test can continue them (a
   * parent waiting on sub-agent children suspends on them; other runs are handed to `recover()`).
   */
  start(): Promise<AgentRuntime>;
}

/**
 * Sub-agent limits a scenario runs under (the executor options of the same names); a factory passes them
 * to the runtime it makes. Unset limits keep the runtime's defaults.
 */
export interface RuntimeLimits {
  /** How deep sub-agents may nest (a child of the root is at depth 1). */
  readonly maxSubAgentDepth?: number;
  /** How many sub-agent calls one step may make; the calls beyond it are refused. */
  readonly maxSubAgentsPerStep?: number;
}

/** What one scenario needs from the runtime it gets, so a factory can configure it (e.g. a short lease). */
export interface RuntimeNeeds {
  readonly capabilities: readonly RuntimeCapability[];
  /** The sub-agent limits the scenario runs under (none: the runtime's defaults). */
  readonly limits?: RuntimeLimits;
}

/** A fresh runtime on fresh stores, for one scenario. */
export interface RuntimeInstance {
  readonly runtime: AgentRuntime;
  /** Present when the factory declares `storeFaults`. */
  readonly faults?: StoreFaults;
  /** Present when the factory declares `leaseLoss`. */
  readonly leases?: LeaseControl;
  /** Present when the factory declares `crashRecovery`. */
  readonly crashes?: CrashControl;
  /** Present when the factory declares `secondProcess`. */
  readonly processes?: ProcessControl;
  /**
   * The usage store of the instance's stores (a durable state store is one), which scenarios pass to
   * `execute({ usageStore })`; absent, scenarios use an in-memory one.
   */
  readonly usageStore?: UsageStore;
  /** Closes the runtime and its stores (runs still going may be abandoned). */
  close(): Promise<void>;
}

/**
 * Makes a fresh runtime on fresh stores for each scenario (sessions of one scenario never meet another's).
 * `capabilities` lists what its instances offer beyond the public API; see {@link runtimeFactory}.
 */
export interface RuntimeFactory {
  (needs: RuntimeNeeds): Promise<RuntimeInstance>;
  readonly capabilities?: readonly RuntimeCapability[];
}

/** Builds a {@link RuntimeFactory} from a function and the capabilities its instances offer. */
export function runtimeFactory(create: (needs: RuntimeNeeds) => Promise<RuntimeInstance>, capabilities: readonly RuntimeCapability[] = []): RuntimeFactory {
  const factory = (needs: RuntimeNeeds): Promise<RuntimeInstance> => create(needs);
  return Object.assign(factory, { capabilities: Object.freeze([...capabilities]) });
}
