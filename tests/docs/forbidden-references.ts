/**
 * References to documents this repository does not hold. A clone has none of them, so no source, test
 * or doc file may point at them: the repository's semantics live in docs/semantics.md and its numbered
 * rules in docs/rules.md. This is the one list the docs check (no-outside-references.test.ts) uses, and
 * the only file allowed to spell these patterns out.
 */
export interface ForbiddenReference {
  readonly pattern: RegExp;
  /** What the pattern stands for, and what to write instead. */
  readonly instead: string;
}

export const FORBIDDEN_REFERENCES: readonly ForbiddenReference[] = Object.freeze([
  { pattern: /HOOK-RULES/, instead: 'the hook rules design file: cite docs/rules.md ("docs/rules.md, C5", "rule 43")' },
  { pattern: /(?:\.\.\/)+shared\b/, instead: 'a path outside the repository: link to docs/ instead' },
  { pattern: /\bshared\/(?:design|spec|hooks)\b/, instead: 'a folder outside the repository: link to docs/ instead' },
  { pattern: /\bARCHITECTURE\.md\b/, instead: 'the architecture notes: say what the fact is, or link to docs/semantics.md' },
  { pattern: /PLATFORM-NOTES/, instead: 'the platform notes: say what the fact is' },
  { pattern: /\bSTYLE\.md\b/, instead: 'the style guide: say what the convention is' },
  {
    pattern: /\bhooks-(?:lifecycle|guards-and-errors|state-mutating|event-subscribers)(?:\.md)?\b/,
    instead: 'a spec page outside the repository: cite docs/semantics.md or docs/rules.md',
  },
  { pattern: /\b3\.\d item \d+/, instead: "the design file's implementation notes, which docs/rules.md does not hold: say what the fact is" },
]);
