// The vitest configuration `npm run mutation` uses: only the SDK's own tests (they cover
// packages/sdk/src/runtime and packages/sdk/src/hooks), without the type tests and the fuzz run.
import { defineConfig, mergeConfig } from 'vitest/config';
import base from './vitest.config.js';

export default mergeConfig(
  base,
  defineConfig({
    test: {
      include: ['packages/sdk/src/**/*.test.ts'],
      exclude: ['**/node_modules/**', 'packages/sdk/src/__tests__/fuzz.test.ts'],
      typecheck: { enabled: false },
    },
  }),
  false,
);
