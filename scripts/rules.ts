/**
 * `npm run rules`: which rules of docs/rules.md are named by a test, and which in-scope rules no test names.
 *
 * The rules come from docs/rules.md (one list item a rule: `- **43.** \`runtime-js\` ...`). A rule is in scope
 * when its tag is `runtime-js` or `all runtimes` and its line does not carry the marker `No test applies:`
 * (see docs/testing.md). A test names a rule when the title of an `it(...)` or `test(...)` call (modifiers such
 * as `.each`, `.concurrent` included) cites it: "rule 47", "rules 47 and 48", "rules 50–52", "C16", "D15".
 * `describe` titles do not count: the test that checks a rule says so itself.
 *
 * Exit status: 0 when every in-scope rule is named, or is owned elsewhere / pending (the lists below); 1 otherwise.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** One rule or policy of docs/rules.md. */
export interface RuleEntry {
  /** `'47'`, `'C16'` or `'D15'`. */
  readonly id: string;
  /** The scope tag, e.g. `runtime-js`. */
  readonly scope: string;
  /** True for `runtime-js` and `all runtimes` rules that do not carry the `No test applies:` marker. */
  readonly inScope: boolean;
  /** The line's text after the tag. */
  readonly text: string;
}

/** One test title found in a test file. */
export interface TestTitle {
  /** The file, relative to the repository root. */
  readonly file: string;
  /** 1-based line of the call. */
  readonly line: number;
  /** The title as written (a template literal is kept raw). */
  readonly title: string;
}

/** The marker that takes an in-scope rule out of the check; the reason follows it on the same line. */
export const NO_TEST_MARKER = 'No test applies:';

/** Scope tags whose rules must be named by a test. */
export const IN_SCOPE_TAGS: readonly string[] = ['runtime-js', 'all runtimes'];

/** Rules another piece of work owns while it is in progress: reported, never fatal. Empty when every in-scope rule is named. */
export const OWNED_ELSEWHERE: ReadonlyMap<string, string> = new Map<string, string>();

/** Rules whose tests a branch in progress adds: reported as pending, never fatal. Delete an entry when its branch lands. */
export const PENDING: ReadonlyMap<string, string> = new Map<string, string>();

const RULE_LINE = /^- \*\*((?:[CD])?\d+)\.\*\* `([^`]+)`\s*(.*)$/;

/** Parses docs/rules.md into its rules, in file order. */
export function parseRules(markdown: string): RuleEntry[] {
  const rules: RuleEntry[] = [];
  for (const line of markdown.split('\n')) {
    const m = RULE_LINE.exec(line);
    if (m === null) continue;
    const [, id, scope, text] = m as unknown as [string, string, string, string];
    rules.push({ id, scope, text, inScope: IN_SCOPE_TAGS.includes(scope) && !text.includes(NO_TEST_MARKER) });
  }
  return rules;
}

const NUMBER_LIST = String.raw`\d+(?:\s*[-–]\s*\d+)?(?:\s*(?:,|and|&|/|or)\s*\d+(?:\s*[-–]\s*\d+)?)*`;
const RULE_REF = new RegExp(String.raw`\brules?\s+(${NUMBER_LIST})`, 'gi');
const POLICY_REF = /(?<![\w.-])([CD])(\d{1,2})(?![\w])/g;

/** The rule ids a title cites: "rule 47", "rules 47 and 48", "rules 50–52", "C16", "D15". */
export function citedRules(title: string): string[] {
  const ids = new Set<string>();
  for (const m of title.matchAll(RULE_REF)) {
    for (const part of (m[1] ?? '').split(/\s*(?:,|and|&|\/|or)\s*/)) {
      const range = /^(\d+)\s*[-–]\s*(\d+)$/.exec(part.trim());
      if (range !== null) {
        const from = Number(range[1]);
        const to = Number(range[2]);
        for (let n = from; n <= to && to - from < 100; n++) ids.add(String(n));
      } else if (/^\d+$/.test(part.trim())) {
        ids.add(String(Number(part.trim())));
      }
    }
  }
  for (const m of title.matchAll(POLICY_REF)) ids.add(`${m[1]}${Number(m[2])}`);
  return [...ids];
}

const TEST_CALL = /\b(it|test)((?:\.[A-Za-z]+)*)(?:\([^()]*\))?\(\s*(['"`])/g;

/** The `it`/`test` titles of one test file's source. */
export function testTitles(file: string, source: string): TestTitle[] {
  const titles: TestTitle[] = [];
  for (const m of source.matchAll(TEST_CALL)) {
    const before = source[m.index - 1];
    if (before !== undefined && /[\w.$]/.test(before)) continue;
    const quote = m[3]!;
    let i = m.index + m[0].length;
    let title = '';
    while (i < source.length && source[i] !== quote) {
      if (source[i] === '\\' && i + 1 < source.length) {
        title += source[i + 1];
        i += 2;
        continue;
      }
      if (quote !== '`' && source[i] === '\n') break;
      title += source[i];
      i++;
    }
    const line = source.slice(0, m.index).split('\n').length;
    titles.push({ file, line, title });
  }
  return titles;
}

