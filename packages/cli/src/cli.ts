import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { AgentError } from '@helix-agents/sdk';
import { CliError, EXIT } from './errors.js';
import { MODEL_CHOICES, type ModelChoice } from './model-choice.js';
import { hasErrors, loadProject } from './project.js';
import { printDiagnostics, printInfo, projectInfo } from './report.js';
import type { CliIO } from './run.js';
import { initProject } from './scaffold.js';

const USAGE = `Usage: helix <command> [options]

Commands:
  init [dir] [--registry <range>]     Scaffold a project: an example agent, a tool and a journal hook; its helix
                                      dependencies link (file:) to the packages this CLI runs from, or use <range>
  validate [--dir .] [--json]         Report every discovery error and warning (exit 1 on errors);
                                      imports the project's modules, so runs their code
  info [--dir .] [--json]             List the agents and their hooks; imports the project's modules,
                                      so runs their code
  run [--dir .] --message <text>      Run one turn of an agent on the project's SQLite store
  dev [--dir .] [--port 4111]         Serve the project on 127.0.0.1: the useChat protocol (/api/chat), the
                                      native API and the devtools page (/devtools), behind a token printed at
                                      start; reloads agents and hooks when their files change
  sessions [--dir .] [--json]         List the sessions in the project's store, the latest first
  sessions show <id> [--dir .] [--json]
                                      A session's runs, transcript, hook decisions and usage

Run options:
  -m, --message <text>   The user message (required)
  --agent <name>         Which agent, when the project has several
  --session <id>         Continue a session
  --model <choice>       auto (default) or agent: the model in the agent's own llmConfig;
                         scripted: play agents/<name>.script.json (or a default echo script);
                         openai: OpenAI (OPENAI_API_KEY) or an OpenAI-compatible server (OPENAI_BASE_URL or
                         --base-url, chat API, no key needed); OPENAI_MODEL names the model (gpt-4o-mini)
  --base-url <url>       The OpenAI-compatible server of --model openai, e.g. http://127.0.0.1:8080/v1
  --purpose <p>          live (default) or eval; hooks see it as ctx.session.purpose
  --mode <m>             chat (default) or task
  --title <text>         The session title (ctx.session.title)
  --hook-wait <ms>       How long to wait for hooks after the turn (default 30000)
  --plain                Plain progress lines even on a terminal
  --verbose              Debug lines in the serve log

Dev options:
  --port <n>             The port on 127.0.0.1 (default 4111; 0 picks a free one)
  --token <t>            The bearer token (default HELIX_DEV_TOKEN, else a random one); 16+ characters
  --model, --base-url    As for run (auto, agent or openai)
  --verbose              Debug lines in the serve log

validate, info, run and dev import the project's modules (agents/, hooks/, helix.config.ts): any code at their
top level runs with your permissions, exactly as \`node\` would run it. Use them only on projects you trust.

The conversation and progress go to stdout; the serve log (hook errors included) goes to stderr.
Exit codes: 0 ok, 1 discovery errors or a failed run, 64 bad usage, 66 missing folder, 130 stopped.
`;

