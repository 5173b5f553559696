/** @helix-agents/store-postgres: the shared durable store of helix-agents (state, stream and usage on PostgreSQL). */
export { openPostgresStores } from './open.js';
export type { OpenPostgresStoresOptions, PostgresStores, PostgresStoresCommonOptions } from './open.js';
export { PostgresStateStore } from './state-store.js';
export type { PostgresStateStoreOptions } from './state-store.js';
export { PostgresStreamManager } from './stream-manager.js';
export type { PostgresStreamManagerOptions } from './stream-manager.js';
export { migratePostgres, POSTGRES_MIGRATIONS, POSTGRES_SCHEMA_VERSION } from './migrations.js';
export type { MigrationResult, PostgresMigration } from './migrations.js';
export { PostgresKVStore } from './kv.js';
export { createSchemaObjects } from './sql.js';
export type { PostgresKVStoreOptions } from './kv.js';
