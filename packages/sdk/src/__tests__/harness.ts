import { z } from 'zod';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import {
  AgentError,
  defineAgent,
  defineTool,
  InMemoryStateStore,
  InMemoryStreamManager,
  InMemoryUsageStore,
  JSAgentExecutor,
  type AgentConfig,
  type AgentDefinition,
  type HookPoint,
  type JSAgentExecutorOptions,
  type Logger,
  type StateStore,
  type StreamChunk,
  type ToolContext,
} from '../index.js';
import { createGate, createHookRecorder, createScriptedModel, type ScriptedStep, type ScriptedStepObject } from '../testing/index.js';

/** A logger that keeps what it was told, for assertions on observe-only errors. */
export function memoryLogger(): Logger & { readonly lines: string[] } {
  const lines: string[] = [];
  const keep = (level: string) => (message: string) => void lines.push(`${level}: ${message}`);
  return { lines, debug: keep('debug'), info: keep('info'), warn: keep('warn'), error: keep('error') };
}

/** Executor, stores and a scripted model wired together, as a user would. */
export function setup(options: { stateStore?: StateStore; executor?: JSAgentExecutorOptions } = {}) {
  const stateStore = options.stateStore ?? new InMemoryStateStore();
  const streamManager = new InMemoryStreamManager();
  const usageStore = new InMemoryUsageStore();
  const logger = memoryLogger();
  const executor = new JSAgentExecutor(stateStore, streamManager, new VercelAIAdapter(), { logger, ...options.executor });
  return { stateStore, streamManager, usageStore, executor, logger };
}

/** Runs `agent` on `input` (default `go`) to its end, on a fresh {@link setup}, with a hook recorder on `points` (default all). */
export async function recordedRun<TState, TOutput>(agent: AgentConfig<TState, TOutput>, options: { readonly input?: string; readonly points?: readonly HookPoint[] } = {}) {
  const wired = setup();
  const rec = createHookRecorder(options.points === undefined ? {} : { points: options.points });
  const handle = await wired.executor.execute(agent, options.input ?? 'go', { hooks: rec.hooks });
  return { ...wired, rec, handle, result: await handle.result() };
}

export const CounterState = z.object({ count: z.number().default(0), log: z.array(z.string()).default([]) });
export type Counter = z.infer<typeof CounterState>;

/** A tool that increments the counter and logs its input. */
export const incrementTool = defineTool({
  name: 'increment',
  description: 'Increment the counter',
  inputSchema: z.object({ by: z.number().int() }),
  execute: async (input, ctx) => {
    ctx.updateState<Counter>((draft) => {
      draft.count += input.by;
      draft.log.push(`+${input.by}`);
    });
    return { ok: true, by: input.by };
  },
});

/** A tool without arguments whose body is the point of the test (a gate, a state write, a throw). */
export function bareTool<TOutput>(name: string, description: string, execute: (input: Record<string, never>, ctx: ToolContext) => TOutput | Promise<TOutput>) {
  return defineTool({ name, description, inputSchema: z.object({}), execute });
}

/**
 * A tool without input that holds each call until `gate` opens and then returns `output`; `entered` opens
 * once a call is inside it.
 */
export function gatedTool<TOutput>(name: string, output: TOutput) {
  const gate = createGate();
  const entered = createGate();
  const tool = bareTool(name, 'waits for the gate', async () => {
    entered.open();
    await gate.opened;
    return output;
  });
  return { tool, gate, entered };
}

/** A hook handler or tool body that throws `new Error(message)`. */
export function throwing(message: string): () => never {
  return () => {
    throw new Error(message);
  };
}

/** An agent over the scripted model; the output is `{ answer }`. */
export function counterAgent(steps: readonly ScriptedStep[], overrides: Partial<AgentDefinition<Counter, { answer: string }>> = {}) {
  return defineAgent({
    name: 'counter',
    systemPrompt: 'You count.',
    stateSchema: CounterState,
    outputSchema: z.object({ answer: z.string() }),
    llmConfig: { model: createScriptedModel(steps), retry: { initialDelayMs: 1, maxDelayMs: 5 } },
    tools: [incrementTool],
    ...overrides,
  });
}

