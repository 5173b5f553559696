import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AgentError, RunSupersededError, StateCommitError } from '../errors.js';
import type { Message } from '../messages.js';
import type { BeginRunRequest, Commit, CommitKind, JournalEntry, RunRecord, RunStatus } from '../store.js';
import { GENESIS_CHECKPOINT } from '../store.js';
import type { CommittingRun, Decision, Refusal, RefusalReason, RestorePoint, SessionHeader, StepSet } from './session-rules.js';
import {
  applyRunChange,
  beginRunResult,
  checkFence,
  hasStep,
  keptJournal,
  NO_STEPS,
  orThrow,
  planBeginRun,
  planClaimRun,
  planCommit,
  planJournalAppend,
  planRenewLease,
  sessionSnapshot,
  stepSetOf,
  withStep,
} from './session-rules.js';

const T0 = 1_700_000_000_000;

function begin(sessionId: string, runId: string, extra: Partial<BeginRunRequest> = {}): BeginRunRequest {
  return {
    sessionId,
    runId,
    agentType: 'agent',
    signal: 'start',
    initialState: { n: 0 },
    newTurn: { turnId: `turn-${runId}`, input: [{ role: 'user', content: 'hello' }] },
    startedAt: T0,
    leaseOwner: 'p1',
    leaseMs: 1_000,
    options: {},
    ...extra,
  };
}

/** A K1 request that continues the current turn. */
function continuing(sessionId: string, runId: string, extra: Partial<BeginRunRequest> = {}): BeginRunRequest {
  const { newTurn: _none, ...rest } = begin(sessionId, runId, extra);
  return rest;
}

function header(extra: Partial<SessionHeader> = {}): SessionHeader {
  return {
    sessionId: 's1',
    agentType: 'agent',
    currentRunId: 'r1',
    turn: { turnId: 'turn-r1', firstRunId: 'r1', input: [{ role: 'user', content: 'hello' }], startCommitted: true, inputMessageIndex: 0 },
    version: 5,
    stepCount: 2,
    messageCount: 5,
    resumeCount: 0,
    ...extra,
  };
}

function running(extra: Partial<CommittingRun> = {}): CommittingRun {
  return { runId: 'r1', status: 'running', epoch: 1, stepCount: 2, committedSteps: [[0, 1]], ...extra };
}

function commit(extra: Partial<Commit> = {}): Commit {
  return { sessionId: 's1', runId: 'r1', epoch: 1, kind: 'step', stepIndex: 2, committedAt: T0 + 10, ...extra };
}

function rows(prefix: string, count: number): Message[] {
  return Array.from({ length: count }, (_, i) => ({ role: 'assistant', content: `${prefix}:${i}` }));
}

function ok<P>(decision: Decision<P>): { readonly ok: true } & P {
  if (!decision.ok) throw new Error(`expected a plan, got the refusal ${decision.reason}: ${decision.error.message}`);
  return decision;
}

function refused<P>(decision: Decision<P>, reason: RefusalReason, code: string): Refusal {
  expect(decision.ok).toBe(false);
  if (decision.ok) throw new Error('unreachable');
  expect(decision.reason).toBe(reason);
  expect(AgentError.isInstance(decision.error)).toBe(true);
  expect(decision.error.code).toBe(code);
  return decision;
}

const checkpoint = (checkpointId: string, messageCount: number): RestorePoint => ({ checkpointId, messageCount });