/** The folders vitest.config.ts takes test files from: each package's src folder, examples/src, bench and tests. */
function testRoots(root: string): string[] {
  const packages = readdirSync(join(root, 'packages'), { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => `packages/${d.name}/src`);
  return [...packages, 'examples/src', 'bench', 'tests'];
}

/** Every test file the vitest config runs (`*.test.ts`, and the type tests `*.test-d.ts`), relative to `root`. */
export function testFiles(root: string): string[] {
  const files: string[] = [];
  for (const dir of testRoots(root)) {
    let entries: string[];
    try {
      entries = readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' });
    } catch {
      continue;
    }
    for (const e of entries) {
      if (e.split(/[\\/]/).includes('node_modules')) continue;
      if (!/\.test(-d)?\.ts$/.test(e)) continue;
      files.push(relative(root, join(root, dir, e)));
    }
  }
  return files.sort();
}

/** The result of checking docs/rules.md against the test titles. */
export interface RulesReport {
  readonly rules: RuleEntry[];
  /** Rule id → the tests naming it. */
  readonly named: Map<string, TestTitle[]>;
  /** In-scope rules no test names and that no list excuses. */
  readonly unnamed: RuleEntry[];
  /** In-scope unnamed rules excused by OWNED_ELSEWHERE or PENDING, with the reason. */
  readonly excused: { rule: RuleEntry; reason: string }[];
  /** Ids cited by a test title that docs/rules.md does not define. */
  readonly unknown: { id: string; test: TestTitle }[];
}

/** Checks the repository at `root`. */
export function checkRules(root: string): RulesReport {
  const rules = parseRules(readFileSync(join(root, 'docs/rules.md'), 'utf8'));
  const known = new Set(rules.map((r) => r.id));
  const named = new Map<string, TestTitle[]>();
  const unknown: { id: string; test: TestTitle }[] = [];
  for (const file of testFiles(root)) {
    for (const t of testTitles(file, readFileSync(join(root, file), 'utf8'))) {
      for (const id of citedRules(t.title)) {
        if (!known.has(id)) {
          unknown.push({ id, test: t });
          continue;
        }
        const list = named.get(id) ?? [];
        list.push(t);
        named.set(id, list);
      }
    }
  }
  const unnamed: RuleEntry[] = [];
  const excused: { rule: RuleEntry; reason: string }[] = [];
  for (const r of rules) {
    if (!r.inScope || named.has(r.id)) continue;
    const reason = OWNED_ELSEWHERE.get(r.id) ?? PENDING.get(r.id);
    if (reason !== undefined) excused.push({ rule: r, reason });
    else unnamed.push(r);
  }
  return { rules, named, unnamed, excused, unknown };
}

function main(): void {
  const root = resolve(fileURLToPath(new URL('..', import.meta.url)));
  const verbose = !process.argv.includes('--summary');
  const report = checkRules(root);
  const out: string[] = [];
  if (verbose) {
    for (const r of report.rules) {
      const tests = report.named.get(r.id) ?? [];
      const tag = r.inScope ? r.scope : `${r.scope}, not checked${r.text.includes(NO_TEST_MARKER) ? ' (no test applies)' : ''}`;
      out.push(`${r.id} [${tag}]: ${tests.length} test(s)`);
      for (const t of tests) out.push(`    ${t.file}:${t.line}  ${t.title.slice(0, 110)}`);
    }
    out.push('');
  }
  const inScope = report.rules.filter((r) => r.inScope);
  out.push(`${report.rules.length} rules, ${inScope.length} in scope, ${inScope.filter((r) => report.named.has(r.id)).length} named by a test.`);
  if (report.excused.length > 0) {
    out.push(`Unnamed but excused (${report.excused.length}):`);
    for (const e of report.excused) out.push(`  ${e.rule.id}: ${e.reason}`);
  }
  const stale = [...PENDING.keys(), ...OWNED_ELSEWHERE.keys()].filter((id) => report.named.has(id));
  if (stale.length > 0) out.push(`Excused but now named, remove them from the lists in scripts/rules.ts: ${stale.join(', ')}`);
  if (report.unknown.length > 0) {
    out.push(`Titles citing rules docs/rules.md does not define (${report.unknown.length}):`);
    for (const u of report.unknown) out.push(`  ${u.id}: ${u.test.file}:${u.test.line}`);
  }
  if (report.unnamed.length > 0) {
    out.push(`In-scope rules no test names (${report.unnamed.length}):`);
    for (const r of report.unnamed) out.push(`  ${r.id} [${r.scope}] ${r.text.slice(0, 100)}`);
  } else {
    out.push('Every in-scope rule is named by a test.');
  }
  process.stdout.write(out.join('\n') + '\n');
  process.exitCode = report.unnamed.length > 0 ? 1 : 0;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) main();
