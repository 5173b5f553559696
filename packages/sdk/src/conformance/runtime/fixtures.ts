import { z } from 'zod';
import { defineAgent, defineTool, type AgentConfig, type ToolDefinition } from '../../define.js';
import type { HookManager } from '../../hooks/manager.js';
import { createScriptedModel, type ScriptedStep, type ScriptedStepObject } from '../../testing/scripted-model.js';
import type { Deferred, ScenarioContext } from './context.js';
import type { HookLayer } from './recorder.js';
import type { RuntimeScenario, ScenarioTopic } from './scenario.js';

/** A scenario as its topic's file declares it: the file gives the topic. */
export type TopicScenario = Omit<RuntimeScenario, 'topic'>;

/** The scenarios of one topic's file, each with that topic. */
export function inTopic(topic: ScenarioTopic, scenarios: readonly TopicScenario[]): readonly RuntimeScenario[] {
  return scenarios.map((scenario) => ({ ...scenario, topic }));
}

/** The custom state of every scenario agent. */
export const CounterState = z.object({ count: z.number().default(0), log: z.array(z.string()).default([]) });
/** The custom state of every scenario agent. */
export type Counter = z.infer<typeof CounterState>;
/** The output of agents with an outputSchema. */
export const Answer = z.object({ answer: z.string() });
/** The output of agents with an outputSchema. */
export type AnswerOutput = z.infer<typeof Answer>;

/** The state every session starts with. */
export const INITIAL = { count: 0, log: [] } as const;

/** Adds `by` to the counter and logs `+by`; returns `{ by }`. */
export const incrementTool = defineTool({
  name: 'increment',
  description: 'Adds to the counter.',
  inputSchema: z.object({ by: z.number().int() }),
  execute: (input, ctx) => {
    ctx.updateState<Counter>((d) => {
      d.count += input.by;
      d.log.push(`+${input.by}`);
    });
    return { by: input.by };
  },
});

/** A client tool: no execute, the caller answers with submitToolResult. */
export const askTool = defineTool({ name: 'ask', description: 'Asks the user.', inputSchema: z.object({ question: z.string() }) });

/** Needs a human's approval; when approved it logs `deleted <path>`. */
export const deleteTool = defineTool({
  name: 'remove',
  description: 'Removes a file (needs approval).',
  inputSchema: z.object({ path: z.string() }),
  needsApproval: true,
  execute: (input, ctx) => {
    ctx.updateState<Counter>((d) => void d.log.push(`deleted ${input.path}`));
    return { removed: input.path };
  },
});

/** A step that calls tools: `[name, args]` pairs. */
export function calls(...pairs: readonly (readonly [string, unknown])[]): ScriptedStepObject {
  return { toolCalls: pairs.map(([name, args]) => ({ name, args })) };
}

/** A step that finishes through `__finish__` with `{ answer }` (with call id `id` when given). */
export function finish(answer: string, id?: string): ScriptedStepObject {
  return { toolCalls: [{ name: '__finish__', args: { answer }, ...(id === undefined ? {} : { id }) }] };
}

/** A step that replies with text. */
export function text(reply: string): ScriptedStepObject {
  return { text: reply };
}

/** Options of {@link agent}. */
export interface ScenarioAgentOptions {
  /** Default `counter`. */
  readonly name?: string;
  readonly steps: readonly ScriptedStep[];
  /** Default `[increment]`. */
  readonly tools?: readonly ToolDefinition[];
  /** True for an agent with the `{ answer }` outputSchema (it finishes through `__finish__`). */
  readonly output?: boolean;
  readonly maxSteps?: number;
  /** The scenario's own handler layers (every hook is recorded either way). */
  readonly layers?: readonly HookLayer<Counter, unknown>[];
  /** Model-call attempts per step (default 3, with 1 ms delays). */
  readonly attempts?: number;
}

/**
 * A scenario agent over a fresh scripted model: counter state, system prompt "You count.", hooks
 * recorded by the scenario. With `output`, the model is offered `__finish__` after the tools.
 */
export function agent(t: ScenarioContext, options: ScenarioAgentOptions): AgentConfig<Counter, unknown> {
  const hooks = t.hooks<Counter, unknown>(...(options.layers ?? []));
  return defineAgent<Counter, unknown>({
    name: options.name ?? 'counter',
    systemPrompt: 'You count.',
    stateSchema: CounterState,
    ...(options.output ? { outputSchema: Answer as z.ZodType<unknown> } : {}),
    llmConfig: { model: createScriptedModel(options.steps), retry: { maxAttempts: options.attempts ?? 3, initialDelayMs: 1, maxDelayMs: 2 } },
    tools: options.tools ?? [incrementTool],
    hooks: hooks as HookManager<Counter, unknown>,
    ...(options.maxSteps === undefined ? {} : { maxSteps: options.maxSteps }),
  });
}

/** Executes a new scenario agent built from `options` (see {@link agent}) with `input` on a new session, and waits for the run's result. */
export async function executeOnce(t: ScenarioContext, options: ScenarioAgentOptions, input = 'go'): Promise<void> {
  await t.result(await t.execute(agent(t, options), input, { sessionId: t.sessionId() }));
}

/** The text of the last prompt message of a model call (what the model was last told). */
export function lastPromptText(prompt: readonly { readonly role: string; readonly content: unknown }[]): string {
  const last = prompt[prompt.length - 1];
  if (!last) return '';
  if (typeof last.content === 'string') return last.content;
  return JSON.stringify(last.content);
}

/** The raw ids of the calls a suspended result waits on; throws when the run did not suspend on a pending call. */
export function pendingCallIds(result: { readonly suspension?: { readonly pending: readonly { readonly toolCallId: string }[] } }): [string, ...string[]] {
  const [first, ...rest] = result.suspension?.pending.map((p) => p.toolCallId) ?? [];
  if (first === undefined) throw new Error('the run did not suspend on a pending call');
  return [first, ...rest];
}

/** A handler layer whose onAgentSuspended notes the run's stored status, as `run status in onAgentSuspended`. */
export function suspendedStatusProbe(t: ScenarioContext): HookLayer<Counter, unknown> {
  return { hooks: { onAgentSuspended: async (ctx) => t.note('run status in onAgentSuspended', (await t.runtime.getRun(ctx.runId))?.status) } };
}

/** A `slow` tool that waits for a gate, with the deferreds a scenario drives it by. */
export interface GatedTool {
  readonly tool: ToolDefinition;
  /** Resolved when the tool starts. */
  readonly started: Deferred;
  /** The tool waits for it before it writes and returns 'late'. */
  readonly gate: Deferred;
}

/** A `slow` tool (no input) that resolves `started`, waits for `gate`, applies `write` to the state when given, and returns 'late'. */
export function gatedTool(t: ScenarioContext, write?: (draft: Counter) => void): GatedTool {
  const started = t.deferred('the slow tool started');
  const gate = t.deferred('the gate');
  const tool = defineTool({
    name: 'slow',
    description: 'Waits for the gate.',
    inputSchema: z.object({}),
    execute: async (_input, ctx) => {
      started.resolve();
      await gate.wait();
      if (write) ctx.updateState<Counter>(write);
      return 'late';
    },
  });
  return { tool, started, gate };
}