describe('session rules: K1 (begin a run)', () => {
  it('a new session is created at version 1 with the new turn, its start not committed', () => {
    const plan = ok(planBeginRun({ session: undefined, currentRun: undefined }, begin('s1', 'r1', { parentSessionId: 'parent' })));
    expect(plan.create).toBe(true);
    expect(plan.session).toEqual({
      sessionId: 's1',
      agentType: 'agent',
      parentSessionId: 'parent',
      currentRunId: 'r1',
      turn: { turnId: 'turn-r1', firstRunId: 'r1', input: [{ role: 'user', content: 'hello' }], startCommitted: false },
      version: 1,
      stepCount: 0,
      messageCount: 0,
      resumeCount: 0,
    });
    expect(plan.rewind).toBeUndefined();
    expect(plan.supersede).toBeUndefined();
  });

  it('the new run is recorded running at epoch 1 with its lease, in the turn it belongs to', () => {
    const plan = ok(planBeginRun({ session: header(), currentRun: { runId: 'r1', status: 'suspended', stepCount: 2 } }, continuing('s1', 'r2', { signal: 'resumed', options: { input: 'x' } })));
    expect(plan.run).toEqual({
      runId: 'r2',
      sessionId: 's1',
      turnId: 'turn-r1',
      agentType: 'agent',
      status: 'running',
      signal: 'resumed',
      startedAt: T0,
      stepCount: 0,
      epoch: 1,
      leaseOwner: 'p1',
      leaseExpiresAt: T0 + 1_000,
      options: { input: 'x' },
    });
    expect(plan.lease).toEqual({ runId: 'r2', epoch: 1, owner: 'p1', expiresAt: T0 + 1_000 });
    expect(plan.runHeader).toMatchObject({ runId: 'r2', status: 'running', epoch: 1, stepCount: 0, committedSteps: NO_STEPS });
  });

  it('a K1 whose expect does not hold is refused with state_conflict (another current run, or another status)', () => {
    const input = { session: header(), currentRun: { runId: 'r1', status: 'running' as const, stepCount: 2 } };
    const other = refused(planBeginRun(input, continuing('s1', 'r2', { expect: { currentRunId: 'r0', status: 'running' } })), 'expect_failed', 'state_conflict');
    expect(other.error.message).toBe('Session s1 changed: its current run is r1 (running), not r0 (running).');
    refused(planBeginRun(input, continuing('s1', 'r2', { expect: { currentRunId: 'r1', status: 'suspended' } })), 'expect_failed', 'state_conflict');
    refused(planBeginRun({ session: undefined, currentRun: undefined }, begin('s1', 'r2', { expect: { currentRunId: 'r1', status: 'running' } })), 'expect_failed', 'state_conflict');
  });

  it('a K1 whose expect holds begins the run', () => {
    const plan = ok(planBeginRun({ session: header(), currentRun: { runId: 'r1', status: 'suspended', stepCount: 2 } }, continuing('s1', 'r2', { expect: { currentRunId: 'r1', status: 'suspended' } })));
    expect(plan.session.currentRunId).toBe('r2');
  });

  it('the expect precondition is checked before every other refusal', () => {
    refused(
      planBeginRun({ session: undefined, currentRun: undefined }, continuing('s1', 'r1', { restoreCheckpointId: 'cp_9', expect: { currentRunId: 'r0', status: 'running' } })),
      'expect_failed',
      'state_conflict',
    );
  });

  it('a new session needs a new turn: a K1 without one has no turn to continue', () => {
    const refusal = refused(planBeginRun({ session: undefined, currentRun: undefined }, continuing('s1', 'r1')), 'no_turn', 'state_commit_failed');
    expect(refusal.error).toBeInstanceOf(StateCommitError);
    expect(refusal.error.message).toBe('Session s1 has no turn to continue; start a run with a new turn.');
  });

  it('a session without a turn and a K1 without a new turn has no turn to continue', () => {
    refused(planBeginRun({ session: header({ turn: undefined }), currentRun: undefined }, continuing('s1', 'r2')), 'no_turn', 'state_commit_failed');
  });

  it('a K1 without a new turn continues the current turn', () => {
    const session = header();
    const plan = ok(planBeginRun({ session, currentRun: { runId: 'r1', status: 'suspended', stepCount: 2 } }, continuing('s1', 'r2')));
    expect(plan.session.turn).toBe(session.turn);
    expect(plan.run.turnId).toBe('turn-r1');
  });

  it('a resumed signal counts a resume; other signals do not', () => {
    const input = { session: header({ resumeCount: 2 }), currentRun: { runId: 'r1', status: 'suspended' as const, stepCount: 2 } };
    expect(ok(planBeginRun(input, continuing('s1', 'r2', { signal: 'resumed' }))).session.resumeCount).toBe(3);
    expect(ok(planBeginRun(input, continuing('s1', 'r2', { signal: 'retry' }))).session.resumeCount).toBe(2);
  });

  it('a K1 grows the version by one, keeps the step count and conversation, and sets the agent type', () => {
    const plan = ok(planBeginRun({ session: header(), currentRun: undefined }, continuing('s1', 'r2', { agentType: 'other' })));
    expect(plan.session).toMatchObject({ version: 6, stepCount: 2, messageCount: 5, agentType: 'other', currentRunId: 'r2' });
    expect(plan.create).toBe(false);
  });

  it('an existing session keeps its parent session; only a new one takes the request\'s', () => {
    expect(ok(planBeginRun({ session: header({ parentSessionId: 'p' }), currentRun: undefined }, begin('s1', 'r2', { parentSessionId: 'q' }))).session.parentSessionId).toBe('p');
    expect(ok(planBeginRun({ session: header(), currentRun: undefined }, begin('s1', 'r2', { parentSessionId: 'q' }))).session.parentSessionId).toBeUndefined();
  });

  it('a K1 supersedes the previous run while it is running: status superseded at the K1\'s start, its journal dropped, its steps kept', () => {
    const plan = ok(planBeginRun({ session: header(), currentRun: { runId: 'r1', status: 'running', stepCount: 2 } }, begin('s1', 'r2', { startedAt: T0 + 50 })));
    expect(plan.supersede).toEqual({ runId: 'r1', endedAt: T0 + 50, stepCount: 2 });
    const result = beginRunResult(plan, sessionSnapshot(plan.session, null, []));
    expect(result.supersededRunId).toBe('r1');
  });

  it('a previous run that no longer runs is not superseded', () => {
    for (const status of ['completed', 'failed', 'interrupted', 'superseded', 'suspended'] as const) {
      const plan = ok(planBeginRun({ session: header(), currentRun: { runId: 'r1', status, stepCount: 2 } }, begin('s1', 'r2')));
      expect(plan.supersede).toBeUndefined();
      expect(beginRunResult(plan, sessionSnapshot(plan.session, null, [])).supersededRunId).toBeUndefined();
    }
  });

  it('a new turn starts with its start not committed, whatever the previous turn', () => {
    const plan = ok(planBeginRun({ session: header(), currentRun: undefined }, begin('s1', 'r2')));
    expect(plan.session.turn).toEqual({ turnId: 'turn-r2', firstRunId: 'r2', input: [{ role: 'user', content: 'hello' }], startCommitted: false });
  });
});

