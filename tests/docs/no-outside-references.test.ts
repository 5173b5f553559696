// The repository documents its own semantics: nothing may point at documents a clone does not have, and
// every rule, conflict or decision a comment or a test title cites ("rule 43", "C5", "D10", "section 1.3")
// must exist in docs/rules.md. Failures name file:line.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, extname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { FORBIDDEN_REFERENCES } from './forbidden-references.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const RULES_FILE = 'docs/rules.md';
/** The forbidden-pattern list has to spell the patterns out. */
const PATTERN_LIST_FILE = 'tests/docs/forbidden-references.ts';
const SKIPPED_DIRS = new Set(['node_modules', 'dist', 'coverage', '.git', '.helix']);
const SOURCE_EXTENSIONS = new Set(['.ts', '.tsx', '.mts', '.cts', '.js', '.mjs', '.cjs']);
const TEST_FUNCTIONS = new Set(['describe', 'it', 'test', 'suite', 'bench']);
const SCOPE_TAGS = ['runtime-js', 'all runtimes', 'runtime-dbos', 'design only'];
const EXPECTED_IDS = [
  ...Array.from({ length: 232 }, (_, i) => String(i + 1)),
  ...Array.from({ length: 18 }, (_, i) => `C${i + 1}`),
  ...Array.from({ length: 16 }, (_, i) => `D${i + 1}`),
];

/** Repository-relative posix path. */
const posix = (file: string): string => file.split(sep).join('/');

/** Every file the repository holds: tracked and not-ignored files per git, or a walk of the tree without git. */
function repositoryFiles(): string[] {
  try {
    const listed = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
    const files = [...new Set(listed.split('\0').filter((f) => f !== ''))];
    return files.filter((f) => !f.split('/').some((part) => SKIPPED_DIRS.has(part)) && existsSync(join(ROOT, f)) && statSync(join(ROOT, f)).isFile()).sort();
  } catch {
    const found: string[] = [];
    const walk = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        if (SKIPPED_DIRS.has(entry.name)) continue;
        const path = join(dir, entry.name);
        if (entry.isDirectory()) walk(path);
        else if (entry.isFile()) found.push(posix(relative(ROOT, path)));
      }
    };
    walk(ROOT);
    return found.sort();
  }
}

/** The file's text, or undefined for a binary file. */
function textOf(file: string): string | undefined {
  const bytes = readFileSync(join(ROOT, file));
  return bytes.includes(0) ? undefined : bytes.toString('utf8');
}

const files = repositoryFiles();
const texts = new Map(files.flatMap((file) => {
  const text = textOf(file);
  return text === undefined ? [] : [[file, text] as const];
}));

function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

/** A piece of prose that may cite rules: a comment, a test title, or a whole Markdown file. */
interface Prose {
  readonly file: string;
  readonly offset: number;
  readonly text: string;
}

function scriptKind(file: string): ts.ScriptKind {
  const ext = extname(file);
  if (ext === '.tsx') return ts.ScriptKind.TSX;
  if (ext === '.js' || ext === '.mjs' || ext === '.cjs') return ts.ScriptKind.JS;
  return ts.ScriptKind.TS;
}

function calleeName(expression: ts.Expression): string | undefined {
  let current: ts.Expression = expression;
  for (;;) {
    if (ts.isIdentifier(current)) return current.text;
    if (ts.isPropertyAccessExpression(current) || ts.isCallExpression(current)) current = current.expression;
    else return undefined;
  }
}

function titleText(node: ts.Expression): string | undefined {
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
  if (ts.isTemplateExpression(node)) return [node.head.text, ...node.templateSpans.map((span) => span.literal.text)].join(' ');
  return undefined;
}

