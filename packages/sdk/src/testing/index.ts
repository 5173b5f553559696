/** Test helpers for helix-agents users: a scripted model, a hook recorder and a gate. */
export * from './scripted-model.js';
export * from './hook-recorder.js';
export * from './gate.js';
// Crash points: test machinery for crash tests (HELIX_CRASH_AT makes the process SIGKILL itself there).
export { crashPoint } from '../runtime/crash-points.js';
export type { CrashPointName } from '../runtime/crash-points.js';
export * from './add-loop.js';
