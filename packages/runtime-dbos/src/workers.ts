import { randomUUID } from 'node:crypto';
import { DBOS } from '@dbos-inc/dbos-sdk';
import { AgentError, ConfigError, consoleLogger, type Logger } from '@helix-agents/sdk';
import { createSchemaObjects } from '@helix-agents/store-postgres';
import pg from 'pg';

/** Options of {@link launchDBOSWorker}. */
export interface DBOSWorkerOptions {
  /** The Postgres database DBOS keeps its workflows in (it may be the helix store's database). */
  readonly systemDatabaseUrl: string;
  /**
   * This worker's stable executor id: the same across restarts of this worker, different from every other
   * live worker (two live workers with one id are refused with `worker_id_in_use`).
   */
  readonly executorId: string;
  /**
   * The application version, the same on every worker that may continue each other's runs: DBOS hands a
   * workflow only to workers of its version. Change it when a deployment changes what workflows do.
   */
  readonly applicationVersion: string;
  /** The DBOS application name (default `helix-agents`). */
  readonly appName?: string;
  /** How often this worker writes its heartbeat (default 1000 ms). */
  readonly heartbeatMs?: number;
  /** A worker whose heartbeat is older than this is dead, and its workflows go to the survivors (default 5000 ms). */
  readonly deadAfterMs?: number;
  /** How often this worker looks for dead workers (default: every heartbeat). */
  readonly sweepMs?: number;
  /** DBOS's own log level (default `warn`). */
  readonly logLevel?: string;
  /** Where the worker reports trouble (default: stderr). */
  readonly logger?: Logger;
}

/** A launched worker: DBOS is running in this process, with this worker's heartbeat and sweep. */
export interface DBOSWorker {
  readonly executorId: string;
  readonly applicationVersion: string;
  /**
   * Looks for dead workers once: claims each (so one survivor handles it) and resumes its pending
   * workflows, which any live worker then dequeues. Returns the ids of the workflows it resumed.
   */
  sweep(): Promise<string[]>;
  /** Stops the heartbeat and the sweep and shuts DBOS down (a later worker may take this executor id). */
  shutdown(): Promise<void>;
}

const SCHEMA = 'helix_dbos';
const NOW_MS = '(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint';

const SQL = {
  schema: `CREATE SCHEMA IF NOT EXISTS ${SCHEMA}`,
  table: `CREATE TABLE IF NOT EXISTS ${SCHEMA}.workers (
    executor_id text PRIMARY KEY,
    instance text NOT NULL,
    application_version text NOT NULL,
    heartbeat_at bigint NOT NULL,
    adopted_by text
  )`,
  // Takes the id when it is free or its holder's heartbeat stopped; a live holder keeps it.
  register: `INSERT INTO ${SCHEMA}.workers AS w (executor_id, instance, application_version, heartbeat_at, adopted_by)
    VALUES ($1, $2, $3, ${NOW_MS}, NULL)
    ON CONFLICT (executor_id) DO UPDATE SET instance = EXCLUDED.instance, application_version = EXCLUDED.application_version,
      heartbeat_at = EXCLUDED.heartbeat_at, adopted_by = NULL
    WHERE w.heartbeat_at < ${NOW_MS} - $4
    RETURNING executor_id`,
  holder: `SELECT instance, ${NOW_MS} - heartbeat_at AS age_ms FROM ${SCHEMA}.workers WHERE executor_id = $1`,
  heartbeat: `UPDATE ${SCHEMA}.workers SET heartbeat_at = ${NOW_MS} WHERE executor_id = $1 AND instance = $2`,
  // Dead workers of this version that no live worker has adopted: claimed in one statement, so two
  // survivors never both take one.
  adopt: `UPDATE ${SCHEMA}.workers AS w SET adopted_by = $1
    WHERE w.executor_id <> $1 AND w.application_version = $2 AND w.heartbeat_at < ${NOW_MS} - $3
      AND (w.adopted_by IS NULL OR NOT EXISTS (
        SELECT 1 FROM ${SCHEMA}.workers a WHERE a.executor_id = w.adopted_by AND a.heartbeat_at >= ${NOW_MS} - $3))
    RETURNING w.executor_id`,
  leave: `UPDATE ${SCHEMA}.workers SET heartbeat_at = 0 WHERE executor_id = $1 AND instance = $2`,
} as const;

