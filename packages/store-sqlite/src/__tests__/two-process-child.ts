// One of two processes writing the same SQLite file (see ../two-process.test.ts). Prints one JSON line.
// argv: <db path> <role: a | b | open | crash> <steps per own session>. `open` only opens (migrates) the file and
// reports what it applied; `crash` commits steps until the parent kills it.
import { AgentError, RunSupersededError } from '@helix-agents/sdk';
import type { Message } from '@helix-agents/sdk';
import type { BeginRunRequest, StateStore } from '@helix-agents/sdk/store';
import { openSqliteStores } from '../open.js';
import { beginRequest } from './begin-request.js';

const [path, role, stepsText] = process.argv.slice(2) as [string, 'a' | 'b' | 'open' | 'crash', string];
const steps = Number(stepsText);
const stores = openSqliteStores({ path, busyTimeoutMs: 10_000, pollIntervalMs: 5 });
if (role === 'open') {
  process.stdout.write(`${JSON.stringify({ role, applied: stores.database.appliedMigrations })}\n`);
  stores.close();
  process.exit(0);
}
const store: StateStore = stores.stateStore;
const ROWS = 3;

function rows(tag: string): Message[] {
  return Array.from({ length: ROWS }, (_, j) => ({ role: 'assistant' as const, content: `${tag}:${j}` }));
}

/** K1 of one of this process's runs: its own lease, on the wall clock. */
function begin(sessionId: string, runId: string): BeginRunRequest {
  return beginRequest(sessionId, runId, {
    initialState: { n: 0 },
    newTurn: { turnId: `turn-${runId}`, input: [{ role: 'user', content: 'go' }] },
    startedAt: Date.now(),
    leaseOwner: `process-${role}`,
  });
}

const yieldNow = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Commits `steps` steps of ROWS rows on this process's own sessions. */
async function ownSessions(): Promise<void> {
  for (let s = 0; s < 3; s++) {
    const sessionId = `${role}-${s}`;
    await store.beginRun(begin(sessionId, `run-${sessionId}`));
    for (let i = 0; i < steps; i++) {
      await store.commit({ sessionId, runId: `run-${sessionId}`, epoch: 1, kind: 'step', stepIndex: i, appendMessages: rows(`${sessionId}/${i}`), state: { n: i + 1 }, checkpoint: 'step', committedAt: Date.now() });
      if (i % 10 === 0) await yieldNow();
    }
  }
}

/** Process a: keeps committing on the shared session until process b supersedes it. */
async function sharedWriter(): Promise<{ committed: number; refusedAt: number | undefined }> {
  await store.beginRun(begin('shared', 'shared-a'));
  const writer = await stores.streamManager.claim('shared', 'shared-a');
  let committed = 0;
  for (let i = 0; i < 20_000; i++) {
    try {
      await store.commit({ sessionId: 'shared', runId: 'shared-a', epoch: 1, kind: 'step', stepIndex: i, appendMessages: rows(`a/${i}`), state: { n: i + 1, by: 'a' }, committedAt: Date.now() });
      committed++;
      await writer.write({ type: 'text_delta', streamId: 'shared', agentId: 'shared', agentType: 'agent', runId: 'shared-a', timestamp: Date.now(), stepIndex: i, delta: `a${i}` });
    } catch (error) {
      if (!RunSupersededError.isInstance(error)) throw error;
      // b claims the stream just after its K1: wait until its first chunk is there, then try to write.
      for (let seen = false; !seen; await new Promise((resolve) => setTimeout(resolve, 5))) {
        for await (const chunk of stores.streamManager.read('shared', { follow: false })) if (chunk.runId === 'shared-b') seen = true;
      }
      const late = await writer.write({ type: 'text_delta', streamId: 'shared', agentId: 'shared', agentType: 'agent', runId: 'shared-a', timestamp: Date.now(), stepIndex: i, delta: 'late' });
      if (late) throw new Error('the superseded writer could still write to the stream');
      return { committed, refusedAt: i };
    }
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  return { committed, refusedAt: undefined };
}

/** Process b: waits until a committed a few steps on the shared session, then takes it over. */
async function sharedTakeover(): Promise<{ supersededRunId: string | undefined; sawCommits: number; tornReads: number; reads: number }> {
  let sawCommits = 0;
  let tornReads = 0;
  let reads = 0;
  for (;;) {
    const session = await store.loadSession('shared');
    if (session) {
      reads++;
      const n = (session.state as { n: number }).n;
      if (session.messages.length !== n * ROWS || session.stepCount !== n) tornReads++;
      sawCommits = n;
      if (n >= 20) break;
    }
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  const { supersededRunId } = await store.beginRun(begin('shared', 'shared-b'));
  const writer = await stores.streamManager.claim('shared', 'shared-b');
  for (let i = 0; i < 5; i++) {
    await store.commit({ sessionId: 'shared', runId: 'shared-b', epoch: 1, kind: 'step', stepIndex: i, appendMessages: rows(`b/${i}`), committedAt: Date.now() });
    await writer.write({ type: 'text_delta', streamId: 'shared', agentId: 'shared', agentType: 'agent', runId: 'shared-b', timestamp: Date.now(), stepIndex: i, delta: `b${i}` });
  }
  return { supersededRunId, sawCommits, tornReads, reads };
}

/** Both processes try to recover the same orphaned run: exactly one may win. */
async function claimOrphan(): Promise<boolean> {
  try {
    await store.claimRun('orphan-run', `process-${role}`, 60_000, Date.now());
    return true;
  } catch (error) {
    if (AgentError.isInstance(error) && error.code === 'state_run_not_recoverable') return false;
    throw error;
  }
}

if (role === 'crash') {
  // Commits until killed; reports each commit once it resolved (stdout to a pipe is synchronous on Linux).
  // It also says once its WAL checkpoints run in the background thread (after a few hundred commits).
  await stores.stateStore.beginRun(begin('crash', 'crash-run'));
  let background = false;
  for (let i = 0; ; i++) {
    await stores.stateStore.commit({ sessionId: 'crash', runId: 'crash-run', epoch: 1, kind: 'step', stepIndex: i, appendMessages: rows(`c/${i}`), state: { n: i + 1 }, checkpoint: 'step', committedAt: Date.now() });
    process.stdout.write(`committed ${i}\n`);
    if (!background && stores.database.checkpointsInBackground) {
      background = true;
      process.stdout.write(`background ${i}\n`);
    }
  }
}
try {
  const claimed = await claimOrphan();
  const [shared] = await Promise.all([role === 'a' ? sharedWriter() : sharedTakeover(), ownSessions()]);
  process.stdout.write(`${JSON.stringify({ role, claimed, shared })}\n`);
  stores.close();
} catch (error) {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  stores.close();
  process.exitCode = 1;
}
