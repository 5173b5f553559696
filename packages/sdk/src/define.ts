import { z } from 'zod';
import type { Draft, RunAttribution } from './hooks/types.js';
import { ConfigError } from './errors.js';
import type { AgentHooks } from './hooks/types.js';
import { HookManager, type HookMap } from './hooks/manager.js';
import type { JSONSchema, LanguageModel, LLMToolSpec, ModelParameters } from './llm.js';
import type { RemoteAgentClient } from './runtime/remote-agent-client.js';
import { checkResourceLimits, type ResourceLimits } from './runtime/limits.js';
import { checkToolRetry } from './runtime/tool-retry-policy.js';
import { toolJSONSchema, type InferToolSchema, type ToolSchema } from './tool-schema.js';

/** The name of the internal tool an agent with an outputSchema finishes through. */
export const FINISH_TOOL_NAME = '__finish__';

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** What a tool's `execute` receives besides its input. */
export interface ToolContext<THookContext = unknown> extends RunAttribution {
  readonly sessionId: string;
  readonly runId: string;
  readonly agentType: string;
  /** The id of this call (the model's tool call id). */
  readonly toolCallId: string;
  /** The 0-based index of the step this call belongs to. */
  readonly stepCount: number;
  /** Aborted when the run is stopped or superseded; pass it to fetch and friends. */
  readonly abortSignal: AbortSignal;
  /** A read-only snapshot of the custom state. */
  getState<TState = unknown>(): TState;
  /** Changes custom state through an Immer draft; the write persists with this call's result. */
  updateState<TState = unknown>(updater: (draft: Draft<TState>) => void): void;
  /** Emits `{ type: 'custom', eventName, data }` on the run's stream. */
  emitCustom(eventName: string, data: unknown): Promise<void>;
  /** Stable across recoveries of the same call (`runId:step:callId:tool`), for idempotent side effects. */
  readonly idempotencyKey: string;
  /**
   * Suspends the run until these child sessions (started by this tool, e.g. with execute() and
   * `parentSessionId`) end; their outcomes become this call's result when the run is resumed.
   */
  awaitChildren(children: readonly { readonly sessionId: string; readonly agentType: string }[]): never;
  /** The execution attempt of the run (1, then +1 per recovery). */
  readonly attempt: number;
  /**
   * The request-scoped resources of the call that started, resumed or recovered this run
   * (`execute(agent, input, { hookContext })`, rule 202): the very object, never copied or stored.
   */
  readonly hookContext: THookContext | undefined;
}

/** The definition of a tool, as `defineTool` returns it. */
export interface ToolDefinition<TInput = unknown, TOutput = unknown> {
  readonly name: string;
  readonly description: string;
  /** The input's schema: any Standard Schema (zod 3 or 4, valibot, arktype, ...) or an AI SDK `jsonSchema()`. */
  readonly inputSchema: ToolSchema<TInput>;
  /** The result's schema, when the tool declares one (same kinds as the input's). */
  readonly outputSchema?: ToolSchema<TOutput>;
  /** When true, a successful call ends the run and its output becomes the agent's output. */
  readonly finishWith: boolean;
  /**
   * When true, the call is journaled (started, then its result) so that a recovered run replays it
   * instead of running it again: at most once per committed step. Leave false for pure tools, which a
   * recovery may run again.
   */
  readonly sideEffects: boolean;
  /** The input's JSON Schema, computed once when the tool is defined. */
  readonly jsonSchema: JSONSchema;
  /** When true (or when the function says so for an input), a human must approve the call: the run suspends until approve() / reject(). */
  readonly needsApproval?: boolean | { bivarianceHack(input: TInput): boolean }['bivarianceHack'];
  /**
   * Runs the tool. Throwing sends the error back to the model as a `tool_failed` result. A tool without
   * execute is a client tool: the run suspends and the caller answers with submitToolResult().
   */
  execute?(input: TInput, ctx: ToolContext): TOutput | Promise<TOutput>;
  /** Set by `defineSubAgentTool` / `defineRemoteSubAgentTool`: a call runs a child agent in a session of its own. */
  readonly subAgent?: SubAgentSpec;
  /** Runs a failed call again under this policy (rule 157; docs/tools-advanced.md). */
  readonly retry?: ToolRetryPolicy;
  /**
   * A dry run's answer for a `sideEffects: true` tool (rule 156): called instead of execute when the run
   * is a dry run; without it the call gets the standard stub result.
   */
  dryRun?(input: TInput, ctx: ToolContext): unknown;
}

