import type { Message } from '../messages.js';
import type {
  BeginRunRequest,
  BeginRunResult,
  Checkpoint,
  CheckpointInfo,
  ClaimedRun,
  ClaimOptions,
  Commit,
  CommitReceipt,
  JournalEntry,
  Prunable,
  PruneReport,
  RecoverableRun,
  RetentionPolicy,
  RunLease,
  RunRecord,
  SessionSnapshot,
  StateStore,
  StopRequest,
} from '../store.js';
import { offerCommitNow, resolveRetention } from '../store.js';
import type { SessionHeader, StepSet } from '../store/session-rules.js';
import {
  applyRunChange,
  beginRunResult,
  keptJournal,
  NO_STEPS,
  orThrow,
  planBeginRun,
  planClaimRun,
  planCommit,
  planJournalAppend,
  planRenewLease,
  planRequestStop,
  sessionSnapshot,
} from '../store/session-rules.js';
import { planDeleteSession } from '../store/session-delete.js';
import type { UsageEntry, UsageFilter, UsageRollup, UsageStore } from '../usage.js';
import { rollupUsage } from '../usage.js';

interface SessionRow {
  /** The header the session rules read and return. */
  header: SessionHeader;
  /** The state the session was created with (what a rewind to genesis restores). */
  initialState: unknown;
  state: unknown;
  // Append-only: a checkpoint is a prefix length, so a step costs O(rows added), not O(history).
  messages: Message[];
  checkpoints: (CheckpointInfo & { state: unknown })[];
}

/** What an {@link InMemoryStateStore} keeps of finished work: the shared {@link RetentionPolicy} (it reads `keepCheckpoints`). */
export type InMemoryRetention = RetentionPolicy;

/** What {@link InMemoryStateStore.held} counts: the entries of each of the store's tables. */
export interface InMemoryStateStoreCounts {
  readonly sessions: number;
  readonly runs: number;
  /** Runs with a committed-step set (a finished run's is empty, and kept with the run). */
  readonly committedStepSets: number;
  readonly journals: number;
  /** Sessions with a list of their runs (what deleteSession reads). */
  readonly sessionRunLists: number;
  readonly usageEntries: number;
}

/** Options of {@link InMemoryStateStore}. */
export interface InMemoryStateStoreOptions {
  /**
   * What to keep of finished work (default: everything until the session is deleted). The state store
   * reads `keepCheckpoints`; chunks are the stream manager's (`InMemoryStreamManager({ retention })`).
   */
  readonly retention?: RetentionPolicy;
}

/**
 * The in-memory {@link StateStore}: atomic by construction (each write reads its records, asks the
 * session rules of `@helix-agents/sdk/store` for a plan, and applies it in one synchronous update, so
 * the records cannot change in between) and fenced by run id and epoch. Values are kept by reference;
 * the run loop only commits immutable values. It is also a {@link UsageStore}, so usage passed with a
 * commit is recorded with it.
 */
export class InMemoryStateStore implements StateStore, UsageStore, Prunable {
  readonly #sessions = new Map<string, SessionRow>();
  readonly #runs = new Map<string, RunRecord>();
  /** The committed step indexes of each run. */
  readonly #steps = new Map<string, StepSet>();
  readonly #journals = new Map<string, JournalEntry[]>();
  /** The runs of each session, for deleteSession. */
  readonly #runsOfSession = new Map<string, string[]>();
  #usage: UsageEntry[] = [];
  #checkpointSeq = 0;
  readonly #keepCheckpoints: number;

  constructor(options: InMemoryStateStoreOptions = {}) {
    this.#keepCheckpoints = resolveRetention(options.retention).keepCheckpoints;
  }

