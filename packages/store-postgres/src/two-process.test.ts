// Real processes on one database: two children fighting over one session through the fence, a reader
// here following a writer there (LISTEN/NOTIFY across processes), and a hung process whose run is
// taken over and whose late writes are refused. Children run as `node --import tsx` (one process each).
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Message, StreamChunk } from '@helix-agents/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { useTestPostgres } from './__tests__/cluster.js';
import { stepRows, type ChildArgs } from './__tests__/two-process-shared.js';

const cluster = useTestPostgres();
const CHILD = fileURLToPath(new URL('./__tests__/two-process-child.ts', import.meta.url));
const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url));

interface ChildEvent {
  readonly event: string;
  readonly [key: string]: unknown;
}

interface Child {
  readonly process: ChildProcess;
  readonly events: ChildEvent[];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  waitFor(event: string, timeoutMs?: number): Promise<ChildEvent>;
  go(): void;
  stderr(): string;
}

const children = new Set<ChildProcess>();

afterEach(() => {
  // A failed test must not leave a child writing (or stopped) behind.
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGCONT');
      child.kill('SIGKILL');
    }
  }
  children.clear();
});

/** A child's instructions without the connection string, which the cluster supplies. */
type ChildRequest = ChildArgs extends infer A ? (A extends ChildArgs ? Omit<A, 'connectionString'> : never) : never;

function startChild(args: ChildRequest): Child {
  const full = { ...args, connectionString: cluster.postgres.connectionString } as ChildArgs;
  const proc = spawn(process.execPath, ['--conditions=helix-source', '--import', 'tsx', CHILD, JSON.stringify(full)], { cwd: PACKAGE_DIR, stdio: ['pipe', 'pipe', 'pipe'] });
  children.add(proc);
  const events: ChildEvent[] = [];
  const listeners = new Set<() => void>();
  let buffer = '';
  let errors = '';
  proc.stdout?.setEncoding('utf8');
  proc.stdout?.on('data', (data: string) => {
    buffer += data;
    let newline: number;
    while ((newline = buffer.indexOf('\n')) >= 0) {
      events.push(JSON.parse(buffer.slice(0, newline)) as ChildEvent);
      buffer = buffer.slice(newline + 1);
    }
    for (const listener of listeners) listener();
  });
  proc.stderr?.setEncoding('utf8');
  proc.stderr?.on('data', (data: string) => {
    errors += data;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  return {
    process: proc,
    events,
    exited,
    waitFor: (event, timeoutMs = 30_000) =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          const found = events.find((e) => e.event === event);
          if (!found) return;
          listeners.delete(check);
          clearTimeout(timer);
          resolve(found);
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`child never reported ${event}; stderr: ${errors}`));
        }, timeoutMs);
        listeners.add(check);
        void exited.then(() => setTimeout(check, 0));
        check();
      }),
    go: () => proc.stdin?.write('go\n'),
    stderr: () => errors,
  };
}

