import type { AgentConfig } from '../define.js';
import { AgentError } from '../errors.js';
import type { PendingCall, RunRecord, StateStore } from '../store.js';
import type { AgentHandle, ResumeOptions } from './agent-runtime.js';
import type { Logger } from './logger.js';
import type { LiveRun, RunEndedInfo } from './run-entry.js';

/** A call that a session of a sub-agent tree waits on a person or the caller for. */
export interface NestedPendingCall {
  /** The session whose suspended run waits on the call (the root's own, or a descendant's). */
  readonly sessionId: string;
  /** That suspended run (what an approval signature binds). */
  readonly runId: string;
  readonly toolCallId: string;
  readonly toolName: string;
  readonly kind: 'client' | 'approval';
  /** The call's arguments as the suspended run recorded them. */
  readonly input: unknown;
  /** 0 for the session asked about, 1 for its children, 2 for grandchildren, ... */
  readonly depth: number;
}

/** What the tree needs from its executor. */
export interface TreeHost {
  readonly stateStore: StateStore;
  readonly logger: Logger;
  /** The most a tree of sub-agents may nest (bounds every walk of it). */
  readonly maxDepth: number;
  /** The registered agent of this name, if any. */
  agent(agentType: string): AgentConfig<unknown, unknown> | undefined;
  /** Whether this process runs the session's current run. */
  isLive(sessionId: string): boolean;
  /** True once the executor began to shut down. */
  shuttingDown(): boolean;
  /** A `continue` resume of a suspended session. */
  resumeContinue(sessionId: string): Promise<AgentHandle>;
}

/** What wakes a parent: one of its children ended, or one of its children was resumed (an answer reached it). */
export type WakeTrigger = { readonly kind: 'ended' } | { readonly kind: 'resumed'; readonly childSessionId: string };

const ENDED = new Set(['completed', 'failed', 'interrupted', 'superseded']);
/** How a run that ended in this process can end. */
const TERMINAL = new Set(['completed', 'failed', 'interrupted']);

/** The suspended run of a session, or undefined. */
async function suspendedRun(store: StateStore, sessionId: string): Promise<{ run: RunRecord; agentType: string } | undefined> {
  const session = await store.loadSession(sessionId);
  if (session?.currentRunId === undefined) return undefined;
  const run = await store.getRun(session.currentRunId);
  return run?.status === 'suspended' && run.suspension ? { run, agentType: session.agentType } : undefined;
}

/** Whether a pending call is a sub-agent call of `agent` (its children are sessions the runtime spawned). */
export function isSubAgentCall(agent: AgentConfig<unknown, unknown> | undefined, pending: PendingCall): boolean {
  return pending.kind === 'children' && agent?.toolsByName.get(pending.toolName)?.subAgent !== undefined;
}

/**
 * The sub-agent side of suspension: a parent suspended on its children resumes by itself once they
 * have ended (or once an answer resumed one of them, which it then re-attaches to), and the calls a
 * descendant waits on can be found and answered through any ancestor's session.
 */
export class SubAgentTree {
  readonly #host: TreeHost;
  readonly #chains = new Map<string, Promise<unknown>>();

  constructor(host: TreeHost) {
    this.#host = host;
  }