/** A text agent (no outputSchema) over the scripted model. */
export function textAgent(steps: readonly ScriptedStep[], overrides: Partial<AgentDefinition<Counter, string>> = {}) {
  return defineAgent({
    name: 'texter',
    stateSchema: CounterState,
    llmConfig: { model: createScriptedModel(steps), retry: { initialDelayMs: 1, maxDelayMs: 5 } },
    tools: [incrementTool],
    ...overrides,
  });
}

/** Every chunk of an iterable. */
export async function collect(stream: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const out: StreamChunk[] = [];
  for await (const chunk of stream) out.push(chunk);
  return out;
}

/** A finish step with the counter agent's output. */
export const finish = (answer: string): ScriptedStepObject => ({ toolCalls: [{ name: '__finish__', args: { answer } }] });

/** A store whose process "dies" once the parent recorded its child's spawn: its writes hang and its lease renewals fail. */
export function dyingAfterSpawn(store: InMemoryStateStore): StateStore {
  let dead = false;
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'appendJournal') {
        return async (entry: Parameters<StateStore['appendJournal']>[0]) => {
          if (dead) return new Promise(() => {});
          const written = await target.appendJournal(entry);
          if (entry.kind === 'child_spawn') dead = true;
          return written;
        };
      }
      if (prop === 'commit') return (c: Parameters<StateStore['commit']>[0]) => (dead ? new Promise(() => {}) : target.commit(c));
      if (prop === 'renewLease') return (...args: Parameters<StateStore['renewLease']>) => (dead ? Promise.reject(new Error('network down')) : target.renewLease(...args));
      const value: unknown = Reflect.get(target, prop);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/**
 * A counter-agent run whose process died right after its run-start commit (its lease of 1 ms has long
 * expired), for recover() tests: session `sessionId`, run `runId`, input 'go'; `options` adds to the
 * recorded run options (a dry run, a user id).
 */
export async function deadCounterRun(store: InMemoryStateStore, options: { readonly sessionId?: string; readonly runId?: string; readonly recorded?: Record<string, unknown> } = {}) {
  const sessionId = options.sessionId ?? 'dead';
  const runId = options.runId ?? 'dead-run';
  await store.beginRun({
    sessionId,
    runId,
    agentType: 'counter',
    signal: 'start',
    initialState: { count: 0, log: [] },
    newTurn: { turnId: 't1', input: [{ role: 'user', content: 'go' }] },
    startedAt: Date.now() - 1_000,
    leaseOwner: 'dead-process',
    leaseMs: 1,
    options: { input: 'go', ...options.recorded },
  });
  return { sessionId, runId, epoch: 1 } as const;
}

/** The AgentError a refused call rejects with (a test failure when it resolves or rejects with something else). */
export async function refusal(promise: Promise<unknown>): Promise<AgentError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!AgentError.isInstance(error)) throw new Error(`expected an AgentError, got ${String(error)}`);
  return error;
}

/** A fresh in-memory state store with one run begun (session `s1`, run `r1`, a one-minute lease); returns the store and the lease's epoch. */
export async function begunMemoryRun(): Promise<{ store: InMemoryStateStore; epoch: number }> {
  const store = new InMemoryStateStore();
  const { lease } = await store.beginRun({
    sessionId: 's1',
    runId: 'r1',
    agentType: 'agent',
    signal: 'start',
    initialState: {},
    newTurn: { turnId: 't1', input: [{ role: 'user', content: 'hello' }] },
    startedAt: Date.now(),
    leaseOwner: 'test',
    leaseMs: 60_000,
    options: {},
  });
  return { store, epoch: lease.epoch };
}