describe('session rules: rewind (K1 with restoreCheckpointId)', () => {
  it('a rewind to a checkpoint cuts the conversation to its length, drops the later checkpoints and restores its state', () => {
    const point = checkpoint('cp_3', 3);
    const plan = ok(planBeginRun({ session: header(), currentRun: undefined, restorePoint: point }, continuing('s1', 'r2', { restoreCheckpointId: 'cp_3' })));
    expect(plan.rewind).toEqual({ to: 'checkpoint', checkpoint: point, messageCount: 3 });
    // The store gets its own record of the checkpoint back.
    expect(plan.rewind?.to === 'checkpoint' && plan.rewind.checkpoint).toBe(point);
    expect(plan.session).toMatchObject({ messageCount: 3, stepCount: 2, version: 6 });
  });

  it('a rewind to genesis empties the conversation and drops every checkpoint', () => {
    const plan = ok(planBeginRun({ session: header(), currentRun: undefined }, continuing('s1', 'r2', { restoreCheckpointId: GENESIS_CHECKPOINT })));
    expect(plan.rewind).toEqual({ to: 'genesis', messageCount: 0 });
    expect(plan.session.messageCount).toBe(0);
  });

  it("a rewind to before the turn's input rows discards the turn's start commit", () => {
    const session = header({ turn: { turnId: 't', firstRunId: 'r1', input: [], startCommitted: true, inputMessageIndex: 2 } });
    const plan = ok(planBeginRun({ session, currentRun: undefined, restorePoint: checkpoint('cp_1', 2) }, continuing('s1', 'r2', { restoreCheckpointId: 'cp_1' })));
    expect(plan.session.turn).toEqual({ turnId: 't', firstRunId: 'r1', input: [], startCommitted: false });
    expect(plan.session.turn).not.toHaveProperty('inputMessageIndex');
    const toGenesis = ok(planBeginRun({ session, currentRun: undefined }, continuing('s1', 'r2', { restoreCheckpointId: GENESIS_CHECKPOINT })));
    expect(toGenesis.session.turn?.startCommitted).toBe(false);
  });

  it("a rewind to after the turn's input rows keeps the turn's start commit", () => {
    const session = header({ turn: { turnId: 't', firstRunId: 'r1', input: [], startCommitted: true, inputMessageIndex: 2 } });
    const plan = ok(planBeginRun({ session, currentRun: undefined, restorePoint: checkpoint('cp_1', 3) }, continuing('s1', 'r2', { restoreCheckpointId: 'cp_1' })));
    expect(plan.session.turn).toMatchObject({ startCommitted: true, inputMessageIndex: 2 });
  });

  it("a turn whose start was never committed stays uncommitted across a rewind", () => {
    const session = header({ turn: { turnId: 't', firstRunId: 'r1', input: [], startCommitted: false } });
    const plan = ok(planBeginRun({ session, currentRun: undefined, restorePoint: checkpoint('cp_1', 3) }, continuing('s1', 'r2', { restoreCheckpointId: 'cp_1' })));
    expect(plan.session.turn).toEqual(session.turn);
  });

  it('a rewind never lengthens the conversation', () => {
    const plan = ok(planBeginRun({ session: header({ messageCount: 2 }), currentRun: undefined, restorePoint: checkpoint('cp_1', 4) }, continuing('s1', 'r2', { restoreCheckpointId: 'cp_1' })));
    expect(plan.rewind?.messageCount).toBe(2);
  });

  it('restoring a checkpoint the session does not have is refused with state_not_found, before any write', () => {
    const refusal = refused(planBeginRun({ session: header(), currentRun: undefined }, continuing('s1', 'r2', { restoreCheckpointId: 'cp_9' })), 'checkpoint_not_found', 'state_not_found');
    expect(refusal.error.message).toBe('Session s1 has no checkpoint cp_9.');
    expect(refusal.error.info.details).toEqual({ checkpointId: 'cp_9' });
    // A checkpoint the store found under another id is not the one asked for.
    refused(planBeginRun({ session: header(), currentRun: undefined, restorePoint: checkpoint('cp_8', 1) }, continuing('s1', 'r2', { restoreCheckpointId: 'cp_9' })), 'checkpoint_not_found', 'state_not_found');
  });

  it('a new session has only genesis: restoring any other checkpoint is refused with state_not_found', () => {
    refused(planBeginRun({ session: undefined, currentRun: undefined, restorePoint: checkpoint('cp_1', 0) }, begin('s1', 'r1', { restoreCheckpointId: 'cp_1' })), 'checkpoint_not_found', 'state_not_found');
    const genesis = ok(planBeginRun({ session: undefined, currentRun: undefined }, begin('s1', 'r1', { restoreCheckpointId: GENESIS_CHECKPOINT })));
    expect(genesis).toMatchObject({ create: true, rewind: { to: 'genesis', messageCount: 0 } });
  });

  it('a rewind and a supersede happen in the same K1', () => {
    const plan = ok(planBeginRun({ session: header(), currentRun: { runId: 'r1', status: 'running', stepCount: 2 } }, continuing('s1', 'r2', { restoreCheckpointId: GENESIS_CHECKPOINT })));
    expect(plan.rewind?.to).toBe('genesis');
    expect(plan.supersede?.runId).toBe('r1');
  });
});

