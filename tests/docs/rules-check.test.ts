// `npm run rules` must keep working on the real files: docs/rules.md and every test title of the repository.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { NO_TEST_MARKER, OWNED_ELSEWHERE, PENDING, checkRules, citedRules, parseRules, testTitles } from '../../scripts/rules.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('the rules checker (scripts/rules.ts)', () => {
  it('parses every rule of docs/rules.md: 1–232, C1–C18 and D1–D16, once each, with a scope tag', () => {
    const rules = parseRules(readFileSync(`${root}/docs/rules.md`, 'utf8'));
    const ids = rules.map((r) => r.id);
    const expected = [
      ...Array.from({ length: 232 }, (_, i) => String(i + 1)),
      ...Array.from({ length: 18 }, (_, i) => `C${i + 1}`),
      ...Array.from({ length: 16 }, (_, i) => `D${i + 1}`),
    ];
    expect(ids).toEqual(expected);
    expect(new Set(rules.map((r) => r.scope))).toEqual(new Set(['runtime-js', 'all runtimes', 'runtime-dbos', 'design only']));
    for (const r of rules.filter((x) => x.text.includes(NO_TEST_MARKER))) expect(r.inScope).toBe(false);
  });

  it('reads rule citations from a title: single rules, lists, ranges, slashes and policies', () => {
    expect(citedRules('rule 47: a superseded run writes nothing')).toEqual(['47']);
    expect(citedRules('rules 47 and 48: ...')).toEqual(['47', '48']);
    expect(citedRules('rules 10, 11, 12, 34: ...')).toEqual(['10', '11', '12', '34']);
    expect(citedRules('rules 50–52 / rule 8: ...')).toEqual(['50', '51', '52', '8']);
    expect(citedRules('rule 173-175: ...')).toEqual(['173', '174', '175']);
    expect(citedRules('C16 / D15: onMessage first')).toEqual(['C16', 'D15']);
    expect(citedRules('rule 216 / C4: rewrites')).toEqual(['216', 'C4']);
    // Words that only look like citations do not count.
    expect(citedRules('K2 commits; a UTF-8 name; ABC12; the rules of the game; x.D5')).toEqual([]);
  });

  it('takes titles from it() and test() with their modifiers, not from describe()', () => {
    const source = [
      "describe('rule 1: a range', () => {",
      "  it('rule 2: plain', () => {});",
      '  it.each([[1]])("rule 3: each %s", () => {});',
      '  test.concurrent(`rule 4: template ${x}`, () => {});',
      "  it('it\\'s rule 5', () => {});",
      "  submit('rule 6: not a test');",
      '});',
    ].join('\n');
    expect(testTitles('x.test.ts', source).map((t) => [t.line, t.title])).toEqual([
      [2, 'rule 2: plain'],
      [3, 'rule 3: each %s'],
      [4, 'rule 4: template ${x}'],
      [5, "it's rule 5"],
    ]);
  });

  it('finds no in-scope rule without a test naming it, other than the rules owned elsewhere or pending in another branch', () => {
    const report = checkRules(root);
    expect(report.unnamed.map((r) => r.id)).toEqual([]);
    expect(report.unknown.map((u) => `${u.id} in ${u.test.file}:${u.test.line}`)).toEqual([]);
    for (const { rule } of report.excused) expect(OWNED_ELSEWHERE.has(rule.id) || PENDING.has(rule.id)).toBe(true);
    // Nothing is excused today: a new excuse must be a deliberate edit of this line too.
    expect(report.excused).toEqual([]);
  });
});
