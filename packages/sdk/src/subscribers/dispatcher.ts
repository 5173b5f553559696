import { ConfigError } from '../errors.js';
import type { RunStartedInfo } from '../runtime/executor.js';
import { consoleLogger, type Logger } from '../runtime/logger.js';
import type { StateStore } from '../store.js';
import type { StreamManager } from '../stream.js';
import { toSessionEvent } from './chunk-events.js';
import type { HookKV, SessionArtifacts, SessionHookContext, SessionInfo } from './context.js';
import { createHookFiles, createHookKV, createSessionArtifacts } from './context.js';
import type { HookEventKey, MountedHook, MountedHookPack, SessionEventHandler } from './define.js';
import { hookEventKeys } from './define.js';
import type { SessionEvent } from './events.js';
import { SESSION_EVENT_TYPES } from './events.js';
import { InMemoryFileStore, InMemoryKVStore } from './memory.js';
import type { FileStore, KVStore } from './ports.js';

/** Where the dispatcher learns about runs and reads their records: a `JSAgentExecutor` fits. */
export interface RunSource {
  /** Calls the listener for every run that starts or is recovered; returns an unsubscribe function. */
  onRun(listener: (info: RunStartedInfo) => void): () => void;
  readonly stateStore: Pick<StateStore, 'getRun'>;
  readonly streamManager: StreamManager;
}

/** One handler call, as the observer sees it. */
export interface HookHandlerCall {
  readonly hook: string;
  /** The key of the handler: the event type, or `*`. */
  readonly key: HookEventKey;
  readonly event: SessionEvent;
  readonly agent: string;
}

/** Watches handler calls (the CLI shows hook activity with it). Observer errors are ignored. */
export interface HookDispatchObserver {
  handlerStarted?(call: HookHandlerCall): void;
  /** `error` is what the handler threw, when it did. */
  handlerFinished?(call: HookHandlerCall & { readonly durationMs: number; readonly error?: unknown }): void;
}

/** Options of {@link createHookDispatcher}. */
export interface HookDispatcherOptions {
  /** The executor whose runs are followed. */
  readonly source: RunSource;
  /** The hooks, in dispatch order: single mounted hooks and mounted packs. */
  readonly hooks: readonly (MountedHook | MountedHookPack)[];
  /** `ctx.host.kv` storage (default: in memory, lost on exit). */
  readonly kv?: KVStore;
  /** `ctx.host.files` and `ctx.artifacts` storage (default: in memory, lost on exit). */
  readonly files?: FileStore;
  /** Where handler errors are logged, as `hook "<name>" handler for <event> threw: …` (default: stderr). */
  readonly logger?: Logger;
  /** `ctx.stateRoot`. */
  readonly stateRoot?: string;
  readonly observer?: HookDispatchObserver;
  /** Only sessions of these agents are followed (default: every agent). */
  readonly agents?: readonly string[];
}

/** A running dispatcher. */
export interface HookDispatcher {
  /** The hooks that dispatch (hooks with an empty events map are left out). */
  readonly hooks: readonly MountedHook[];
  /** Resolves once every followed run has ended and all its events were handled. */
  idle(): Promise<void>;
  /**
   * Stops following: no new run is picked up, readers stop, `ctx.signal` aborts, and events not yet
   * dispatched are dropped (call idle() first to drain). Resolves when running handlers have settled.
   */
  close(): Promise<void>;
}

interface Lane {
  readonly runs: RunStartedInfo[];
  running: Promise<void> | undefined;
}

interface PreparedHook {
  readonly name: string;
  /** Handlers by event type: the typed one first, then `*`. */
  readonly handlers: ReadonlyMap<string, readonly { readonly key: HookEventKey; readonly handler: SessionEventHandler }[]>;
}

function prepare(mounted: readonly (MountedHook | MountedHookPack)[], logger: Logger): { prepared: PreparedHook[]; hooks: MountedHook[] } {
  const flat = mounted.flatMap((entry) => ('namespace' in entry ? entry.hooks : [entry]));
  const names = new Set<string>();
  const prepared: PreparedHook[] = [];
  const hooks: MountedHook[] = [];
  for (const entry of flat) {
    if (names.has(entry.name)) throw new ConfigError(`Two hooks are mounted as "${entry.name}".`, { hook: entry.name });
    names.add(entry.name);
    const keys = hookEventKeys(entry.hook);
    if (keys.length === 0) {
      logger.warn(`hook "${entry.name}" has an empty events map; skipped`);
      continue;
    }
    const events = entry.hook.events as Readonly<Record<string, SessionEventHandler | undefined>>;
    const star = events['*'];
    const handlers = new Map<string, { key: HookEventKey; handler: SessionEventHandler }[]>();
    for (const type of SESSION_EVENT_TYPES) {
      const list: { key: HookEventKey; handler: SessionEventHandler }[] = [];
      const typed = events[type];
      if (typed) list.push({ key: type, handler: typed });
      if (star) list.push({ key: '*', handler: star });
      if (list.length > 0) handlers.set(type, list);
    }
    prepared.push({ name: entry.name, handlers });
    hooks.push(entry);
  }
  return { prepared, hooks };
}

