import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { AgentConfig } from '@helix-agents/sdk';
import type { HookDefinition, HookEventKey, MountedHook, MountedHookPack } from '@helix-agents/sdk/hooks';
import { hookEventKeys, hookNameProblem, isHookDefinition, mountHook } from '@helix-agents/sdk/hooks';
import type { ScriptedStepObject } from '@helix-agents/sdk/testing';
import { CliError } from './errors.js';
import { readScript } from './script.js';

/** How bad a discovery problem is: errors fail `validate` (and stop `run`); warnings are reported only. */
export type DiagnosticSeverity = 'error' | 'warning';

/** One discovery problem, tied to the file it is about. */
export interface Diagnostic {
  readonly severity: DiagnosticSeverity;
  /** A stable code, e.g. `hook_default_export`. */
  readonly code: string;
  /** The file, relative to the project folder (posix separators). */
  readonly file?: string;
  readonly message: string;
}

/** An agent found in `agents/`. */
export interface ProjectAgent {
  /** The agent's own name (`defineAgent({ name })`), which `--agent` and the stores use. */
  readonly name: string;
  /** Its module, relative to the project folder. */
  readonly file: string;
  readonly agent: AgentConfig<unknown, unknown>;
  /** `agents/<file name>.script.json`, when the project ships one (and it is valid). */
  readonly script?: { readonly file: string; readonly steps: readonly ScriptedStepObject[] };
}

/** A hook found in `hooks/` (or mounted from a pack in `helix.config.ts`). */
export interface ProjectHook {
  /** Its mounted name: the path under `hooks/` without the extension, or `<ns>__<name>`. */
  readonly name: string;
  /** Its module (for a pack: the config file). */
  readonly file: string;
  readonly events: readonly HookEventKey[];
  readonly hook: HookDefinition;
}

/** A project folder as discovery found it. */
export interface Project {
  readonly dir: string;
  readonly agents: readonly ProjectAgent[];
  /** The hooks that dispatch (valid and with at least one handler), files first, then packs. */
  readonly hooks: readonly ProjectHook[];
  readonly diagnostics: readonly Diagnostic[];
}

const MODULE = /\.(ts|mts|js|mjs)$/;
const SKIPPED = /\.(test|spec)\.(ts|mts|js|mjs)$|\.d\.(ts|mts)$/;
/** The optional project file that mounts hook packs: `export const extensions = [mountHooks('ns', pack)]`. */
export const CONFIG_FILES = ['helix.config.ts', 'helix.config.mts', 'helix.config.js', 'helix.config.mjs'] as const;

/** Module files under `folder` (subfolders included), sorted, as posix paths relative to it; tests and declarations skipped. */
function modulesUnder(folder: string): string[] {
  if (!existsSync(folder)) return [];
  const found: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
      const full = join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile() && MODULE.test(entry.name) && !SKIPPED.test(entry.name)) found.push(relative(folder, full).split(sep).join('/'));
    }
  };
  walk(folder);
  return found.sort();
}

function errorText(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.length > 500 ? `${text.slice(0, 497)}...` : text;
}

function describeValue(value: unknown): string {
  if (value === undefined) return 'no default export';
  if (value === null) return 'null';
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'a plain object' : `a ${typeof value}`;
}

function isAgentConfig(value: unknown): value is AgentConfig<unknown, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v['name'] === 'string' && v['toolsByName'] instanceof Map && Array.isArray(v['llmTools']) && typeof v['llmConfig'] === 'object';
}

function isPack(value: unknown): value is MountedHookPack {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v['namespace'] === 'string' && Array.isArray(v['hooks']) && typeof v['disableHook'] === 'function';
}

async function importModule(path: string, generation: number | undefined): Promise<Record<string, unknown>> {
  // `helix dev` imports a fresh copy on each reload (see bin/dev-reload-hooks.mjs for its imports).
  const url = pathToFileURL(path).href;
  return (await import(generation === undefined ? url : `${url}?helix-dev=${generation}`)) as Record<string, unknown>;
}

/** Options of {@link loadProject}. */
export interface LoadProjectOptions {
  /**
   * Import the project's modules as a fresh copy tagged with this number (`helix dev` counts its
   * reloads); without it, Node's module cache answers a second load.
   */
  readonly generation?: number;
}

/**
 * Discovers a project folder: `agents/<name>.ts` (default export `defineAgent(...)`), `hooks/<name>.ts`
 * (default export `defineHook(...)`; subfolders give names like `audit/usage`), and hook packs mounted
 * by `helix.config.ts` (`export const extensions`). `*.test.ts` and `*.spec.ts` are skipped. Every
 * problem becomes a diagnostic instead of a throw, so `validate` can report all of them; only a
 * missing folder throws (a CliError with exit code 66).
 */
