import { AgentError, RunSupersededError, StateCommitError } from '../errors.js';
import type { Message } from '../messages.js';
import type {
  BeginRunRequest,
  BeginRunResult,
  Checkpoint,
  CheckpointInfo,
  ClaimedRun,
  Commit,
  CommitReceipt,
  JournalEntry,
  RecoverableRun,
  RunLease,
  RunRecord,
  SessionSnapshot,
  StateStore,
  TurnRecord,
} from '../store.js';
import { GENESIS_CHECKPOINT, stateConflictError } from '../store.js';
import type { UsageEntry, UsageFilter, UsageRollup, UsageStore } from '../usage.js';
import { rollupUsage } from '../usage.js';

interface SessionRow {
  sessionId: string;
  agentType: string;
  parentSessionId: string | undefined;
  /** The state the session was created with (what a rewind to genesis restores). */
  initialState: unknown;
  state: unknown;
  // Append-only: a checkpoint is a prefix length, so a step costs O(rows added), not O(history).
  messages: Message[];
  currentRunId: string | undefined;
  turn: TurnRecord | undefined;
  version: number;
  stepCount: number;
  resumeCount: number;
  checkpoints: (CheckpointInfo & { state: unknown })[];
}

/**
 * The in-memory {@link StateStore}: atomic by construction (each write is one synchronous update) and
 * fenced by run id and epoch. Values are kept by reference; the run loop only commits immutable values.
 * It is also a {@link UsageStore}, so usage passed with a commit is recorded with it.
 */
export class InMemoryStateStore implements StateStore, UsageStore {
  readonly #sessions = new Map<string, SessionRow>();
  readonly #runs = new Map<string, RunRecord>();
  readonly #journals = new Map<string, JournalEntry[]>();
  readonly #committedSteps = new Set<string>();
  readonly #usage: UsageEntry[] = [];
  #checkpointSeq = 0;

