// The runtime conformance suite on DBOSAgentExecutor (every run a DBOS workflow) and, in the same file on
// the same cluster, on JSAgentExecutor over the Postgres stores; a last test checks that every scenario's
// hook trace is the same on both.
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { describeRuntimeConformance, jsRuntimeFactory, type RuntimeTrace } from '@helix-agents/sdk/conformance';
import { expect, it } from 'vitest';
import { DBOSAgentExecutor } from './index.js';
import { useDBOSHarness } from './__tests__/harness.js';

const harness = useDBOSHarness();
const traces = { js: new Map<string, RuntimeTrace>(), dbos: new Map<string, RuntimeTrace>() };

const openStores = async () => {
  const stores = await harness.open();
  return { stateStore: stores.stateStore, streamManager: stores.streamManager, close: () => stores.close() };
};

// A process death cannot be simulated inside one DBOS process (the doomed run's workflow would still be
// running here); the two-worker SIGKILL matrix (dbos-kill-matrix.test.ts) covers recovery for real.
// The same holds for a second runtime that shuts down while its children run: on DBOS, shutdown()
// hands nothing off (DBOS continues the runs), so the awaiting_children hand-off scenario does not apply.
const RECOVERY = [
  'recover/died-in-start-work',
  'recover/died-mid-step',
  'recover/died-before-terminal-commit',
  'subagent/parent-suspends-when-its-process-stops',
  'recover/sub-agent-parent-reattaches',
];

describeRuntimeConformance('JSAgentExecutor on Postgres (the reference for the DBOS traces)', jsRuntimeFactory({ llmAdapter: new VercelAIAdapter(), openStores }), {
  onOutcome: (outcome) => traces.js.set(outcome.scenario, outcome.trace),
});

describeRuntimeConformance(
  'DBOSAgentExecutor on Postgres',
  jsRuntimeFactory({
    llmAdapter: new VercelAIAdapter(),
    openStores,
    capabilities: ['storeFaults', 'leaseLoss'],
    createExecutor: (stateStore, streamManager, llmAdapter, options) => new DBOSAgentExecutor(stateStore, streamManager, llmAdapter, { ...options, name: harness.unique('conformance') }),
  }),
  { notCovered: RECOVERY, onOutcome: (outcome) => traces.dbos.set(outcome.scenario, outcome.trace) },
);

it('rules 32, 116: every scenario leaves the same hook trace on DBOSAgentExecutor as on JSAgentExecutor over Postgres (onAgentComplete, onAgentSuspended and onAgentResumed included)', () => {
  expect(traces.dbos.size).toBeGreaterThan(50);
  for (const [scenario, trace] of traces.dbos) expect({ scenario, trace }).toEqual({ scenario, trace: traces.js.get(scenario) });
});
