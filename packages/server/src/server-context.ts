import { AgentError, type AgentConfig, type AgentRuntime, type ApprovalDecision, type Logger, type RunRecord, type SessionSnapshot, type UsageStore } from '@helix-agents/sdk';
import { ServerError } from './errors.js';
import type { SessionOwners } from './owners.js';

/** Size limits of requests (413 beyond them) and of lists. */
export interface HelixLimits {
  /** The largest request body, in bytes (default 1 MiB). */
  readonly bodyBytes: number;
  /** The longest user message, in characters (default 64 Ki). */
  readonly messageChars: number;
  /** The most sessions one list answer holds (default 100). */
  readonly listSessions: number;
  /** The most runs a session answer lists, the latest ones (default 100). */
  readonly listRuns: number;
}

/** The default {@link HelixLimits}. */
export const DEFAULT_LIMITS: HelixLimits = { bodyBytes: 1024 * 1024, messageChars: 64 * 1024, listSessions: 100, listRuns: 100 };

/** Signs a decision for the runtime's approval check (e.g. `(...a) => executor.signApproval(...a)`). */
export type ApprovalSigner = (
  sessionId: string,
  toolCallId: string,
  decision: { readonly runId: string; readonly decision: 'approve'; readonly input: unknown } | { readonly runId: string; readonly decision: 'reject' },
) => string;

const RUN_START_CACHE = 10_000;

/**
 * What every route shares: the runtime, the agents by name, the owner registry and the limits, with
 * the checks each route makes (ownership, agent lookup) in one place.
 */
export class HelixServerContext {
  readonly runtime: AgentRuntime;
  readonly owners: SessionOwners;
  readonly limits: HelixLimits;
  readonly logger: Logger;
  readonly keepAliveMs: number;
  readonly usageStore: UsageStore | undefined;
  readonly #agents: ReadonlyMap<string, AgentConfig<unknown, unknown>>;
  readonly #defaultAgent: AgentConfig<unknown, unknown>;
  readonly #signApproval: ApprovalSigner | undefined;
  readonly #runStarts = new Map<string, number>();
  readonly #queues = new Map<string, Promise<unknown>>();

  constructor(options: {
    runtime: AgentRuntime;
    agents: readonly AgentConfig<unknown, unknown>[];
    owners: SessionOwners;
    limits: HelixLimits;
    logger: Logger;
    keepAliveMs: number;
    usageStore: UsageStore | undefined;
    signApproval: ApprovalSigner | undefined;
  }) {
    this.runtime = options.runtime;
    this.owners = options.owners;
    this.limits = options.limits;
    this.logger = options.logger;
    this.keepAliveMs = options.keepAliveMs;
    this.usageStore = options.usageStore;
    this.#signApproval = options.signApproval;
    this.#agents = new Map(options.agents.map((a) => [a.name, a] as const));
    this.#defaultAgent = options.agents[0] as AgentConfig<unknown, unknown>;
  }

