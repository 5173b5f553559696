import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { SqliteDatabase } from '../database.js';

/** Temporary database files for the tests of one file; see {@link useTempDatabases}. */
export interface TempDatabases {
  /** A new, empty folder. */
  folder(): string;
  /** The path of a database file that does not exist yet, in a new folder. */
  path(): string;
  /** A database opened on a new file. */
  open(): SqliteDatabase;
}

/**
 * Call at the top of a test file: after each test, the databases `open()` gave are closed and every
 * folder made for the test is removed.
 */
export function useTempDatabases(prefix: string): TempDatabases {
  const folders: string[] = [];
  const opened: SqliteDatabase[] = [];
  afterEach(() => {
    for (const database of opened.splice(0)) database.close();
    for (const dir of folders.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  const folder = (): string => {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    folders.push(dir);
    return dir;
  };
  const path = (): string => join(folder(), 'helix.db');
  return {
    folder,
    path,
    open: () => {
      const database = SqliteDatabase.open({ path: path() });
      opened.push(database);
      return database;
    },
  };
}