  /**
   * Resumes `parentSessionId` (a `continue`) when its suspended run waits only on sub-agent children
   * that have all ended, or when `trigger` resumed one of the children it waits on. One wake per parent
   * at a time; a resume another process won is not an error. Returns the resumed run, if this call
   * resumed it.
   */
  wake(parentSessionId: string, trigger: WakeTrigger): Promise<AgentHandle | undefined> {
    const previous = this.#chains.get(parentSessionId) ?? Promise.resolve();
    const next = previous.then(() => this.#wakeNow(parentSessionId, trigger));
    const settled = next.catch(() => undefined);
    this.#chains.set(parentSessionId, settled);
    void settled.then(() => {
      if (this.#chains.get(parentSessionId) === settled) this.#chains.delete(parentSessionId);
    });
    return settled;
  }

  /** A run ended here: a parent it leaves waiting may resume now, and so may a parent that suspended on children that ended meanwhile. */
  async runEnded({ sessionId, parentSessionId, result }: RunEndedInfo): Promise<void> {
    if (result.status === 'suspended' && result.suspension?.reason === 'awaiting_children') await this.wake(sessionId, { kind: 'ended' });
    else if (parentSessionId !== undefined && TERMINAL.has(result.status)) await this.wake(parentSessionId, { kind: 'ended' });
  }

  /** A parent's sub-agent call whose child runs again in this process: a resume re-attaches to it. */
  reattachable(agent: AgentConfig<unknown, unknown>, call: PendingCall): boolean {
    return !this.#host.shuttingDown() && isSubAgentCall(agent, call) && (call.children ?? []).every((c) => this.#host.isLive(c.sessionId));
  }

  /** Resolves once every wake started so far has settled. */
  async idle(): Promise<void> {
    while (this.#chains.size > 0) await Promise.all([...this.#chains.values()]);
  }

  async #wakeNow(parentSessionId: string, trigger: WakeTrigger): Promise<AgentHandle | undefined> {
    const host = this.#host;
    if (trigger.kind === 'resumed' && host.shuttingDown()) return undefined;
    const suspended = await suspendedRun(host.stateStore, parentSessionId);
    if (!suspended) return undefined;
    const agent = host.agent(suspended.agentType);
    const pending = suspended.run.suspension?.pending ?? [];
    if (!agent) {
      // Without the agent its tools are unknown: a `children` call is a sub-agent call all the same.
      if (pending.some((p) => p.kind === 'children')) {
        host.logger.warn(`session ${parentSessionId} waits on sub-agents, but its agent "${suspended.agentType}" is not registered here; resume it with resume(sessionId, { mode: 'continue' })`);
      }
      return undefined;
    }
    const sub = pending.filter((p) => isSubAgentCall(agent, p));
    if (sub.length === 0) return undefined;
    const due = trigger.kind === 'resumed' ? sub.some((p) => (p.children ?? []).some((c) => c.sessionId === trigger.childSessionId)) : sub.length === pending.length && (await this.#allEnded(sub));
    if (!due) return undefined;
    try {
      return await host.resumeContinue(parentSessionId);
    } catch (error) {
      // Another resume of the parent came first (here or in another process): it delivers the children.
      if (AgentError.isInstance(error) && (error.code === 'state_conflict' || error.code === 'session_not_suspended')) return undefined;
      host.logger.error(`resuming session ${parentSessionId} after its children failed: ${error instanceof Error ? error.message : String(error)}`);
      return undefined;
    }
  }

  async #allEnded(calls: readonly PendingCall[]): Promise<boolean> {
    for (const call of calls) {
      for (const child of call.children ?? []) {
        const session = await this.#host.stateStore.loadSession(child.sessionId);
        const run = session?.currentRunId === undefined ? undefined : await this.#host.stateStore.getRun(session.currentRunId);
        if (!run || !ENDED.has(run.status)) return false;
      }
    }
    return true;
  }

  /**
   * The client-tool and approval calls that `sessionId` and its suspended descendants wait on, nearest
   * first. A descendant is reached through its parent's pending sub-agent calls only.
   */
  async pendingCalls(sessionId: string): Promise<NestedPendingCall[]> {
    const found: NestedPendingCall[] = [];
    const visited = new Set<string>();
    const walk = async (id: string, depth: number): Promise<void> => {
      if (visited.has(id) || depth > this.#host.maxDepth + 1) return;
      visited.add(id);
      const suspended = await suspendedRun(this.#host.stateStore, id);
      if (!suspended) return;
      const agent = this.#host.agent(suspended.agentType);
      const pending = suspended.run.suspension?.pending ?? [];
      for (const p of pending) {
        if (p.kind === 'client' || p.kind === 'approval') found.push({ sessionId: id, runId: suspended.run.runId, toolCallId: p.toolCallId, toolName: p.toolName, kind: p.kind, input: p.input, depth });
      }
      for (const p of pending) {
        if (!isSubAgentCall(agent, p)) continue;
        for (const child of p.children ?? []) await walk(child.sessionId, depth + 1);
      }
    };
    await walk(sessionId, 0);
    return found.sort((a, b) => a.depth - b.depth);
  }

  /**
   * Where a resume's answers go. Undefined: to `sessionId` itself (its own pending calls, or nothing
   * known anywhere, which the resume then refuses). Otherwise the one descendant session that waits
   * on every answered call. Answers that span sessions, and a call id several descendants wait on,
   * are refused with typed errors before anything is written.
   */
  async route(sessionId: string, own: readonly PendingCall[], options: ResumeOptions): Promise<string | undefined> {
    if (options.mode !== 'continue' && options.mode !== 'with_confirmation') return undefined;
    const answers = [...(options.toolResults ?? []).map((r) => ({ id: r.toolCallId, kind: 'client' as const })), ...(options.decisions ?? []).map((d) => ({ id: d.toolCallId, kind: 'approval' as const }))];
    const foreign = answers.filter((a) => !own.some((p) => p.toolCallId === a.id && p.kind === a.kind));
    if (foreign.length === 0) return undefined;
    const nested = (await this.pendingCalls(sessionId)).filter((c) => c.depth > 0);
    const targets = new Set<string>();
    for (const answer of foreign) {
      const matches = nested.filter((c) => c.toolCallId === answer.id && c.kind === answer.kind);
      if (matches.length === 0) return undefined;
      if (matches.length > 1) {
        throw new AgentError('tool_call_ambiguous', `Call ${answer.id} is pending in ${matches.length} sessions under ${sessionId}; answer it on the session that asked.`, {
          details: { sessionId, toolCallId: answer.id, sessions: matches.map((m) => m.sessionId) },
        });
      }
      targets.add((matches[0] as NestedPendingCall).sessionId);
    }
    if (targets.size > 1 || foreign.length < answers.length) {
      throw new AgentError('tool_call_not_pending', `The answers of one resume of session ${sessionId} are for calls of different sessions; answer each session's calls separately.`, {
        details: { sessionId, sessions: [...targets], toolCallIds: answers.map((a) => a.id) },
      });
    }
    return [...targets][0];
  }
}

/**
 * An executor's shutdown: `signal` is aborted, so sub-agent calls stop waiting and their parents
 * suspend (awaited first, so their suspension is committed before their children are let go); every
 * other live run is handed off; parents that resumed meanwhile (their children ended) are let go in the
 * next round. Like a stop, it waits for running tools to return. Resolves once nothing runs here.
 */
export async function shutDown(allLive: () => LiveRun[], signal: AbortController, tree: SubAgentTree): Promise<void> {
  // A run another process took over is not this process's any more: there is nothing to wait for.
  const liveRuns = (): LiveRun[] => allLive().filter((r) => !r.lost());
  let parents = new Set(liveRuns().filter((r) => r.childWaits() > 0));
  signal.abort();
  for (let round = 0; round < 8 && liveRuns().length > 0; round++) {
    await Promise.all([...parents].map((r) => r.handle.result()));
    await Promise.all(liveRuns().filter((r) => !parents.has(r)).map((r) => r.handOff()));
    await tree.idle();
    parents = new Set(liveRuns().filter((r) => r.childWaits() > 0));
  }
}