/** True once the process is stopped (state T in /proc/<pid>/stat). */
function isStopped(pid: number): boolean {
  try {
    return / T /.test(readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\)/, ''));
  } catch {
    return false;
  }
}

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('two processes on one Postgres database', () => {
  it('two processes superseding each other on one session: every commit lands whole or not at all, nothing lost', { timeout: 120_000 }, async () => {
    const schema = cluster.schemaName('two');
    // Both open (and migrate) the fresh schema at the same time.
    const a = startChild({ mode: 'contend', schema, name: 'a', rounds: 15, steps: 20 });
    const b = startChild({ mode: 'contend', schema, name: 'b', rounds: 15, steps: 20 });
    await Promise.all([a.waitFor('ready'), b.waitFor('ready')]);
    a.go();
    b.go();
    const [exitA, exitB] = await Promise.all([a.exited, b.exited]);
    expect(exitA, a.stderr()).toEqual({ code: 0, signal: null });
    expect(exitB, b.stderr()).toEqual({ code: 0, signal: null });

    const events = [...a.events, ...b.events];
    const committed = events.filter((e) => e.event === 'committed').map((e) => `${String(e.runId)}/${String(e.step)}`);
    const refused = events.filter((e) => e.event === 'refused');
    // The fence was really exercised: some commits raced a takeover by the other process.
    expect(refused.length).toBeGreaterThan(0);
    expect(new Set(committed).size).toBe(committed.length);

    const stores = await cluster.open(schema);
    const session = await stores.stateStore.loadSession('shared');
    const messages = session?.messages ?? [];
    expect(messages.length).toBe(2 * committed.length);
    const landed: string[] = [];
    for (let i = 0; i < messages.length; i += 2) {
      const first = messages[i] as Message & { content: string };
      const [runId, step] = first.content.split('/');
      // Both rows of a step are there, next to each other: no torn commit.
      expect(messages.slice(i, i + 2)).toEqual(stepRows(runId!, Number(step)));
      landed.push(`${runId!}/${step!}`);
    }
    expect([...landed].sort()).toEqual([...committed].sort());
    // Each run's steps landed in order, from 0 with no gap, and its record counts them.
    const byRun = new Map<string, number[]>();
    for (const key of landed) {
      const [runId, step] = key.split('/');
      byRun.set(runId!, [...(byRun.get(runId!) ?? []), Number(step)]);
    }
    for (const [runId, steps] of byRun) {
      expect(steps).toEqual(steps.map((_, i) => i));
      expect((await stores.stateStore.getRun(runId))?.stepCount).toBe(steps.length);
    }
    expect(session?.stepCount).toBe(committed.length);
    const last = messages.at(-2) as Message & { content: string };
    const [lastRun, lastStep] = last.content.split('/');
    expect(session?.state).toEqual({ lastRun, lastStep: Number(lastStep) });
    // Usage went in with its commits: one model call per landed step, none for refused ones.
    expect((await stores.usageStore.getRollup({ sessionId: 'shared' })).modelCalls).toBe(committed.length);
    const checkpoints = await stores.stateStore.listCheckpoints('shared');
    expect(checkpoints.map((c) => c.messageCount)).toEqual(committed.map((_, i) => 2 * (i + 1)));
    // Every run but the last one was superseded; the last one is still running (nobody ended it).
    const begun = events.filter((e) => e.event === 'begun').map((e) => String(e.runId));
    const statuses = await Promise.all(begun.map(async (runId) => (await stores.stateStore.getRun(runId))?.status));
    expect(statuses.filter((s) => s === 'running')).toHaveLength(1);
    expect(statuses.filter((s) => s === 'superseded')).toHaveLength(begun.length - 1);
    expect(session?.currentRunId).toBe(begun[statuses.indexOf('running')]);
    await stores.close();
  });

  it('a reader here follows a writer in another process live, and reconnecting from an offset yields every chunk once', { timeout: 120_000 }, async () => {
    const schema = cluster.schemaName('two');
    // Polling once a minute: only NOTIFY from the other process can make this reader keep up.
    const stores = await cluster.open(schema, { pollIntervalMs: 60_000 });
    const total = 300;
    const writer = startChild({ mode: 'stream', schema, streamId: 'live', runId: 'writer', chunks: total });
    await writer.waitFor('ready');
    const received: StreamChunk[] = [];
    const reading = (async () => {
      let fromSeq = 0;
      while (received.at(-1)?.type !== 'end') {
        let taken = 0;
        // Drop the connection every 37 chunks and come back from the next offset.
        for await (const chunk of stores.streamManager.read('live', { fromSeq, untilRunEnds: 'writer' })) {
          received.push(chunk);
          if (++taken === 37) break;
        }
        fromSeq = (received.at(-1)?.seq ?? -1) + 1;
      }
    })();
    writer.go();
    await reading;
    expect(await writer.exited, writer.stderr()).toEqual({ code: 0, signal: null });
    expect(writer.events.find((e) => e.event === 'written')).toMatchObject({ ended: true });
    expect(received.map((c) => c.seq)).toEqual(Array.from({ length: total }, (_, i) => i));
    expect(received.map((c) => (c.type === 'text_delta' ? c.delta : c.type))).toEqual([...Array.from({ length: total - 1 }, (_, i) => `d${i}`), 'end']);
    await stores.close();
  });

  it('a hung process loses its run to a claim after its lease expired; once it wakes, its writes are refused', { timeout: 120_000 }, async () => {
    const schema = cluster.schemaName('two');
    const stores = await cluster.open(schema);
    const child = startChild({ mode: 'stall', schema, sessionId: 'hung', runId: 'old', leaseMs: 300, stallAfter: 3 });
    await child.waitFor('stalling');
    await until('the child to stop', () => isStopped(child.process.pid!));
    await until('the lease to expire', async () => (await stores.stateStore.listRecoverable(Date.now())).some((r) => r.runId === 'old'));
    const claimed = await stores.stateStore.claimRun('old', 'rescuer', 60_000, Date.now());
    expect(claimed.run).toMatchObject({ epoch: 2, stepCount: 3, leaseOwner: 'rescuer' });
    expect(claimed.session.messages).toEqual([...stepRows('old', 0), ...stepRows('old', 1), ...stepRows('old', 2)]);
    await stores.stateStore.commit({ sessionId: 'hung', runId: 'old', epoch: 2, kind: 'step', stepIndex: 3, appendMessages: stepRows('rescuer', 3), state: { lastRun: 'rescuer', lastStep: 3 }, committedAt: Date.now() });
    child.process.kill('SIGCONT');
    expect(await child.exited, child.stderr()).toEqual({ code: 0, signal: null });
    expect(child.events.filter((e) => e.event === 'committed').map((e) => e.step)).toEqual([0, 1, 2]);
    expect(child.events.find((e) => e.event === 'refused')).toMatchObject({ step: 3 });
    expect(child.events.find((e) => e.event === 'late-writes')).toMatchObject({ refused: [true, true] });
    expect(await stores.stateStore.loadSession('hung')).toMatchObject({
      stepCount: 4,
      state: { lastRun: 'rescuer', lastStep: 3 },
      messages: [...stepRows('old', 0), ...stepRows('old', 1), ...stepRows('old', 2), ...stepRows('rescuer', 3)],
    });
    expect(await stores.stateStore.getRun('old')).toMatchObject({ epoch: 2, leaseOwner: 'rescuer', stepCount: 4, status: 'running' });
    expect(await stores.stateStore.loadJournal('old')).toEqual([]);
    await stores.close();
  });
});