  /** The names of the agents the server runs, the default first. */
  agentNames(): string[] {
    return [...this.#agents.keys()];
  }

  /** The agent a request names, or the default (the first) one; 400 for a name the server does not serve. */
  agent(name: string | undefined): AgentConfig<unknown, unknown> {
    if (name === undefined) return this.#defaultAgent;
    const agent = this.#agents.get(name);
    if (!agent) throw new ServerError('http_unknown_agent', `The server has no agent named "${name.slice(0, 64)}".`, { agents: [...this.#agents.keys()] });
    return agent;
  }

  /** The agent of an existing session; a request naming another one is refused. */
  agentOfSession(session: SessionSnapshot, requested: string | undefined): AgentConfig<unknown, unknown> {
    if (requested !== undefined && requested !== session.agentType) {
      throw new ServerError('http_unknown_agent', `Session ${session.sessionId} runs agent "${session.agentType}", not "${requested.slice(0, 64)}".`);
    }
    return this.agent(session.agentType);
  }

  /** The session when `userId` owns it; 404 when it does not exist or is someone else's (the two look the same). */
  async owned(userId: string, sessionId: string): Promise<SessionSnapshot> {
    const owner = await this.owners.ownerOf(sessionId);
    const session = owner === userId ? await this.runtime.getSession(sessionId) : undefined;
    if (!session) throw notFound(sessionId);
    return session;
  }

  /**
   * For a request that may create `sessionId`: its session when `userId` owns it, undefined when it is
   * new (and now claimed by `userId`), 404 when another user owns it or it exists without an owner.
   */
  async ownedOrNew(userId: string, sessionId: string): Promise<SessionSnapshot | undefined> {
    const owner = await this.owners.ownerOf(sessionId);
    if (owner === userId) {
      const session = await this.runtime.getSession(sessionId);
      return session;
    }
    if (owner !== undefined || (await this.runtime.getSession(sessionId)) !== undefined) throw notFound(sessionId);
    const claimed = await this.owners.claim(sessionId, userId, Date.now());
    if (claimed !== userId) throw notFound(sessionId);
    return undefined;
  }

  /** A run of a session, or 404. */
  async run(sessionId: string, runId: string): Promise<RunRecord> {
    const run = await this.runtime.getRun(runId);
    if (!run || run.sessionId !== sessionId) throw new ServerError('http_not_found', `Session ${sessionId} has no run ${runId}.`);
    return run;
  }

  /** Signs decisions when the server was given a signer (the authenticated owner is who decides). */
  sign(sessionId: string, run: RunRecord, decisions: readonly ApprovalDecision[]): ApprovalDecision[] {
    const signer = this.#signApproval;
    if (!signer) return [...decisions];
    return decisions.map((d) => {
      if (d.decision === 'reject') return { ...d, signature: signer(sessionId, d.toolCallId, { runId: run.runId, decision: 'reject' }) };
      const pending = run.suspension?.pending.find((p) => p.toolCallId === d.toolCallId);
      return { ...d, signature: signer(sessionId, d.toolCallId, { runId: run.runId, decision: 'approve', input: d.input === undefined ? pending?.input : d.input }) };
    });
  }

  /** Runs `work` after every earlier `serialized(key, ...)` of this process has settled (per-session ordering). */
  serialized<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.#queues.get(key) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(work);
    this.#queues.set(key, next);
    void next
      .finally(() => {
        if (this.#queues.get(key) === next) this.#queues.delete(key);
      })
      .catch(() => undefined);
    return next;
  }

  /** The options every run the server starts gets: the caller as its user, and the usage store. */
  runOptions(userId: string): { userId: string; usageStore?: UsageStore } {
    return { userId, ...(this.usageStore === undefined ? {} : { usageStore: this.usageStore }) };
  }

  /** Remembers where a run's chunks begin in its session's stream. */
  noteRunStart(runId: string, seq: number): void {
    if (this.#runStarts.has(runId)) return;
    if (this.#runStarts.size >= RUN_START_CACHE) {
      const oldest = this.#runStarts.keys().next().value;
      if (oldest !== undefined) this.#runStarts.delete(oldest);
    }
    this.#runStarts.set(runId, seq);
  }

  /** The offset of a run's `run_started` chunk (remembered, else found by reading the session's stream). */
  async runStartSeq(sessionId: string, runId: string): Promise<number | undefined> {
    const known = this.#runStarts.get(runId);
    if (known !== undefined) return known;
    for await (const chunk of this.runtime.readStream(sessionId, { follow: false })) {
      if (chunk.type !== 'run_started') continue;
      this.noteRunStart(chunk.runId, chunk.seq);
      if (chunk.runId === runId) return chunk.seq;
    }
    return undefined;
  }

  /** The suspended run a session waits on, or `session_not_suspended` (409). */
  async suspendedRun(session: SessionSnapshot): Promise<RunRecord> {
    const run = session.currentRunId === undefined ? undefined : await this.runtime.getRun(session.currentRunId);
    if (!run || run.status !== 'suspended' || !run.suspension) {
      throw new AgentError('session_not_suspended', `Session ${session.sessionId} is not suspended${run ? ` (its run is ${run.status})` : ''}.`, { details: { sessionId: session.sessionId } });
    }
    return run;
  }
}

/** The 404 of a session that does not exist or is not the caller's. */
export function notFound(sessionId: string): ServerError {
  return new ServerError('http_not_found', `No session ${sessionId}.`);
}
