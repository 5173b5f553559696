/** `npm run fuzz`: more generated runs than npm test (HELIX_FUZZ_RUNS, default 20,000; HELIX_FUZZ_SEED, default random). */
import { fuzzRuns } from './fuzz-runs.js';

const numRuns = Number(process.env.HELIX_FUZZ_RUNS ?? 20_000);
const seed = process.env.HELIX_FUZZ_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.HELIX_FUZZ_SEED);
if (!Number.isInteger(numRuns) || numRuns < 1 || !Number.isInteger(seed)) {
  console.error('HELIX_FUZZ_RUNS must be a positive integer and HELIX_FUZZ_SEED an integer.');
  process.exit(64);
}
const started = Date.now();
console.log(`fuzzing ${numRuns} runs, seed ${seed}`);
try {
  await fuzzRuns({ numRuns, seed });
  console.log(`ok: ${numRuns} runs in ${((Date.now() - started) / 1000).toFixed(1)} s (seed ${seed})`);
} catch (error) {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
}
