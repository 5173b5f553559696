// Shared by the CLI tests: captured output streams and the options of an in-process `helix run`.
import { fileURLToPath } from 'node:url';
import type { RunOptions } from '../run.js';

/** The path of a project folder under test-fixtures. */
export const fixture = (name: string): string => fileURLToPath(new URL(`../../test-fixtures/${name}`, import.meta.url));

/** Output streams that record what the CLI writes, with the environment it sees. */
export function io(env: NodeJS.ProcessEnv = {}) {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out,
    err,
    stdout: () => out.join(''),
    stderr: () => err.join(''),
    io: { stdout: { write: (t: string) => void out.push(t) }, stderr: { write: (t: string) => void err.push(t) }, env },
  };
}

/** The options of a plain, scripted, live chat turn of the `helper` agent of the valid fixture. */
export const runOptions = (message: string, database: string, overrides: Partial<RunOptions> = {}): RunOptions => ({
  dir: fixture('valid'),
  agent: 'helper',
  message,
  model: 'scripted',
  purpose: 'live',
  mode: 'chat',
  hookWaitMs: 10_000,
  database,
  plain: true,
  ...overrides,
});