/** The comments and test titles of one source file. */
function sourceProse(file: string, text: string): Prose[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, scriptKind(file));
  const prose: Prose[] = [];
  const seen = new Set<number>();
  const addComments = (ranges: readonly ts.CommentRange[] | undefined): void => {
    for (const range of ranges ?? []) {
      if (seen.has(range.pos)) continue;
      seen.add(range.pos);
      prose.push({ file, offset: range.pos, text: text.slice(range.pos, range.end) });
    }
  };
  const visit = (node: ts.Node): void => {
    // JSDoc nodes lie inside a comment the enclosing node's leading trivia already yields.
    if (node.kind >= ts.SyntaxKind.FirstJSDocNode && node.kind <= ts.SyntaxKind.LastJSDocNode) return;
    addComments(ts.getLeadingCommentRanges(text, node.pos));
    addComments(ts.getTrailingCommentRanges(text, node.end));
    if (ts.isCallExpression(node) && node.arguments.length > 0 && TEST_FUNCTIONS.has(calleeName(node.expression) ?? '')) {
      const title = titleText(node.arguments[0] as ts.Expression);
      if (title !== undefined) prose.push({ file, offset: node.arguments[0]!.getStart(source), text: title });
    }
    for (const child of node.getChildren(source)) visit(child);
  };
  visit(source);
  return prose;
}

/** Everything that may cite a rule: comments and test titles of source files, and Markdown files whole. */
const prose: Prose[] = [...texts].flatMap(([file, text]) => {
  if (SOURCE_EXTENSIONS.has(extname(file))) return sourceProse(file, text);
  if (extname(file) === '.md') return [{ file, offset: 0, text }];
  return [];
});

/** A citation found in prose, with the ids it names. */
interface Citation {
  readonly where: string;
  readonly cited: string;
  readonly ids: readonly string[];
}

const NUMBER_LIST = String.raw`\d+(?:\s*[–-]\s*\d+)?(?:\s*(?:,|and|or)\s*(?:rules?\s+)?\d+(?:\s*[–-]\s*\d+)?)*`;
const RULE_CITATION = new RegExp(String.raw`\brules?\s+(${NUMBER_LIST})`, 'gi');
const POLICY_CITATION = /\b([CD])(\d{1,3})\b/g;
const SECTION_CITATION = /(?:\bsections?\s+|§\s*)(\d+\.\d+)\b/gi;

function ruleIds(list: string): string[] {
  return list.split(/\s*(?:,|and|or)\s*/i).flatMap((part) => {
    const numbers = part.replace(/rules?\s+/i, '').split(/\s*[–-]\s*/).map(Number);
    const [from, to = from] = numbers as [number, number?];
    return Array.from({ length: Math.max(1, to - from + 1) }, (_, i) => String(from + i));
  });
}

function citationsIn(piece: Prose): { rules: Citation[]; sections: Citation[] } {
  const rules: Citation[] = [];
  const sections: Citation[] = [];
  const at = (index: number): string => {
    const whole = texts.get(piece.file) ?? '';
    return `${piece.file}:${lineAt(whole, piece.offset) + lineAt(piece.text, index) - 1}`;
  };
  for (const match of piece.text.matchAll(RULE_CITATION)) rules.push({ where: at(match.index), cited: match[0], ids: ruleIds(match[1] as string) });
  for (const match of piece.text.matchAll(POLICY_CITATION)) rules.push({ where: at(match.index), cited: match[0], ids: [`${match[1]}${Number(match[2])}`] });
  for (const match of piece.text.matchAll(SECTION_CITATION)) sections.push({ where: at(match.index), cited: match[0], ids: [match[1] as string] });
  return { rules, sections };
}

