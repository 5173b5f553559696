import { RunSupersededError, StateCommitError } from '../errors.js';
import type { Message } from '../messages.js';
import type {
  BeginRunRequest,
  BeginRunResult,
  Checkpoint,
  CheckpointInfo,
  Commit,
  CommitReceipt,
  RunRecord,
  SessionSnapshot,
  StateStore,
  TurnRecord,
} from '../store.js';

interface SessionRow {
  sessionId: string;
  agentType: string;
  parentSessionId: string | undefined;
  state: unknown;
  // Append-only: a checkpoint is a prefix length, so a step costs O(rows added), not O(history).
  messages: Message[];
  currentRunId: string | undefined;
  turn: TurnRecord | undefined;
  version: number;
  stepCount: number;
  resumeCount: number;
  checkpoints: (CheckpointInfo & { state: unknown })[];
  committedSteps: Set<string>;
}

/**
 * The in-memory {@link StateStore}: atomic by construction (one synchronous update per commit) and
 * fenced by run id. Values are kept by reference; the run loop only commits immutable values.
 */
export class InMemoryStateStore implements StateStore {
  readonly #sessions = new Map<string, SessionRow>();
  readonly #runs = new Map<string, RunRecord>();
  #checkpointSeq = 0;

  async beginRun(request: BeginRunRequest): Promise<BeginRunResult> {
    let row = this.#sessions.get(request.sessionId);
    if (!row) {
      row = {
        sessionId: request.sessionId,
        agentType: request.agentType,
        parentSessionId: request.parentSessionId,
        state: request.initialState,
        messages: [],
        currentRunId: undefined,
        turn: undefined,
        version: 0,
        stepCount: 0,
        resumeCount: 0,
        checkpoints: [],
        committedSteps: new Set(),
      };
      this.#sessions.set(request.sessionId, row);
    }
    const previous = row.currentRunId;
    const previousRun = previous === undefined ? undefined : this.#runs.get(previous);
    const supersededRunId = previousRun?.status === 'running' ? previous : undefined;
    if (supersededRunId !== undefined && previousRun) {
      this.#runs.set(supersededRunId, { ...previousRun, status: 'superseded', endedAt: request.startedAt });
    }
    const turn: TurnRecord | undefined = request.newTurn
      ? { turnId: request.newTurn.turnId, firstRunId: request.runId, input: request.newTurn.input, startCommitted: false }
      : row.turn;
    if (!turn) throw new StateCommitError(`Session ${request.sessionId} has no turn to continue; start a run with a new turn.`);
    row.currentRunId = request.runId;
    row.turn = turn;
    row.agentType = request.agentType;
    row.version++;
    if (request.signal === 'resumed') row.resumeCount++;
    this.#runs.set(request.runId, {
      runId: request.runId,
      sessionId: request.sessionId,
      turnId: turn.turnId,
      agentType: request.agentType,
      status: 'running',
      signal: request.signal,
      startedAt: request.startedAt,
      stepCount: 0,
    });
    return { session: snapshot(row), ...(supersededRunId === undefined ? {} : { supersededRunId }) };
  }

  async commit(commit: Commit): Promise<CommitReceipt> {
    const row = this.#sessions.get(commit.sessionId);
    if (!row) throw new StateCommitError(`Session ${commit.sessionId} does not exist.`);
    if (row.currentRunId !== commit.runId) {
      throw new RunSupersededError(commit.sessionId, commit.runId, row.currentRunId);
    }
    const run = this.#runs.get(commit.runId);
    if (!run) throw new StateCommitError(`Run ${commit.runId} was never begun.`);
    if (commit.kind === 'step') {
      const key = `${commit.runId}:${String(commit.stepIndex)}`;
      if (commit.stepIndex === undefined || row.committedSteps.has(key)) {
        throw new StateCommitError(`Step ${String(commit.stepIndex)} of run ${commit.runId} is already committed or has no index.`);
      }
      row.committedSteps.add(key);
      row.stepCount++;
    }
    if (commit.appendMessages) for (const message of commit.appendMessages) row.messages.push(message);
    if ('state' in commit && commit.state !== undefined) row.state = commit.state;
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
    this.#runs.set(commit.runId, {
      ...run,
      stepCount: run.stepCount + (commit.kind === 'step' ? 1 : 0),
      ...(commit.runStatus === undefined ? {} : { status: commit.runStatus }),
      ...(commit.kind === 'terminal' ? { endedAt: commit.committedAt } : {}),
      ...(commit.output === undefined ? {} : { output: commit.output }),
      ...(commit.error === undefined ? {} : { error: commit.error }),
    });
    return { version: row.version, messageCount: row.messages.length, ...(checkpointId === undefined ? {} : { checkpointId }) };
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
