import { z } from 'zod';
import { defineAgent, defineTool, type AgentConfig, type ToolDefinition } from '../../define.js';
import type { HookManager } from '../../hooks/manager.js';
import { createScriptedModel, type ScriptedStep, type ScriptedStepObject } from '../../testing/scripted-model.js';
import type { ScenarioContext } from './context.js';
import type { HookLayer } from './recorder.js';

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

/** The text of the last prompt message of a model call (what the model was last told). */
export function lastPromptText(prompt: readonly { readonly role: string; readonly content: unknown }[]): string {
  const last = prompt[prompt.length - 1];
  if (!last) return '';
  if (typeof last.content === 'string') return last.content;
  return JSON.stringify(last.content);
}
