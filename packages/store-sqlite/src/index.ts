/** @helix-agents/store-sqlite: the embedded default durable store (state, streams, usage) on SQLite, WAL mode. */
export { DEFAULT_SQLITE_PATH, SqliteDatabase } from './database.js';
export type { SqliteDatabaseOptions } from './database.js';
export type { SqliteCheckpointMode } from './checkpointer.js';
export { SQLITE_MIGRATIONS, SQLITE_RECORD_VERSION, SQLITE_SCHEMA_VERSION } from './migrations.js';
export type { SqliteMigration } from './migrations.js';
export { openSqliteStores } from './open.js';
export type { SqliteStores, SqliteStoresOptions } from './open.js';
export { SqliteStateStore } from './state-store.js';
export type { SqliteStateStoreOptions } from './state-store.js';
export { SqliteStreamManager } from './stream-manager.js';
export type { SqliteStreamManagerOptions } from './stream-manager.js';
export { SqliteUsageStore } from './usage-store.js';
export { SqliteKVStore, SQLITE_KV_SCHEMA_VERSION } from './kv.js';
export { SqliteFileStore, SQLITE_FILES_SCHEMA_VERSION } from './files.js';
