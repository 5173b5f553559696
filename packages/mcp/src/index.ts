/** @helix-agents/mcp: the tools of a Model Context Protocol server (stdio or Streamable HTTP) as helix tools. */
export { connectMcpServer, McpConnection } from './connect.js';
export type { ConnectMcpServerOptions, McpCallOptions, McpHttpTransportOptions, McpStdioTransportOptions } from './connect.js';
export type { McpToolAnnotations, McpToolInfo, McpToolsOptions } from './tools.js';
export { MCP_ERROR_CODES } from './errors.js';
export type { McpErrorCode } from './errors.js';
export { CONNECTION_NAME, helixToolName } from './names.js';