describe('session rules: commits (K2–K5)', () => {
  it('a commit to a session that does not exist is refused', () => {
    const refusal = refused(planCommit({ session: undefined, run: undefined }, commit({ sessionId: 'nope' })), 'no_session', 'state_commit_failed');
    expect(refusal.error.message).toBe('Session nope does not exist.');
  });

  it('the fence: a commit from a run that is not the current run is refused with state_run_superseded', () => {
    const refusal = refused(planCommit({ session: header({ currentRunId: 'r2' }), run: running() }, commit()), 'superseded', 'state_run_superseded');
    expect(RunSupersededError.isInstance(refusal.error)).toBe(true);
    expect(refusal.error.message).toBe('Run r1 is no longer the current run of session s1 (run r2 took over).');
    refused(planCommit({ session: header(), run: undefined }, commit()), 'superseded', 'state_run_superseded');
  });

  it('the fence: a commit from another epoch of the current run is refused with state_run_superseded', () => {
    refused(planCommit({ session: header(), run: running({ epoch: 2 }) }, commit({ epoch: 1 })), 'superseded', 'state_run_superseded');
    refused(planCommit({ session: header(), run: running({ epoch: 1 }) }, commit({ epoch: 2 })), 'superseded', 'state_run_superseded');
  });

  it('the fence: a commit from a run that no longer runs is refused with state_run_superseded', () => {
    for (const status of ['completed', 'failed', 'interrupted', 'superseded', 'suspended'] as const) {
      refused(planCommit({ session: header(), run: running({ status }) }, commit()), 'superseded', 'state_run_superseded');
    }
  });

  it('the fence: the run the store passes must be the run the commit names', () => {
    refused(planCommit({ session: header(), run: running({ runId: 'r9' }) }, commit()), 'superseded', 'state_run_superseded');
  });

  it('a step index is committed at most once per run', () => {
    const refusal = refused(planCommit({ session: header(), run: running({ committedSteps: [[0, 3]] }) }, commit({ stepIndex: 2 })), 'step_not_committable', 'state_commit_failed');
    expect(refusal.error.message).toBe('Step 2 of run r1 is already committed or has no index.');
  });

  it('a step commit needs an index', () => {
    refused(planCommit({ session: header(), run: running() }, commit({ stepIndex: undefined })), 'step_not_committable', 'state_commit_failed');
  });

  it('the fence is checked before the step index', () => {
    refused(planCommit({ session: header({ currentRunId: 'r2' }), run: running({ committedSteps: [[0, 3]] }) }, commit({ stepIndex: 2 })), 'superseded', 'state_run_superseded');
  });

  it('a step commit counts a step on the session and on the run, and records its index', () => {
    const plan = ok(planCommit({ session: header(), run: running() }, commit({ stepIndex: 2 })));
    expect(plan.session).toMatchObject({ version: 6, stepCount: 3 });
    expect(plan.run).toEqual({ runId: 'r1', status: 'running', epoch: 1, stepCount: 3, committedSteps: [[0, 2]] });
    expect(plan.stepIndex).toBe(2);
    expect(plan.runPatch).toBeUndefined();
  });

  it('a step commit drops the journal entries of that step and older ones', () => {
    const plan = ok(planCommit({ session: header(), run: running() }, commit({ stepIndex: 2 })));
    expect(plan.dropJournal).toEqual({ runId: 'r1', all: false, throughStep: 2 });
    const entries = [0, 1, 2, 3, 4].map((stepIndex): JournalEntry => ({ runId: 'r1', epoch: 1, stepIndex, kind: 'model_reply', key: `k${stepIndex}`, data: null, at: T0 }));
    expect(keptJournal(entries, plan.dropJournal).map((e) => e.stepIndex)).toEqual([3, 4]);
  });

  it('rows append at the end of the conversation, in order', () => {
    const plan = ok(planCommit({ session: header(), run: running() }, commit({ appendMessages: rows('a', 3) })));
    expect(plan.append).toEqual({ at: 5, messages: rows('a', 3) });
    expect(plan.session.messageCount).toBe(8);
  });

  it("a turn-start commit marks the turn's start committed at the index of its first appended row", () => {
    const session = header({ turn: { turnId: 't', firstRunId: 'r1', input: [], startCommitted: false } });
    const plan = ok(planCommit({ session, run: running() }, commit({ kind: 'turn_start', stepIndex: undefined, appendMessages: rows('u', 2) })));
    expect(plan.turnChanged).toBe(true);
    expect(plan.session.turn).toEqual({ turnId: 't', firstRunId: 'r1', input: [], startCommitted: true, inputMessageIndex: 5 });
    expect(plan.session.stepCount).toBe(2);
    expect(plan.dropJournal).toBeUndefined();
  });

  it('a commit other than a turn start leaves the turn alone', () => {
    const session = header();
    const plan = ok(planCommit({ session, run: running() }, commit()));
    expect(plan.turnChanged).toBe(false);
    expect(plan.session.turn).toBe(session.turn);
  });

  it('a resume commit appends rows without counting a step', () => {
    const plan = ok(planCommit({ session: header(), run: running() }, commit({ kind: 'resume', stepIndex: undefined, appendMessages: rows('t', 1) })));
    expect(plan.session).toMatchObject({ stepCount: 2, messageCount: 6, version: 6 });
    expect(plan.run.stepCount).toBe(2);
    expect(plan.stepIndex).toBeUndefined();
    expect(plan.dropJournal).toBeUndefined();
  });

  it('a suspension commit stores its status and boundary on the run and keeps the journal', () => {
    const suspension = { reason: 'client_tool' as const, pending: [], stepIndex: 1, suspendedAt: T0 };
    const plan = ok(planCommit({ session: header(), run: running() }, commit({ kind: 'suspension', stepIndex: undefined, runStatus: 'suspended', suspension })));
    expect(plan.runPatch).toEqual({ status: 'suspended', suspension });
    expect(plan.run.status).toBe('suspended');
    expect(plan.dropJournal).toBeUndefined();
  });

  it('a terminal commit records the status, output and error, sets endedAt and drops the whole journal', () => {
    const error = { code: 'x', layer: 'run', severity: 'error', message: 'boom', retryable: false } as const;
    const plan = ok(planCommit({ session: header(), run: running() }, commit({ kind: 'terminal', stepIndex: undefined, runStatus: 'failed', output: { a: 1 }, error })));
    expect(plan.runPatch).toEqual({ status: 'failed', endedAt: T0 + 10, output: { a: 1 }, error });
    expect(plan.dropJournal).toEqual({ runId: 'r1', all: true });
    expect(keptJournal([{ runId: 'r1', epoch: 1, stepIndex: 9, kind: 'terminal_hook', key: 'k', data: 1, at: T0 }], plan.dropJournal)).toEqual([]);
    const record: RunRecord = { runId: 'r1', sessionId: 's1', turnId: 't', agentType: 'agent', status: 'running', signal: 'start', startedAt: T0, stepCount: 2, epoch: 1, leaseOwner: 'p1', leaseExpiresAt: T0 + 1, options: {} };
    expect(applyRunChange(record, plan.run, plan.runPatch)).toEqual({ ...record, status: 'failed', endedAt: T0 + 10, output: { a: 1 }, error });
  });

  it('a JSON null output is an output: the terminal commit records it', () => {
    const plan = ok(planCommit({ session: header(), run: running() }, commit({ kind: 'terminal', stepIndex: undefined, runStatus: 'completed', output: null })));
    expect(plan.runPatch).toEqual({ status: 'completed', endedAt: T0 + 10, output: null });
    const record: RunRecord = { runId: 'r1', sessionId: 's1', turnId: 't', agentType: 'agent', status: 'running', signal: 'start', startedAt: T0, stepCount: 2, epoch: 1, leaseOwner: 'p1', leaseExpiresAt: T0 + 1, options: {}, output: 'earlier' };
    expect(applyRunChange(record, plan.run, plan.runPatch)).toEqual({ ...record, status: 'completed', endedAt: T0 + 10, output: null });
  });

  it('a plain step changes only the step count of the run record', () => {
    const plan = ok(planCommit({ session: header(), run: running() }, commit()));
    const record: RunRecord = { runId: 'r1', sessionId: 's1', turnId: 't', agentType: 'agent', status: 'running', signal: 'start', startedAt: T0, stepCount: 2, epoch: 1, leaseOwner: 'p1', leaseExpiresAt: T0 + 1, options: { input: 'x' }, output: 1, error: { code: 'c', layer: 'run', severity: 'error', message: 'm', retryable: false } };
    expect(applyRunChange(record, plan.run, plan.runPatch)).toEqual({ ...record, stepCount: 3 });
  });

  it('a run that is no longer running after a commit fails the fence of its next commit', () => {
    const first = ok(planCommit({ session: header(), run: running() }, commit({ kind: 'terminal', stepIndex: undefined, runStatus: 'completed' })));
    refused(planCommit({ session: first.session, run: first.run }, commit({ stepIndex: 2 })), 'superseded', 'state_run_superseded');
  });

  it('a checkpoint records the counters after the commit', () => {
    const plan = ok(planCommit({ session: header(), run: running() }, commit({ stepIndex: 2, appendMessages: rows('a', 2), checkpoint: 'step' })));
    expect(plan.checkpoint).toEqual({ sessionId: 's1', runId: 'r1', kind: 'step', stepCount: 3, messageCount: 7, createdAt: T0 + 10 });
    expect(ok(planCommit({ session: header(), run: running() }, commit())).checkpoint).toBeUndefined();
  });
});