/**
 * Launches DBOS in this process as one of N workers sharing one Postgres, with liveness on top of what
 * DBOS offers. Self-hosted DBOS recovers only its own executor id's workflows, at launch; so every worker
 * writes a heartbeat row, and every worker sweeps: a worker whose heartbeat stopped for `deadAfterMs` is
 * claimed by one survivor, which lists that executor's PENDING workflows (`DBOS.listWorkflows`) and
 * resumes them (`DBOS.resumeWorkflows`): they are enqueued again, and a live worker of the same
 * application version dequeues each and continues it from its last recorded step.
 *
 * Call it once per process, before making `DBOSAgentExecutor`s is fine (their workflows wait for them).
 * Rejects with `worker_id_in_use` when another live worker holds `executorId`.
 */
export async function launchDBOSWorker(options: DBOSWorkerOptions): Promise<DBOSWorker> {
  const heartbeatMs = options.heartbeatMs ?? 1000;
  const deadAfterMs = options.deadAfterMs ?? 5000;
  const sweepMs = options.sweepMs ?? heartbeatMs;
  const logger = options.logger ?? consoleLogger;
  if (!options.executorId) throw new ConfigError('launchDBOSWorker needs an executorId, stable for this worker and unique among live workers.');
  if (deadAfterMs < 3 * heartbeatMs) throw new ConfigError(`deadAfterMs (${deadAfterMs}) must be at least three heartbeats (${3 * heartbeatMs} ms), or live workers would be taken for dead.`);
  // DBOS creates its system database when it is missing; the workers table lives beside its schema.
  await DBOS.migrate(options.systemDatabaseUrl);
  const pool = new pg.Pool({ connectionString: options.systemDatabaseUrl, max: 2 });
  pool.on('error', (error) => logger.warn(`worker liveness pool: ${error.message}`));
  const instance = randomUUID();
  try {
    // Workers starting at once take turns creating the table (the schema's DDL lock).
    await createSchemaObjects(pool, SCHEMA, [SQL.schema, SQL.table], 'worker table setup');
    const taken = await pool.query(SQL.register, [options.executorId, instance, options.applicationVersion, deadAfterMs]);
    if (taken.rowCount === 0) {
      const holder = await pool.query<{ instance: string; age_ms: string }>(SQL.holder, [options.executorId]);
      throw new AgentError('worker_id_in_use', `Executor id "${options.executorId}" is held by a live worker (its last heartbeat was ${holder.rows[0]?.age_ms ?? '?'} ms ago).`, {
        details: { executorId: options.executorId },
      });
    }
    DBOS.setConfig({
      name: options.appName ?? 'helix-agents',
      systemDatabaseUrl: options.systemDatabaseUrl,
      executorID: options.executorId,
      applicationVersion: options.applicationVersion,
      runAdminServer: false,
      logLevel: options.logLevel ?? 'warn',
    });
    await DBOS.launch();
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw error;
  }

  let stopped = false;
  const heartbeat = setInterval(() => {
    pool.query(SQL.heartbeat, [options.executorId, instance]).then(
      (result) => {
        if (result.rowCount === 0 && !stopped) logger.error(`worker ${options.executorId} lost its executor id to another worker (it was taken for dead); stop this process.`);
      },
      (error: unknown) => logger.warn(`worker ${options.executorId} heartbeat failed: ${error instanceof Error ? error.message : String(error)}`),
    );
  }, heartbeatMs);
  heartbeat.unref();

  const sweep = async (): Promise<string[]> => {
    const dead = await pool.query<{ executor_id: string }>(SQL.adopt, [options.executorId, options.applicationVersion, deadAfterMs]);
    const resumed: string[] = [];
    for (const { executor_id: executorId } of dead.rows) {
      const pending = await DBOS.listWorkflows({ status: 'PENDING', executorId, applicationVersion: options.applicationVersion, loadInput: false, loadOutput: false });
      const ids = pending.map((w) => w.workflowID);
      if (ids.length > 0) await DBOS.resumeWorkflows(ids);
      resumed.push(...ids);
      logger.info(`worker ${options.executorId} took over dead worker ${executorId}: ${ids.length} workflow(s) resumed`);
    }
    return resumed;
  };
  let sweeping = false;
  const sweeper = setInterval(() => {
    if (sweeping || stopped) return;
    sweeping = true;
    sweep()
      .catch((error: unknown) => logger.warn(`worker ${options.executorId} sweep failed: ${error instanceof Error ? error.message : String(error)}`))
      .finally(() => {
        sweeping = false;
      });
  }, sweepMs);
  sweeper.unref();

  return {
    executorId: options.executorId,
    applicationVersion: options.applicationVersion,
    sweep,
    async shutdown() {
      if (stopped) return;
      stopped = true;
      clearInterval(heartbeat);
      clearInterval(sweeper);
      await DBOS.shutdown();
      await pool.query(SQL.leave, [options.executorId, instance]).catch(() => undefined);
      await pool.end();
    },
  };
}
