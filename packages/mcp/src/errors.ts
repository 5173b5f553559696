import { AgentError, ToolError, type AgentErrorLayer, type AgentErrorSeverity } from '@helix-agents/sdk';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

interface McpCodeDefaults {
  readonly layer: AgentErrorLayer;
  readonly severity: AgentErrorSeverity;
  readonly retryable: boolean;
  readonly hint: string;
}

/**
 * The error codes of `@helix-agents/mcp`. The tool-layer ones are what a call of an MCP tool ends with:
 * they go back to the model as an error tool result and the run goes on.
 */
export const MCP_ERROR_CODES = {
  mcp_connect_failed: {
    layer: 'transport',
    severity: 'error',
    retryable: true,
    hint: 'The MCP server could not be started or reached, or did not finish the handshake in time; check the command or URL, its headers and the server log.',
  },
  mcp_unavailable: {
    layer: 'tool',
    severity: 'error',
    retryable: true,
    hint: 'The connection to the MCP server is closed or broken (the server exited or cannot be reached); connect again once it is back.',
  },
  mcp_timeout: {
    layer: 'tool',
    severity: 'error',
    retryable: true,
    hint: 'The MCP server did not answer the call in time; raise timeoutMs or make the call smaller.',
  },
  mcp_tool_error: {
    layer: 'tool',
    severity: 'error',
    retryable: false,
    hint: 'The MCP server reported that the tool failed, or refused the request; its message went back to the model.',
  },
} as const satisfies Record<string, McpCodeDefaults>;

/** A code of {@link MCP_ERROR_CODES}. */
export type McpErrorCode = keyof typeof MCP_ERROR_CODES;

/** A typed error with the defaults of an MCP code: a ToolError for the tool-layer codes, else an AgentError. */
export function mcpError(code: McpErrorCode, message: string, details: Record<string, unknown>, cause?: unknown): AgentError {
  const defaults: McpCodeDefaults = MCP_ERROR_CODES[code];
  const options = { ...defaults, details, ...(cause === undefined ? {} : { cause }) };
  return defaults.layer === 'tool' ? new ToolError(code, message, options) : new AgentError(code, message, options);
}

/** At most `max` characters of a server-controlled text, for messages. */
export function bounded(text: string, max = 2_000): string {
  return text.length > max ? `${text.slice(0, max - 3)}...` : text;
}

function messageOf(error: unknown): string {
  // McpError prefixes its message with "MCP error <code>: "; the code is in details instead.
  return error instanceof Error ? error.message.replace(/^MCP error -?\d+: /, '') : String(error);
}

/** True when `error` says the transport is gone: closed, never connected, or unreachable over the network. */
export function isTransportFailure(error: unknown): boolean {
  if (error instanceof McpError) return error.code === ErrorCode.ConnectionClosed;
  if (error instanceof StreamableHTTPError) return true;
  if (error instanceof TypeError) return true; // fetch: "fetch failed" (refused, reset), "terminated"
  const text = messageOf(error);
  return text === 'Not connected' || /ECONNREFUSED|ECONNRESET|EPIPE|socket hang up/i.test(text);
}

/**
 * The typed error for a failed `tools/call` or `tools/list` of server `server`: the connection went away
 * (`mcp_unavailable`), the request timed out (`mcp_timeout`), or the server refused it (`mcp_tool_error`).
 */
export function callError(error: unknown, where: { readonly server: string; readonly tool?: string; readonly timeoutMs: number }): AgentError {
  if (AgentError.isInstance(error)) return error;
  const subject = where.tool === undefined ? `MCP server "${where.server}"` : `Tool "${where.tool}" of MCP server "${where.server}"`;
  const details: Record<string, unknown> = { server: where.server, ...(where.tool === undefined ? {} : { serverTool: where.tool }) };
  if (isTransportFailure(error)) {
    return mcpError('mcp_unavailable', `${subject} is unavailable: ${bounded(messageOf(error), 300)}`, details, error);
  }
  if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
    return mcpError('mcp_timeout', `${subject} did not answer within ${where.timeoutMs} ms.`, { ...details, timeoutMs: where.timeoutMs }, error);
  }
  const rpc = error instanceof McpError ? { rpcCode: error.code } : {};
  return mcpError('mcp_tool_error', `${subject} failed: ${bounded(messageOf(error))}`, { ...details, ...rpc }, error);
}
