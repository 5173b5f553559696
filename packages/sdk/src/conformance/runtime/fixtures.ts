import { z } from 'zod';
import { defineAgent, defineTool, type AgentConfig, type ToolContext, type ToolDefinition } from '../../define.js';
import type { HookManager } from '../../hooks/manager.js';
import type { Draft } from '../../hooks/types.js';
import type { AgentHandle } from '../../runtime/agent-runtime.js';
import type { AgentResult } from '../../runtime/result.js';
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

/** What a tool or hook context offers to write the counter state. */
export interface CounterWriter {
  updateState(updater: (draft: Draft<Counter>) => void): void;
}

/** Appends `entry` to the log of the counter state (one state write). */
export function appendToLog(ctx: CounterWriter, entry: string): void {
  ctx.updateState((d) => void d.log.push(entry));
}

/** A hook handler that appends `entry` to the log: a hook write (onStateChange, source hook). */
export function logs(entry: string): (payload: unknown, ctx: CounterWriter) => void {
  return (_payload, ctx) => appendToLog(ctx, entry);
}

/** A hook handler that throws `message` whenever it is called. */
export function boom(message: string): () => never {
  return () => {
    throw new Error(message);
  };
}

/** A hook handler that throws `message` the first time it is called, and does nothing after. */
export function throwsFirstTime(message: string): () => void {
  let calls = 0;
  return () => {
    if (calls++ === 0) throw new Error(message);
  };
}

/** A tool without input (its input schema is the empty object); `execute` gets the tool context. */
export function toolWithoutInput(name: string, description: string, execute: (ctx: ToolContext) => unknown, options: { readonly finishWith?: boolean } = {}): ToolDefinition {
  return defineTool({ name, description, inputSchema: z.object({}), ...(options.finishWith ? { finishWith: true } : {}), execute: (_input, ctx) => execute(ctx) });
}

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
    appendToLog(ctx, `deleted ${input.path}`);
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

/**
 * Executes a new scenario agent built from `options` with `input` on a new session and waits for the
 * run's result; then begins the next run with `next` (given the session id and that result: resume,
 * answer, approve, retry, send…) and waits for it.
 */
export async function executeThen(t: ScenarioContext, options: ScenarioAgentOptions, input: string, next: (sessionId: string, first: AgentResult) => Promise<AgentHandle>): Promise<void> {
  const sessionId = t.sessionId();
  const a = agent(t, options);
  const first = await t.result(await t.execute(a, input, { sessionId }));
  await t.result(await next(sessionId, first));
}

/** Resumes `sessionId` from its first step checkpoint (mode from_checkpoint). */
export async function resumeFromFirstStep(t: ScenarioContext, sessionId: string): Promise<AgentHandle> {
  const checkpoint = (await t.runtime.listCheckpoints(sessionId)).find((c) => c.kind === 'step');
  if (!checkpoint) throw new Error('no step checkpoint');
  return t.resume(sessionId, { mode: 'from_checkpoint', checkpointId: checkpoint.checkpointId });
}

/** A model step that notes, as `label`, whether the last prompt message includes `needle`, then answers with `reply`. */
export function notesLastPrompt(t: ScenarioContext, label: string, needle: string, reply: ScriptedStepObject): ScriptedStep {
  return (options) => {
    t.note(label, lastPromptText(options.prompt).includes(needle));
    return reply;
  };
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

/** The deferreds a scenario drives a gated tool or model step by. */
export interface Gate {
  /** Resolved when the gated tool or model call starts. */
  readonly started: Deferred;
  /** The gated tool or model call waits for it before it goes on. */
  readonly gate: Deferred;
}

function gate(t: ScenarioContext, what: string): Gate {
  return { started: t.deferred(`the ${what} started`), gate: t.deferred('the gate') };
}

/** What {@link gatedTool} writes and returns. */
export interface GatedToolOptions {
  /** Applied to the state after the gate opens (no write when absent). */
  readonly write?: (draft: Draft<Counter>) => void;
  /** What the tool returns (default 'late'). */
  readonly result?: string;
}

/** A `slow` tool (no input) that resolves `started`, waits for `gate`, applies `write` when given, and returns `result`. */
export function gatedTool(t: ScenarioContext, options: GatedToolOptions = {}): Gate & { readonly tool: ToolDefinition } {
  const g = gate(t, 'slow tool');
  const tool = toolWithoutInput('slow', 'Waits for the gate.', async (ctx) => {
    g.started.resolve();
    await g.gate.wait();
    if (options.write) ctx.updateState<Counter>(options.write);
    return options.result ?? 'late';
  });
  return { ...g, tool };
}

/** A model step that resolves `started` when the model is called, waits for `gate`, then answers with `reply`. */
export function gatedStep(t: ScenarioContext, reply: ScriptedStepObject): Gate & { readonly step: ScriptedStep } {
  const g = gate(t, 'model call');
  const step: ScriptedStep = async () => {
    g.started.resolve();
    await g.gate.wait();
    return reply;
  };
  return { ...g, step };
}

/**
 * Executes an agent built from `first` with input 'first' on a new session; once `gate` reports it
 * started, executes a second agent (output schema, input 'second', finishing with 'b' through the call
 * `finish-b`) on that session and waits for it; then opens the gate and waits for the first run.
 */
export async function newerExecuteWhileGated(t: ScenarioContext, first: ScenarioAgentOptions, gate: Gate): Promise<void> {
  const sessionId = t.sessionId();
  const older = agent(t, first);
  const newer = agent(t, { output: true, steps: [finish('b', 'finish-b')] });
  const handle = await t.execute(older, 'first', { sessionId });
  await gate.started.wait();
  await t.result(await t.execute(newer, 'second', { sessionId }));
  gate.gate.resolve();
  await t.result(handle);
}