/**
 * How a tool's failed call runs again (rule 157). A try fails when execute throws; the run waits
 * `initialDelayMs`, doubled each retry up to `maxDelayMs`, and runs it again while `retryOn` says so and
 * tries remain. beforeTool and afterTool fire once per call, whatever the number of tries.
 */
export interface ToolRetryPolicy {
  /** Tries per call, the first included (an integer from 1 to 10; default 3). */
  readonly maxAttempts?: number;
  /** Delay before the second try (default 200 ms); doubles each retry. */
  readonly initialDelayMs?: number;
  /** Upper bound of one delay (default 5,000 ms). */
  readonly maxDelayMs?: number;
  /**
   * Decides whether the error a try threw is worth another try; `attempt` is the try that failed (1-based).
   * Default: every error except an AgentError marked `retryable: false`.
   */
  retryOn?(error: unknown, attempt: number): boolean;
  /**
   * Required (true) to retry a `sideEffects: true` tool: the tool says that running it again after a
   * failed try is safe (it uses `ctx.idempotencyKey`, or its failures happen before any effect). Without
   * it, defineTool refuses the policy with `config_invalid`.
   */
  readonly idempotent?: boolean;
}

/** How a sub-agent tool turns its call into a child run and the child's result into the call's result. */
export type SubAgentSpec = LocalSubAgentSpec | RemoteSubAgentSpec;

/** What local and remote sub-agent tools share. */
interface SubAgentSpecBase {
  /** The child agent's name (`call.agentType` in the sub-agent hooks). */
  readonly agentType: string;
  /** The child's input, from the tool input. */
  input(args: unknown): string;
  /** The call's result, from the child's output. */
  output(childOutput: unknown): unknown;
  /**
   * Whether the child's chunks are forwarded into the parent's stream (absent: true). When false, only the
   * child's requests for an answer (`tool_approval_request`, `suspended`) are, so that a reader of the
   * parent can still answer them through the parent's session.
   */
  readonly stream?: boolean;
}

/** A child agent run by this runtime (`defineSubAgentTool`). */
export interface LocalSubAgentSpec extends SubAgentSpecBase {
  readonly kind: 'local';
  readonly agent: AgentConfig<unknown, unknown>;
}

/** A child agent run by another service through a client (`defineRemoteSubAgentTool`); its hooks get `agentConfig: undefined`. */
export interface RemoteSubAgentSpec extends SubAgentSpecBase {
  readonly kind: 'remote';
  readonly client: RemoteAgentClient;
  /** The most the child may take; then it is stopped and the call fails with `subagent_timeout` (absent: no limit). */
  readonly timeoutMs?: number;
  /** How long a stopped child gets to report its end before the parent goes on without it. */
  readonly stopTimeoutMs: number;
}

/** What `defineTool` takes. */
export interface ToolDefinitionInput<TInputSchema extends ToolSchema, TOutput> {
  readonly name: string;
  readonly description: string;
  /** Any Standard Schema (zod 3 or 4, valibot through `toStandardJsonSchema()`, arktype, ...) or an AI SDK `jsonSchema()`; anything else is a ConfigError. */
  readonly inputSchema: TInputSchema;
  readonly outputSchema?: ToolSchema<TOutput>;
  readonly finishWith?: boolean;
  readonly sideEffects?: boolean;
  readonly needsApproval?: boolean | ((input: InferToolSchema<TInputSchema>) => boolean);
  /** Omit it for a client tool (answered by the caller with submitToolResult). */
  execute?(input: InferToolSchema<TInputSchema>, ctx: ToolContext): TOutput | Promise<TOutput>;
  /** Runs a failed call again (rule 157); a `sideEffects: true` tool must also say `idempotent: true`. */
  readonly retry?: ToolRetryPolicy;
  /** A dry run's answer for this side-effecting tool (rule 156); default: the standard stub result. */
  dryRun?(input: InferToolSchema<TInputSchema>, ctx: ToolContext): unknown;
}

/** Converts a zod schema to the JSON Schema a provider expects. */
export function toToolJSONSchema(schema: z.ZodType): JSONSchema {
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  delete json['$schema'];
  return Object.freeze(json);
}

