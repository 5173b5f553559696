import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // Resolve workspace packages to their TypeScript sources (see the "helix-source" export condition).
    conditions: ['helix-source'],
  },
  ssr: {
    resolve: {
      conditions: ['helix-source'],
      externalConditions: ['helix-source'],
    },
  },
  test: {
    include: ['packages/*/src/**/*.test.ts', 'examples/src/**/*.test.ts', 'bench/**/*.test.ts', 'tests/**/*.test.ts'],
    typecheck: {
      enabled: true,
      include: ['packages/*/src/**/*.test-d.ts'],
      tsconfig: './tsconfig.json',
    },
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
});
