import { ConfigError, type ToolDefinition } from '@helix-agents/sdk';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { bounded, callError, mcpError } from './errors.js';
import { checkConnectionName } from './names.js';
import { buildTools, listServerTools, type McpToolInfo, type McpToolsOptions } from './tools.js';

/** Starts the server as a child process and speaks MCP over its stdin and stdout. */
export interface McpStdioTransportOptions {
  /** The executable (no shell is involved: arguments are passed as they are). */
  readonly command: string;
  readonly args?: readonly string[];
  /**
   * Variables for the child, added to a small safe set (HOME, PATH, USER, SHELL, TERM, LOGNAME): the rest
   * of this process's environment (API keys included) is not passed on unless you list it here.
   */
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
  /** The child's stderr: shown on this process's stderr (`inherit`, the default) or dropped (`ignore`). */
  readonly stderr?: 'inherit' | 'ignore';
}

/** Speaks MCP's Streamable HTTP to a server at `url`. */
export interface McpHttpTransportOptions {
  /** An `http:` or `https:` URL, e.g. `http://127.0.0.1:3000/mcp`. */
  readonly url: string | URL;
  /** Headers sent with every request (an `authorization` header, say). Redirects to another origin are not followed, so they stay with this origin. */
  readonly headers?: Readonly<Record<string, string>>;
  /** A fetch of your own (a proxy, a test double); the global fetch by default. */
  readonly fetch?: typeof fetch;
}

/** What {@link connectMcpServer} takes. */
export interface ConnectMcpServerOptions {
  /**
   * The local name of this server: 1-32 letters, digits, `-` or `_`, starting with a letter or digit, with no
   * `__` and no `_` at the end. Every tool
   * of the server is offered to the model as `<name>__<tool>`, so it cannot collide with a tool of yours.
   */
  readonly name: string;
  readonly transport: McpStdioTransportOptions | McpHttpTransportOptions;
  /** How long starting the server and the MCP handshake may take (default 30,000 ms). */
  readonly connectTimeoutMs?: number;
  /** The default time limit of one tool call (default 60,000 ms); `tools({ timeoutMs })` overrides it. */
  readonly callTimeoutMs?: number;
  /** How this client introduces itself to the server (default `helix-agents` `0.1.0`). */
  readonly clientInfo?: { readonly name: string; readonly version: string };
}

/** Options of one {@link McpConnection.callTool} call. */
export interface McpCallOptions {
  readonly timeoutMs?: number;
  /** Aborting it cancels the call (the server is sent a cancellation). */
  readonly signal?: AbortSignal;
}

const DEFAULT_CONNECT_TIMEOUT_MS = 30_000;
const DEFAULT_CALL_TIMEOUT_MS = 60_000;
/** How long a liveness ping may take when the transport reports trouble during a call. */
const PROBE_TIMEOUT_MS = 5_000;

function checkTimeout(value: number | undefined, what: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) throw new ConfigError(`${what} must be a positive number of milliseconds, got ${String(value)}.`, { [what]: value });
  return value;
}

function isHttp(options: McpStdioTransportOptions | McpHttpTransportOptions): options is McpHttpTransportOptions {
  return typeof options === 'object' && options !== null && 'url' in options;
}

function createTransport(name: string, options: McpStdioTransportOptions | McpHttpTransportOptions): Transport {
  if (isHttp(options)) {
    let url: URL;
    try {
      url = new URL(options.url);
    } catch {
      throw new ConfigError(`MCP server "${name}": ${JSON.stringify(String(options.url))} is not a URL.`, { server: name });
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(`MCP server "${name}": the URL must be http: or https:, got ${url.protocol}`, { server: name });
    return new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { ...options.headers } },
      redirectPolicy: 'same-origin',
      ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
    });
  }
  if (typeof options !== 'object' || options === null || typeof options.command !== 'string' || options.command === '') {
    throw new ConfigError(`MCP server "${name}": transport needs a command (stdio) or a url (HTTP).`, { server: name });
  }
  return new StdioClientTransport({
    command: options.command,
    args: [...(options.args ?? [])],
    ...(options.env === undefined ? {} : { env: { ...options.env } }),
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    stderr: options.stderr ?? 'inherit',
  });
}

/**
 * Connects to an MCP server (starting it, for stdio) and completes the MCP handshake. Rejects with a
 * ConfigError for bad options and with `mcp_connect_failed` (retryable) when the server cannot be
 * started or reached, or does not finish the handshake within `connectTimeoutMs`.
 */
export async function connectMcpServer(options: ConnectMcpServerOptions): Promise<McpConnection> {
  const name = checkConnectionName(options?.name);
  const connectTimeoutMs = checkTimeout(options.connectTimeoutMs, 'connectTimeoutMs', DEFAULT_CONNECT_TIMEOUT_MS);
  const callTimeoutMs = checkTimeout(options.callTimeoutMs, 'callTimeoutMs', DEFAULT_CALL_TIMEOUT_MS);
  const transport = createTransport(name, options.transport);
  const client = new Client(options.clientInfo ?? { name: 'helix-agents', version: '0.1.0' }, { capabilities: {} });
  // Transport errors are handled by the connection; without a handler the SDK would log them.
  client.onerror = () => {};
  try {
    await client.connect(transport, { timeout: connectTimeoutMs });
  } catch (error) {
    await client.close().catch(() => {});
    const why = error instanceof McpError && error.code === ErrorCode.RequestTimeout ? `no handshake within ${connectTimeoutMs} ms` : bounded(error instanceof Error ? error.message : String(error), 300);
    throw mcpError('mcp_connect_failed', `Could not connect to MCP server "${name}": ${why}.`, { server: name }, error);
  }
  return new McpConnection(name, client, callTimeoutMs, transport);
}

