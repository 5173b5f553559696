/** Test helpers of @helix-agents/store-postgres: a throwaway Postgres cluster for tests and benchmarks. */
export { startTestPostgres } from './test-postgres.js';
export type { TestPostgres, TestPostgresOptions } from './test-postgres.js';