  async beginRun(request: BeginRunRequest): Promise<BeginRunResult> {
    const found = this.#sessions.get(request.sessionId);
    const currentRunId = found?.header.currentRunId;
    const restoreId = request.restoreCheckpointId;
    const plan = orThrow(
      planBeginRun(
        {
          session: found?.header,
          currentRun: currentRunId === undefined ? undefined : this.#runs.get(currentRunId),
          restorePoint: restoreId === undefined ? undefined : found?.checkpoints.find((c) => c.checkpointId === restoreId),
        },
        request,
      ),
    );
    const row: SessionRow = found ?? { header: plan.session, initialState: request.initialState, state: request.initialState, messages: [], checkpoints: [] };
    if (!found) this.#sessions.set(request.sessionId, row);
    const { rewind, supersede } = plan;
    if (rewind) {
      row.messages.length = rewind.messageCount;
      // Checkpoints after the restored one describe a discarded branch.
      row.checkpoints.length = rewind.to === 'genesis' ? 0 : row.checkpoints.indexOf(rewind.checkpoint) + 1;
      row.state = rewind.to === 'genesis' ? row.initialState : rewind.checkpoint.state;
    }
    const previous = supersede && this.#runs.get(supersede.runId);
    if (supersede && previous) {
      this.#runs.set(supersede.runId, { ...previous, status: 'superseded', endedAt: supersede.endedAt });
    }
    // The replaced run never writes again: its journal has no reader left (a supersede's included).
    if (plan.dropJournalOf !== undefined) this.#journals.delete(plan.dropJournalOf);
    row.header = plan.session;
    this.#runs.set(plan.run.runId, plan.run);
    this.#steps.set(plan.run.runId, NO_STEPS);
    const runs = this.#runsOfSession.get(request.sessionId);
    if (runs) runs.push(plan.run.runId);
    else this.#runsOfSession.set(request.sessionId, [plan.run.runId]);
    return beginRunResult(plan, snapshot(row));
  }

  async commit(commit: Commit): Promise<CommitReceipt> {
    return this.#commit(commit);
  }

  static {
    // The run loop's path: the same commit without a promise (this store's writes are synchronous).
    offerCommitNow(InMemoryStateStore.prototype.commit, function (this: StateStore, commit: Commit) {
      return (this as InMemoryStateStore).#commit(commit);
    });
  }

