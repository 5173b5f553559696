// Issue 11 item 4: durable children. A process runs a lead agent that fans out to two sub-agents in one
// step, against SQLite and again against Postgres; it is killed with SIGKILL after beforeSubAgent, while
// a child runs, after a child completed but before the lead folded it, with the fold recorded but not
// committed, and after the fold's step commit. A fresh process recovers the lead and its children; the
// test checks that every child ran once, every afterSubAgent fired once, no recorded spawn fired
// beforeSubAgent again, and the lead's state and transcript equal an uncrashed run's.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { childSessionId, type RunRecord, type SessionSnapshot } from '@helix-agents/sdk';
import { canonical, lines, runChild, type ChildResult } from './compare.js';
import { CRASH_STORES, useCrashTarget, type OpenedTarget } from './crash-target.js';
import type { TargetStores } from './targets.js';
import { CALLS, type TreeHookLine } from './tree-agent.js';

const here = dirname(fileURLToPath(import.meta.url));
/** Where the process dies; `name@n` is the n-th time the point is reached (children commit a step each before the lead's). */
const CRASH_POINTS = ['after_child_spawn', 'in_child_run', 'after_child_end', 'before_k3@3', 'after_k3@3'] as const;

type ProcessResult = ChildResult;

function treeProcess(args: string[], crashAt?: string): Promise<ProcessResult> {
  return runChild(join(here, 'tree-child.ts'), args, crashAt);
}

interface Child {
  readonly session: SessionSnapshot;
  readonly run: RunRecord;
}

interface Outcome {
  readonly session: SessionSnapshot;
  readonly run: RunRecord;
  readonly children: Map<string, Child>;
  readonly hooks: TreeHookLine[];
  readonly crashed: ProcessResult;
  readonly recovered: ProcessResult;
}

async function runScenario(target: string, stores: TargetStores, dir: string, sessionId: string, crashAt: string | undefined): Promise<Outcome> {
  const hooksFile = join(dir, `${sessionId}.hooks.jsonl`);
  const args = [target, sessionId, hooksFile];
  const crashed = await treeProcess(['run', ...args], crashAt);
  const recovered = crashAt ? await treeProcess(['recover', ...args]) : crashed;
  const session = await stores.stateStore.loadSession(sessionId);
  if (!session?.currentRunId) throw new Error(`no session ${sessionId}: ${crashed.stderr} ${recovered.stderr}`);
  const run = (await stores.stateStore.getRun(session.currentRunId)) as RunRecord;
  const children = new Map<string, Child>();
  for (const callId of CALLS) {
    const childSession = await stores.stateStore.loadSession(childSessionId(sessionId, callId));
    if (childSession?.currentRunId) children.set(callId, { session: childSession, run: (await stores.stateStore.getRun(childSession.currentRunId)) as RunRecord });
  }
  const hooks = lines<TreeHookLine>(hooksFile);
  return { session, run, children, hooks, crashed, recovered };
}

/** The lead's state with its log as a multiset (the two spawns are logged in either order). */
function canonicalState(state: unknown): unknown {
  const s = state as { findings: Record<string, string>; folds: number; log: string[] };
  return { ...s, log: [...s.log].sort() };
}

/** The pid of the process that was killed (it wrote the first hook line: the lead's start). */
function crashedPid(o: Outcome): number | undefined {
  return o.hooks[0]?.pid;
}

function count(hooks: readonly TreeHookLine[], point: string, agent: string, extra: (h: TreeHookLine) => boolean = () => true): number {
  return hooks.filter((h) => h.point === point && h.agent === agent && extra(h)).length;
}