/**
 * A live connection to one MCP server. `tools()` gives its tools as helix tools; `close()` ends the
 * connection (and stops a stdio server). Closing is idempotent; calls after it fail with `mcp_unavailable`.
 */
export class McpConnection {
  /** The local name given to {@link connectMcpServer}; the prefix of every tool name. */
  readonly name: string;
  /** The default time limit of one call. */
  readonly callTimeoutMs: number;
  readonly #client: Client;
  readonly #transport: Transport | undefined;
  readonly #pending = new Set<AbortController>();
  /** Why the connection is gone, once it is. */
  #closed: string | undefined;
  #closing = false;
  #probing = false;

  /** Made by {@link connectMcpServer}. */
  constructor(name: string, client: Client, callTimeoutMs: number, transport?: Transport) {
    this.name = name;
    this.callTimeoutMs = callTimeoutMs;
    this.#client = client;
    this.#transport = transport;
    client.onclose = () => this.#lost(this.#closing ? 'the connection was closed' : 'the server closed the connection');
    client.onerror = () => {
      // A broken stream during a call may leave it without an answer: check the server is still there.
      if (this.#pending.size > 0) void this.#probe();
    };
  }

  /** The name and version the server reported (its own claim). */
  get serverInfo(): { readonly name: string; readonly version: string } | undefined {
    const info = this.#client.getServerVersion();
    return info === undefined ? undefined : { name: info.name, version: info.version };
  }

  /** False once the connection closed (by `close()`, or because the server went away). */
  get connected(): boolean {
    return this.#closed === undefined;
  }

  /** Every tool the server lists, with the helix name each would get. */
  async listTools(): Promise<McpToolInfo[]> {
    this.#throwIfClosed();
    try {
      return await listServerTools(this.name, this.#client, this.callTimeoutMs);
    } catch (error) {
      throw callError(error, { server: this.name, timeoutMs: this.callTimeoutMs });
    }
  }

  /** The server's tools as helix tools (see {@link McpToolsOptions}), ready for `defineAgent({ tools })`. */
  async tools(options: McpToolsOptions = {}): Promise<ToolDefinition[]> {
    return buildTools(this, await this.listTools(), options);
  }

  /**
   * Calls server tool `name` (the server's name, not the helix one) and returns the server's result as it
   * is, `isError` included. Rejects with `mcp_unavailable`, `mcp_timeout` or `mcp_tool_error`.
   */
  async callTool(name: string, args: Record<string, unknown>, options: McpCallOptions = {}): Promise<CallToolResult> {
    this.#throwIfClosed(name);
    const timeoutMs = options.timeoutMs ?? this.callTimeoutMs;
    const controller = new AbortController();
    const onAbort = () => controller.abort(options.signal?.reason);
    if (options.signal?.aborted) onAbort();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    this.#pending.add(controller);
    try {
      const result = await this.#client.callTool({ name, arguments: args }, undefined, { timeout: timeoutMs, signal: controller.signal });
      return result as CallToolResult;
    } catch (error) {
      // Cancelled by the caller (the run was stopped): the caller's reason, as fetch does.
      if (options.signal?.aborted) throw options.signal.reason instanceof Error ? options.signal.reason : new DOMException('The call was aborted.', 'AbortError');
      throw callError(this.#closed === undefined ? error : new McpError(ErrorCode.ConnectionClosed, this.#closed), { server: this.name, tool: name, timeoutMs });
    } finally {
      this.#pending.delete(controller);
      options.signal?.removeEventListener('abort', onAbort);
    }
  }

  /**
   * Ends the connection: an HTTP session is ended on the server (a DELETE, given at most 2 s); a stdio
   * server's stdin is closed, then it is sent SIGTERM and SIGKILL if it lingers.
   */
  async close(): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    if (this.#transport instanceof StreamableHTTPClientTransport && this.#closed === undefined) {
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, 2_000)));
      await Promise.race([this.#transport.terminateSession().catch(() => {}), bound]);
      clearTimeout(timer);
    }
    await this.#client.close();
    this.#lost('the connection was closed');
  }

  #throwIfClosed(tool?: string): void {
    if (this.#closed !== undefined) throw callError(new McpError(ErrorCode.ConnectionClosed, this.#closed), { server: this.name, ...(tool === undefined ? {} : { tool }), timeoutMs: this.callTimeoutMs });
  }

  /** The connection is gone: pending calls end now with `mcp_unavailable`, and so does every later call. */
  #lost(why: string): void {
    this.#closed ??= why;
    this.#abortPending(why);
  }

  #abortPending(why: string): void {
    for (const controller of this.#pending) controller.abort(new McpError(ErrorCode.ConnectionClosed, why));
  }

  /** A ping with a short limit; when it fails the server is gone, so the calls waiting on it end now. */
  async #probe(): Promise<void> {
    if (this.#probing || this.#closed !== undefined) return;
    this.#probing = true;
    try {
      await this.#client.ping({ timeout: PROBE_TIMEOUT_MS });
    } catch (error) {
      this.#abortPending(`the server does not answer (${bounded(error instanceof Error ? error.message : String(error), 200)})`);
    } finally {
      this.#probing = false;
    }
  }
}
