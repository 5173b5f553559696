// Every code block of README.md and docs/*.md is tested, so none rots (the convention: docs/README-TESTING.md).
// TypeScript blocks are complete programs: all are type-checked in one program, and those not marked
// `not-run` are executed in two child processes (tests/docs/run-blocks.ts) with no provider key. Shell
// blocks are checked statically: npm scripts, helix commands and flags, and the files they name must exist.
// Failures name the Markdown file and line of the block.
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli } from '@helix-agents/cli';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CodeBlock, documentationBlocks, where } from './code-blocks.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** Where block files are written: inside the repository, so workspace packages resolve; ignored by git. */
const BLOCK_DIR = join(ROOT, '.doc-blocks');
/**
 * Child processes that run the blocks. They start before the type check and run while it works (it blocks
 * this process), so with one runner two processes share the machine's cores.
 */
const RUNNERS = Number(process.env.HELIX_DOC_BLOCK_RUNNERS ?? 1);
/** Variables a block must not see: the examples run offline, on the scripted model. */
const SCRUBBED_ENV = /^(OPENAI_|ANTHROPIC_|LANGFUSE_|OTEL_|DATABASE_URL$|HELIX_TOKEN$|HELIX_CRASH_AT$)/;

const all = documentationBlocks(ROOT);
/** HELIX_DOC_BLOCKS=docs/hooks.md (a comma-separated list of path fragments) tests only the blocks of matching files. */
const only = (process.env.HELIX_DOC_BLOCKS ?? '').split(',').filter((s) => s !== '');
const blocks = only.length === 0 ? all.blocks : all.blocks.filter((b) => only.some((s) => b.file.includes(s)));
const problems = all.problems;
const programs = blocks.filter((b) => b.kind === 'program' && b.marker?.kind !== 'fragment');
const runnable = programs.filter((b) => b.marker === undefined);
const shells = blocks.filter((b) => b.kind === 'shell' && b.marker?.kind !== 'fragment');

const blockId = (block: CodeBlock): string => `${block.file.replace(/[^A-Za-z0-9]+/g, '_')}.L${block.line}`;
const blockPath = (block: CodeBlock): string => join(BLOCK_DIR, `${blockId(block)}.${block.lang === 'tsx' ? 'tsx' : 'ts'}`);

/** Writes each program so that line n of the file is line n of the block; `export {}` keeps it a module. */
function writeBlockFiles(): void {
  rmSync(BLOCK_DIR, { recursive: true, force: true });
  mkdirSync(BLOCK_DIR, { recursive: true });
  writeFileSync(join(BLOCK_DIR, 'README.txt'), 'Written by tests/docs/code-blocks.test.ts; safe to delete.\n');
  for (const block of programs) writeFileSync(blockPath(block), `${block.code}\nexport {};\n`);
}
writeBlockFiles();

function typeCheck(): string[] {
  const config = ts.readConfigFile(join(ROOT, 'tsconfig.json'), ts.sys.readFile);
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT);
  const options: ts.CompilerOptions = { ...parsed.options, noEmit: true, jsx: ts.JsxEmit.ReactJSX };
  const byPath = new Map(programs.map((b) => [resolve(blockPath(b)), b]));
  const program = ts.createProgram({ rootNames: [...byPath.keys()], options });
  const found: string[] = [];
  for (const diagnostic of program.getOptionsDiagnostics()) found.push(`tsconfig: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`);
  for (const [path, block] of byPath) {
    const source = program.getSourceFile(path);
    if (!source) {
      found.push(`${where(block)}: the type checker did not load this block`);
      continue;
    }
    for (const diagnostic of [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)]) {
      const line = diagnostic.start === undefined ? 0 : source.getLineAndCharacterOfPosition(diagnostic.start).line;
      const text = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n  ');
      found.push(`${block.file}:${block.line + 1 + line} (block at line ${block.line}): TS${diagnostic.code} ${text}`);
    }
  }
  return found;
}

interface Outcome {
  readonly id: string;
  readonly ok: boolean;
  readonly error?: string;
  readonly ms: number;
}
interface BatchResult {
  readonly outcomes: Outcome[];
  readonly stray: Record<string, string[]>;
  readonly stdout: string;
  readonly stderr: string;
  readonly exit: string;
}