describe('session rules: leases, claims and the journal', () => {
  const fence = { runId: 'r1', sessionId: 's1', status: 'running' as RunStatus, epoch: 1, leaseOwner: 'p1', leaseExpiresAt: T0 + 1_000 };

  it('renewLease extends the lease of the current epoch to now + leaseMs, keeping its owner', () => {
    expect(ok(planRenewLease({ run: fence, currentRunId: 'r1' }, 'r1', 1, 5_000, T0 + 500)).lease).toEqual({ runId: 'r1', epoch: 1, owner: 'p1', expiresAt: T0 + 5_500 });
  });

  it('renewLease of a run that was never begun is refused', () => {
    expect(refused(planRenewLease({ run: undefined, currentRunId: undefined }, 'r1', 1, 1, T0), 'no_run', 'state_commit_failed').error.message).toBe('Run r1 was never begun.');
  });

  it('renewLease is fenced like a commit', () => {
    refused(planRenewLease({ run: fence, currentRunId: 'r2' }, 'r1', 1, 1, T0), 'superseded', 'state_run_superseded');
    refused(planRenewLease({ run: { ...fence, epoch: 2 } , currentRunId: 'r1' }, 'r1', 1, 1, T0), 'superseded', 'state_run_superseded');
    refused(planRenewLease({ run: { ...fence, status: 'completed' }, currentRunId: 'r1' }, 'r1', 1, 1, T0), 'superseded', 'state_run_superseded');
  });

  it('claimRun takes over a current, running run whose lease expired: the epoch goes up by one', () => {
    expect(ok(planClaimRun({ run: fence, currentRunId: 'r1' }, 'r1', 'p2', 2_000, T0 + 1_000)).lease).toEqual({ runId: 'r1', epoch: 2, owner: 'p2', expiresAt: T0 + 3_000 });
  });

  it('claimRun refuses with state_run_not_recoverable a run that does not exist, is not running, is not current, or whose lease has not expired', () => {
    const why = (decision: Decision<unknown>) => refused(decision, 'not_recoverable', 'state_run_not_recoverable').error.message;
    expect(why(planClaimRun({ run: undefined, currentRunId: undefined }, 'r1', 'p2', 1, T0))).toBe('Run r1 cannot be claimed: it does not exist.');
    expect(why(planClaimRun({ run: { ...fence, status: 'failed' }, currentRunId: 'r1' }, 'r1', 'p2', 1, T0 + 5_000))).toBe('Run r1 cannot be claimed: it is failed.');
    expect(why(planClaimRun({ run: fence, currentRunId: 'r2' }, 'r1', 'p2', 1, T0 + 5_000))).toBe('Run r1 cannot be claimed: another run took over its session.');
    expect(why(planClaimRun({ run: fence, currentRunId: 'r1' }, 'r1', 'p2', 1, T0 + 999))).toBe('Run r1 cannot be claimed: its lease has not expired.');
  });

  it('a takeover claim does not wait for the lease to expire, but still refuses a run that is not running or not current, and raises the epoch', () => {
    const why = (decision: Decision<unknown>) => refused(decision, 'not_recoverable', 'state_run_not_recoverable').error.message;
    expect(ok(planClaimRun({ run: fence, currentRunId: 'r1' }, 'r1', 'p2', 2_000, T0 + 10, true)).lease).toEqual({ runId: 'r1', epoch: 2, owner: 'p2', expiresAt: T0 + 2_010 });
    expect(why(planClaimRun({ run: { ...fence, status: 'completed' }, currentRunId: 'r1' }, 'r1', 'p2', 1, T0, true))).toBe('Run r1 cannot be claimed: it is completed.');
    expect(why(planClaimRun({ run: fence, currentRunId: 'r2' }, 'r1', 'p2', 1, T0, true))).toBe('Run r1 cannot be claimed: another run took over its session.');
  });

  it('a claimed run fences out the old epoch', () => {
    const { lease } = ok(planClaimRun({ run: fence, currentRunId: 'r1' }, 'r1', 'p2', 2_000, T0 + 1_000));
    const claimed = { ...running(), epoch: lease.epoch };
    refused(planCommit({ session: header(), run: claimed }, commit({ epoch: 1 })), 'superseded', 'state_run_superseded');
    ok(planCommit({ session: header(), run: claimed }, commit({ epoch: 2 })));
  });

  it('a journal append is fenced like a commit', () => {
    const entry: JournalEntry = { runId: 'r1', epoch: 1, stepIndex: 0, kind: 'call_result', key: 'k', data: 1, at: T0 };
    refused(planJournalAppend({ run: undefined, currentRunId: undefined, existing: undefined }, entry), 'no_run', 'state_commit_failed');
    refused(planJournalAppend({ run: fence, currentRunId: 'r2', existing: undefined }, entry), 'superseded', 'state_run_superseded');
    refused(planJournalAppend({ run: fence, currentRunId: 'r1', existing: undefined }, { ...entry, epoch: 2 }), 'superseded', 'state_run_superseded');
    expect(ok(planJournalAppend({ run: fence, currentRunId: 'r1', existing: undefined }, entry))).toEqual({ ok: true, write: true, entry });
  });

  it('the first journal entry under a key wins', () => {
    const first: JournalEntry = { runId: 'r1', epoch: 1, stepIndex: 0, kind: 'call_result', key: 'k', data: 'first', at: T0 };
    const plan = ok(planJournalAppend({ run: fence, currentRunId: 'r1', existing: first }, { ...first, data: 'second', at: T0 + 1 }));
    expect(plan).toEqual({ ok: true, write: false, entry: first });
  });

  it('checkFence passes only the current, running run at its epoch', () => {
    expect(checkFence({ sessionId: 's1', currentRunId: 'r1', run: running() }, 'r1', 1)).toBeUndefined();
    expect(checkFence({ sessionId: 's1', currentRunId: undefined, run: running() }, 'r1', 1)?.reason).toBe('superseded');
  });

  it('orThrow throws the refusal\'s error and returns a plan', () => {
    expect(() => orThrow(planCommit({ session: undefined, run: undefined }, commit()))).toThrow('Session s1 does not exist.');
    expect(orThrow(planCommit({ session: header(), run: running() }, commit())).ok).toBe(true);
  });
});

