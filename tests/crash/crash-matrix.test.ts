// Issue 3 item 7: a child process runs an agent against SQLite, and again against Postgres; it is
// killed with SIGKILL at each named crash point, a fresh process recovers the run, and the test checks
// that nothing committed was lost or done twice, that side effects ran at most once per committed
// step, that hooks paired as the spec says, and that the final state equals an uncrashed run's.
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { RunRecord, SessionSnapshot } from '@helix-agents/sdk';
import type { HookLogLine } from './agent.js';
import { canonical, canonicalState, lines, runChild, type ChildResult } from './compare.js';
import { CRASH_STORES, useCrashTarget, type OpenedTarget } from './crash-target.js';
import type { TargetStores } from './targets.js';

const here = dirname(fileURLToPath(import.meta.url));
const CRASH_POINTS = [
  'after_k1',
  'after_start_signal',
  'in_on_agent_start',
  'after_k2',
  'in_model_call@2',
  'before_k3@2',
  'after_k3@2',
  'in_on_agent_complete',
  'before_k5',
  'after_k5',
] as const;

function child(args: string[], crashAt?: string): Promise<ChildResult> {
  return runChild(join(here, 'child.ts'), args, crashAt);
}

interface Outcome {
  readonly session: SessionSnapshot;
  readonly run: RunRecord;
  readonly effects: { pid: number; key: string; to: string }[];
  readonly hooks: HookLogLine[];
  readonly crashed: ChildResult;
  readonly recovered: ChildResult;
}

async function runScenario(target: string, stores: TargetStores, dir: string, sessionId: string, crashAt: string | undefined): Promise<Outcome> {
  const sideEffectsFile = join(dir, `${sessionId}.effects.jsonl`);
  const hooksFile = join(dir, `${sessionId}.hooks.jsonl`);
  const args = [target, sessionId, sideEffectsFile, hooksFile];
  const crashed = await child(['run', ...args], crashAt);
  const recovered = crashAt ? await child(['recover', ...args]) : crashed;
  const session = await stores.stateStore.loadSession(sessionId);
  if (!session?.currentRunId) throw new Error(`no session ${sessionId}: ${crashed.stderr} ${recovered.stderr}`);
  const run = (await stores.stateStore.getRun(session.currentRunId)) as RunRecord;
  return { session, run, effects: lines(sideEffectsFile), hooks: lines(hooksFile), crashed, recovered };
}

function crashMatrix(name: string, open: () => Promise<OpenedTarget>): void {
  describe(`crash matrix on ${name}`, () => {
    const t = useCrashTarget<Outcome>(`helix-crash-${name}`, open, ({ target, stores, dir }) => runScenario(target, stores, dir, 'reference', undefined));

    it('the uncrashed reference run completes with three committed steps', () => {
      expect(t.reference.run.status).toBe('completed');
      expect(t.reference.session.stepCount).toBe(3);
      expect(canonicalState(t.reference.session.state)).toEqual(canonicalState({ count: 3, log: ['start', 'add 1', 'sent alice', 'sent bob', 'add 2', 'complete'] }));
      expect(t.reference.effects.map((e) => e.to)).toEqual(['alice', 'bob']);
    });

    it.each(CRASH_POINTS)(`SIGKILL at %s, then recovery in a fresh process`, async (crashAt) => {
      const sessionId = `crash-${crashAt.replace('@', '-')}`;
      const o = await runScenario(t.target, t.stores, t.dir, sessionId, crashAt);
      // The first process really died at the crash point, and the second finished the run.
      expect(o.crashed.signal, o.crashed.stderr).toBe('SIGKILL');
      expect(o.recovered.code, o.recovered.stderr).toBe(0);
      const report = JSON.parse(o.recovered.stdout) as { recovered: boolean; status?: string; result?: { status: string } };
      if (crashAt === 'after_k5') expect(report).toMatchObject({ recovered: false, status: 'completed' });
      else expect(report.result?.status).toBe('completed');

      // No committed step lost, none committed twice; the final state is an uncrashed run's.
      expect(o.run.status).toBe('completed');
      expect(o.session.stepCount).toBe(t.reference.session.stepCount);
      expect(canonical(o.session.messages)).toEqual(canonical(t.reference.session.messages));
      expect(canonicalState(o.session.state)).toEqual(canonicalState(t.reference.session.state));

      // Every side-effecting call ran at most once (exactly once here: each send was committed).
      expect(o.effects.map((e) => e.to).sort()).toEqual(['alice', 'bob']);
      expect(new Set(o.effects.map((e) => e.key)).size).toBe(o.effects.length);

      // At most one start signal (onAgentStart with startSignal true): its journal entry is written before
      // the hook is called, so a process killed between the two never fires it. One completed terminal hook.
      const starts = o.hooks.filter((h) => h.point === 'onAgentStart' && h.phase === 'start');
      expect(starts.filter((h) => h.startSignal === true)).toHaveLength(crashAt === 'after_start_signal' ? 0 : 1);
      // Owed start work (startSignal false) runs only when the signal's entry was written but the start commit did not land.
      expect(starts.filter((h) => h.startSignal === false)).toHaveLength(crashAt === 'in_on_agent_start' || crashAt === 'after_start_signal' ? 1 : 0);
      expect(o.hooks.filter((h) => h.point === 'onAgentComplete' && h.phase === 'done')).toHaveLength(1);
      expect(o.hooks.filter((h) => h.point === 'onAgentFail' || h.point === 'onAgentSuperseded')).toHaveLength(0);
      // The recovering process claimed the run with the next epoch; its hooks see that attempt number.
      expect(o.run.epoch).toBe(crashAt === 'after_k5' ? 1 : 2);
      expect(o.hooks.filter((h) => h.pid !== o.hooks[0]?.pid).every((h) => h.attempt === 2)).toBe(true);
    }, 60_000);
  });
}

for (const [name, open] of CRASH_STORES) crashMatrix(name, open);
