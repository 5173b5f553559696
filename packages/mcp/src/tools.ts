import { ConfigError, defineTool, type JSONSchema, type ToolContext, type ToolDefinition } from '@helix-agents/sdk';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { RE2JS } from 're2js';
import addFormats from 'ajv-formats';
import { z } from 'zod';
import { bounded, mcpError } from './errors.js';
import { assignToolNames, helixToolName } from './names.js';

/** The hints a server may give about a tool (its own claims; a hostile server can say anything). */
export interface McpToolAnnotations {
  readonly title?: string;
  /** The tool does not change its environment. */
  readonly readOnlyHint?: boolean;
  readonly destructiveHint?: boolean;
  readonly idempotentHint?: boolean;
  readonly openWorldHint?: boolean;
}

/** One tool as the server lists it, with the helix name it gets. */
export interface McpToolInfo {
  /** The server's name of the tool. */
  readonly name: string;
  /** `<connection>__<name>`, sanitised (see the package README). */
  readonly helixName: string;
  readonly title?: string;
  /** The server's description (at most 8,000 characters are kept). */
  readonly description: string;
  /** The server's JSON Schema of the arguments, offered to the model as it is (without `$schema`). */
  readonly inputSchema: JSONSchema;
  readonly annotations?: McpToolAnnotations;
}

/** Which of a server's tools to offer and how the runtime treats them. */
export interface McpToolsOptions {
  /** Server tool names to offer (default: all). A name the server does not list is a ConfigError. */
  readonly include?: readonly string[];
  /** Server tool names to leave out. */
  readonly exclude?: readonly string[];
  /**
   * Whether a call is journaled so a recovered run never runs it twice (the `sideEffects` of `defineTool`).
   * Default: true for every tool, except one the server annotates `readOnlyHint: true`. Pass `true` to
   * ignore the server's hints, or a function to decide per tool.
   */
  readonly sideEffects?: boolean | ((tool: McpToolInfo) => boolean);
  /** Whether a human approves each call (the `needsApproval` of `defineTool`); default false. */
  readonly needsApproval?: boolean | ((tool: McpToolInfo) => boolean);
  /** The time limit of one call (default: the connection's `callTimeoutMs`). */
  readonly timeoutMs?: number;
}

/** What the tools need from their connection. */
export interface McpCaller {
  readonly name: string;
  readonly callTimeoutMs: number;
  callTool(name: string, args: Record<string, unknown>, options: { readonly timeoutMs?: number; readonly signal?: AbortSignal }): Promise<CallToolResult>;
}

const MAX_PAGES = 100;
const MAX_TOOLS = 1_000;
const MAX_DESCRIPTION = 8_000;
const MAX_SCHEMA_CHARS = 100_000;
const MAX_ISSUES = 20;

/** Every tool the server lists (following pages), with the helix name each gets; clashes are checked by {@link buildTools}. */
export async function listServerTools(connection: string, client: Client, timeoutMs: number): Promise<McpToolInfo[]> {
  const listed: Tool[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const result = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout: timeoutMs });
    listed.push(...result.tools);
    if (listed.length > MAX_TOOLS) throw new ConfigError(`MCP server "${connection}" lists more than ${MAX_TOOLS} tools.`, { server: connection });
    cursor = result.nextCursor;
    if (cursor === undefined) break;
  }
  return listed.map((tool) => toInfo(tool, helixToolName(connection, tool.name)));
}

function toInfo(tool: Tool, helixName: string): McpToolInfo {
  const { $schema: _ignored, ...inputSchema } = tool.inputSchema as Record<string, unknown>;
  const annotations = tool.annotations;
  return Object.freeze({
    name: tool.name,
    helixName,
    ...(tool.title === undefined ? {} : { title: tool.title }),
    description: bounded(tool.description ?? tool.title ?? annotations?.title ?? '', MAX_DESCRIPTION),
    inputSchema: Object.freeze(inputSchema),
    ...(annotations === undefined ? {} : { annotations: Object.freeze({ ...annotations }) }),
  });
}

function decide(option: boolean | ((tool: McpToolInfo) => boolean) | undefined, tool: McpToolInfo, fallback: boolean): boolean {
  if (option === undefined) return fallback;
  return typeof option === 'function' ? option(tool) === true : option === true;
}

function select(connection: string, tools: readonly McpToolInfo[], options: McpToolsOptions): McpToolInfo[] {
  const byName = new Map(tools.map((t) => [t.name, t] as const));
  for (const wanted of [...(options.include ?? []), ...(options.exclude ?? [])]) {
    if (!byName.has(wanted)) {
      throw new ConfigError(`MCP server "${connection}" has no tool ${JSON.stringify(wanted)}; it lists: ${tools.map((t) => JSON.stringify(t.name)).join(', ') || '(none)'}.`, { server: connection, tool: wanted });
    }
  }
  const included = options.include === undefined ? tools : tools.filter((t) => options.include?.includes(t.name));
  return included.filter((t) => !(options.exclude ?? []).includes(t.name));
}

