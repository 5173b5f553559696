import { randomBytes } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import { register } from 'node:module';
import { join, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { defineAgent, JSAgentExecutor, type AgentConfig } from '@helix-agents/sdk';
import { createHookDispatcher, type HookDispatcher } from '@helix-agents/sdk/hooks';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { openSqliteStores, SqliteFileStore, SqliteKVStore } from '@helix-agents/store-sqlite';
import { bearerAuth, createHelixApp, KVSessionOwners, serve, type HelixServer } from '@helix-agents/server';
import { CliError, EXIT } from './errors.js';
import { serveLogger } from './log.js';
import { chooseModel } from './model.js';
import type { ModelChoice } from './model-choice.js';
import { hasErrors, loadProject, mountedHooks, type Project } from './project.js';
import { printDiagnostics } from './report.js';
import type { CliIO } from './run.js';

/** Options of `helix dev`. */
export interface DevOptions {
  readonly dir: string;
  /** The port on 127.0.0.1 (default 4111; 0: any free one, printed at start). */
  readonly port: number;
  /** auto / agent (each agent's own model) or openai; `scripted` needs a message up front, so dev refuses it. */
  readonly model: ModelChoice;
  readonly baseURL?: string;
  /** The database (default `<dir>/.helix/helix.db`). */
  readonly database?: string;
  /** The bearer token (default: HELIX_DEV_TOKEN, else a fresh random one); at least 16 characters. */
  readonly token?: string;
  /** How long to wait after the last file change before reloading (ms, default 150). */
  readonly debounceMs?: number;
  readonly verbose?: boolean;
}

/** Files whose change reloads the project: modules and JSON (scripts) outside .helix/ and node_modules/. */
const RELOADS = /\.(ts|mts|cts|js|mjs|cjs|json)$/;
const IGNORED = /(^|[\\/])(\.helix|node_modules|\.git)([\\/]|$)|(^|[\\/])package-lock\.json$/;

let hookRegistered = false;

/** Makes every project module a fresh import per generation (bin/dev-reload-hooks.mjs), once per process. */
function registerReloadHook(dir: string): void {
  if (hookRegistered) return;
  hookRegistered = true;
  register(new URL('../bin/dev-reload-hooks.mjs', import.meta.url), { data: { root: pathToFileURL(dir.endsWith(sep) ? dir : dir + sep).href } });
}

interface Generation {
  readonly number: number;
  readonly app: { fetch(request: Request): Response | Promise<Response> };
  readonly dispatcher: HookDispatcher;
  readonly agents: readonly string[];
}

/**
 * `helix dev`: serves a project folder on 127.0.0.1 (its agents, its hooks, the SQLite store of
 * `helix run`) with the AI SDK UI protocol endpoints, the native API and the devtools page, behind a
 * bearer token printed at start, and reloads agents and hooks when the project's files change: each
 * reload imports the project's modules afresh (the whole project-local module graph) and swaps the
 * app; runs in progress finish on the code they started with. Resolves with the exit code when
 * `io.signal` aborts (Ctrl-C).
 */
export async function devCommand(options: DevOptions, io: CliIO): Promise<number> {
  if (options.model === 'scripted') {
    throw new CliError('cli_usage', '`helix dev --model scripted` is not supported: a scripted model plays one message; give the agent a scripted model in its own file, or use --model openai.');
  }
  const token = options.token ?? io.env['HELIX_DEV_TOKEN'] ?? randomBytes(24).toString('base64url');
  if (token.length < 16 || !/^[\x21-\x7e]+$/.test(token)) throw new CliError('cli_usage', 'The dev token (--token or HELIX_DEV_TOKEN) must be 16 or more printable characters without spaces.');
  const logger = serveLogger(io.stderr, { verbose: options.verbose === true });
  const dir = resolve(options.dir);
  registerReloadHook(dir);
  let number = 1;
  const first = await loadProject(dir, { generation: number });
  printDiagnostics(first, io.stderr);
  if (hasErrors(first)) return EXIT.failed;

  const stateRoot = join(dir, '.helix');
  const stores = openSqliteStores({ path: options.database ?? join(stateRoot, 'helix.db') });
  const kv = new SqliteKVStore(stores.database);
  const files = new SqliteFileStore(stores.database);
  // Every hook invocation is recorded (not only steering decisions), so the devtools show each firing.
  const executor = new JSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { logger, auditHooks: 'all' });
  const owners = new KVSessionOwners(kv);
  const auth = bearerAuth({ [token]: 'dev' });

  const build = (project: Project, generation: number): Generation => {
    const agents = project.agents.map((a): AgentConfig<unknown, unknown> => {
      if (options.model === 'auto' || options.model === 'agent') return a.agent;
      const chosen = chooseModel(options.model, a, '', io.env, options.baseURL === undefined ? {} : { baseURL: options.baseURL });
      return defineAgent({ ...a.agent, llmConfig: { ...a.agent.llmConfig, model: chosen.model } }) as AgentConfig<unknown, unknown>;
    });
    const app = createHelixApp({ runtime: executor, agents, auth, owners, usageStore: stores.usageStore, logger });
    const dispatcher = createHookDispatcher({ source: executor, hooks: mountedHooks(project), kv, files, logger, stateRoot });
    return { number: generation, app, dispatcher, agents: agents.map((a) => a.name) };
  };

  let current = build(first, number);
  let server: HelixServer | undefined;
  let watcher: FSWatcher | undefined;
  try {
    server = await serve({ fetch: (request: Request) => current.app.fetch(request) }, { port: options.port, hostname: '127.0.0.1' });
    io.stdout.write(
      [
        `helix dev: serving ${dir}`,
        `  agents:   ${current.agents.join(', ')}; hooks: ${current.dispatcher.hooks.map((h) => h.name).join(', ') || 'none'}; store ${stores.database.path}`,
        `  devtools: ${server.url}/devtools#token=${token}`,
        `  API:      ${server.url}/api/chat and ${server.url}/api/sessions, with the header  Authorization: Bearer ${token}`,
        '  Files under the folder are watched: a change reloads agents and hooks (runs in progress finish on their old code). Ctrl-C stops.',
        '',
      ].join('\n'),
    );

    let timer: NodeJS.Timeout | undefined;
    let reloading: Promise<void> = Promise.resolve();
    const reload = async (): Promise<void> => {
      const generation = ++number;
      const project = await loadProject(dir, { generation });
      if (hasErrors(project)) {
        printDiagnostics(project, io.stderr);
        logger.error(`reload ${generation}: the project has errors; still serving reload ${current.number}`);
        return;
      }
      const next = build(project, generation);
      const previous = current;
      current = next;
      // New runs are followed by the new hooks from here on; the old dispatcher stops following.
      await previous.dispatcher.close();
      logger.info(`reload ${generation}: agents ${next.agents.join(', ')}; hooks ${next.dispatcher.hooks.map((h) => h.name).join(', ') || 'none'}`);
    };
    watcher = watch(dir, { recursive: true }, (_event, filename) => {
      const name = filename === null ? '' : String(filename);
      if (name !== '' && (IGNORED.test(name) || !RELOADS.test(name))) return;
      clearTimeout(timer);
      timer = setTimeout(() => {
        reloading = reloading.then(reload).catch((error: unknown) => logger.error(`reload failed: ${error instanceof Error ? error.message : String(error)}`));
      }, options.debounceMs ?? 150);
    });

    await new Promise<void>((resolveStop) => {
      if (io.signal?.aborted) resolveStop();
      io.signal?.addEventListener('abort', () => resolveStop(), { once: true });
    });
    clearTimeout(timer);
    await reloading;
    logger.info('helix dev: stopping');
    return EXIT.ok;
  } finally {
    watcher?.close();
    await server?.close();
    await current.dispatcher.close();
    await executor.close();
    stores.close();
  }
}
