import { assertFilePath, fileInfo, toJsonValue } from '@helix-agents/sdk/hooks';
import type { FileInfo, FileStore, JsonValue, StoredFile } from '@helix-agents/sdk/hooks';
import type BetterSqlite3 from 'better-sqlite3';
import type { SqliteDatabase } from './database.js';
import { deferred, handleOf, immediate } from './database.js';
import { assertOpen, ensureComponentSchema } from './kv.js';

/** The version of the file tables' layout this code writes. */
export const SQLITE_FILES_SCHEMA_VERSION = 1;

/** Appends add a part; past this many parts the file is merged back into one, so reads stay one short scan. */
const MAX_PARTS = 64;

// A file is a header row plus its bytes in parts, so an append (a journal line) writes one small row
// instead of rewriting the whole file.
const FILES_DDL = `
  CREATE TABLE IF NOT EXISTS hook_files (
    bucket TEXT NOT NULL,
    path TEXT NOT NULL,
    size INTEGER NOT NULL,
    parts INTEGER NOT NULL,
    metadata TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (bucket, path)
  ) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS hook_file_parts (
    id INTEGER PRIMARY KEY,
    bucket TEXT NOT NULL,
    path TEXT NOT NULL,
    part INTEGER NOT NULL,
    data BLOB NOT NULL
  );
  CREATE UNIQUE INDEX IF NOT EXISTS hook_file_parts_key ON hook_file_parts (bucket, path, part);
`;

interface HeaderRow {
  path: string;
  size: number;
  parts: number;
  metadata: string | null;
  created_at: number;
  updated_at: number;
}

function toInfo(row: HeaderRow): FileInfo {
  return fileInfo(row.path, row.size, row.created_at, row.updated_at, row.metadata === null ? undefined : (JSON.parse(row.metadata) as Record<string, JsonValue>));
}

function blob(data: Uint8Array): Buffer {
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

/**
 * The SQLite {@link FileStore} behind `ctx.host.files` and `ctx.artifacts`: headers in `hook_files`,
 * bytes in `hook_file_parts`, on the project's database (share the `database` of `openSqliteStores`).
 * Every write is one transaction; an append inserts one part.
 */
export class SqliteFileStore implements FileStore {
  /** The database the files live in. */
  readonly database: SqliteDatabase;
  readonly #read: (bucket: string, path: string) => StoredFile | undefined;
  readonly #write: (bucket: string, path: string, data: Uint8Array, metadata: string | null, now: number) => FileInfo;
  readonly #append: (bucket: string, path: string, data: Uint8Array, now: number) => FileInfo;
  readonly #delete: (bucket: string, path: string) => boolean;
  readonly #list: BetterSqlite3.Statement<[string, string], HeaderRow>;

  constructor(database: SqliteDatabase) {
    this.database = database;
    const db = handleOf(database);
    ensureComponentSchema(db, 'hook_files', SQLITE_FILES_SCHEMA_VERSION, FILES_DDL);
    const header = db.prepare<[string, string], HeaderRow>('SELECT path, size, parts, metadata, created_at, updated_at FROM hook_files WHERE bucket = ? AND path = ?');
    const upsertHeader = db.prepare<[string, string, number, number, string | null, number, number]>(
      `INSERT INTO hook_files (bucket, path, size, parts, metadata, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (bucket, path) DO UPDATE SET size = excluded.size, parts = excluded.parts, metadata = excluded.metadata, updated_at = excluded.updated_at`,
    );
    const parts = db.prepare<[string, string], Buffer>('SELECT data FROM hook_file_parts WHERE bucket = ? AND path = ? ORDER BY part').pluck();
    const insertPart = db.prepare<[string, string, number, Buffer]>('INSERT INTO hook_file_parts (bucket, path, part, data) VALUES (?, ?, ?, ?)');
    const deleteParts = db.prepare<[string, string]>('DELETE FROM hook_file_parts WHERE bucket = ? AND path = ?');
    const deleteHeader = db.prepare<[string, string]>('DELETE FROM hook_files WHERE bucket = ? AND path = ?');

    this.#read = deferred(db, (bucket: string, path: string): StoredFile | undefined => {
      const row = header.get(bucket, path);
      if (!row) return undefined;
      return { info: toInfo(row), data: new Uint8Array(Buffer.concat(parts.all(bucket, path))) };
    });
    const write = (bucket: string, path: string, data: Uint8Array, metadata: string | null, now: number): FileInfo => {
      const previous = header.get(bucket, path);
      deleteParts.run(bucket, path);
      insertPart.run(bucket, path, 0, blob(data));
      const createdAt = previous?.created_at ?? now;
      upsertHeader.run(bucket, path, data.byteLength, 1, metadata, createdAt, now);
      return toInfo({ path, size: data.byteLength, parts: 1, metadata, created_at: createdAt, updated_at: now });
    };
    this.#write = immediate(db, write);
    this.#append = immediate(db, (bucket: string, path: string, data: Uint8Array, now: number): FileInfo => {
      const row = header.get(bucket, path);
      if (!row) return write(bucket, path, data, null, now);
      const size = row.size + data.byteLength;
      if (row.parts + 1 > MAX_PARTS) {
        const joined = Buffer.concat([...parts.all(bucket, path), blob(data)]);
        deleteParts.run(bucket, path);
        insertPart.run(bucket, path, 0, joined);
        upsertHeader.run(bucket, path, size, 1, row.metadata, row.created_at, now);
        return toInfo({ ...row, size, parts: 1, updated_at: now });
      }
      insertPart.run(bucket, path, row.parts, blob(data));
      upsertHeader.run(bucket, path, size, row.parts + 1, row.metadata, row.created_at, now);
      return toInfo({ ...row, size, parts: row.parts + 1, updated_at: now });
    });
    this.#delete = immediate(db, (bucket: string, path: string): boolean => {
      deleteParts.run(bucket, path);
      return deleteHeader.run(bucket, path).changes > 0;
    });
    this.#list = db.prepare<[string, string], HeaderRow>('SELECT path, size, parts, metadata, created_at, updated_at FROM hook_files WHERE bucket = ? AND path >= ? ORDER BY path');
  }

  async read(bucket: string, path: string): Promise<StoredFile | undefined> {
    assertFilePath(path);
    assertOpen(this.database, 'file store');
    return this.#read(bucket, path);
  }

  async write(bucket: string, path: string, data: Uint8Array, metadata?: Readonly<Record<string, JsonValue>>): Promise<FileInfo> {
    assertFilePath(path);
    const meta = metadata === undefined ? null : JSON.stringify(toJsonValue(metadata));
    assertOpen(this.database, 'file store');
    return this.#write(bucket, path, data, meta, Date.now());
  }

  async append(bucket: string, path: string, data: Uint8Array): Promise<FileInfo> {
    assertFilePath(path);
    assertOpen(this.database, 'file store');
    return this.#append(bucket, path, data, Date.now());
  }

  async delete(bucket: string, path: string): Promise<boolean> {
    assertFilePath(path);
    assertOpen(this.database, 'file store');
    return this.#delete(bucket, path);
  }

  async list(bucket: string, prefix = ''): Promise<readonly FileInfo[]> {
    assertOpen(this.database, 'file store');
    const files: FileInfo[] = [];
    // Paths sort after their prefix, so the scan stops at the first path without it.
    for (const row of this.#list.iterate(bucket, prefix)) {
      if (!row.path.startsWith(prefix)) break;
      files.push(toInfo(row));
    }
    return files;
  }
}
