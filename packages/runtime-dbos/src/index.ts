/**
 * @helix-agents/runtime-dbos: helix agents as DBOS workflows on Postgres. The loop, the hooks and the
 * session rules are runtime-js's; DBOS makes each run a durable workflow that survives the loss of the
 * worker running it.
 */
export { DBOSAgentExecutor } from './executor.js';
export type { DBOSAgentExecutorOptions } from './executor.js';
export { DBOSRunHost, runWorkflow } from './host.js';
export type { HostedExecutor, RunWorkflowInput, RunWorkflowOutput } from './host.js';
export { launchDBOSWorker } from './workers.js';
export type { DBOSWorker, DBOSWorkerOptions } from './workers.js';