/** Defines a tool. Its input schema is checked for every call; invalid arguments go back to the model. */
export function defineTool<TInputSchema extends ToolSchema, TOutput>(
  definition: ToolDefinitionInput<TInputSchema, TOutput>,
): ToolDefinition<InferToolSchema<TInputSchema>, TOutput> {
  if (!TOOL_NAME.test(definition.name)) {
    throw new ConfigError(`Tool name "${definition.name}" is invalid: use 1-64 letters, digits, "_" or "-".`, { tool: definition.name });
  }
  if (definition.name === FINISH_TOOL_NAME) {
    throw new ConfigError(`Tool name "${FINISH_TOOL_NAME}" is reserved for the agent's finish tool.`);
  }
  if (definition.execute !== undefined && typeof definition.execute !== 'function') {
    throw new ConfigError(`Tool "${definition.name}": execute must be a function (or absent, for a client tool).`, { tool: definition.name });
  }
  const execute = definition.execute?.bind(definition);
  if (definition.retry !== undefined) checkToolRetry(definition.name, definition.retry, definition.sideEffects === true);
  if (definition.dryRun !== undefined && typeof definition.dryRun !== 'function') {
    throw new ConfigError(`Tool "${definition.name}": dryRun must be a function.`, { tool: definition.name });
  }
  const dryRun = definition.dryRun?.bind(definition);
  const jsonSchema = toolJSONSchema(definition.inputSchema, `Tool "${definition.name}": inputSchema`, { tool: definition.name });
  // Checked now, so a wrong kind of output schema fails here rather than on the first call.
  if (definition.outputSchema !== undefined) toolJSONSchema(definition.outputSchema, `Tool "${definition.name}": outputSchema`, { tool: definition.name });
  type Input = InferToolSchema<TInputSchema>;
  return Object.freeze({
    name: definition.name,
    description: definition.description,
    inputSchema: definition.inputSchema as ToolSchema<Input>,
    ...(definition.outputSchema === undefined ? {} : { outputSchema: definition.outputSchema }),
    finishWith: definition.finishWith ?? false,
    sideEffects: definition.sideEffects ?? false,
    jsonSchema,
    ...(definition.needsApproval === undefined ? {} : { needsApproval: definition.needsApproval }),
    ...(execute === undefined ? {} : { execute: (input: Input, ctx: ToolContext) => execute(input, ctx) }),
    ...(definition.retry === undefined ? {} : { retry: Object.freeze({ ...definition.retry }) }),
    ...(dryRun === undefined ? {} : { dryRun: (input: Input, ctx: ToolContext) => dryRun(input, ctx) }),
  });
}

/** Retry policy for model calls whose error is retryable (rate limits, 5xx, timeouts, network). */
export interface RetryPolicy {
  /** Attempts per step, the first included (default 3). */
  readonly maxAttempts?: number;
  /** Delay before the second attempt (default 500 ms); doubles each retry. */
  readonly initialDelayMs?: number;
  /** Upper bound of one delay (default 8,000 ms). A provider's Retry-After wins when it is longer, up to this bound. */
  readonly maxDelayMs?: number;
}

/** The model an agent uses and how it is called. */
export interface LLMConfig extends ModelParameters {
  /**
   * Any AI SDK language model, e.g. `openai('gpt-4o-mini')`, or a model id such as `'openai:gpt-4o-mini'`
   * that the executor resolves through its `providers` registry when a run starts.
   */
  readonly model: LanguageModel | string;
  readonly retry?: RetryPolicy;
  /** Per-attempt timeout; an attempt that takes longer fails with `provider_timeout` (retryable). */
  readonly timeoutMs?: number;
}

/**
 * A system prompt: a string, or a function of the current state. Declared through a method so that
 * an agent typed by its state stays assignable where any agent is accepted (hook payloads, executors).
 */
export type SystemPrompt<TState> = string | { bivarianceHack(state: TState): string }['bivarianceHack'];

/**
 * Loop guards (docs/rules.md, rule 228): each ends the run with a fatal `run_*` error when tripped. The
 * resource limits ({@link ResourceLimits}) set here win over the executor's `limits`.
 */
export interface RunLimits extends ResourceLimits {
  /** `run_repeated_error` when the same tool error (code and message) comes back this many times in a run (default 3; 0 turns it off). */
  readonly maxRepeatedErrors?: number;
  /** `run_empty_responses` after this many consecutive empty model replies (default 3). */
  readonly maxEmptyResponses?: number;
  /** `run_hard_stop` once the run's model calls used more tokens than this (retried attempts included). */
  readonly maxTotalTokens?: number;
  /** `run_hard_stop` once the run's model calls cost more than this, priced with `pricing`. */
  readonly maxCostUsd?: number;
  /** Prices per million tokens, for `maxCostUsd`. */
  readonly pricing?: { readonly inputPerMillion: number; readonly outputPerMillion: number; readonly cachedInputPerMillion?: number };
}