export async function loadProject(folder: string, options: LoadProjectOptions = {}): Promise<Project> {
  const dir = resolve(folder);
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    throw new CliError('cli_missing_folder', `The project folder ${dir} does not exist.`, 'Pass --dir with a project folder, or create one with `helix init <dir>`.');
  }
  const diagnostics: Diagnostic[] = [];
  const report = (severity: DiagnosticSeverity, code: string, file: string | undefined, message: string): void => {
    diagnostics.push({ severity, code, ...(file === undefined ? {} : { file }), message });
  };

  /**
   * Imports a project module and returns its default export if it is what `isExpected` accepts (what
   * `expected` names); a module that fails to load, or exports something else, is reported as `code`.
   */
  const defaultExportOf = async <T>(file: string, isExpected: (value: unknown) => value is T, code: string, expected: string): Promise<T | undefined> => {
    let value: unknown;
    try {
      value = (await importModule(join(dir, file), options.generation))['default'];
    } catch (error) {
      report('error', 'module_load_failed', file, `could not be loaded: ${errorText(error)}`);
      return undefined;
    }
    if (isExpected(value)) return value;
    report('error', code, file, `the default export must be ${expected}, got ${describeValue(value)}`);
    return undefined;
  };

  const agents: ProjectAgent[] = [];
  for (const path of modulesUnder(join(dir, 'agents'))) {
    const file = `agents/${path}`;
    const agent = await defaultExportOf(file, isAgentConfig, 'agent_default_export', 'defineAgent(...)');
    if (agent === undefined) continue;
    const clash = agents.find((a) => a.name === agent.name);
    if (clash) {
      report('error', 'agent_duplicate', file, `defines agent "${agent.name}", which ${clash.file} already defines`);
      continue;
    }
    const scriptFile = `agents/${path.replace(MODULE, '')}.script.json`;
    let script: ProjectAgent['script'];
    if (existsSync(join(dir, scriptFile))) {
      const read = readScript(join(dir, scriptFile));
      if (read.ok) script = { file: scriptFile, steps: read.steps };
      else report('error', 'script_invalid', scriptFile, read.problem);
    }
    agents.push({ name: agent.name, file, agent, ...(script ? { script } : {}) });
  }
  if (agents.length === 0 && !diagnostics.some((d) => d.file?.startsWith('agents/'))) {
    report('error', 'no_agents', 'agents', 'no agent found: add agents/<name>.ts whose default export is defineAgent(...)');
  }

  const hooks: ProjectHook[] = [];
  const addHook = (name: string, file: string, hook: HookDefinition): void => {
    const events = hookEventKeys(hook);
    if (events.length === 0) {
      report('warning', 'hook_empty', file, `hook "${name}" has an empty events map; it is skipped`);
      return;
    }
    hooks.push({ name, file, events, hook });
  };
  for (const path of modulesUnder(join(dir, 'hooks'))) {
    const file = `hooks/${path}`;
    const name = path.replace(MODULE, '');
    const problem = hookNameProblem(name);
    if (problem) {
      report('error', 'hook_name_invalid', file, problem);
      continue;
    }
    const hook = await defaultExportOf(file, isHookDefinition, 'hook_default_export', 'defineHook(...)');
    if (hook === undefined) continue;
    addHook(name, file, hook);
  }

  const config = CONFIG_FILES.find((name) => existsSync(join(dir, name)));
  if (config) {
    try {
      const module = await importModule(join(dir, config), options.generation);
      const extensions = module['extensions'] ?? [];
      if (!Array.isArray(extensions) || !extensions.every(isPack)) {
        report('error', 'config_extensions', config, '`extensions` must be an array of mountHooks(namespace, hooks) values');
      } else {
        const namespaces = new Set<string>();
        for (const pack of extensions) {
          if (namespaces.has(pack.namespace)) {
            report('error', 'pack_duplicate', config, `two hook packs are mounted under the namespace "${pack.namespace}"`);
            continue;
          }
          namespaces.add(pack.namespace);
          for (const mounted of pack.hooks as readonly MountedHook[]) addHook(mounted.name, config, mounted.hook);
        }
      }
    } catch (error) {
      report('error', 'module_load_failed', config, `could not be loaded: ${errorText(error)}`);
    }
  }

  return { dir, agents, hooks, diagnostics };
}

/** The project's hooks as the dispatcher mounts them. */
export function mountedHooks(project: Project): MountedHook[] {
  return project.hooks.map((h) => (h.name.includes('__') ? { name: h.name, hook: h.hook, source: h.file } : mountHook(h.name, h.hook, h.file)));
}

/** True when discovery found an error. */
export function hasErrors(project: Project): boolean {
  return project.diagnostics.some((d) => d.severity === 'error');
}
