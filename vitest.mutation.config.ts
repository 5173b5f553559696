// The vitest configuration `npm run mutation` uses: only the SDK's own tests (they cover
// packages/sdk/src/runtime and packages/sdk/src/hooks), without type tests, the fuzz run and the
// subscriber dispatcher's timing test (a wall-clock comparison that a loaded machine can fail).
// MUTATION_TESTS (comma-separated globs) narrows the tests further, for a quick run on one file:
//   MUTATION_TESTS='packages/sdk/src/hooks/*.test.ts' npm run mutation -- --mutate packages/sdk/src/hooks/manager.ts
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
  },
});