/** Runs a batch of blocks in one child process (tests/docs/run-blocks.ts). */
function runBatch(batch: readonly CodeBlock[], index: number): Promise<BatchResult> {
  const manifest = join(BLOCK_DIR, `batch-${index}.json`);
  const results = join(BLOCK_DIR, `batch-${index}.results.json`);
  writeFileSync(manifest, JSON.stringify(batch.map((b) => ({ id: blockId(b), path: blockPath(b) }))));
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !SCRUBBED_ENV.test(name)));
  // Output goes to files, not pipes: the type check blocks this process's event loop while the runner works.
  const out = join(BLOCK_DIR, `batch-${index}.stdout`);
  const err = join(BLOCK_DIR, `batch-${index}.stderr`);
  const fds = [openSync(out, 'w'), openSync(err, 'w')] as const;
  return new Promise((done) => {
    const child = spawn(process.execPath, ['--conditions=helix-source', '--import', 'tsx', join(ROOT, 'tests/docs/run-blocks.ts'), manifest, results], {
      cwd: ROOT,
      env: { ...env, NODE_ENV: 'test' },
      stdio: ['ignore', fds[0], fds[1]],
    });
    const killer = setTimeout(() => child.kill('SIGKILL'), 170_000);
    child.on('close', (code, signal) => {
      clearTimeout(killer);
      for (const fd of fds) closeSync(fd);
      const saved = existsSync(results) ? (JSON.parse(readFileSync(results, 'utf8')) as Pick<BatchResult, 'outcomes' | 'stray'>) : { outcomes: [], stray: {} };
      done({ ...saved, stdout: readFileSync(out, 'utf8'), stderr: readFileSync(err, 'utf8'), exit: signal ?? String(code) });
    });
  });
}

/** The part of a batch's output printed while one block ran. */
function outputOf(all: string, id: string): string {
  const start = all.indexOf(`@@block ${id}@@`);
  if (start < 0) return '';
  const rest = all.slice(start + `@@block ${id}@@`.length);
  const next = rest.indexOf('\n@@block ');
  return (next < 0 ? rest : rest.slice(0, next)).trim();
}

const tail = (text: string, lines = 15): string => text.split('\n').slice(-lines).join('\n');

/** Rewrites places in block files (`.doc-blocks/<id>.ts:7:3`) as places in the Markdown file (`README.md:87:3`). */
function inMarkdown(text: string): string {
  return text.replace(/(?:file:\/\/)?[^\s()]*\.doc-blocks\/([A-Za-z0-9_.-]+?)\.tsx?:(\d+)/g, (whole, id: string, line: string) => {
    const block = programs.find((b) => blockId(b) === id);
    return block ? `${block.file}:${block.line + Number(line)}` : whole;
  });
}

/** Splits the blocks into batches of about equal size, keeping each file's blocks together and in order. */
function batches(list: readonly CodeBlock[], count: number): CodeBlock[][] {
  const byFile = new Map<string, CodeBlock[]>();
  for (const block of list) byFile.set(block.file, [...(byFile.get(block.file) ?? []), block]);
  const out: CodeBlock[][] = Array.from({ length: count }, () => []);
  for (const group of [...byFile.values()].sort((a, b) => b.length - a.length)) {
    const smallest = out.reduce((min, batch) => (batch.length < min.length ? batch : min));
    smallest.push(...group);
  }
  return out.filter((batch) => batch.length > 0);
}

// ---- shell blocks ----

interface HelixUsage {
  readonly commands: Set<string>;
  readonly flags: Set<string>;
}

async function helixUsage(): Promise<HelixUsage> {
  let text = '';
  const sink = { write: (chunk: string | Uint8Array) => ((text += String(chunk)), true) } as unknown as NodeJS.WriteStream;
  await runCli(['--help'], { stdout: sink, stderr: sink, env: {}, signal: new AbortController().signal });
  const commands = new Set<string>();
  const section = /Commands:\n([\s\S]*?)\n\n/.exec(text)?.[1] ?? '';
  for (const line of section.split('\n')) {
    const name = /^ {2}([a-z][a-z-]*)\b/.exec(line)?.[1];
    if (name) commands.add(name);
  }
  return { commands, flags: new Set([...text.matchAll(/--([a-z][a-z-]*)/g)].map((m) => m[1] as string)) };
}

