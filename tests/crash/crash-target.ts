// What every crash matrix sets up per store: a temporary folder for its logs, the store target the child
// processes open (a SQLite file, or a throwaway Postgres), the test's own view of those stores, and the
// uncrashed reference run the crashed ones are compared with.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { startTestPostgres } from '@helix-agents/store-postgres/testing';
import { openTarget, type TargetStores } from './targets.js';

/** A store a matrix runs on: the target string child processes open, and how to remove it. */
export interface OpenedTarget {
  readonly target: string;
  stop(): Promise<void>;
}

/** The two stores every matrix runs on, by name: a SQLite file in a temporary folder, and a throwaway Postgres. */
export const CRASH_STORES: ReadonlyArray<readonly [string, () => Promise<OpenedTarget>]> = [
  [
    'sqlite',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'helix-crash-db-'));
      return { target: `sqlite:${join(dir, 'crash.db')}`, stop: async () => rmSync(dir, { recursive: true, force: true }) };
    },
  ],
  [
    'postgres',
    async () => {
      const pg = await startTestPostgres();
      return { target: `postgres:${pg.connectionString}`, stop: () => pg.stop() };
    },
  ],
];

/** What {@link useCrashTarget} fills in before the matrix's tests run. */
export interface CrashTarget<R> {
  target: string;
  stores: TargetStores;
  /** A folder for the scenarios' JSON-lines logs. */
  dir: string;
  /** The uncrashed reference run. */
  reference: R;
}

/**
 * Opens `open`'s store and a log folder before the enclosing describe's tests, runs the reference with
 * `reference`, and removes it all afterwards.
 */
export function useCrashTarget<R>(prefix: string, open: () => Promise<OpenedTarget>, reference: (t: Omit<CrashTarget<R>, 'reference'>) => Promise<R>): CrashTarget<R> {
  const state = {} as CrashTarget<R>;
  let stop: () => Promise<void> = async () => {};
  beforeAll(async () => {
    state.dir = mkdtempSync(join(tmpdir(), `${prefix}-`));
    const opened = await open();
    state.target = opened.target;
    stop = () => opened.stop();
    state.stores = await openTarget(opened.target);
    state.reference = await reference(state);
  }, 120_000);
  afterAll(async () => {
    await state.stores?.close();
    await stop();
    if (state.dir) rmSync(state.dir, { recursive: true, force: true });
  }, 60_000);
  return state;
}