describe('session rules: step sets', () => {
  it('withStep extends the last range for steps in order, and merges ranges otherwise', () => {
    expect(withStep(NO_STEPS, 0)).toEqual([[0, 0]]);
    expect(withStep([[0, 3]], 4)).toEqual([[0, 4]]);
    expect(withStep([[0, 3]], 7)).toEqual([[0, 3], [7, 7]]);
    expect(withStep([[0, 3], [5, 6]], 4)).toEqual([[0, 6]]);
    expect(hasStep([[0, 3], [7, 7]], 5)).toBe(false);
    expect(hasStep([[0, 3], [7, 7]], 7)).toBe(true);
  });

  it('a step set holds exactly the indexes added, as sorted, disjoint, non-adjacent ranges', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(40), { maxLength: 60 }), (indexes) => {
        const set = stepSetOf(indexes);
        const expected = new Set(indexes);
        for (let i = 0; i <= 41; i++) expect(hasStep(set, i)).toBe(expected.has(i));
        for (let r = 1; r < set.length; r++) expect(set[r]![0]).toBeGreaterThan(set[r - 1]![1] + 1);
        for (const [lo, hi] of set) expect(lo).toBeLessThanOrEqual(hi);
      }),
    );
  });

  it('withStep never changes the set it is given', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(20), { maxLength: 20 }), fc.nat(25), (indexes, step) => {
        const set = deepFreeze(stepSetOf(indexes));
        const copy = structuredClone(set);
        withStep(set, step);
        expect(set).toEqual(copy);
      }),
    );
  });
});

// ---- property tests: any sequence of transitions, folded through a reference store ----

/** Deep-freezes a value, so that a rule that writes into its input throws (ES modules are strict). */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  }
  return value;
}

type Op =
  | {
      readonly op: 'begin';
      readonly newTurn: boolean;
      readonly signal: 'start' | 'resumed' | 'retry';
      readonly restore: 'genesis' | 'missing' | number | undefined;
      readonly expect: { readonly run: number; readonly status: RunStatus } | 'current' | undefined;
    }
  | {
      readonly op: 'commit';
      readonly run: number;
      readonly epoch: number | 'current';
      readonly kind: Exclude<CommitKind, 'run_start'>;
      readonly stepIndex: number | 'next' | undefined;
      readonly rows: number;
      readonly checkpoint: boolean;
      readonly runStatus: RunStatus | undefined;
    }
  | { readonly op: 'claim'; readonly run: number; readonly after: number }
  | { readonly op: 'renew'; readonly run: number; readonly epoch: number | 'current' }
  | { readonly op: 'journal'; readonly run: number; readonly epoch: number | 'current'; readonly stepIndex: number; readonly key: string };

const STATUSES: readonly RunStatus[] = ['running', 'completed', 'failed', 'interrupted', 'superseded', 'suspended'];
const epochArb = fc.oneof({ arbitrary: fc.constant('current' as const), weight: 4 }, { arbitrary: fc.integer({ min: 1, max: 3 }), weight: 1 });

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('begin' as const),
      newTurn: fc.boolean(),
      signal: fc.constantFrom('start' as const, 'resumed' as const, 'retry' as const),
      restore: fc.option(fc.oneof(fc.constant('genesis' as const), fc.constant('missing' as const), fc.nat(8)), { nil: undefined }),
      expect: fc.option(fc.oneof(fc.constant('current' as const), fc.record({ run: fc.nat(6), status: fc.constantFrom(...STATUSES) })), { nil: undefined }),
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      op: fc.constant('commit' as const),
      run: fc.nat(6),
      epoch: epochArb,
      kind: fc.constantFrom('turn_start' as const, 'step' as const, 'step' as const, 'step' as const, 'resume' as const, 'suspension' as const, 'terminal' as const),
      stepIndex: fc.option(fc.oneof({ arbitrary: fc.constant('next' as const), weight: 3 }, { arbitrary: fc.nat(6), weight: 2 }), { nil: undefined, freq: 8 }),
      rows: fc.nat(3),
      checkpoint: fc.boolean(),
      runStatus: fc.option(fc.constantFrom(...STATUSES), { nil: undefined, freq: 2 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('claim' as const), run: fc.nat(6), after: fc.integer({ min: -500, max: 3_000 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('renew' as const), run: fc.nat(6), epoch: epochArb }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('journal' as const), run: fc.nat(6), epoch: epochArb, stepIndex: fc.nat(6), key: fc.constantFrom('a', 'b', 'c') }) },
);

/** A reference store: the records of one session, changed only by applying the rules' plans. */
interface Model {
  session: SessionHeader | undefined;
  runs: Map<string, { record: RunRecord; steps: StepSet }>;
  checkpoints: RestorePoint[];
  messages: number;
  journal: Map<string, JournalEntry[]>;
  begun: number;
  checkpointSeq: number;
  /** The (run, step) pairs committed, with each run's K1 number (a run id begins once here). */
  committedSteps: Set<string>;
  stepsCommitted: number;
}

function emptyModel(): Model {
  return { session: undefined, runs: new Map(), checkpoints: [], messages: 0, journal: new Map(), begun: 0, checkpointSeq: 0, committedSteps: new Set(), stepsCommitted: 0 };
}

/** What each refusal reason throws. */
const CODES: Record<RefusalReason, string> = {
  expect_failed: 'state_conflict',
  no_turn: 'state_commit_failed',
  checkpoint_not_found: 'state_not_found',
  no_session: 'state_commit_failed',
  no_run: 'state_commit_failed',
  superseded: 'state_run_superseded',
  step_not_committable: 'state_commit_failed',
  not_recoverable: 'state_run_not_recoverable',
};