  async beginRun(request: BeginRunRequest): Promise<BeginRunResult> {
    let row = this.#sessions.get(request.sessionId);
    // Every refusal happens before anything is written (a refused K1 leaves no session behind).
    if (request.expect) {
      const current = row?.currentRunId;
      const status = current === undefined ? undefined : this.#runs.get(current)?.status;
      if (current !== request.expect.currentRunId || status !== request.expect.status) throw stateConflictError(request, current, status);
    }
    if (!row && !request.newTurn) throw new StateCommitError(`Session ${request.sessionId} has no turn to continue; start a run with a new turn.`);
    if (!row && request.restoreCheckpointId !== undefined && request.restoreCheckpointId !== GENESIS_CHECKPOINT) {
      throw new AgentError('state_not_found', `Session ${request.sessionId} has no checkpoint ${request.restoreCheckpointId}.`, { details: { checkpointId: request.restoreCheckpointId } });
    }
    if (!row) {
      row = {
        sessionId: request.sessionId,
        agentType: request.agentType,
        parentSessionId: request.parentSessionId,
        initialState: request.initialState,
        state: request.initialState,
        messages: [],
        currentRunId: undefined,
        turn: undefined,
        version: 0,
        stepCount: 0,
        resumeCount: 0,
        checkpoints: [],
      };
      this.#sessions.set(request.sessionId, row);
    }
    let restored: { state: unknown; messageCount: number } | undefined;
    if (request.restoreCheckpointId !== undefined) {
      if (request.restoreCheckpointId === GENESIS_CHECKPOINT) restored = { state: row.initialState, messageCount: 0 };
      else {
        const checkpoint = row.checkpoints.find((c) => c.checkpointId === request.restoreCheckpointId);
        if (!checkpoint) throw new AgentError('state_not_found', `Session ${request.sessionId} has no checkpoint ${request.restoreCheckpointId}.`, { details: { checkpointId: request.restoreCheckpointId } });
        restored = { state: checkpoint.state, messageCount: checkpoint.messageCount };
      }
    }
    let turn: TurnRecord | undefined = request.newTurn
      ? { turnId: request.newTurn.turnId, firstRunId: request.runId, input: request.newTurn.input, startCommitted: false }
      : row.turn;
    if (!turn) throw new StateCommitError(`Session ${request.sessionId} has no turn to continue; start a run with a new turn.`);
    if (restored) {
      row.messages.length = Math.min(row.messages.length, restored.messageCount);
      // Checkpoints after the restored one describe a discarded branch.
      const keep = request.restoreCheckpointId === GENESIS_CHECKPOINT ? 0 : row.checkpoints.findIndex((c) => c.checkpointId === request.restoreCheckpointId) + 1;
      row.checkpoints.length = keep;
      row.state = restored.state;
      // A rewind to before the turn's input rows discards the turn's start commit (rule 22).
      if (turn.startCommitted && (turn.inputMessageIndex ?? 0) >= restored.messageCount) {
        const { inputMessageIndex: _dropped, ...rest } = turn;
        turn = { ...rest, startCommitted: false };
      }
    }
    const previous = row.currentRunId === undefined ? undefined : this.#runs.get(row.currentRunId);
    const supersededRunId = previous?.status === 'running' ? previous.runId : undefined;
    if (previous && supersededRunId !== undefined) {
      this.#runs.set(previous.runId, { ...previous, status: 'superseded', endedAt: request.startedAt });
      this.#journals.delete(previous.runId);
    }
    row.currentRunId = request.runId;
    row.turn = turn;
    row.agentType = request.agentType;
    row.version++;
    if (request.signal === 'resumed') row.resumeCount++;
    const lease: RunLease = { runId: request.runId, epoch: 1, owner: request.leaseOwner, expiresAt: request.startedAt + request.leaseMs };
    this.#runs.set(request.runId, {
      runId: request.runId,
      sessionId: request.sessionId,
      turnId: turn.turnId,
      agentType: request.agentType,
      status: 'running',
      signal: request.signal,
      startedAt: request.startedAt,
      stepCount: 0,
      epoch: 1,
      leaseOwner: lease.owner,
      leaseExpiresAt: lease.expiresAt,
      options: request.options,
    });
    return { session: snapshot(row), lease, ...(supersededRunId === undefined ? {} : { supersededRunId }) };
  }

  /** The session and run a write may touch, or a RunSupersededError. */
  #fenced(sessionId: string, runId: string, epoch: number): { row: SessionRow; run: RunRecord } {
    const row = this.#sessions.get(sessionId);
    if (!row) throw new StateCommitError(`Session ${sessionId} does not exist.`);
    const run = this.#runs.get(runId);
    if (row.currentRunId !== runId || !run || run.epoch !== epoch || run.status !== 'running') {
      throw new RunSupersededError(sessionId, runId, row.currentRunId);
    }
    return { row, run };
  }

  async commit(commit: Commit): Promise<CommitReceipt> {
    const { row, run } = this.#fenced(commit.sessionId, commit.runId, commit.epoch);
    if (commit.kind === 'step') {
      const key = `${commit.runId}:${String(commit.stepIndex)}`;
      if (commit.stepIndex === undefined || this.#committedSteps.has(key)) {
        throw new StateCommitError(`Step ${String(commit.stepIndex)} of run ${commit.runId} is already committed or has no index.`);
      }
      this.#committedSteps.add(key);
      row.stepCount++;
    }
    if (commit.appendMessages) for (const message of commit.appendMessages) row.messages.push(message);
    if (commit.state !== undefined) row.state = commit.state;
    if (commit.kind === 'turn_start' && row.turn) {
      row.turn = { ...row.turn, startCommitted: true, inputMessageIndex: row.messages.length - (commit.appendMessages?.length ?? 0) };
    }
    row.version++;
    let checkpointId: string | undefined;
    if (commit.checkpoint) {
      checkpointId = `cp_${++this.#checkpointSeq}`;
      row.checkpoints.push({
        checkpointId,
        sessionId: row.sessionId,
        runId: commit.runId,
        kind: commit.checkpoint,
        stepCount: row.stepCount,
        messageCount: row.messages.length,
        createdAt: commit.committedAt,
        state: row.state,
      });
    }
    if (commit.usage) for (const entry of commit.usage) this.#usage.push(entry);
    const journal = this.#journals.get(commit.runId);
    if (commit.kind === 'terminal') this.#journals.delete(commit.runId);
    else if (journal && commit.kind === 'step') this.#journals.set(commit.runId, journal.filter((e) => e.stepIndex > (commit.stepIndex ?? -1)));
    this.#runs.set(commit.runId, {
      ...run,
      stepCount: run.stepCount + (commit.kind === 'step' ? 1 : 0),
      ...(commit.runStatus === undefined ? {} : { status: commit.runStatus }),
      ...(commit.kind === 'terminal' ? { endedAt: commit.committedAt } : {}),
      ...(commit.output === undefined ? {} : { output: commit.output }),
      ...(commit.error === undefined ? {} : { error: commit.error }),
      ...(commit.suspension === undefined ? {} : { suspension: commit.suspension }),
    });
    return { version: row.version, messageCount: row.messages.length, ...(checkpointId === undefined ? {} : { checkpointId }) };
  }

  async renewLease(runId: string, epoch: number, leaseMs: number, now: number): Promise<RunLease> {
    const run = this.#runs.get(runId);
    if (!run) throw new StateCommitError(`Run ${runId} was never begun.`);
    this.#fenced(run.sessionId, runId, epoch);
    const renewed = { ...run, leaseExpiresAt: now + leaseMs };
    this.#runs.set(runId, renewed);
    return { runId, epoch, owner: run.leaseOwner, expiresAt: renewed.leaseExpiresAt };
  }

  async listRecoverable(now: number, limit = 100): Promise<readonly RecoverableRun[]> {
    const out: RecoverableRun[] = [];
    for (const run of this.#runs.values()) {
      if (run.status !== 'running' || run.leaseExpiresAt > now) continue;
      if (this.#sessions.get(run.sessionId)?.currentRunId !== run.runId) continue;
      out.push({ sessionId: run.sessionId, runId: run.runId, agentType: run.agentType, epoch: run.epoch, leaseOwner: run.leaseOwner, leaseExpiresAt: run.leaseExpiresAt });
    }
    return out.sort((a, b) => a.leaseExpiresAt - b.leaseExpiresAt).slice(0, limit);
  }

  async claimRun(runId: string, owner: string, leaseMs: number, now: number): Promise<ClaimedRun> {
    const run = this.#runs.get(runId);
    const row = run ? this.#sessions.get(run.sessionId) : undefined;
    if (!run || !row || row.currentRunId !== runId || run.status !== 'running' || run.leaseExpiresAt > now) {
      throw new AgentError('state_run_not_recoverable', `Run ${runId} cannot be claimed: ${!run ? 'it does not exist' : run.status !== 'running' ? `it is ${run.status}` : row?.currentRunId !== runId ? 'another run took over its session' : 'its lease has not expired'}.`, {
        details: { runId },
      });
    }
    const claimed: RunRecord = { ...run, epoch: run.epoch + 1, leaseOwner: owner, leaseExpiresAt: now + leaseMs };
    this.#runs.set(runId, claimed);
    return {
      session: snapshot(row),
      run: claimed,
      lease: { runId, epoch: claimed.epoch, owner, expiresAt: claimed.leaseExpiresAt },
      journal: (this.#journals.get(runId) ?? []).slice(),
    };
  }

  async appendJournal(entry: JournalEntry): Promise<JournalEntry> {
    const run = this.#runs.get(entry.runId);
    if (!run) throw new StateCommitError(`Run ${entry.runId} was never begun.`);
    this.#fenced(run.sessionId, entry.runId, entry.epoch);
    let journal = this.#journals.get(entry.runId);
    if (!journal) {
      journal = [];
      this.#journals.set(entry.runId, journal);
    }
    const existing = journal.find((e) => e.key === entry.key);
    if (existing) return existing;
    journal.push(entry);
    return entry;
  }

  async loadJournal(runId: string): Promise<readonly JournalEntry[]> {
    return (this.#journals.get(runId) ?? []).slice();
  }

  async loadSession(sessionId: string): Promise<SessionSnapshot | undefined> {
    const row = this.#sessions.get(sessionId);
    return row ? snapshot(row) : undefined;
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    return this.#runs.get(runId);
  }

  async listCheckpoints(sessionId: string): Promise<readonly CheckpointInfo[]> {
    const row = this.#sessions.get(sessionId);
    return row ? row.checkpoints.map(({ state: _state, ...info }) => info) : [];
  }

  async loadCheckpoint(sessionId: string, checkpointId: string): Promise<Checkpoint | undefined> {
    const row = this.#sessions.get(sessionId);
    const found = row?.checkpoints.find((c) => c.checkpointId === checkpointId);
    if (!row || !found) return undefined;
    return { ...found, messages: row.messages.slice(0, found.messageCount) };
  }

  async record(entries: readonly UsageEntry[]): Promise<void> {
    for (const entry of entries) this.#usage.push(entry);
  }

  async getRollup(filter: UsageFilter = {}): Promise<UsageRollup> {
    return rollupUsage(
      this.#usage.filter((e) => (filter.sessionId === undefined || e.sessionId === filter.sessionId) && (filter.runId === undefined || e.runId === filter.runId)),
    );
  }
}

function snapshot(row: SessionRow): SessionSnapshot {
  return {
    sessionId: row.sessionId,
    agentType: row.agentType,
    ...(row.parentSessionId === undefined ? {} : { parentSessionId: row.parentSessionId }),
    state: row.state,
    // A copy, so a reader never sees rows a later commit appends.
    messages: row.messages.slice(),
    currentRunId: row.currentRunId,
    turn: row.turn,
    version: row.version,
    stepCount: row.stepCount,
    resumeCount: row.resumeCount,
  };
}
