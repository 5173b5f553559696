import { describe, expect, it } from 'vitest';
import { missingCapabilities, runRuntimeScenario, type RuntimeScenario, type ScenarioOutcome } from './scenario.js';
import type { RuntimeFactory } from './factory.js';
import { runtimeScenarios } from './scenarios/index.js';

/** Options of {@link describeRuntimeConformance}. */
export interface RuntimeConformanceOptions {
  /** The scenarios to run (default: {@link runtimeScenarios}). */
  readonly scenarios?: readonly RuntimeScenario[];
  /**
   * The scenarios this runtime does not cover, because they need a capability its factory does not
   * declare. The suite asserts that this list is exactly the uncovered one, so coverage never shrinks
   * silently (default: none).
   */
  readonly notCovered?: readonly string[];
  /** Bound of each scenario's own run, in ms (default 20 s). */
  readonly timeoutMs?: number;
  /** Called with each scenario's outcome (e.g. to compare traces across runtimes afterwards). */
  readonly onOutcome?: (outcome: ScenarioOutcome) => void;
}

/**
 * The runtime conformance suite (vitest): for every scenario, a fresh runtime from `makeRuntime` is
 * driven through its public API and the recorded trace must equal the scenario's expected trace.
 * Scenarios that need a capability the factory lacks get no test of their own; one test lists them and
 * asserts the list equals `options.notCovered`.
 */
export function describeRuntimeConformance(name: string, makeRuntime: RuntimeFactory, options: RuntimeConformanceOptions = {}): void {
  const scenarios = options.scenarios ?? runtimeScenarios;
  const uncovered = scenarios.filter((s) => missingCapabilities(s, makeRuntime).length > 0).map((s) => s.name);
  const timeoutMs = options.timeoutMs ?? 20_000;
  describe(`runtime conformance: ${name}`, () => {
    it(`covers every scenario but the declared ones (not covered: ${uncovered.length === 0 ? 'none' : uncovered.join(', ')})`, () => {
      expect(uncovered).toEqual([...(options.notCovered ?? [])]);
    });
    const covered = scenarios.filter((s) => !uncovered.includes(s.name));
    for (const topic of [...new Set(covered.map((s) => s.topic))]) {
      describe(topic, () => {
        for (const scenario of covered) {
          if (scenario.topic !== topic) continue;
          it(`${scenario.name}: ${scenario.description}`, async () => {
            const outcome = await runRuntimeScenario(scenario, makeRuntime, { timeoutMs });
            options.onOutcome?.(outcome);
            expect(outcome.trace).toEqual(outcome.expected);
            expect(outcome.failures).toEqual([]);
          }, timeoutMs + 25_000);
        }
      });
    }
  });
}