/** Checks a refusal: it carries no record at all, only why and the error to throw. */
function checkRefusal(decision: Refusal): void {
  expect(Object.keys(decision).sort()).toEqual(['error', 'ok', 'reason']);
  expect(AgentError.isInstance(decision.error)).toBe(true);
  expect(decision.error.code).toBe(CODES[decision.reason]);
}

const runIdOf = (model: Model, n: number): string => `r${model.begun === 0 ? 0 : n % (model.begun + 1)}`;

/**
 * Applies one transition to the model through the rules, checking every invariant on the way. Returns
 * whether the rules accepted it.
 */
function step(model: Model, op: Op, now: number): boolean {
  const version = model.session?.version ?? 0;
  switch (op.op) {
    case 'begin': {
      const runId = `r${model.begun + 1}`;
      const current = model.session?.currentRunId === undefined ? undefined : model.runs.get(model.session.currentRunId);
      const restoreCheckpointId =
        op.restore === undefined ? undefined : op.restore === 'genesis' ? GENESIS_CHECKPOINT : op.restore === 'missing' ? 'cp_missing' : (model.checkpoints[op.restore % Math.max(1, model.checkpoints.length)]?.checkpointId ?? 'cp_none');
      const expectation =
        op.expect === undefined
          ? undefined
          : op.expect === 'current'
            ? { currentRunId: model.session?.currentRunId, status: current?.record.status ?? 'running' }
            : { currentRunId: runIdOf(model, op.expect.run), status: op.expect.status };
      const request: BeginRunRequest = deepFreeze({
        ...begin('s1', runId, { signal: op.signal, startedAt: now }),
        ...(op.newTurn ? {} : { newTurn: undefined }),
        ...(restoreCheckpointId === undefined ? {} : { restoreCheckpointId }),
        ...(expectation === undefined ? {} : { expect: expectation }),
      });
      const input = deepFreeze({
        session: model.session,
        currentRun: current?.record,
        restorePoint: model.checkpoints.find((c) => c.checkpointId === restoreCheckpointId),
      });
      const decision = planBeginRun(input, request);
      expect(planBeginRun(input, request), 'the rules are deterministic').toEqual(decision);
      if (!decision.ok) {
        checkRefusal(decision);
        return false;
      }
      expect(decision.session.version, 'a K1 grows the version by one').toBe(version + 1);
      expect(decision.session.currentRunId).toBe(runId);
      expect(decision.session.stepCount, 'a K1 keeps the step count').toBe(model.session?.stepCount ?? 0);
      if (decision.rewind) {
        expect(decision.rewind.messageCount).toBeLessThanOrEqual(model.messages);
        model.messages = decision.rewind.messageCount;
        const target = decision.rewind;
        model.checkpoints = target.to === 'genesis' ? [] : model.checkpoints.slice(0, model.checkpoints.indexOf(target.checkpoint) + 1);
      }
      if (decision.supersede) {
        expect(current?.record.status, 'only a running run is superseded').toBe('running');
        const previous = model.runs.get(decision.supersede.runId)!;
        model.runs.set(decision.supersede.runId, { ...previous, record: { ...previous.record, status: 'superseded', endedAt: decision.supersede.endedAt } });
        model.journal.delete(decision.supersede.runId);
      } else if (current) expect(current.record.status).not.toBe('running');
      model.session = decision.session;
      model.runs.set(runId, { record: decision.run, steps: decision.runHeader.committedSteps });
      model.begun++;
      return true;
    }
    case 'commit': {
      const runId = runIdOf(model, op.run);
      const stored = model.runs.get(runId);
      const stepIndex = op.stepIndex === 'next' ? (stored?.record.stepCount ?? 0) : op.stepIndex;
      const c: Commit = deepFreeze({
        sessionId: 's1',
        runId,
        epoch: op.epoch === 'current' ? (stored?.record.epoch ?? 1) : op.epoch,
        kind: op.kind,
        ...(stepIndex === undefined ? {} : { stepIndex }),
        ...(op.rows === 0 ? {} : { appendMessages: rows(`${runId}`, op.rows) }),
        ...(op.checkpoint ? { checkpoint: 'step' as const } : {}),
        ...(op.runStatus === undefined ? {} : { runStatus: op.runStatus }),
        committedAt: now,
      });
      const input = deepFreeze({ session: model.session, run: stored && { ...stored.record, committedSteps: stored.steps } });
      const decision = planCommit(input, c);
      expect(planCommit(input, c), 'the rules are deterministic').toEqual(decision);
      if (!decision.ok) {
        checkRefusal(decision);
        return false;
      }
      expect(stored, 'a commit comes from a run that was begun').toBeDefined();
      expect(model.session?.currentRunId, 'only the current run commits').toBe(runId);
      expect(stored?.record.status, 'only a running run commits').toBe('running');
      expect(stored?.record.epoch, 'only the current epoch commits').toBe(c.epoch);
      expect(decision.session.version, 'a commit grows the version by one').toBe(version + 1);
      expect(decision.append.at).toBe(model.messages);
      if (c.kind === 'step') {
        const key = `${runId}#${String(c.stepIndex)}`;
        expect(model.committedSteps.has(key), 'a step index commits at most once per run').toBe(false);
        model.committedSteps.add(key);
        model.stepsCommitted++;
      }
      model.messages += decision.append.messages.length;
      if (decision.checkpoint) {
        expect(decision.checkpoint).toMatchObject({ messageCount: model.messages, stepCount: decision.session.stepCount });
        model.checkpoints.push({ checkpointId: `cp_${++model.checkpointSeq}`, messageCount: decision.checkpoint.messageCount });
      }
      const journal = model.journal.get(runId);
      if (journal) model.journal.set(runId, keptJournal(journal, decision.dropJournal).slice());
      model.session = decision.session;
      model.runs.set(runId, { record: applyRunChange(stored!.record, decision.run, decision.runPatch), steps: decision.run.committedSteps });
      return true;
    }
    case 'claim': {
      const runId = runIdOf(model, op.run);
      const stored = model.runs.get(runId);
      const at = (stored?.record.leaseExpiresAt ?? now) + op.after;
      const decision = planClaimRun(deepFreeze({ run: stored?.record, currentRunId: model.session?.currentRunId }), runId, 'p2', 1_000, at);
      if (!decision.ok) {
        checkRefusal(decision);
        return false;
      }
      expect(decision.lease.epoch, 'a claim raises the epoch by one').toBe(stored!.record.epoch + 1);
      expect(stored!.record.leaseExpiresAt).toBeLessThanOrEqual(at);
      model.runs.set(runId, { ...stored!, record: { ...stored!.record, epoch: decision.lease.epoch, leaseOwner: decision.lease.owner, leaseExpiresAt: decision.lease.expiresAt } });
      return true;
    }
    case 'renew': {
      const runId = runIdOf(model, op.run);
      const stored = model.runs.get(runId);
      const epoch = op.epoch === 'current' ? (stored?.record.epoch ?? 1) : op.epoch;
      const decision = planRenewLease(deepFreeze({ run: stored?.record, currentRunId: model.session?.currentRunId }), runId, epoch, 1_000, now);
      if (!decision.ok) {
        checkRefusal(decision);
        return false;
      }
      model.runs.set(runId, { ...stored!, record: { ...stored!.record, leaseExpiresAt: decision.lease.expiresAt } });
      return true;
    }
    case 'journal': {
      const runId = runIdOf(model, op.run);
      const stored = model.runs.get(runId);
      const entry: JournalEntry = deepFreeze({ runId, epoch: op.epoch === 'current' ? (stored?.record.epoch ?? 1) : op.epoch, stepIndex: op.stepIndex, kind: 'call_result', key: op.key, data: now, at: now });
      const journal = model.journal.get(runId) ?? [];
      const existing = journal.find((e) => e.key === op.key);
      const decision = planJournalAppend(deepFreeze({ run: stored?.record, currentRunId: model.session?.currentRunId, existing }), entry);
      if (!decision.ok) {
        checkRefusal(decision);
        return false;
      }
      if (existing) expect(decision.entry, 'the first entry under a key wins').toBe(existing);
      if (decision.write) model.journal.set(runId, [...journal, entry]);
      return true;
    }
  }
}

