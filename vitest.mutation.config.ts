// The vitest configuration `npm run mutation` uses: only the SDK's own tests (they cover
// packages/sdk/src/runtime and packages/sdk/src/hooks), without type tests, the fuzz run and the
// subscriber dispatcher's timing test (a wall-clock comparison that a loaded machine can fail).
// MUTATION_TESTS (comma-separated globs) narrows the tests further, for a quick run on one file:
//   MUTATION_TESTS='packages/sdk/src/hooks/*.test.ts' npm run mutation -- --mutate packages/sdk/src/hooks/manager.ts
// MUTATION_ISOLATE=0 runs the test files in one module graph instead of re-importing the SDK for each file:
// the import, not the tests, is most of the time a mutant takes. Every SDK test file but hooks/manager.test.ts
// (its registry tests expect no other file to have registered a hook type) passes that way.
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

const narrowed = process.env['MUTATION_TESTS']?.split(',').map((glob) => glob.trim()).filter((glob) => glob !== '');

export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: narrowed && narrowed.length > 0 ? narrowed : ['packages/sdk/src/**/*.test.ts'],
    exclude: ['**/node_modules/**', 'packages/sdk/src/__tests__/fuzz.test.ts', 'packages/sdk/src/subscribers/dispatcher.test.ts'],
    typecheck: { enabled: false },
    ...(process.env['MUTATION_ISOLATE'] === '0' ? { isolate: false } : {}),
  },
});