  #commit(commit: Commit): CommitReceipt {
    const row = this.#sessions.get(commit.sessionId);
    const record = this.#runs.get(commit.runId);
    const run = record && { runId: record.runId, status: record.status, epoch: record.epoch, stepCount: record.stepCount, committedSteps: this.#steps.get(commit.runId) ?? NO_STEPS };
    const plan = orThrow(planCommit({ session: row?.header, run }, commit));
    // Accepted: the rules refuse a commit without its session and run, so both exist from here on.
    const session = row!;
    for (const message of plan.append.messages) session.messages.push(message);
    if (commit.state !== undefined) session.state = commit.state;
    session.header = plan.session;
    let checkpointId: string | undefined;
    if (plan.checkpoint) {
      checkpointId = `cp_${++this.#checkpointSeq}`;
      const { sessionId, runId, kind, stepCount, messageCount, createdAt } = plan.checkpoint;
      session.checkpoints.push({ checkpointId, sessionId, runId, kind, stepCount, messageCount, createdAt, state: session.state });
      if (session.checkpoints.length > this.#keepCheckpoints) session.checkpoints.splice(0, session.checkpoints.length - this.#keepCheckpoints);
    }
    if (commit.usage) for (const entry of commit.usage) this.#usage.push(entry);
    const journal = this.#journals.get(commit.runId);
    if (journal && plan.dropJournal) {
      // An emptied journal goes from the map: later commits of the run then find none to filter.
      const kept = keptJournal(journal, plan.dropJournal);
      if (kept.length === 0) this.#journals.delete(commit.runId);
      else this.#journals.set(commit.runId, kept.slice());
    }
    const updated = applyRunChange(record!, plan.run, plan.runPatch);
    // A run that is no longer running accepts no commit: its committed-step set is not needed any more.
    this.#steps.set(commit.runId, updated.status === 'running' ? plan.run.committedSteps : NO_STEPS);
    this.#runs.set(commit.runId, updated);
    // Two literals, not a conditional spread (which copies an object of its own on every step).
    return checkpointId === undefined ? { version: plan.session.version, messageCount: plan.session.messageCount } : { version: plan.session.version, messageCount: plan.session.messageCount, checkpointId };
  }

  async renewLease(runId: string, epoch: number, leaseMs: number, now: number): Promise<RunLease> {
    const run = this.#runs.get(runId);
    const { lease } = orThrow(planRenewLease({ run, currentRunId: this.#currentRunOf(run) }, runId, epoch, leaseMs, now));
    if (run) this.#runs.set(runId, { ...run, leaseExpiresAt: lease.expiresAt });
    return lease;
  }

  async listRecoverable(now: number, limit = 100): Promise<readonly RecoverableRun[]> {
    const out: RecoverableRun[] = [];
    for (const run of this.#runs.values()) {
      if (run.status !== 'running' || run.leaseExpiresAt > now) continue;
      if (this.#sessions.get(run.sessionId)?.header.currentRunId !== run.runId) continue;
      out.push({ sessionId: run.sessionId, runId: run.runId, agentType: run.agentType, epoch: run.epoch, leaseOwner: run.leaseOwner, leaseExpiresAt: run.leaseExpiresAt });
    }
    return out.sort((a, b) => a.leaseExpiresAt - b.leaseExpiresAt).slice(0, limit);
  }

  async claimRun(runId: string, owner: string, leaseMs: number, now: number, options: ClaimOptions = {}): Promise<ClaimedRun> {
    const run = this.#runs.get(runId);
    const row = run ? this.#sessions.get(run.sessionId) : undefined;
    const { lease } = orThrow(planClaimRun({ run, currentRunId: row?.header.currentRunId }, runId, owner, leaseMs, now, options.takeover));
    // Accepted: the run exists and is its session's current run.
    const claimed: RunRecord = { ...run!, epoch: lease.epoch, leaseOwner: lease.owner, leaseExpiresAt: lease.expiresAt };
    this.#runs.set(runId, claimed);
    return { session: snapshot(row!), run: claimed, lease, journal: (this.#journals.get(runId) ?? []).slice() };
  }

  async appendJournal(entry: JournalEntry): Promise<JournalEntry> {
    const run = this.#runs.get(entry.runId);
    const journal = this.#journals.get(entry.runId);
    const plan = orThrow(planJournalAppend({ run, currentRunId: this.#currentRunOf(run), existing: journal?.find((e) => e.key === entry.key) }, entry));
    if (plan.write) {
      if (journal) journal.push(entry);
      else this.#journals.set(entry.runId, [entry]);
    }
    return plan.entry;
  }

  async requestStop(runId: string, request: StopRequest): Promise<RunRecord | undefined> {
    const run = this.#runs.get(runId);
    const { write } = orThrow(planRequestStop({ run }, request));
    if (!run || !write) return run;
    const asked: RunRecord = { ...run, stopRequest: write };
    this.#runs.set(runId, asked);
    return asked;
  }

  /** The current run id of a run's session. */
  #currentRunOf(run: RunRecord | undefined): string | undefined {
    return run ? this.#sessions.get(run.sessionId)?.header.currentRunId : undefined;
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

  async deleteSession(sessionId: string): Promise<boolean> {
    const row = this.#sessions.get(sessionId);
    if (!row) return false;
    const currentRunId = row.header.currentRunId;
    const current = currentRunId === undefined ? undefined : this.#runs.get(currentRunId);
    const refused = planDeleteSession({ sessionId, currentRun: current && { runId: current.runId, status: current.status } });
    if (refused) throw refused;
    this.#sessions.delete(sessionId);
    for (const runId of this.#runsOfSession.get(sessionId) ?? []) {
      this.#runs.delete(runId);
      this.#steps.delete(runId);
      this.#journals.delete(runId);
    }
    this.#runsOfSession.delete(sessionId);
    if (this.#usage.some((e) => e.sessionId === sessionId)) this.#usage = this.#usage.filter((e) => e.sessionId !== sessionId);
    return true;
  }

  /**
   * Drops the journals of runs that are no longer their session's current run (K1 already drops them, so
   * normally there are none). Checkpoints are trimmed by the commit that adds one, so there is
   * nothing time-based to drop here; chunks are the stream manager's.
   */
  async prune(): Promise<PruneReport> {
    let journalEntries = 0;
    for (const [runId, entries] of this.#journals) {
      const run = this.#runs.get(runId);
      if (run && this.#currentRunOf(run) === runId) continue;
      journalEntries += entries.length;
      this.#journals.delete(runId);
    }
    return { chunks: 0, journalEntries, records: 0 };
  }

  /**
   * How many records the store holds, for tests and inspection: once every session is deleted, each count
   * is 0 (nothing of finished work stays behind).
   */
  held(): InMemoryStateStoreCounts {
    return { sessions: this.#sessions.size, runs: this.#runs.size, committedStepSets: this.#steps.size, journals: this.#journals.size, sessionRunLists: this.#runsOfSession.size, usageEntries: this.#usage.length };
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
  // A copy of the rows, so a reader never sees rows a later commit appends.
  return sessionSnapshot(row.header, row.state, row.messages.slice());
}