function sessionInfo(sessionId: string, info: RunStartedInfo, options: { userId?: string; tags?: readonly string[]; metadata?: Readonly<Record<string, string>> } | undefined): SessionInfo {
  const metadata = options?.metadata ?? {};
  const title = metadata['title'];
  return Object.freeze({
    id: sessionId,
    mode: metadata['mode'] === 'task' ? 'task' : 'chat',
    purpose: metadata['purpose'] === 'eval' ? 'eval' : 'live',
    ...(title === undefined ? {} : { title }),
    ...(options?.userId === undefined ? {} : { userId: options.userId }),
    ...(info.parentSessionId === undefined ? {} : { parentSessionId: info.parentSessionId }),
    tags: Object.freeze([...(options?.tags ?? [])]),
    metadata: Object.freeze({ ...metadata }),
  });
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Attaches event subscribers to an executor. From this moment, every run the executor starts or
 * recovers is followed from its own first chunk (its `startSeq`): its recorded chunks are read back
 * from the stream (so an event is dispatched only once it is recorded), turned into session events,
 * and handed to the hooks one at a time per session, in order. Sessions are independent; the model
 * never waits for a handler (the reader only reads the log). Nothing recorded before the dispatcher
 * attached is dispatched, so after a host restart no event is replayed (docs/rules.md, rule 166 and C11).
 * A handler that throws is logged and skipped; the next handler runs.
 */
export function createHookDispatcher(options: HookDispatcherOptions): HookDispatcher {
  const logger = options.logger ?? consoleLogger;
  const { prepared, hooks } = prepare(options.hooks, logger);
  const kvStore = options.kv ?? new InMemoryKVStore();
  const fileStore = options.files ?? new InMemoryFileStore();
  const agents = options.agents === undefined ? undefined : new Set(options.agents);
  const source = options.source;
  const observer = options.observer;
  const stop = new AbortController();
  const lanes = new Map<string, Lane>();
  const kvByAgent = new Map<string, HookKV>();
  let closed = false;

  const kvFor = (agent: string): HookKV => {
    let kv = kvByAgent.get(agent);
    if (!kv) {
      kv = createHookKV(kvStore, agent);
      kvByAgent.set(agent, kv);
    }
    return kv;
  };

  const notify = (fn: () => void): void => {
    try {
      fn();
    } catch {
      // An observer is a display aid; it must not disturb dispatch.
    }
  };

  async function dispatch(event: SessionEvent, agent: string, contexts: (hook: string) => SessionHookContext): Promise<void> {
    for (const hook of prepared) {
      const list = hook.handlers.get(event.type);
      if (!list) continue;
      for (const { key, handler } of list) {
        if (closed) return;
        const call: HookHandlerCall = { hook: hook.name, key, event, agent };
        if (observer?.handlerStarted) notify(() => observer.handlerStarted?.(call));
        const started = performance.now();
        let failure: { error: unknown } | undefined;
        try {
          await handler(event, contexts(hook.name));
        } catch (error) {
          failure = { error };
          logger.error(`hook "${hook.name}" handler for ${event.type} threw: ${errorText(error)}`, { sessionId: event.sessionId, index: event.index });
        }
        if (observer?.handlerFinished) {
          const durationMs = performance.now() - started;
          notify(() => observer.handlerFinished?.({ ...call, durationMs, ...(failure ? { error: failure.error } : {}) }));
        }
      }
    }
  }

  async function follow(info: RunStartedInfo): Promise<void> {
    let record;
    try {
      record = await source.stateStore.getRun(info.runId);
    } catch (error) {
      logger.warn(`hooks: could not load run ${info.runId} of session ${info.sessionId}; its events carry no turn id: ${errorText(error)}`);
    }
    const session = sessionInfo(info.sessionId, info, record?.options);
    const turnId = record?.turnId;
    const agent = Object.freeze({ name: info.agentType });
    const host = Object.freeze({ kv: kvFor(info.agentType), files: createHookFiles(fileStore, info.agentType, info.sessionId) });
    let artifacts: SessionArtifacts | undefined;
    const contexts = (hook: string): SessionHookContext => {
      artifacts ??= createSessionArtifacts(fileStore, info.agentType, info.sessionId, turnId);
      return Object.freeze({ session, agent, hook: Object.freeze({ name: hook }), host, artifacts, stateRoot: options.stateRoot, signal: stop.signal });
    };
    const context = { sessionId: info.sessionId, turnId, recovered: info.recovered };
    const chunks = source.streamManager.read(info.streamId, { fromSeq: info.startSeq, untilRunEnds: info.runId, signal: stop.signal });
    for await (const chunk of chunks) {
      if (closed) return;
      const event = toSessionEvent(chunk, context);
      if (event) await dispatch(event, info.agentType, contexts);
    }
  }

  async function pump(sessionId: string, lane: Lane): Promise<void> {
    for (let info = lane.runs.shift(); info !== undefined && !closed; info = lane.runs.shift()) {
      try {
        await follow(info);
      } catch (error) {
        // A reader stopped by close() may reject with its abort; that is not a failure.
        if (!closed) logger.error(`hooks: following run ${info.runId} of session ${sessionId} failed: ${errorText(error)}`);
      }
    }
    // Runs are only added while the pump is running, so an empty queue here means the lane is done.
    lane.running = undefined;
    lanes.delete(sessionId);
  }

  const unsubscribe = prepared.length === 0
    ? () => {}
    : source.onRun((info) => {
        if (closed || (agents !== undefined && !agents.has(info.agentType))) return;
        let lane = lanes.get(info.sessionId);
        if (!lane) {
          lane = { runs: [], running: undefined };
          lanes.set(info.sessionId, lane);
        }
        lane.runs.push(info);
        // One pump per session: a session's runs, and so its events, are handled strictly in order.
        lane.running ??= pump(info.sessionId, lane);
      });

  const running = (): Promise<void>[] => [...lanes.values()].flatMap((lane) => (lane.running ? [lane.running] : []));

  async function idle(): Promise<void> {
    for (let pending = running(); pending.length > 0; pending = running()) await Promise.all(pending);
  }

  return Object.freeze({
    hooks: Object.freeze(hooks),
    idle,
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      unsubscribe();
      stop.abort();
      await Promise.all(running());
    },
  });
}
