import { lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { ConfigError } from '../errors.js';
import { guard } from '../hooks/manager.js';
import type { AgentHooks, BeforeToolPayload, BeforeToolResult } from '../hooks/types.js';

/** Tests one argument value: a RegExp, or a function such as {@link pathInside}. */
export type ArgumentMatcher = RegExp | ((value: string) => boolean);

/** A rule on one argument of the tools it names. */
export interface ArgumentRule {
  /** A tool name, a glob such as `fs_*`, or `'*'`. */
  readonly tool: string;
  /** A dot path into the input (`path`, `options.target`, `files.*.path`; `*` walks every item of an array or object). */
  readonly path: string;
  /** The call is blocked when a value matches any of these. */
  readonly deny?: readonly ArgumentMatcher[];
  /** The call is blocked when a value matches none of these. */
  readonly allow?: readonly ArgumentMatcher[];
}

/** Options of {@link createToolGuard}. Deny wins over allow; a missing argument is not checked (make it required in the tool's schema). */
export interface ToolGuardOptions {
  /** When given, only these tools (names or globs) may run. */
  readonly allow?: readonly string[];
  /** These tools (names or globs) never run. */
  readonly deny?: readonly string[];
  readonly argumentRules?: readonly ArgumentRule[];
}

/** What the guard decided about one call. */
export type ToolGuardDecision = { readonly allowed: true } | { readonly allowed: false; readonly reason: string };

/** The hooks {@link createToolGuard} returns. */
export type ToolGuardHooks<TState = unknown, TOutput = unknown> = Required<Pick<AgentHooks<TState, TOutput>, 'beforeTool'>>;

function globToRegExp(glob: string): RegExp {
  return new RegExp(`^${glob.split('*').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
}

/**
 * The real location of `path` (absolute, normalized): the realpath of its longest existing prefix with the
 * rest appended, a dangling symlink followed to its target; undefined when links loop or nest too deep.
 */
export function realLocation(path: string, depth = 0): string | undefined {
  if (depth > 40) return undefined;
  try {
    return realpathSync(path);
  } catch {
    // Not there (or not readable): a dangling symlink still points somewhere a write would create.
  }
  try {
    if (lstatSync(path).isSymbolicLink()) return realLocation(resolve(dirname(path), readlinkSync(path)), depth + 1);
  } catch {
    // Nothing at this path: its parent decides.
  }
  const parent = dirname(path);
  if (parent === path) return path;
  const realParent = realLocation(parent, depth);
  return realParent === undefined ? undefined : join(realParent, basename(path));
}

function contains(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

/**
 * A matcher that accepts paths inside `dir` the way a tool would open them: a relative value is resolved
 * against `cwd` (default: `process.cwd()` at the time of the check, as `fs` does), then symlinks are
 * resolved (the realpath of the longest existing prefix, dangling links followed), so `../`, absolute
 * paths and links pointing out cannot escape the way they slip past a prefix RegExp. `dir` itself is
 * inside; `dir` is resolved against the working directory when the matcher is made.
 */
export function pathInside(dir: string, options: { readonly cwd?: string } = {}): (value: string) => boolean {
  const root = resolve(dir);
  const matcher = (value: string): boolean => {
    if (value.includes('\0')) return false;
    const realRoot = realLocation(root);
    const target = realLocation(resolve(options.cwd ?? process.cwd(), value));
    return realRoot !== undefined && target !== undefined && contains(realRoot, target);
  };
  Object.defineProperty(matcher, 'name', { value: `pathInside(${root})` });
  return matcher;
}

function describe(matcher: ArgumentMatcher): string {
  return matcher instanceof RegExp ? String(matcher) : matcher.name || 'a custom matcher';
}

function test(matcher: ArgumentMatcher, value: string): boolean {
  if (matcher instanceof RegExp) {
    // A global or sticky RegExp keeps lastIndex between calls and would answer differently each time.
    matcher.lastIndex = 0;
    return matcher.test(value);
  }
  return matcher(value);
}

/** The values at a dot path; `*` fans out over arrays and objects; arrays at the end are checked item by item. */
function valuesAt(input: unknown, path: readonly string[]): unknown[] {
  let current: unknown[] = [input];
  for (const segment of path) {
    const next: unknown[] = [];
    for (const value of current) {
      if (typeof value !== 'object' || value === null) continue;
      if (segment === '*') next.push(...(Array.isArray(value) ? value : Object.values(value)));
      else if (Object.prototype.hasOwnProperty.call(value, segment)) next.push((value as Record<string, unknown>)[segment]);
    }
    current = next;
  }
  return current.flatMap((v) => (Array.isArray(v) ? v : [v])).filter((v) => v !== undefined && v !== null);
}

function asText(value: unknown): string {
  return typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value);
}

function shown(value: string): string {
  return value.length > 120 ? `${value.slice(0, 117)}...` : value;
}

interface CompiledRule {
  readonly tool: RegExp;
  readonly path: string;
  readonly segments: readonly string[];
  readonly deny: readonly ArgumentMatcher[];
  readonly allow: readonly ArgumentMatcher[] | undefined;
}

/** Checks options once and returns the pure decision function the guard runs for every call. */
export function compileToolGuard(options: ToolGuardOptions): (toolName: string, input: unknown) => ToolGuardDecision {
  const allow = options.allow?.map(globToRegExp);
  const deny = (options.deny ?? []).map(globToRegExp);
  const rules: CompiledRule[] = (options.argumentRules ?? []).map((rule, i) => {
    if (typeof rule.tool !== 'string' || typeof rule.path !== 'string' || rule.path === '') {
      throw new ConfigError(`argumentRules[${i}] needs a tool and a dot path.`, { rule: i });
    }
    if (!rule.deny?.length && !rule.allow) throw new ConfigError(`argumentRules[${i}] (${rule.tool} ${rule.path}) needs deny or allow matchers.`, { rule: i });
    for (const m of [...(rule.deny ?? []), ...(rule.allow ?? [])]) {
      if (!(m instanceof RegExp) && typeof m !== 'function') throw new ConfigError(`argumentRules[${i}]: a matcher must be a RegExp or a function (value) => boolean.`, { rule: i });
    }
    return { tool: globToRegExp(rule.tool), path: rule.path, segments: rule.path.split('.'), deny: rule.deny ?? [], allow: rule.allow };
  });
  const allowList = options.allow?.join(', ');

  return (toolName, input) => {
    if (deny.some((re) => re.test(toolName))) return { allowed: false, reason: `Tool '${toolName}' is on the tool guard's deny list.` };
    if (allow && !allow.some((re) => re.test(toolName))) {
      return { allowed: false, reason: `Tool '${toolName}' is not on the tool guard's allow list (allowed: ${allowList || 'none'}).` };
    }
    for (const rule of rules) {
      if (!rule.tool.test(toolName)) continue;
      for (const raw of valuesAt(input, rule.segments)) {
        const value = asText(raw);
        const denied = rule.deny.find((m) => test(m, value));
        if (denied) return { allowed: false, reason: `Argument '${rule.path}' of tool '${toolName}' is not allowed: '${shown(value)}' matches ${describe(denied)}.` };
        if (rule.allow && !rule.allow.some((m) => test(m, value))) {
          return {
            allowed: false,
            reason: `Argument '${rule.path}' of tool '${toolName}' is not allowed: '${shown(value)}' matches none of ${rule.allow.map(describe).join(', ') || '(no allowed values)'}.`,
          };
        }
      }
    }
    return { allowed: true };
  };
}

/**
 * A beforeTool guard on tool names and argument values that blocks with a clear reason (the model gets it
 * as an error tool result). Register it before any confirmation hook, so a blocked call never asks a human,
 * with `createHookManager(createToolGuard(...), { onError: guardPolicy })`.
 */
export function createToolGuard<TState = unknown, TOutput = unknown>(options: ToolGuardOptions): ToolGuardHooks<TState, TOutput> {
  const decide = compileToolGuard(options);
  const beforeTool = (payload: BeforeToolPayload): BeforeToolResult | undefined => {
    const decision = decide(payload.toolCall.name, payload.toolCall.arguments);
    return decision.allowed ? undefined : { block: true, reason: decision.reason };
  };
  return { beforeTool: guard(beforeTool, { name: 'toolGuard' }) };
}
