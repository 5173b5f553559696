// The runtime conformance suite must catch a broken runtime: a wrapper around JSAgentExecutor that drops
// every onAgentFail handler (agent-level and execution-level) fails exactly the scenarios that expect an
// onAgentFail. And a factory without capabilities must not pass the scenarios that need them.
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { describe, expect, it } from 'vitest';
import {
  describeRuntimeConformance,
  jsRuntimeFactory,
  regressionScenarios,
  stableStringify,
  runRuntimeScenario,
  runtimeFactory,
  runtimeScenarios,
  type RuntimeFactory,
  type ScenarioOutcome,
} from '../conformance/index.js';
import {
  guard,
  HOOK_POINTS,
  HookManager,
  InMemoryStateStore,
  InMemoryStreamManager,
  type AgentConfig,
  type AgentHandle,
  type AgentHooks,
  type AgentResult,
  type AgentRuntime,
  type CheckpointInfo,
  type ExecuteOptions,
  type RecoverOptions,
  type ResumeOptions,
  type RetryOptions,
  type RunCallOptions,
  type RunRecord,
  type SessionSnapshot,
  type StreamChunk,
  type StreamReadOptions,
} from '../index.js';

type AnyHandler = (...args: never[]) => unknown;

/** The same hooks without onAgentFail (policies and names kept). */
function withoutFail(hooks: AgentConfig<unknown, unknown>['hooks'] | HookManager | undefined): HookManager | undefined {
  if (hooks === undefined) return undefined;
  const source = hooks instanceof HookManager ? hooks : new HookManager(hooks);
  const out = new HookManager();
  for (const point of HOOK_POINTS) {
    if (point === 'onAgentFail') continue;
    for (const entry of source.entries(point)) {
      out.register({ [point]: guard(entry.handler as AnyHandler, { onError: entry.policy, name: entry.name }) } as AgentHooks);
    }
  }
  return out;
}

/** A broken runtime: every agent and every execution loses its onAgentFail handlers. */
class DropsOnAgentFail implements AgentRuntime {
  readonly #inner: AgentRuntime;
  readonly #agents = new WeakMap<object, AgentConfig<unknown, unknown>>();

  constructor(inner: AgentRuntime) {
    this.#inner = inner;
  }

