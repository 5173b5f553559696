/** Test helpers for helix-agents users: a scripted model and a hook recorder. */
export * from './scripted-model.js';
export * from './hook-recorder.js';