function subAgentCrashMatrix(name: string, open: () => Promise<OpenedTarget>): void {
  describe(`sub-agent crash matrix on ${name}`, () => {
    const t = useCrashTarget<Outcome>(`helix-tree-crash-${name}`, open, ({ target, stores, dir }) => runScenario(target, stores, dir, 'tree-reference', undefined));

    it('the uncrashed reference: the lead folds both findings in one committed step, then finishes', () => {
      expect(t.reference.crashed.code, t.reference.crashed.stderr).toBe(0);
      expect(t.reference.run.status).toBe('completed');
      expect(t.reference.session.stepCount).toBe(2);
      expect(canonicalState(t.reference.session.state)).toEqual({ findings: { c_alpha: 'notes on alpha', c_beta: 'notes on beta' }, folds: 2, log: ['complete', 'spawn c_alpha', 'spawn c_beta', 'start'] });
      for (const callId of CALLS) expect(t.reference.children.get(callId)?.run.status).toBe('completed');
    });

    it.each(CRASH_POINTS)('SIGKILL at %s, then recovery in a fresh process: every child ran once, every afterSubAgent fired once, and the state is an uncrashed run’s', async (crashAt) => {
      const sessionId = `tree-${crashAt.replace('@', '-')}`;
      const o = await runScenario(t.target, t.stores, t.dir, sessionId, crashAt);
      expect(o.crashed.signal, `exit code ${String(o.crashed.code)}; stderr: ${o.crashed.stderr}; stdout: ${o.crashed.stdout}`).toBe('SIGKILL');
      expect(o.recovered.code, o.recovered.stderr).toBe(0);
      expect((JSON.parse(o.recovered.stdout) as { recovered: boolean; result?: { status: string } }).result?.status).toBe('completed');

      // The lead: completed, the same committed steps, transcript and state as the uncrashed run.
      expect(o.run.status).toBe('completed');
      expect(o.session.stepCount).toBe(t.reference.session.stepCount);
      const ids = (m: unknown) => JSON.parse(JSON.stringify(m).replaceAll(sessionId, 'LEAD')) as unknown;
      expect(ids(canonical(o.session.messages))).toEqual(ids(canonical(t.reference.session.messages)));
      expect(canonicalState(o.session.state)).toEqual(canonicalState(t.reference.session.state));

      for (const callId of CALLS) {
        // afterSubAgent once per call, across both processes.
        expect(count(o.hooks, 'afterSubAgent', 'lead', (h) => h.callId === callId && h.success === true), `afterSubAgent ${callId}`).toBe(1);
        // beforeSubAgent never fires again for a recorded spawn; a sibling call whose hook ran and whose
        // spawn was not recorded yet when the process died fires it again (at least once, never twice in one process).
        const before = o.hooks.filter((h) => h.point === 'beforeSubAgent' && h.callId === callId);
        expect(before.length, `beforeSubAgent ${callId}`).toBeGreaterThanOrEqual(1);
        expect(new Set(before.map((h) => h.pid)).size).toBe(before.length);
        if (crashAt.includes('k3')) expect(before, `beforeSubAgent ${callId} after both spawns were recorded`).toHaveLength(1);
        // Each child ran once: one session, one turn, one start signal, one completion, no failure.
        const child = o.children.get(callId);
        expect(child?.run.status, `child ${callId}`).toBe('completed');
        expect(child?.session.turn?.firstRunId).toBe(child?.run.runId);
        const childSession = childSessionId(sessionId, callId);
        // The child's start signal fires at most once: its journal marker is written before onAgentStart
        // is called, so a sibling killed between the two recovers with the owed start work
        // (startSignal: false) instead of a second start signal. The start work runs at least once, at
        // most once per process.
        const starts = o.hooks.filter((h) => h.point === 'onAgentStart' && h.agent === 'researcher' && h.sessionId === childSession);
        const signals = starts.filter((h) => h.startSignal === true);
        expect(signals.length, `start signals of ${callId}`).toBeLessThanOrEqual(1);
        expect(new Set(starts.map((h) => h.pid)).size, `onAgentStart of ${callId} once per process`).toBe(starts.length);
        if (signals.length === 0) {
          expect(starts, `owed start work of ${callId}`).toHaveLength(1);
          expect(starts[0]?.startSignal).toBe(false);
          expect(starts[0]?.pid, 'the owed start work ran in the recovering process').not.toBe(crashedPid(o));
        }
        // Both children had completed before the lead's fold was killed: each fired its signal.
        if (crashAt.includes('k3')) expect(signals, `start signal of ${callId}`).toHaveLength(1);
        expect(count(o.hooks, 'onAgentComplete', 'researcher', (h) => h.sessionId === childSession)).toBe(1);
        expect(child?.session.messages.filter((m) => m.role === 'assistant')).toEqual(t.reference.children.get(callId)?.session.messages.filter((m) => m.role === 'assistant'));
      }
      expect(count(o.hooks, 'onAgentStart', 'lead', (h) => h.startSignal === true)).toBe(1);
      expect(count(o.hooks, 'onAgentComplete', 'lead')).toBe(1);
      expect(o.hooks.filter((h) => h.point === 'onAgentFail' || h.point === 'onAgentSuperseded')).toEqual([]);
      // The lead was recovered, not started again: one run, claimed by the second process.
      expect(o.run.epoch).toBe(2);
    }, 90_000);
  });
}

for (const [name, open] of CRASH_STORES) subAgentCrashMatrix(name, open);
