import { createHash } from 'node:crypto';
import { ConfigError } from '@helix-agents/sdk';

/** What a helix tool name may hold (the rule `defineTool` applies). */
export const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * A connection's name: 1-32 letters, digits, `-` and single `_`, starting with a letter or digit and not
 * ending with `_`. It cannot hold `__`, so in `<connection>__<tool>` the first `__` always ends the connection name.
 */
export const CONNECTION_NAME = /^(?=.{1,32}$)[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_))*(?<!_)$/;

const KEPT = /^[A-Za-z0-9_-]+$/;
const SEPARATOR = '__';
const HASH_CHARS = 8;

/** Throws a ConfigError unless `name` is a valid connection name. */
export function checkConnectionName(name: unknown): string {
  if (typeof name !== 'string' || !CONNECTION_NAME.test(name)) {
    throw new ConfigError(
      `MCP connection name ${JSON.stringify(name)} is invalid: use 1-32 letters, digits, "-" or "_", starting with a letter or digit, with no "__" and no "_" at the end. It prefixes every tool of the server.`,
      { name },
    );
  }
  return name;
}

/**
 * The helix name of server tool `toolName` on connection `connection`: `<connection>__<toolName>` when the
 * server's name is already made of `[A-Za-z0-9_-]` and fits in 64 characters; otherwise every other
 * character becomes `_`, the name is cut to fit, and `_` plus the first 8 hex digits of the SHA-256 of the
 * server's name is appended, so names that differ only in odd characters stay apart. Deterministic: the
 * same server name always gives the same helix name, which a recovered run needs to find its tools again.
 */
export function helixToolName(connection: string, toolName: string): string {
  const prefix = `${connection}${SEPARATOR}`;
  if (KEPT.test(toolName) && prefix.length + toolName.length <= 64) return prefix + toolName;
  const hash = createHash('sha256').update(toolName, 'utf8').digest('hex').slice(0, HASH_CHARS);
  const room = 64 - prefix.length - 1 - HASH_CHARS;
  const cleaned = Array.from(toolName, (char) => (/^[A-Za-z0-9_-]$/.test(char) ? char : '_')).join('');
  return `${prefix}${cleaned.slice(0, room)}_${hash}`;
}

/**
 * Helix names for a server's tools, by server name. Two server names that map to one helix name (a
 * server listing a name twice, or one that spells out another's sanitised form) are a ConfigError that
 * names both: a tool is never silently shadowed.
 */
export function assignToolNames(connection: string, toolNames: readonly string[]): Map<string, string> {
  const byServerName = new Map<string, string>();
  const byHelixName = new Map<string, string>();
  for (const serverName of toolNames) {
    const helixName = helixToolName(connection, serverName);
    const earlier = byHelixName.get(helixName);
    if (earlier !== undefined) {
      const what = earlier === serverName ? `lists the tool ${JSON.stringify(serverName)} twice` : `has tools ${JSON.stringify(earlier)} and ${JSON.stringify(serverName)}, which both become "${helixName}"`;
      throw new ConfigError(`MCP server "${connection}" ${what}; leave one out with exclude.`, { server: connection, tool: helixName });
    }
    byHelixName.set(helixName, serverName);
    byServerName.set(serverName, helixName);
  }
  return byServerName;
}
