import { createHash } from 'node:crypto';
import { z } from 'zod';
import { defineTool, type AgentConfig, type SubAgentSpec, type ToolDefinition } from './define.js';
import { ConfigError } from './errors.js';
import type { InferToolSchema, ToolSchema } from './tool-schema.js';

/** What `defineSubAgentTool` takes. */
export interface SubAgentToolOptions<TState = unknown, TOutput = unknown, TInputSchema extends ToolSchema = z.ZodObject<{ input: z.ZodString }>> {
  /** The child agent. Its hooks fire for its own run; its session is derived from the parent session and the call id. */
  readonly agent: AgentConfig<TState, TOutput>;
  /** The tool's name (default: the agent's name). */
  readonly name?: string;
  /** What the parent's model reads about the tool (default: "Delegate a task to the <name> agent."). */
  readonly description?: string;
  /** The tool's input (default: `{ input: string }`). */
  readonly inputSchema?: TInputSchema;
  /** The child's input (default: the `input` field of the arguments when it is a string, else the arguments as JSON). */
  readonly input?: (args: InferToolSchema<TInputSchema>) => string;
  /** What the parent's model receives (default: the child's output). */
  readonly output?: (childOutput: TOutput) => unknown;
  /**
   * Whether the child's chunks are forwarded live into the parent's stream, as `subagent_chunk`s (default
   * true). With false the parent's stream gets only the child's requests for an answer (its
   * `tool_approval_request` and `suspended` chunks), so an approval inside the child can still be answered
   * through the parent; the child's own stream keeps everything.
   */
  readonly stream?: boolean;
}

/** The default child input: the `input` field of the arguments when it is a string, else the arguments as JSON. */
export function defaultInput(args: unknown): string {
  const field = (args as { input?: unknown } | null)?.input;
  return typeof field === 'string' ? field : JSON.stringify(args);
}

/**
 * Turns an agent into a tool: the model calls it like any tool, and the call runs the agent as a child
 * run in its own session (its id derived from the parent session and the call id, so a recovered parent
 * re-attaches to the child instead of starting another). For one call the hooks fire beforeTool →
 * beforeSubAgent → the child's whole run → afterSubAgent → onStateChange → onMessage → afterTool. A
 * child that fails gives an error result to the parent's model, and the parent goes on.
 */
export function defineSubAgentTool<TState, TOutput, TInputSchema extends ToolSchema = z.ZodObject<{ input: z.ZodString }>>(options: SubAgentToolOptions<TState, TOutput, TInputSchema>): ToolDefinition<InferToolSchema<TInputSchema>, unknown> {
  const agent = options.agent as unknown as AgentConfig<unknown, unknown>;
  if (!agent || typeof agent.name !== 'string') throw new ConfigError('defineSubAgentTool() needs the child agent (from defineAgent).');
  const name = options.name ?? agent.name;
  const inputSchema = (options.inputSchema ?? z.object({ input: z.string().describe('The task for the agent.') })) as TInputSchema;
  const input = options.input as ((args: unknown) => string) | undefined;
  const output = options.output as ((childOutput: unknown) => unknown) | undefined;
  if (options.stream !== undefined && typeof options.stream !== 'boolean') throw new ConfigError(`defineSubAgentTool() "stream" must be a boolean (got ${typeof options.stream}).`);
  const subAgent: SubAgentSpec = Object.freeze({ kind: 'local' as const, agent, agentType: agent.name, input: input ?? defaultInput, output: output ?? ((value: unknown) => value), stream: options.stream ?? true });
  const tool = defineTool({
    name,
    description: options.description ?? `Delegate a task to the ${agent.name} agent.`,
    inputSchema,
    // The child's outcome is recorded, so a recovered parent replays it instead of running the child again.
    sideEffects: true,
    execute: () => {
      throw new ConfigError(`The sub-agent tool "${name}" runs only inside a helix runtime (the runtime starts its child run).`);
    },
  });
  return Object.freeze({ ...tool, subAgent });
}

/** A child session's id: derived from the parent session and the tool call, opaque, and the same every time. */
export function childSessionId(parentSessionId: string, toolCallId: string): string {
  return `sub-${createHash('sha256').update(JSON.stringify([parentSessionId, toolCallId])).digest('base64url').slice(0, 32)}`;
}
