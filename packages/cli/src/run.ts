import { join } from 'node:path';
import { defineAgent, JSAgentExecutor } from '@helix-agents/sdk';
import type { AgentResult } from '@helix-agents/sdk';
import { createHookDispatcher } from '@helix-agents/sdk/hooks';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { openSqliteStores, SqliteFileStore, SqliteKVStore } from '@helix-agents/store-sqlite';
import { CliError, EXIT } from './errors.js';
import { serveLogger, type Output } from './log.js';
import { chooseModel } from './model.js';
import type { ModelChoice } from './model-choice.js';
import { ProgressView } from './progress.js';
import { hasErrors, loadProject, mountedHooks, type Project, type ProjectAgent } from './project.js';
import { printDiagnostics } from './report.js';

/** Where a command reads its environment and writes its output. */
export interface CliIO {
  readonly stdout: Output;
  readonly stderr: Output;
  readonly env: NodeJS.ProcessEnv;
  /** Aborted on Ctrl-C: a running turn is stopped (its work so far is saved). */
  readonly signal?: AbortSignal;
}

/** Options of `helix run`. */
export interface RunOptions {
  readonly dir: string;
  readonly message: string;
  readonly agent?: string;
  /** Continue this session (its conversation is in the project's database). */
  readonly session?: string;
  readonly model: ModelChoice;
  /** The OpenAI-compatible server of `--model openai` (overrides OPENAI_BASE_URL). */
  readonly baseURL?: string;
  readonly purpose: 'live' | 'eval';
  readonly mode: 'chat' | 'task';
  readonly title?: string;
  /** How long to wait for hooks after the turn ends before giving up on them (ms). */
  readonly hookWaitMs: number;
  /** The database (default `<dir>/.helix/helix.db`). */
  readonly database?: string;
  /** Force plain progress lines even on a terminal. */
  readonly plain?: boolean;
  readonly verbose?: boolean;
}

function pickAgent(project: Project, wanted: string | undefined): ProjectAgent {
  const names = project.agents.map((a) => a.name);
  if (wanted !== undefined) {
    const found = project.agents.find((a) => a.name === wanted || a.file === wanted || a.file.replace(/\.[cm]?[jt]s$/, '') === `agents/${wanted}`);
    if (!found) throw new CliError('cli_usage', `No agent "${wanted}" in ${project.dir}; it has ${names.map((n) => `"${n}"`).join(', ')}.`);
    return found;
  }
  const [only, ...rest] = project.agents;
  if (!only) throw new CliError('cli_usage', `${project.dir} has no agent to run.`);
  if (rest.length > 0) throw new CliError('cli_usage', `${project.dir} has ${names.length} agents (${names.join(', ')}): pick one with --agent <name>.`);
  return only;
}

/**
 * `helix run`: discovers the project, opens its SQLite store (`.helix/helix.db`), attaches the
 * project's hooks with durable kv and files on that database, runs one turn of the agent and shows it
 * live on stdout; the serve log (hook errors included) goes to stderr. Waits for the hooks to finish
 * before it exits. Returns the exit code: 0 completed, 1 failed (or discovery errors), 130 stopped.
 */
export async function runCommand(options: RunOptions, io: CliIO): Promise<number> {
  const logger = serveLogger(io.stderr, { verbose: options.verbose === true });
  const project = await loadProject(options.dir);
  printDiagnostics(project, io.stderr);
  if (hasErrors(project)) return EXIT.failed;
  const target = pickAgent(project, options.agent);
  const chosen = chooseModel(options.model, target, options.message, io.env, options.baseURL === undefined ? {} : { baseURL: options.baseURL });
  if (chosen.kind === 'scripted' && !target.script && target.agent.outputSchema !== undefined) {
    logger.warn(`agent "${target.name}" has an outputSchema but no ${target.file.replace(/\.[cm]?[jt]s$/, '')}.script.json; the default script answers in text, which cannot finish it`);
  }
  const agent = defineAgent({ ...target.agent, llmConfig: { ...target.agent.llmConfig, model: chosen.model } });

  const stateRoot = join(project.dir, '.helix');
  const stores = openSqliteStores({ path: options.database ?? join(stateRoot, 'helix.db') });
  const progress = new ProgressView(io.stdout, options.plain ? { live: false } : {});
  const executor = new JSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { logger });
  let dispatcher;
  try {
    dispatcher = createHookDispatcher({
      source: executor,
      hooks: mountedHooks(project),
      kv: new SqliteKVStore(stores.database),
      files: new SqliteFileStore(stores.database),
      logger,
      stateRoot,
      observer: progress,
    });
    logger.info(
      `serving ${project.dir}: agent "${agent.name}" on ${chosen.description}; hooks: ${dispatcher.hooks.map((h) => h.name).join(', ') || 'none'}; store ${stores.database.path}`,
    );
    const metadata: Record<string, string> = { purpose: options.purpose, mode: options.mode, ...(options.title === undefined ? {} : { title: options.title }) };
    const handle = await executor.execute(agent, options.message, {
      ...(options.session === undefined ? {} : { sessionId: options.session }),
      usageStore: stores.usageStore,
      metadata,
    });
    logger.info(`session ${handle.sessionId}: run ${handle.runId} started`);
    const onAbort = (): void => void handle.stop('Stopped from the terminal (Ctrl-C).');
    io.signal?.addEventListener('abort', onAbort, { once: true });
    for await (const chunk of handle.stream()) progress.onChunk(chunk);
    const result: AgentResult = await handle.result();
    io.signal?.removeEventListener('abort', onAbort);
    logger.info(`session ${handle.sessionId}: run ${handle.runId} ${result.status} in ${Math.round(result.durationMs)} ms`);
    const settled = await Promise.race([dispatcher.idle().then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), options.hookWaitMs).unref())]);
    if (!settled) logger.warn(`hooks were still running ${options.hookWaitMs} ms after the turn ended; their remaining events are dropped`);
    progress.finish(result, handle.sessionId);
    return result.status === 'completed' ? EXIT.ok : result.status === 'interrupted' ? EXIT.interrupted : EXIT.failed;
  } finally {
    progress.dispose();
    await dispatcher?.close();
    await executor.close();
    stores.close();
  }
}