/** Splits a shell line into commands of words (quotes respected; comments, operators and redirections dropped). */
function commandsOf(line: string): string[][] {
  const commands: string[][] = [[]];
  let word = '';
  let quote: string | undefined;
  let inWord = false;
  const flush = (): void => {
    if (inWord) commands[commands.length - 1]!.push(word);
    word = '';
    inWord = false;
  };
  for (let i = 0; i < line.length; i++) {
    const c = line[i] as string;
    if (quote) {
      if (c === quote) quote = undefined;
      else word += c;
      continue;
    }
    if (c === '"' || c === "'") {
      quote = c;
      inWord = true;
    } else if (c === '#' && !inWord) break;
    else if (/\s/.test(c)) flush();
    else if (c === '&' || c === '|' || c === ';') {
      flush();
      if (line[i + 1] === c) i++;
      commands.push([]);
    } else {
      word += c;
      inWord = true;
    }
  }
  flush();
  return commands.filter((c) => c.length > 0);
}

const rootScripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
const KNOWN_PROGRAMS = new Set(['cd', 'export', 'curl', 'git', 'cat', 'echo', 'mkdir', 'ls', 'rm', 'cp', 'mv', 'env', 'sleep', 'kill', 'time', 'psql', 'sqlite3', 'tar', 'chmod', 'true']);
const NPM_COMMANDS = new Set(['install', 'i', 'ci', 'run', 'run-script', 'test', 't', 'pack', 'view', 'exec', 'ls', 'init', 'uninstall']);

/** What is wrong with one command of a shell block (paths are checked only before the block changes folder). */
function checkCommand(words: string[], usage: HelixUsage, movedAway: boolean): string[] {
  let i = 0;
  while (i < words.length && /^[A-Z_][A-Z0-9_]*=/.test(words[i] as string)) i++;
  const [head, ...args] = words.slice(i);
  if (head === undefined) return [];
  const pathExists = (path: string): string[] => (movedAway || path.includes('<') || existsSync(join(ROOT, path)) ? [] : [`${path} is not in the repository`]);
  if (head === 'npm') {
    const [sub = '', ...rest] = args;
    if (!NPM_COMMANDS.has(sub)) return [`"npm ${sub}" is not an npm command the docs are expected to use`];
    if (sub === 'test' || sub === 't') return rootScripts.test ? [] : ['package.json has no "test" script'];
    if (sub !== 'run' && sub !== 'run-script') return [];
    if (rest.some((w) => w.startsWith('--workspace') || w === '-w')) return [];
    const script = rest.find((w) => !w.startsWith('-'));
    return script !== undefined && rootScripts[script] !== undefined ? [] : [`"npm run ${script ?? ''}" names no script of package.json (it has: ${Object.keys(rootScripts).join(', ')})`];
  }
  if (head === 'npx' || head === 'helix') {
    const [bin = '', ...rest] = head === 'npx' ? args.filter((w) => w !== '--yes' && w !== '-y') : ['helix', ...args];
    if (bin === 'helix') {
      const [command = ''] = rest;
      if (command !== '--help' && command !== '--version' && !usage.commands.has(command)) return [`"helix ${command}" is not a helix command (helix --help lists: ${[...usage.commands].join(', ')})`];
      return rest.filter((w) => w.startsWith('--')).map((w) => w.slice(2).split('=')[0] as string).filter((flag) => !usage.flags.has(flag)).map((flag) => `helix has no --${flag} flag`);
    }
    if (!existsSync(join(ROOT, 'node_modules/.bin', bin))) return [`"npx ${bin}" is not installed in this repository`];
    return rest.filter((w) => /\.(ts|js|mjs)$/.test(w) && w.includes('/')).flatMap(pathExists);
  }
  if (head === 'node') {
    const valued = new Set(['--import', '--conditions', '-C', '--require', '-r']);
    for (let j = 0; j < args.length; j++) {
      const word = args[j] as string;
      if (valued.has(word)) j++;
      else if (!word.startsWith('-')) return pathExists(word);
    }
    return [];
  }
  if (head === 'bash' || head === 'sh') return args[0] === undefined || args[0].startsWith('-') ? [] : pathExists(args[0]);
  if (head.startsWith('./') || head.startsWith('scripts/')) return pathExists(head);
  if (KNOWN_PROGRAMS.has(head)) return [];
  return [`"${head}" is not a command this check knows: use npm, npx, helix, node or a script of the repository, or mark the block <!-- fragment: reason -->`];
}

function checkShell(block: CodeBlock, usage: HelixUsage): string[] {
  const found: string[] = [];
  let movedAway = false;
  const lines = block.code.replace(/\\\n/g, ' ').split('\n');
  lines.forEach((raw, index) => {
    let line = raw.trim();
    if (block.lang === 'console') {
      if (!line.startsWith('$ ')) return;
      line = line.slice(2);
    }
    for (const words of commandsOf(line)) {
      for (const problem of checkCommand(words, usage, movedAway)) found.push(`${block.file}:${block.line + 1 + index}: ${problem}: ${raw.trim()}`);
      if (words[0] === 'cd') movedAway = true;
    }
  });
  return found;
}

