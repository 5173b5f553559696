// Mutation testing of the run loop and the hook manager: `npm run mutation` (not part of CI).
// Narrow a run with `npm run mutation -- --mutate packages/sdk/src/hooks/manager.ts`; see docs/testing.md.
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  plugins: ['@stryker-mutator/vitest-runner'],
  vitest: { configFile: 'vitest.mutation.config.ts', related: true },
  coverageAnalysis: 'perTest',
  mutate: ['packages/sdk/src/runtime/**/*.ts', 'packages/sdk/src/hooks/**/*.ts', '!**/*.test.ts', '!**/*.test-d.ts'],
  // Mutants in module-level code need the whole suite per mutant; they are reported as ignored.
  ignoreStatic: true,
  // vitest strips types without checking them, so mutants need no `// @ts-nocheck` header (the default
  // would write one into every file of the repository, tests included).
  disableTypeChecks: false,
  // The inner packages import the SDK through workspace links, so mutate the files where they are.
  inPlace: true,
  concurrency: 2,
  timeoutMS: 20000,
  incremental: true,
  incrementalFile: 'reports/mutation/stryker-incremental.json',
  reporters: ['clear-text', 'progress', 'json', 'html'],
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  htmlReporter: { fileName: 'reports/mutation/mutation.html' },
  thresholds: { high: 90, low: 80, break: null },
  tempDirName: '.stryker-tmp',
};