/** The default state of an agent without a stateSchema. */
export type EmptyState = Record<string, unknown>;

/** What `defineAgent` takes. The state and output types are inferred from the schemas. */
export interface AgentDefinition<TState, TOutput> {
  readonly name: string;
  readonly description?: string;
  /** A string, or a function of the current state called before every model call. */
  readonly systemPrompt?: SystemPrompt<TState>;
  readonly stateSchema?: z.ZodType<TState>;
  readonly outputSchema?: z.ZodType<TOutput>;
  readonly llmConfig: LLMConfig;
  // Tools are stored with their input type widened to unknown; execute is a method, so typed tools stay assignable.
  readonly tools?: readonly ToolDefinition[];
  /** The agent's own hooks (they run before execution-level ones): hook functions, class-based hooks by point, or a manager. */
  readonly hooks?: AgentHooks<TState, TOutput> | HookMap<TState, TOutput> | HookManager<TState, TOutput>;
  /** The most model calls (steps) one run may make; default 25. */
  readonly maxSteps?: number;
  /** Loop guards: repeated errors, empty replies, token and cost budgets. */
  readonly limits?: RunLimits;
}

/** An agent, as `defineAgent` returns it: its definition with the defaults applied and its tool tables built. */
export interface AgentConfig<TState = EmptyState, TOutput = unknown> extends Omit<AgentDefinition<TState, TOutput>, 'tools' | 'maxSteps'> {
  readonly tools: readonly ToolDefinition[];
  readonly maxSteps: number;
  /** Tools by name (built once). */
  readonly toolsByName: ReadonlyMap<string, ToolDefinition>;
  /** The tools as offered to the model, `__finish__` included (built once). */
  readonly llmTools: readonly LLMToolSpec[];
}

/** The default step limit of a run. */
export const DEFAULT_MAX_STEPS = 25;

/**
 * Defines an agent. Without an outputSchema, the agent completes on a plain text answer and its
 * output is that text; with one, it completes through the `__finish__` tool (or a finishWith tool).
 */
export function defineAgent<TState = EmptyState, TOutput = string>(definition: AgentDefinition<TState, TOutput>): AgentConfig<TState, TOutput> {
  if (typeof definition.name !== 'string' || definition.name.trim() === '') {
    throw new ConfigError('An agent needs a non-empty name.');
  }
  const model: unknown = definition.llmConfig?.model;
  if (!((typeof model === 'object' && model !== null) || (typeof model === 'string' && model.trim() !== ''))) {
    throw new ConfigError(`Agent "${definition.name}" needs llmConfig.model (an AI SDK language model, e.g. openai('gpt-4o-mini'), or a model id such as 'openai:gpt-4o-mini' for the executor's providers registry).`);
  }
  const maxSteps = definition.maxSteps ?? DEFAULT_MAX_STEPS;
  if (definition.limits?.maxCostUsd !== undefined && !definition.limits.pricing) {
    throw new ConfigError(`Agent "${definition.name}": limits.maxCostUsd needs limits.pricing (prices per million tokens).`);
  }
  checkResourceLimits(definition.limits, `Agent "${definition.name}"`);
  if (!Number.isInteger(maxSteps) || maxSteps < 1) {
    throw new ConfigError(`Agent "${definition.name}": maxSteps must be a positive integer, got ${String(definition.maxSteps)}.`);
  }
  // Checked now, as createHookManager checks them: a misspelled point (onAgentCompleted) is a ConfigError listing the valid ones.
  if (definition.hooks !== undefined && !(definition.hooks instanceof HookManager)) new HookManager<TState, TOutput>(definition.hooks);
  const tools = definition.tools ?? [];
  const toolsByName = new Map<string, ToolDefinition>();
  for (const tool of tools) {
    if (toolsByName.has(tool.name)) {
      throw new ConfigError(`Agent "${definition.name}" has two tools named "${tool.name}".`, { tool: tool.name });
    }
    toolsByName.set(tool.name, tool);
  }
  const llmTools: LLMToolSpec[] = tools.map((tool) => Object.freeze({ name: tool.name, description: tool.description, inputSchema: tool.jsonSchema }));
  if (definition.outputSchema) {
    llmTools.push(
      Object.freeze({
        name: FINISH_TOOL_NAME,
        description: 'Call this tool once, when the task is done, with the final output as its arguments.',
        inputSchema: toToolJSONSchema(definition.outputSchema),
      }),
    );
  }
  return Object.freeze({
    ...definition,
    tools,
    maxSteps,
    toolsByName,
    llmTools: Object.freeze(llmTools),
  });
}