/** Invariants of the records after any transition. */
function checkRecords(model: Model): void {
  const session = model.session;
  if (!session) return;
  expect(session.messageCount, 'the header counts the conversation').toBe(model.messages);
  expect(session.stepCount, 'the header counts every committed step').toBe(model.stepsCommitted);
  const turn = session.turn;
  expect(turn, 'a session always has a turn after its first K1').toBeDefined();
  if (turn?.startCommitted) {
    expect(turn.inputMessageIndex, "a committed turn start points into the conversation").toBeDefined();
    expect(turn.inputMessageIndex!).toBeLessThanOrEqual(session.messageCount);
  } else expect(turn?.inputMessageIndex).toBeUndefined();
  model.checkpoints.forEach((cp, i) => {
    expect(cp.messageCount, 'a checkpoint is a prefix of the conversation').toBeLessThanOrEqual(session.messageCount);
    if (i > 0) expect(cp.messageCount, 'checkpoints are in conversation order').toBeGreaterThanOrEqual(model.checkpoints[i - 1]!.messageCount);
  });
  const running = [...model.runs.values()].filter((r) => r.record.status === 'running' && r.record.runId !== session.currentRunId);
  expect(running.map((r) => r.record.runId), 'only the current run may still be running').toEqual([]);
  for (const { record, steps } of model.runs.values()) {
    let count = 0;
    for (const [lo, hi] of steps) count += hi - lo + 1;
    expect(record.stepCount, "a run's step count is the size of its step set").toBe(count);
  }
}

describe('session rules: properties over any sequence of transitions', () => {
  const sequences = fc.array(opArb, { minLength: 1, maxLength: 40 });

  /** Over `numRuns` random sequences, runs each op on a fresh model at T0 + 100 ms per op, through `visit`. */
  const forEachOp = (numRuns: number, visit: (model: Model, op: Op, now: number) => void): void => {
    fc.assert(
      fc.property(sequences, (ops) => {
        const model = emptyModel();
        ops.forEach((op, i) => visit(model, op, T0 + i * 100));
      }),
      { numRuns },
    );
  };
  /** The records of a model, as a value to compare. */
  const recordsOf = (model: Model) => ({ session: model.session, runs: [...model.runs.entries()], checkpoints: model.checkpoints, messages: model.messages, journal: [...model.journal.entries()] });

  it('any sequence of transitions keeps the version strictly increasing, by one per accepted K1 or commit', () => {
    fc.assert(
      fc.property(sequences, (ops) => {
        const model = emptyModel();
        let last = 0;
        ops.forEach((op, i) => {
          const accepted = step(model, op, T0 + i * 100);
          const version = model.session?.version ?? 0;
          if (accepted && (op.op === 'begin' || op.op === 'commit')) expect(version).toBe(last + 1);
          else expect(version).toBe(last);
          last = version;
        });
      }),
      { numRuns: 300 },
    );
  });

  it('a refused transition returns no new record and changes nothing', () => {
    forEachOp(300, (model, op, now) => {
      const before = structuredClone(recordsOf(model));
      const accepted = step(model, op, now);
      if (!accepted) {
        expect(recordsOf(model)).toEqual(before);
      }
    });
  });

  it('a step index commits at most once per run, and the step counts follow the committed steps', () => {
    forEachOp(300, (model, op, now) => {
      step(model, op, now);
      checkRecords(model);
    });
  });

  it('a write is accepted only from the current, running run at its epoch; the rules never change their inputs', () => {
    // step() deep-freezes every input it passes (a write into one throws) and checks the fence of every accepted write.
    forEachOp(200, (model, op, now) => void step(model, op, now));
  });

  it('replaying the same sequence gives the same records (the rules are pure)', () => {
    fc.assert(
      fc.property(sequences, (ops) => {
        const a = emptyModel();
        const b = emptyModel();
        ops.forEach((op, i) => expect(step(a, op, T0 + i * 100)).toBe(step(b, op, T0 + i * 100)));
        expect(a.session).toEqual(b.session);
        expect([...a.runs.entries()]).toEqual([...b.runs.entries()]);
      }),
      { numRuns: 100 },
    );
  });
});