describe('code blocks in README.md and docs/*.md', () => {
  // HELIX_DOC_BLOCKS_KEEP=1 leaves the block files in .doc-blocks/ to run one by hand.
  let running: { readonly batches: CodeBlock[][]; readonly results: Promise<BatchResult[]> } | undefined;
  beforeAll(() => {
    const split = batches(runnable, RUNNERS);
    running = { batches: split, results: Promise.all(split.map((batch, i) => runBatch(batch, i))) };
  });
  afterAll(async () => {
    await running?.results;
    if (process.env.HELIX_DOC_BLOCKS_KEEP !== '1') rmSync(BLOCK_DIR, { recursive: true, force: true });
  }, 180_000);

  it('finds the blocks, each fenced with a language and each marker with a reason', () => {
    if (only.length === 0) {
      expect(blocks.filter((b) => b.file === 'README.md' && b.kind === 'program').length).toBeGreaterThanOrEqual(3);
      expect(runnable.length).toBeGreaterThan(10);
    }
    expect(problems, problems.join('\n')).toEqual([]);
  });

  it('marks are only on blocks they apply to: not-run on TypeScript programs', () => {
    const misplaced = blocks.filter((b) => b.marker?.kind === 'not-run' && b.kind !== 'program').map((b) => `${where(b)}: <!-- not-run --> applies to \`\`\`ts blocks; a ${b.lang} block is never executed`);
    expect(misplaced, misplaced.join('\n')).toEqual([]);
  });

  it('every TypeScript block type-checks as a complete program', { timeout: 120_000 }, () => {
    const diagnostics = typeCheck();
    expect(diagnostics, `${diagnostics.length} type error(s) in documentation blocks:\n${diagnostics.join('\n')}`).toEqual([]);
  });

  it('every TypeScript block not marked not-run runs to its end offline, on the scripted model', { timeout: 180_000 }, async () => {
    if (!running) throw new Error('the runners did not start');
    const results = await running.results;
    const failures: string[] = [];
    for (const [i, batch] of running.batches.entries()) {
      const result = results[i] as BatchResult;
      const outcomes = new Map(result.outcomes.map((o) => [o.id, o]));
      const culprit = batch.find((b) => !outcomes.has(blockId(b)));
      for (const block of batch) {
        const id = blockId(block);
        const outcome = outcomes.get(id);
        const output = tail(`${outputOf(result.stdout, id)}\n${outputOf(result.stderr, id)}`.trim());
        if (block === culprit) failures.push(`${where(block)}: the runner process ended (exit ${result.exit}) while this block ran: does it call process.exit(), or crash the process?\n${output || tail(result.stderr)}`);
        else if (outcome === undefined) failures.push(`${where(block)}: not run, because the runner ended during ${where(culprit as CodeBlock)}`);
        else if (!outcome.ok) failures.push(`${where(block)}: ${inMarkdown(tail(outcome.error ?? '', 12))}\n--- output ---\n${output}`);
        for (const error of result.stray[id] ?? []) failures.push(`${where(block)}: an error nobody awaited: ${inMarkdown(tail(error, 8))}`);
      }
      for (const [at, errors] of Object.entries(result.stray)) {
        if (at.startsWith('(')) failures.push(`runner ${i} ${at}: ${errors.map((e) => tail(e, 8)).join('\n')}`);
      }
    }
    expect(failures, `${failures.length} documentation block(s) failed:\n\n${failures.join('\n\n')}`).toEqual([]);
  });

  it('every shell block names real npm scripts, helix commands and flags, and files the repository holds', async () => {
    const usage = await helixUsage();
    expect(usage.commands.has('run')).toBe(true);
    const found = shells.flatMap((block) => checkShell(block, usage));
    expect(found, found.join('\n')).toEqual([]);
  });

  it('every JSON block parses', () => {
    const broken = blocks.filter((b) => b.kind === 'json' && b.marker === undefined).flatMap((b) => {
      try {
        JSON.parse(b.code);
        return [];
      } catch (error) {
        return [`${where(b)}: ${(error as Error).message}`];
      }
    });
    expect(broken, broken.join('\n')).toEqual([]);
  });
});
