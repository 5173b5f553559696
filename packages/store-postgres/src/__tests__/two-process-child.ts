// A child process of two-process.test.ts. Run as one process (not through the tsx CLI, which forks a
// second one): node --conditions=helix-source --import tsx two-process-child.ts '<json args>'.
// It reports what it did as JSON lines on stdout, so the parent can check the database against it.
import { RunSupersededError } from '@helix-agents/sdk';
import type { UsageEntry } from '@helix-agents/sdk';
import type { StateStore } from '@helix-agents/sdk/store';
import { openPostgresStores } from '../index.js';
import { stepRows, type ChildArgs } from './two-process-shared.js';

function report(line: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

/** Reports `ready` and waits for the parent's go (a line on stdin), so that two children really overlap. */
async function ready(): Promise<void> {
  report({ event: 'ready' });
  await new Promise<void>((resolve) => {
    process.stdin.once('data', () => {
      process.stdin.pause();
      resolve();
    });
  });
}

function usage(sessionId: string, runId: string, stepIndex: number): UsageEntry {
  return { kind: 'llm', sessionId, runId, stepIndex, attempt: 1, model: 'child', usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 }, success: true, durationMs: 1, at: Date.now() };
}

async function begin(store: StateStore, sessionId: string, runId: string, leaseMs: number): Promise<void> {
  await store.beginRun({
    sessionId,
    runId,
    agentType: 'child',
    signal: 'start',
    initialState: { lastRun: null, lastStep: -1 },
    newTurn: { turnId: `turn-${runId}`, input: [{ role: 'user', content: runId }] },
    startedAt: Date.now(),
    leaseOwner: `pid-${process.pid}`,
    leaseMs,
    options: { input: runId },
  });
}

/** Both children take the same session over and over; each commits steps until the other supersedes it. */
async function contend(args: Extract<ChildArgs, { mode: 'contend' }>): Promise<void> {
  const stores = await openPostgresStores({ connectionString: args.connectionString, schema: args.schema });
  try {
    await ready();
    for (let round = 0; round < args.rounds; round++) {
      const runId = `${args.name}-${round}`;
      await begin(stores.stateStore, 'shared', runId, 60_000);
      report({ event: 'begun', runId });
      for (let step = 0; step < args.steps; step++) {
        try {
          await stores.stateStore.commit({
            sessionId: 'shared',
            runId,
            epoch: 1,
            kind: 'step',
            stepIndex: step,
            appendMessages: stepRows(runId, step),
            state: { lastRun: runId, lastStep: step },
            usage: [usage('shared', runId, step)],
            checkpoint: 'step',
            committedAt: Date.now(),
          });
          report({ event: 'committed', runId, step });
        } catch (error) {
          if (!RunSupersededError.isInstance(error)) throw error;
          report({ event: 'refused', runId, step });
          break;
        }
      }
    }
  } finally {
    await stores.close();
  }
}

/** Writes a run's chunks with small pauses, so a reader in the parent follows them live. */
async function stream(args: Extract<ChildArgs, { mode: 'stream' }>): Promise<void> {
  const stores = await openPostgresStores({ connectionString: args.connectionString, schema: args.schema });
  try {
    await ready();
    const writer = await stores.streamManager.claim(args.streamId, args.runId);
    report({ event: 'claimed', startSeq: writer.startSeq });
    const base = { streamId: args.streamId, agentId: args.streamId, agentType: 'child', runId: args.runId };
    for (let i = 0; i < args.chunks - 1; i++) {
      const pending = writer.write({ ...base, type: 'text_delta', stepIndex: 0, delta: `d${i}`, timestamp: Date.now() });
      // Some writes awaited one by one, some issued together (they batch): both must keep their order.
      if (i % 3 !== 0) await pending;
      if (i % 10 === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const ended = await writer.write({ ...base, type: 'end', output: { pid: process.pid }, timestamp: Date.now() });
    report({ event: 'written', ended });
  } finally {
    await stores.close();
  }
}

/**
 * Commits steps, then stops itself (SIGSTOP) between two commits, as a process that hangs. The parent
 * takes the run over while it is stopped and continues it; once resumed, this process's next commit must
 * be refused.
 */
async function stall(args: Extract<ChildArgs, { mode: 'stall' }>): Promise<void> {
  const stores = await openPostgresStores({ connectionString: args.connectionString, schema: args.schema });
  try {
    await begin(stores.stateStore, args.sessionId, args.runId, args.leaseMs);
    for (let step = 0; ; step++) {
      if (step === args.stallAfter) {
        report({ event: 'stalling', step });
        process.kill(process.pid, 'SIGSTOP');
      }
      try {
        await stores.stateStore.commit({
          sessionId: args.sessionId,
          runId: args.runId,
          epoch: 1,
          kind: 'step',
          stepIndex: step,
          appendMessages: stepRows(args.runId, step),
          state: { lastRun: args.runId, lastStep: step },
          committedAt: Date.now(),
        });
        report({ event: 'committed', runId: args.runId, step });
      } catch (error) {
        if (!RunSupersededError.isInstance(error)) throw error;
        report({ event: 'refused', runId: args.runId, step });
        await expectRefused(stores.stateStore, args);
        return;
      }
    }
  } finally {
    await stores.close();
  }
}

/** Every other write of the old epoch is refused too. */
async function expectRefused(store: StateStore, args: Extract<ChildArgs, { mode: 'stall' }>): Promise<void> {
  const outcomes = await Promise.allSettled([
    store.renewLease(args.runId, 1, 60_000, Date.now()),
    store.appendJournal({ runId: args.runId, epoch: 1, stepIndex: 0, kind: 'call_result', key: 'late', data: {}, at: Date.now() }),
  ]);
  report({ event: 'late-writes', refused: outcomes.map((o) => o.status === 'rejected' && RunSupersededError.isInstance(o.reason)) });
}

const args = JSON.parse(process.argv[2] ?? '{}') as ChildArgs;
const main = args.mode === 'contend' ? contend(args) : args.mode === 'stream' ? stream(args) : stall(args);
main.then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