/** docs/rules.md as a script reads it: one entry per `- **ID.** `scope` ...` line. */
function parseRules(text: string): { entries: { id: string; scope: string; line: number }[]; malformed: string[]; sections: Set<string> } {
  const entries: { id: string; scope: string; line: number }[] = [];
  const malformed: string[] = [];
  const sections = new Set<string>();
  let fenced = false;
  text.split('\n').forEach((line, index) => {
    if (line.startsWith('```')) fenced = !fenced;
    if (fenced) return;
    const heading = /^#{2,4}\s+(\d+(?:\.\d+)?)[.\s]/.exec(line);
    if (heading) sections.add(heading[1] as string);
    if (!line.startsWith('- **')) return;
    const entry = /^- \*\*((?:[CD])?\d+)\.\*\* `([^`]+)` \S/.exec(line);
    if (!entry || !SCOPE_TAGS.includes(entry[2] as string)) malformed.push(`${RULES_FILE}:${index + 1}: ${line.slice(0, 80)}`);
    else entries.push({ id: entry[1] as string, scope: entry[2] as string, line: index + 1 });
  });
  return { entries, malformed, sections };
}

const rulesText = texts.get(RULES_FILE) ?? '';
const rules = parseRules(rulesText);
const ruleIdSet = new Set(rules.entries.map((e) => e.id));

/** GitHub's anchor for a heading. */
function slug(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.*)$/.exec(line);
    if (heading) anchors.add(slug(heading[1] as string));
  }
  return anchors;
}

describe('the repository documents its own semantics', () => {
  it('finds the files it checks', () => {
    expect(files).toContain(RULES_FILE);
    expect(files).toContain(PATTERN_LIST_FILE);
    expect(files).toContain('tests/docs/no-outside-references.test.ts');
    expect(prose.length).toBeGreaterThan(100);
  });

  it('docs/rules.md holds rules 1–232, C1–C18 and D1–D16, once each and in order, each on one line with a scope tag', () => {
    expect(rules.malformed).toEqual([]);
    expect(rules.entries.map((e) => e.id)).toEqual(EXPECTED_IDS);
  });

  it('no source, test or doc file refers to documents the repository does not hold', () => {
    const found: string[] = [];
    for (const [file, text] of texts) {
      if (file === PATTERN_LIST_FILE) continue;
      text.split('\n').forEach((line, index) => {
        for (const { pattern, instead } of FORBIDDEN_REFERENCES) {
          const match = pattern.exec(line);
          if (match) found.push(`${file}:${index + 1}: "${match[0]}" (${instead}): ${line.trim().slice(0, 160)}`);
        }
      });
    }
    expect(found, `${found.length} reference(s) to documents outside the repository:\n${found.join('\n')}`).toEqual([]);
  });

  it('every rule, conflict and decision a comment, a test title or a doc cites exists in docs/rules.md', () => {
    const missing: string[] = [];
    for (const piece of prose) {
      for (const citation of citationsIn(piece).rules) {
        const unknown = citation.ids.filter((id) => !ruleIdSet.has(id));
        if (unknown.length > 0) missing.push(`${citation.where}: "${citation.cited}" names ${unknown.join(', ')}, which docs/rules.md does not hold`);
      }
    }
    expect(missing, missing.join('\n')).toEqual([]);
  });

  it('every numbered section a comment, a test title or a doc cites is a section of docs/rules.md', () => {
    const missing: string[] = [];
    for (const piece of prose) {
      for (const citation of citationsIn(piece).sections) {
        if (!rules.sections.has(citation.ids[0] as string)) missing.push(`${citation.where}: "${citation.cited}" is not a section of docs/rules.md`);
      }
    }
    expect(missing, missing.join('\n')).toEqual([]);
  });

  it('relative links in Markdown files point at files the repository holds (and at headings they have)', () => {
    const broken: string[] = [];
    const held = new Set(files);
    for (const [file, text] of texts) {
      if (extname(file) !== '.md') continue;
      for (const match of text.matchAll(/\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
        const target = match[1] as string;
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
        const [path = '', anchor] = target.split('#');
        const resolved = path === '' ? file : posix(relative(ROOT, resolve(ROOT, dirname(file), path)));
        const where = `${file}:${lineAt(text, match.index)}`;
        if (resolved.startsWith('..') || !(held.has(resolved) || files.some((f) => f.startsWith(`${resolved}/`)))) {
          broken.push(`${where}: ${target} is not in the repository`);
        } else if (anchor !== undefined && anchor !== '' && resolved.endsWith('.md') && !anchorsOf(texts.get(resolved) ?? '').has(anchor)) {
          broken.push(`${where}: ${resolved} has no heading #${anchor}`);
        }
      }
    }
    expect(broken, broken.join('\n')).toEqual([]);
  });
});