/**
 * The regular expressions of a server's schemas (`pattern`, `patternProperties`) run on RE2, whose
 * matching time is linear in the input: a pattern such as `^(a+)+$` cannot make a check of the model's
 * arguments backtrack for ever. RE2 has no backreferences or lookarounds; a schema using them cannot be
 * compiled, and its tool is refused with a ConfigError that says to leave it out.
 */
const linearRegExp = Object.assign(
  (pattern: string): { test(input: string): boolean } => {
    const compiled = RE2JS.compile(RE2JS.translateRegExp(pattern));
    return { test: (input: string) => compiled.test(input) };
  },
  { code: 'linearRegExp' },
);

/** Builds the helix tools of `tools` (as `listServerTools` gave them) on `caller`. */
export function buildTools(caller: McpCaller, tools: readonly McpToolInfo[], options: McpToolsOptions): ToolDefinition[] {
  const timeoutMs = options.timeoutMs ?? caller.callTimeoutMs;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new ConfigError(`timeoutMs must be a positive number of milliseconds, got ${String(options.timeoutMs)}.`);
  const ajv = new Ajv({ strict: false, allErrors: true, validateSchema: false, code: { regExp: linearRegExp } });
  addFormats.default(ajv);
  const selected = select(caller.name, tools, options);
  // Checked on what is offered, so that leaving a tool out resolves a clash.
  assignToolNames(caller.name, selected.map((t) => t.name));
  return selected.map((info) => buildTool(caller, ajv, info, options, timeoutMs));
}

function buildTool(caller: McpCaller, ajv: Ajv, info: McpToolInfo, options: McpToolsOptions, timeoutMs: number): ToolDefinition {
  const validate = compileInput(caller.name, ajv, info);
  const inputSchema = z.unknown().superRefine((value, ctx) => {
    if (validate(value)) return;
    for (const issue of (validate.errors ?? []).slice(0, MAX_ISSUES)) ctx.addIssue({ code: 'custom', message: issueMessage(issue), path: pathOf(issue.instancePath) });
  }) as z.ZodType<Record<string, unknown>>;
  const defined = defineTool({
    name: info.helixName,
    description: info.description,
    inputSchema,
    sideEffects: decide(options.sideEffects, info, info.annotations?.readOnlyHint !== true),
    needsApproval: decide(options.needsApproval, info, false),
    execute: async (input: Record<string, unknown>, ctx: ToolContext) => modelResult(caller, info, await caller.callTool(info.name, input, { timeoutMs, signal: ctx.abortSignal })),
  });
  return Object.freeze({ ...defined, jsonSchema: info.inputSchema }) as ToolDefinition;
}

function compileInput(connection: string, ajv: Ajv, info: McpToolInfo): ValidateFunction {
  const text = JSON.stringify(info.inputSchema);
  if (text.length > MAX_SCHEMA_CHARS) {
    throw new ConfigError(`MCP tool ${JSON.stringify(info.name)} of server "${connection}" has an input schema over ${MAX_SCHEMA_CHARS} characters; leave it out with exclude.`, { server: connection, tool: info.helixName });
  }
  if (info.inputSchema['type'] !== 'object') {
    throw new ConfigError(`MCP tool ${JSON.stringify(info.name)} of server "${connection}" has an input schema whose type is not "object"; leave it out with exclude.`, { server: connection, tool: info.helixName });
  }
  try {
    // A copy without $id: a server cannot make one tool's schema stand for another's.
    const { $id: _id, ...schema } = JSON.parse(text) as Record<string, unknown>;
    return ajv.compile(schema);
  } catch (error) {
    throw new ConfigError(`MCP tool ${JSON.stringify(info.name)} of server "${connection}" has an input schema that cannot be compiled (${bounded(error instanceof Error ? error.message : String(error), 300)}); leave it out with exclude.`, { server: connection, tool: info.helixName });
  }
}

function issueMessage(issue: ErrorObject): string {
  const property = issue.keyword === 'additionalProperties' ? ` (${String((issue.params as { additionalProperty?: unknown }).additionalProperty)})` : '';
  return `${issue.message ?? 'is invalid'}${property}`;
}

/** A JSON pointer (`/a/0/b`) as a path (`['a', '0', 'b']`). */
function pathOf(pointer: string): string[] {
  if (pointer === '') return [];
  return pointer.slice(1).split('/').map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/**
 * What the model gets: the server's `structuredContent` when it sent one; else the text of a result made
 * only of text blocks (joined by newlines); else the content blocks as they are. A result marked `isError`
 * is thrown as `mcp_tool_error`, so it goes back to the model as an error result.
 */
export function modelResult(caller: McpCaller, info: McpToolInfo, result: CallToolResult): unknown {
  const content = Array.isArray(result.content) ? result.content : [];
  const texts = content.every((block) => block.type === 'text') ? content.map((block) => (block as { text: string }).text) : undefined;
  if (result.isError === true) {
    const message = texts?.join('\n') ?? JSON.stringify(content);
    throw mcpError('mcp_tool_error', `Tool "${info.helixName}" failed on MCP server "${caller.name}": ${bounded(message)}`, { server: caller.name, tool: info.helixName, serverTool: info.name });
  }
  if (result.structuredContent !== undefined) return result.structuredContent;
  if (texts !== undefined) return texts.join('\n');
  return content;
}