  #agent<TState, TOutput>(agent: AgentConfig<TState, TOutput>): AgentConfig<TState, TOutput> {
    let stripped = this.#agents.get(agent);
    if (!stripped) {
      const hooks = withoutFail(agent.hooks as AgentConfig<unknown, unknown>['hooks']);
      // Sub-agents' children lose theirs too.
      const tools = agent.tools.map((tool) => (tool.subAgent?.kind === 'local' ? { ...tool, subAgent: { ...tool.subAgent, agent: this.#agent(tool.subAgent.agent) } } : tool));
      stripped = { ...(agent as AgentConfig<unknown, unknown>), ...(hooks ? { hooks } : {}), tools, toolsByName: new Map(tools.map((tool) => [tool.name, tool] as const)) };
      this.#agents.set(agent, stripped);
    }
    return stripped as unknown as AgentConfig<TState, TOutput>;
  }

  #options<T extends RunCallOptions>(options: T | undefined): T | undefined {
    if (!options) return options;
    const hooks = withoutFail(options.hooks);
    const hookManager = withoutFail(options.hookManager);
    // Execution hooks run after the manager's: one manager with both, in that order.
    return { ...options, hooks: undefined, hookManager: hooks && hookManager ? new HookManager(hookManager, hooks) : (hookManager ?? hooks) } as T;
  }

  execute<TState, TOutput>(agent: AgentConfig<TState, TOutput>, input: string, options?: ExecuteOptions<NoInfer<TState>, NoInfer<TOutput>>): Promise<AgentHandle<TState, TOutput>> {
    return this.#inner.execute(this.#agent(agent), input, this.#options(options));
  }
  send(sessionId: string, message: string, options?: RunCallOptions): Promise<AgentHandle> {
    return this.#inner.send(sessionId, message, this.#options(options));
  }
  resume(sessionId: string, options: ResumeOptions): Promise<AgentHandle> {
    return this.#inner.resume(sessionId, this.#options(options) ?? options);
  }
  submitToolResult(sessionId: string, toolCallId: string, result: unknown, options?: RunCallOptions & { readonly isError?: boolean }): Promise<AgentHandle> {
    return this.#inner.submitToolResult(sessionId, toolCallId, result, this.#options(options));
  }
  approve(sessionId: string, toolCallId: string, options?: RunCallOptions & { readonly input?: unknown; readonly reason?: string; readonly signature?: string }): Promise<AgentHandle> {
    return this.#inner.approve(sessionId, toolCallId, this.#options(options));
  }
  reject(sessionId: string, toolCallId: string, options?: RunCallOptions & { readonly reason?: string; readonly signature?: string }): Promise<AgentHandle> {
    return this.#inner.reject(sessionId, toolCallId, this.#options(options));
  }
  retry(sessionId: string, options?: RetryOptions): Promise<AgentHandle> {
    return this.#inner.retry(sessionId, this.#options(options));
  }
  stop(sessionId: string, reason?: string): Promise<AgentResult | undefined> {
    return this.#inner.stop(sessionId, reason);
  }
  interrupt(sessionId: string, reason?: string): Promise<AgentResult | undefined> {
    return this.#inner.interrupt(sessionId, reason);
  }
  readStream(sessionId: string, options?: StreamReadOptions): AsyncIterable<StreamChunk> {
    return this.#inner.readStream(sessionId, options);
  }
  getSession(sessionId: string): Promise<SessionSnapshot | undefined> {
    return this.#inner.getSession(sessionId);
  }
  getRun(runId: string): Promise<RunRecord | undefined> {
    return this.#inner.getRun(runId);
  }
  listCheckpoints(sessionId: string): Promise<readonly CheckpointInfo[]> {
    return this.#inner.listCheckpoints(sessionId);
  }
  recover(options: RecoverOptions): Promise<AgentHandle[]> {
    const agents = options.agents instanceof Map ? [...options.agents.values()] : (options.agents as readonly AgentConfig<unknown, unknown>[]);
    const hooks = withoutFail(options.hooks);
    const hookManager = withoutFail(options.hookManager);
    return this.#inner.recover({
      ...options,
      agents: agents.map((a) => this.#agent(a)),
      hooks: undefined,
      hookManager: hooks && hookManager ? new HookManager(hookManager, hooks) : (hookManager ?? hooks),
    });
  }
  registerAgent(agent: AgentConfig<unknown, unknown>): this {
    this.#inner.registerAgent(this.#agent(agent));
    return this;
  }
  close(): Promise<void> {
    return this.#inner.close();
  }
}

const memory = jsRuntimeFactory({
  llmAdapter: new VercelAIAdapter(),
  openStores: () => ({ stateStore: new InMemoryStateStore(), streamManager: new InMemoryStreamManager(), close: () => undefined }),
});

const broken: RuntimeFactory = runtimeFactory(async (needs) => {
  const instance = await memory(needs);
  return { ...instance, runtime: new DropsOnAgentFail(instance.runtime) };
}, memory.capabilities);

/** The scenarios whose expected trace has an onAgentFail event, by name (the ones the broken runtime must fail). */
const EXPECT_ON_AGENT_FAIL = [
  'lifecycle/fails-after-start',
  'lifecycle/terminal-commit-fails',
  'start/retry-owes-start-work',
  'start/retry-owes-start-work-without-message',
  'llm/retries-exhausted',
  'limits/max-steps-with-output-schema',
  'policy/fail-run-on-agent-start',
  'policy/fail-run-initial-on-message',
  'policy/fail-run-before-llm',
  'policy/fail-run-after-llm',
  'policy/fail-run-before-tool',
  'policy/fail-run-after-tool-keeps-llm-writes',
  'policy/fail-run-on-state-change',
  'policy/fail-run-on-message',
  'policy/fail-run-on-exit',
  'policy/fail-closed-after-llm',
  'policy/fail-closed-after-tool',
  'policy/on-agent-fail-observe-only',
  'policy/on-agent-retry-observe-only',
  'stop/handle.stop-during-model-call',
  'stop/abortSignal-during-model-call',
  'stop/runtime.stop-during-model-call',
  'stop/handle.interrupt-during-tools',
  'stop/abortSignal-during-tools',
  'stop/finish-with-call-kept',
  'retry/later-step',
  'retry/with-message',
  'retry/to-genesis',
  'retry/after-interrupt',
  'subagent/child-fails',
  'subagent/stop-parent-stops-child',
  'subagent/supersede-parent-ends-child',
  'subagent/lost-lease-ends-child',
  'steer/before-llm-block',
  'policy/fail-closed-before-llm',
  'stop/cancels-running-call',
];

describe('the runtime conformance suite catches a runtime that drops onAgentFail', () => {
  it('fails exactly the scenarios that expect onAgentFail, each on its missing onAgentFail event, and passes the others', async () => {
    const outcomes: ScenarioOutcome[] = [];
    for (const scenario of runtimeScenarios) outcomes.push(await runRuntimeScenario(scenario, broken));
    const failing = outcomes.filter((o) => o.failures.length > 0).map((o) => o.scenario);
    expect(failing).toEqual(EXPECT_ON_AGENT_FAIL);
    // The list above is what the expected traces say, not a snapshot of this run.
    const fromExpectations = runtimeScenarios.filter((s) => s.expected.hooks.some((e) => e.point === 'onAgentFail')).map((s) => s.name);
    expect(fromExpectations).toEqual(EXPECT_ON_AGENT_FAIL);
    for (const outcome of outcomes.filter((o) => o.failures.length > 0)) {
      expect(outcome.failures.join('\n'), outcome.scenario).toContain('"point":"onAgentFail"');
      expect(outcome.trace.hooks.some((e) => e.point === 'onAgentFail'), outcome.scenario).toBe(false);
    }
  }, 120_000);

  it('the same scenarios pass on the intact runtime', async () => {
    for (const name of ['lifecycle/fails-after-start', 'stop/abortSignal-during-tools', 'policy/on-agent-fail-observe-only']) {
      const scenario = runtimeScenarios.find((s) => s.name === name);
      if (!scenario) throw new Error(`no scenario ${name}`);
      expect((await runRuntimeScenario(scenario, memory)).failures, name).toEqual([]);
    }
  });
});

describe('the scenario list', () => {
  it('has unique names, each prefixed by a short form of its topic, and JSON expectations', () => {
    const all = runtimeScenarios;
    const names = all.map((s) => s.name);
    expect(new Set(names).size).toBe(names.length);
    expect(runtimeScenarios.length).toBeGreaterThanOrEqual(60);
    for (const scenario of all) {
      expect(scenario.name, scenario.name).toMatch(/^(lifecycle|start|suspend|steer|tools|llm|limits|policy|stop|supersede|retry|rewind|recover|subagent)\//);
      expect(stableStringify(JSON.parse(JSON.stringify(scenario.expected))), scenario.name).toBe(stableStringify(scenario.expected));
    }
    // The scenarios runtime-js once failed are part of the suite.
    for (const regression of regressionScenarios) expect(runtimeScenarios.map((s) => s.name)).toContain(regression.name);
  });
});

describe('a factory without capabilities', () => {
  const bare = runtimeFactory(async (needs) => {
    const { faults: _faults, leases: _leases, crashes: _crashes, processes: _processes, ...rest } = await memory(needs);
    return rest;
  });

  it('does not pass a scenario that needs one: the outcome names the missing capability', async () => {
    const needing = runtimeScenarios.filter((s) => (s.needs ?? []).length > 0);
    expect(needing.length).toBeGreaterThan(0);
    for (const scenario of needing) {
      const outcome = await runRuntimeScenario(scenario, bare);
      expect(outcome.failures[0], scenario.name).toMatch(/^the scenario needs (storeFaults|leaseLoss|crashRecovery|secondProcess), which the runtime factory does not declare$/);
    }
  });
});

// The declared list of a runtime that offers none of the capabilities: the suite's first test asserts it.
describeRuntimeConformance(
  'JSAgentExecutor on the in-memory stores, without capabilities',
  runtimeFactory(async (needs) => {
    const { faults: _faults, leases: _leases, crashes: _crashes, processes: _processes, ...rest } = await memory(needs);
    return rest;
  }),
  {
    notCovered: [
      'lifecycle/terminal-commit-fails',
      'lifecycle/fails-at-entry',
      'lifecycle/fails-at-stream-claim',
      'supersede/lost-lease',
      'recover/died-in-start-work',
      'recover/died-mid-step',
      'recover/died-before-terminal-commit',
      'subagent/parent-suspends-when-its-process-stops',
      'recover/sub-agent-parent-reattaches',
      'subagent/lost-lease-ends-child',
    ],
  },
);
