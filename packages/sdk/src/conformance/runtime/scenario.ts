import type { RuntimeCapability, RuntimeFactory, RuntimeInstance, RuntimeLimits } from './factory.js';
import { ScenarioRecorder, type ScenarioContext } from './context.js';
import { diffValues, type ExpectedTrace, type RuntimeTrace } from './trace.js';

/** The topics scenarios are grouped by (one file each). */
export type ScenarioTopic = 'lifecycle' | 'start signals' | 'suspension' | 'steering' | 'tools' | 'model calls and limits' | 'error policies' | 'stop' | 'supersede' | 'retry and rewind' | 'recovery' | 'sub-agents';

/** One scenario: what it drives through the public API, and the full trace it must produce. */
export interface RuntimeScenario {
  /** A stable, unique name: `<topic>/<what>`. */
  readonly name: string;
  readonly topic: ScenarioTopic;
  /** What the scenario checks, with the rules it covers, numbered as in docs/rules.md (rule N, CN, DN). */
  readonly description: string;
  /** Capabilities the scenario needs beyond the public API (none by default). */
  readonly needs?: readonly RuntimeCapability[];
  /** The sub-agent limits the scenario's runtime is made with (the factory's defaults when absent). */
  readonly limits?: RuntimeLimits;
  /** Drives the runtime; it must leave nothing running that could still change the trace. */
  run(t: ScenarioContext): Promise<void>;
  /** The hand-written trace the scenario must produce. */
  readonly expected: ExpectedTrace;
}

/** How one scenario went on one runtime. */
export interface ScenarioOutcome {
  readonly scenario: string;
  /** The recorded trace (partial when the scenario threw or timed out). */
  readonly trace: RuntimeTrace;
  /** The expected trace, named. */
  readonly expected: RuntimeTrace;
  /** What did not match or went wrong, one line each; empty when the scenario passed. */
  readonly failures: readonly string[];
  /** Wall time of the scenario, setup and teardown included (not part of the trace). */
  readonly durationMs: number;
}

/** Options of {@link runRuntimeScenario}. */
export interface RunScenarioOptions {
  /** Bound of the scenario's own run (default 20 s); a scenario that hangs fails. */
  readonly timeoutMs?: number;
}

/** The capabilities a scenario needs that the factory does not declare. */
export function missingCapabilities(scenario: RuntimeScenario, factory: RuntimeFactory): RuntimeCapability[] {
  const declared = factory.capabilities ?? [];
  return (scenario.needs ?? []).filter((c) => !declared.includes(c));
}

function emptyTrace(scenario: string): RuntimeTrace {
  return { scenario, hooks: [], entries: [], notes: [], runs: [], sessions: [] };
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Runs one scenario on a fresh runtime from `makeRuntime` and returns its trace and the expectations it
 * failed. Never throws: setup errors, a scenario that throws or hangs, and a failing close are failures.
 */
export async function runRuntimeScenario(scenario: RuntimeScenario, makeRuntime: RuntimeFactory, options: RunScenarioOptions = {}): Promise<ScenarioOutcome> {
  const started = performance.now();
  const expected: RuntimeTrace = { scenario: scenario.name, notes: [], ...scenario.expected };
  const failures: string[] = [];
  const done = (trace: RuntimeTrace): ScenarioOutcome => ({ scenario: scenario.name, trace, expected, failures, durationMs: Math.round(performance.now() - started) });
  const missing = missingCapabilities(scenario, makeRuntime);
  if (missing.length > 0) {
    failures.push(`the scenario needs ${missing.join(', ')}, which the runtime factory does not declare`);
    return done(emptyTrace(scenario.name));
  }
  let instance: RuntimeInstance;
  try {
    instance = await makeRuntime({ capabilities: scenario.needs ?? [], ...(scenario.limits ? { limits: scenario.limits } : {}) });
  } catch (error) {
    failures.push(`the runtime factory failed: ${message(error)}`);
    return done(emptyTrace(scenario.name));
  }
  let trace = emptyTrace(scenario.name);
  try {
    const recorder = new ScenarioRecorder(scenario.name, instance);
    try {
      await withTimeout(scenario.run(recorder), options.timeoutMs ?? 20_000, 'the scenario');
    } catch (error) {
      failures.push(`the scenario threw: ${message(error)}`);
    }
    try {
      trace = await withTimeout(recorder.trace(), 10_000, 'reading the trace');
    } catch (error) {
      failures.push(`the trace could not be read: ${message(error)}`);
    }
  } finally {
    try {
      await withTimeout(instance.close(), 10_000, 'closing the runtime');
    } catch (error) {
      failures.push(`closing the runtime failed: ${message(error)}`);
    }
  }
  failures.push(...diffValues(expected, trace));
  return done(trace);
}
