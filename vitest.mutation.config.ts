// The vitest configuration `npm run mutation` uses: only the SDK's own tests (they cover
// packages/sdk/src/runtime and packages/sdk/src/hooks), without type tests, the fuzz run and the
// subscriber dispatcher's timing test (a wall-clock comparison that a loaded machine can fail).
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: ['packages/sdk/src/**/*.test.ts'],
    exclude: ['**/node_modules/**', 'packages/sdk/src/__tests__/fuzz.test.ts', 'packages/sdk/src/subscribers/dispatcher.test.ts'],
    typecheck: { enabled: false },
  },
});
