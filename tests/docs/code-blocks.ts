/**
 * Finds the fenced code blocks of the repository's Markdown documentation (README.md and docs/*.md) and
 * classifies them for code-blocks.test.ts. The convention is documented in docs/README-TESTING.md:
 *
 * - ```ts / ```typescript / ```tsx: a complete program, type-checked and executed;
 * - `<!-- not-run: reason -->` on the line before such a block: type-checked, not executed;
 * - `<!-- fragment: reason -->` on the line before a block: neither (a piece of a larger program);
 * - ```bash / ```sh / ```shell / ```console: checked statically (npm scripts, helix commands, files);
 * - ```json: parsed; any other language (```text, ```http, ...): prose, not checked.
 *
 * A block without a language is refused: say ```text for prose, so a program is never skipped by accident.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** How a block is tested. */
export type BlockKind = 'program' | 'shell' | 'json' | 'prose';

/** A block marked before its fence: `not-run` is type-checked only, `fragment` is not checked at all. */
export interface BlockMarker {
  readonly kind: 'not-run' | 'fragment';
  readonly reason: string;
}

/** One fenced block of a Markdown file. */
export interface CodeBlock {
  /** Repository-relative path of the Markdown file. */
  readonly file: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  /** The info string's first word, lower-cased ('' when none). */
  readonly lang: string;
  readonly kind: BlockKind;
  /** The block's text, without the fences and without the fence's indentation. */
  readonly code: string;
  readonly marker: BlockMarker | undefined;
}

const PROGRAM_LANGS = new Set(['ts', 'typescript', 'tsx', 'mts']);
const SHELL_LANGS = new Set(['bash', 'sh', 'shell', 'console', 'zsh']);
const JSON_LANGS = new Set(['json']);
const MARKER = /^\s*<!--\s*([a-z-]+)\s*:\s*(.*?)\s*-->\s*$/;
const MARKER_KINDS = new Set(['not-run', 'fragment']);

/** A block's place, as failure messages print it. */
export const where = (block: Pick<CodeBlock, 'file' | 'line'>): string => `${block.file}:${block.line}`;

function kindOf(lang: string): BlockKind {
  if (PROGRAM_LANGS.has(lang)) return 'program';
  if (SHELL_LANGS.has(lang)) return 'shell';
  if (JSON_LANGS.has(lang)) return 'json';
  return 'prose';
}

/** The marker on the last non-blank line before `index`, or a problem when a marker is malformed. */
function markerBefore(lines: readonly string[], index: number, file: string): { marker?: BlockMarker; problem?: string } {
  let i = index - 1;
  while (i >= 0 && (lines[i] as string).trim() === '') i--;
  if (i < 0) return {};
  const match = MARKER.exec(lines[i] as string);
  if (!match) return {};
  const [, kind = '', reason = ''] = match;
  if (!MARKER_KINDS.has(kind)) return {};
  if (reason.length < 8) return { problem: `${file}:${i + 1}: a <!-- ${kind}: ... --> marker needs a reason (at least a few words), got "${reason}"` };
  return { marker: { kind: kind as BlockMarker['kind'], reason } };
}

/** Every fenced block of one Markdown text, and the problems found (unclosed fences, missing languages, bad markers). */
export function extractBlocks(file: string, text: string): { blocks: CodeBlock[]; problems: string[] } {
  const lines = text.split(/\r?\n/);
  const blocks: CodeBlock[] = [];
  const problems: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([^`\s]*)(.*)$/.exec(lines[i] as string);
    if (!open) continue;
    const [, indent = '', fence = '', rawLang = ''] = open;
    const close = new RegExp(`^\\s*${fence[0] === '`' ? '`' : '~'}{${fence.length},}\\s*$`);
    let end = i + 1;
    while (end < lines.length && !close.test(lines[end] as string)) end++;
    if (end >= lines.length) {
      problems.push(`${file}:${i + 1}: this code fence is never closed`);
      break;
    }
    const lang = rawLang.toLowerCase();
    const { marker, problem } = markerBefore(lines, i, file);
    if (problem) problems.push(problem);
    if (lang === '') problems.push(`${file}:${i + 1}: a code block without a language: write \`\`\`ts for a program, \`\`\`bash for commands, \`\`\`text for anything else`);
    const body = lines.slice(i + 1, end).map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l.trimStart()));
    blocks.push({ file, line: i + 1, lang, kind: kindOf(lang), code: body.join('\n'), marker });
    i = end;
  }
  return { blocks, problems };
}

/** The documentation files whose blocks are tested: README.md and every docs/*.md (docs/ subfolders too). */
export function documentationFiles(root: string): string[] {
  const found = ['README.md'];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile() && entry.name.endsWith('.md')) found.push(path);
    }
  };
  walk('docs');
  return found;
}

/** Every block of the documentation files, with the problems of all of them. */
export function documentationBlocks(root: string): { blocks: CodeBlock[]; problems: string[] } {
  const blocks: CodeBlock[] = [];
  const problems: string[] = [];
  for (const file of documentationFiles(root)) {
    const found = extractBlocks(file, readFileSync(join(root, file), 'utf8'));
    blocks.push(...found.blocks);
    problems.push(...found.problems);
  }
  return { blocks, problems };
}
