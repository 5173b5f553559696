import { describe, it } from 'vitest';
import { fuzzRuns } from './fuzz-runs.js';

// Issue 14 item 12: generated replies and hook behaviour under every error policy; the invariants are in fuzz-runs.ts.
// `npm run fuzz` runs more (HELIX_FUZZ_RUNS, HELIX_FUZZ_SEED).
describe('run fuzzer', () => {
  it('1,000 generated runs keep every invariant', async () => {
    await fuzzRuns({ numRuns: 1000, seed: 14 });
  }, 120_000);
});
