import type { z } from 'zod';
import { defineTool, type RemoteSubAgentSpec, type ToolDefinition } from './define.js';
import { ConfigError } from './errors.js';
import type { RemoteAgentClient } from './runtime/remote-agent-client.js';
import { defaultInput } from './sub-agent-tool.js';

/** What `defineRemoteSubAgentTool` takes. */
export interface RemoteSubAgentToolOptions<TInputSchema extends z.ZodType> {
  /** The tool's name, as the parent's model calls it. */
  readonly name: string;
  /** What the parent's model reads about the tool. */
  readonly description: string;
  /** The tool's input, validated before the child starts. */
  readonly inputSchema: TInputSchema;
  /** The remote agent's name (`call.agentType` in the sub-agent hooks; the service looks the agent up by it). */
  readonly agentType: string;
  /** Where the child runs. */
  readonly client: RemoteAgentClient;
  /** The child's input (default: the `input` field of the arguments when it is a string, else the arguments as JSON). */
  readonly input?: (args: z.output<TInputSchema>) => string;
  /** What the parent's model receives (default: the child's output). */
  readonly output?: (childOutput: unknown) => unknown;
  /** The most the child may take: then it is stopped and the call fails with `subagent_timeout` (default: no limit). */
  readonly timeoutMs?: number;
  /** How long a stopped child (the parent stopped, or the timeout) gets to report its end before the parent goes on without it (default 10 000). */
  readonly stopTimeoutMs?: number;
}

const CLIENT_METHODS = ['start', 'stream', 'result', 'stop'] as const;

function checkMs(value: number | undefined, name: string): void {
  if (value !== undefined && !(Number.isFinite(value) && value > 0)) throw new ConfigError(`defineRemoteSubAgentTool(): ${name} must be a positive number of milliseconds, got ${String(value)}.`);
}

/**
 * A sub-agent that runs on another service, through a {@link RemoteAgentClient}. The parent's model
 * calls it like any tool; hooks fire as for a local sub-agent (beforeTool → beforeSubAgent → the child's
 * run → afterSubAgent → onStateChange → onMessage → afterTool), with `agentConfig: undefined`. The
 * child's chunks are forwarded into the parent's stream as `subagent_chunk`s, its usage is rolled into
 * the parent's when the client reports it, a child that fails gives the parent's model a
 * `subagent_failed` result (the parent goes on), stopping the parent stops the child, and the spawn is
 * recorded, so a recovered parent re-attaches to the same remote run instead of starting another.
 */
export function defineRemoteSubAgentTool<TInputSchema extends z.ZodType>(options: RemoteSubAgentToolOptions<TInputSchema>): ToolDefinition<z.output<TInputSchema>, unknown> {
  const { client, agentType } = options;
  if (typeof agentType !== 'string' || agentType.length === 0 || agentType.length > 256) throw new ConfigError('defineRemoteSubAgentTool() needs an agentType of 1 to 256 characters.');
  const missing = CLIENT_METHODS.filter((m) => typeof (client as unknown as Record<string, unknown> | undefined)?.[m] !== 'function');
  if (missing.length > 0) throw new ConfigError(`defineRemoteSubAgentTool() needs a RemoteAgentClient; the client has no ${missing.join(', ')}().`, { missing });
  checkMs(options.timeoutMs, 'timeoutMs');
  checkMs(options.stopTimeoutMs, 'stopTimeoutMs');
  const input = options.input as ((args: unknown) => string) | undefined;
  const subAgent: RemoteSubAgentSpec = Object.freeze({
    kind: 'remote' as const,
    agentType,
    client,
    input: input ?? defaultInput,
    output: options.output ?? ((value: unknown) => value),
    stopTimeoutMs: options.stopTimeoutMs ?? 10_000,
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
  });
  const tool = defineTool({
    name: options.name,
    description: options.description,
    inputSchema: options.inputSchema,
    // The child's outcome is recorded, so a recovered parent replays it instead of running the child again.
    sideEffects: true,
    execute: () => {
      throw new ConfigError(`The remote sub-agent tool "${options.name}" runs only inside a helix runtime (the runtime starts its child run).`);
    },
  });
  return Object.freeze({ ...tool, subAgent });
}