const COMMANDS = {
  init: { force: { type: 'boolean' }, registry: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  sessions: { dir: { type: 'string', default: '.' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
  validate: { dir: { type: 'string', default: '.' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
  info: { dir: { type: 'string', default: '.' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
  dev: {
    dir: { type: 'string', default: '.' },
    port: { type: 'string', default: '4111' },
    token: { type: 'string' },
    model: { type: 'string', default: 'auto' },
    'base-url': { type: 'string' },
    verbose: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  },
  run: {
    dir: { type: 'string', default: '.' },
    message: { type: 'string', short: 'm' },
    agent: { type: 'string' },
    session: { type: 'string' },
    model: { type: 'string', default: 'auto' },
    'base-url': { type: 'string' },
    purpose: { type: 'string', default: 'live' },
    mode: { type: 'string', default: 'chat' },
    title: { type: 'string' },
    'hook-wait': { type: 'string', default: '30000' },
    plain: { type: 'boolean' },
    verbose: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  },
} as const;

type CommandName = keyof typeof COMMANDS;

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: string };
  return pkg.version ?? 'unknown';
}

function parse<C extends CommandName>(command: C, argv: readonly string[]) {
  try {
    return parseArgs({ args: [...argv], options: COMMANDS[command], allowPositionals: command === 'init' || command === 'sessions', strict: true });
  } catch (error) {
    // parseArgs names the bad flag; add where to look.
    throw new CliError('cli_usage', `${error instanceof Error ? error.message : String(error)} (see \`helix ${command} --help\`)`);
  }
}

function oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(value)) throw new CliError('cli_usage', `--${flag} must be one of ${allowed.join(', ')}; got "${value}".`);
  return value as T;
}

async function dispatch(argv: readonly string[], io: CliIO): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    io.stdout.write(USAGE);
    return command === undefined ? EXIT.usage : EXIT.ok;
  }
  if (command === '--version' || command === '-v') {
    io.stdout.write(`${version()}\n`);
    return EXIT.ok;
  }
  if (!(command in COMMANDS)) throw new CliError('cli_usage', `Unknown command "${command}". Commands: ${Object.keys(COMMANDS).join(', ')} (see \`helix --help\`).`);
  const name = command as CommandName;
  if (rest.includes('--help') || rest.includes('-h')) {
    io.stdout.write(USAGE);
    return EXIT.ok;
  }

  if (name === 'init') {
    const { values, positionals } = parse('init', rest);
    if (positionals.length > 1) throw new CliError('cli_usage', `helix init takes one folder, got ${positionals.length}.`);
    const { dir, written, helix } = initProject(positionals[0] ?? '.', {
      force: values.force === true,
      ...(values.registry === undefined ? {} : { helix: { kind: 'registry', range: values.registry } }),
    });
    const deps =
      helix.kind === 'local'
        ? `The helix packages are not on the npm registry yet: package.json links them (file:) to the ones this CLI runs from:\n${Object.entries(helix.folders).map(([n, f]) => `  ${n} -> ${f}`).join('\n')}\n(pass --registry <range> to depend on published versions instead.)`
        : `The helix packages come from the npm registry (${helix.range}).`;
    io.stdout.write(
      `Created a helix project in ${dir}:\n${written.map((f) => `  ${f}`).join('\n')}\n\n${deps}\n\nNext: cd ${positionals[0] ?? '.'} && npm install && npx helix run --dir . --message "What time is it?"\n`,
    );
    return EXIT.ok;
  }
  if (name === 'sessions') {
    const { values, positionals } = parse('sessions', rest);
    const { listSessions, printSessionDetails, printSessions, sessionDetails } = await import('./sessions.js');
    if (positionals.length === 0) {
      const sessions = listSessions(values.dir);
      if (values.json) io.stdout.write(`${JSON.stringify(sessions, null, 2)}\n`);
      else printSessions(sessions, io.stdout);
      return EXIT.ok;
    }
    const [sub, id, ...extra] = positionals;
    if (sub !== 'show' || id === undefined || extra.length > 0) throw new CliError('cli_usage', 'Usage: helix sessions [--dir .] or helix sessions show <id> [--dir .].');
    const details = await sessionDetails(values.dir, id);
    if (values.json) io.stdout.write(`${JSON.stringify(details, null, 2)}\n`);
    else printSessionDetails(details, io.stdout);
    return EXIT.ok;
  }
  if (name === 'validate') {
    const { values } = parse('validate', rest);
    const project = await loadProject(values.dir);
    if (values.json) {
      io.stdout.write(`${JSON.stringify({ dir: project.dir, ok: !hasErrors(project), diagnostics: project.diagnostics }, null, 2)}\n`);
    } else {
      const { errors, warnings } = printDiagnostics(project, io.stdout);
      const found = `${project.agents.length} agent${project.agents.length === 1 ? '' : 's'}, ${project.hooks.length} hook${project.hooks.length === 1 ? '' : 's'}`;
      io.stdout.write(`${errors} error${errors === 1 ? '' : 's'}, ${warnings} warning${warnings === 1 ? '' : 's'} (${found} in ${project.dir})\n`);
    }
    return hasErrors(project) ? EXIT.failed : EXIT.ok;
  }
  if (name === 'info') {
    const { values } = parse('info', rest);
    const project = await loadProject(values.dir);
    if (values.json) io.stdout.write(`${JSON.stringify(projectInfo(project), null, 2)}\n`);
    else {
      printInfo(project, io.stdout);
      printDiagnostics(project, io.stderr);
    }
    return hasErrors(project) ? EXIT.failed : EXIT.ok;
  }
  if (name === 'dev') {
    const { values } = parse('dev', rest);
    const port = Number(values.port);
    if (!/^\d{1,5}$/.test(values.port) || port > 65535) throw new CliError('cli_usage', `--port must be a port number from 0 to 65535; got "${values.port}".`);
    if (values['base-url'] !== undefined && values.model !== 'openai') throw new CliError('cli_usage', '--base-url goes with --model openai (the agent\'s own model is used otherwise).');
    // Loaded on demand, like run: the server, the SQLite store and the providers.
    const { devCommand } = await import('./dev.js');
    return devCommand(
      {
        dir: values.dir,
        port,
        model: oneOf<ModelChoice>('model', values.model, MODEL_CHOICES),
        ...(values.token === undefined ? {} : { token: values.token }),
        ...(values['base-url'] === undefined ? {} : { baseURL: values['base-url'] }),
        verbose: values.verbose === true,
      },
      io,
    );
  }
  const { values } = parse('run', rest);
  if (values['base-url'] !== undefined && values.model !== 'openai') throw new CliError('cli_usage', '--base-url goes with --model openai (the agent\'s own model is used otherwise).');
  if (values.message === undefined || values.message.trim() === '') throw new CliError('cli_usage', 'helix run needs --message "<text>" (see `helix run --help`).');
  const hookWaitMs = Number(values['hook-wait']);
  if (!Number.isInteger(hookWaitMs) || hookWaitMs < 0) throw new CliError('cli_usage', `--hook-wait must be a whole number of milliseconds; got "${values['hook-wait']}".`);
  // Loaded on demand: the run path pulls in the SQLite store and the model providers, which validate and info do not need.
  const { runCommand } = await import('./run.js');
  return runCommand(
    {
      dir: values.dir,
      message: values.message,
      model: oneOf<ModelChoice>('model', values.model, MODEL_CHOICES),
      purpose: oneOf('purpose', values.purpose, ['live', 'eval'] as const),
      mode: oneOf('mode', values.mode, ['chat', 'task'] as const),
      hookWaitMs,
      ...(values.agent === undefined ? {} : { agent: values.agent }),
      ...(values.session === undefined ? {} : { session: values.session }),
      ...(values.title === undefined ? {} : { title: values.title }),
      ...(values['base-url'] === undefined ? {} : { baseURL: values['base-url'] }),
      plain: values.plain === true,
      verbose: values.verbose === true,
    },
    io,
  );
}

/**
 * Runs the `helix` command line with `argv` (without the node and script paths) and returns the
 * exit code. Errors are reported on stderr as one message with a hint, never as a stack trace,
 * except for internal errors (exit code 70).
 */
export async function runCli(argv: readonly string[], io: CliIO): Promise<number> {
  try {
    return await dispatch(argv, io);
  } catch (error) {
    if (CliError.isInstance(error)) {
      io.stderr.write(`helix: ${error.message}\n${error.info.hint ? `hint: ${error.info.hint}\n` : ''}`);
      return (error as CliError).exitCode ?? EXIT.failed;
    }
    if (AgentError.isInstance(error)) {
      io.stderr.write(`helix: ${error.message} (${error.code})\n${error.info.hint ? `hint: ${error.info.hint}\n` : ''}`);
      return EXIT.failed;
    }
    io.stderr.write(`helix: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    return EXIT.internal;
  }
}
