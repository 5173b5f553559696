import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../errors.js';
import { memoryLogger, setup, textAgent } from '../__tests__/harness.js';
import { toSessionEvent } from './chunk-events.js';
import type { SessionHookContext } from './context.js';
import { defineHook, mountHook, mountHooks } from './define.js';
import { createHookDispatcher, type HookDispatcherOptions } from './dispatcher.js';
import type { SessionEvent } from './events.js';
import { InMemoryFileStore, InMemoryKVStore } from './memory.js';

interface Seen {
  readonly hook: string;
  readonly event: SessionEvent;
  readonly ctx: SessionHookContext;
}

/** A hook that records every event it gets. */
function recorder(name: string, seen: Seen[]) {
  return mountHook(
    name,
    defineHook({
      events: {
        '*': (event, ctx) => {
          seen.push({ hook: name, event, ctx });
        },
      },
    }),
  );
}

function wire(hooks: HookDispatcherOptions['hooks'], extra: Partial<HookDispatcherOptions> = {}) {
  const base = setup();
  const logger = memoryLogger();
  const dispatcher = createHookDispatcher({ source: base.executor, hooks, logger, ...extra });
  return { ...base, dispatcher, hookLog: logger };
}

const toolThenText = [
  { toolCalls: [{ name: 'increment', args: { by: 2 } }], usage: { inputTokens: 10, outputTokens: 3 } },
  { textChunks: ['Done', ' counting.'], usage: { inputTokens: 20, outputTokens: 4, cachedInputTokens: 5, reasoningTokens: 1 } },
];

describe('rule 140 / D8: the events of a turn, after they are recorded', () => {
  it('rule 140 / D8 / rules 146, 148, 150, 151, 153, 154, 155: maps a turn to message.received, actions.*, action.result, message.appended and turn.completed', async () => {
    const seen: Seen[] = [];
    const { executor, dispatcher, stateStore, streamManager } = wire([recorder('audit/all', seen)]);
    const handle = await executor.execute(textAgent(toolThenText), 'count please', { metadata: { title: 'Counting' } });
    const result = await handle.result();
    expect(result.status).toBe('completed');
    await dispatcher.idle();

    expect(seen.map((s) => s.event.type)).toEqual([
      'message.received',
      'actions.requested',
      'action.result',
      'actions.completed',
      'message.appended',
      'message.appended',
      'turn.completed',
    ]);
    const run = await stateStore.getRun(handle.runId);
    const chunks = streamManager.chunks(handle.streamId);
    for (const { event } of seen) {
      expect(event.sessionId).toBe(handle.sessionId);
      expect(event.turnId).toBe(run?.turnId);
      // Dispatched from the record: the chunk at `index` is in the log.
      expect(chunks[event.index]?.timestamp).toBe(event.at);
    }
    const indexes = seen.map((s) => s.event.index);
    expect([...indexes].sort((a, b) => a - b)).toEqual(indexes);

    const [received, requested, result1, completed, , , turn] = seen.map((s) => s.event);
    expect(received?.data).toEqual({ text: 'count please' });
    expect(requested?.data).toMatchObject({ calls: [{ toolName: 'increment', args: { by: 2 } }], stepIndex: 0 });
    expect(result1?.data).toMatchObject({ toolName: 'increment', output: { ok: true, by: 2 }, isError: false });
    expect(completed?.data).toMatchObject({ results: [{ toolName: 'increment', output: { ok: true, by: 2 }, isError: false }] });
    expect(turn?.type === 'turn.completed' && turn.data).toEqual({
      result: 'Done counting.',
      usage: { inputTokens: 30, outputTokens: 7, cacheReadTokens: 5, cacheWriteTokens: 0, reasoningTokens: 1 },
    });
    expect(seen[0]?.ctx.session).toMatchObject({ id: handle.sessionId, mode: 'chat', purpose: 'live', title: 'Counting' });
    expect(seen[0]?.ctx.agent).toEqual({ name: 'texter' });
    expect(seen[0]?.ctx.hook).toEqual({ name: 'audit/all' });
  });

  it('rule 152: turn.failed carries the message and status error, or cancelled for a stop', async () => {
    const seen: Seen[] = [];
    const { executor, dispatcher } = wire([recorder('fail', seen)]);
    const failing = await executor.execute(textAgent([{ error: { status: 401 } }]), 'hi');
    expect((await failing.result()).status).toBe('failed');
    const stopped = await executor.execute(textAgent([{ text: 'slow', delayMs: 5_000 }]), 'hi');
    await sleep(20);
    await stopped.stop('user pressed stop');
    await dispatcher.idle();
    const failures = seen.filter((s) => s.event.type === 'turn.failed').map((s) => [s.event.sessionId, s.event.data]);
    expect(failures).toEqual([
      [failing.sessionId, expect.objectContaining({ status: 'error', message: expect.stringContaining('API key') })],
      [stopped.sessionId, expect.objectContaining({ status: 'cancelled', error: expect.objectContaining({ code: 'run_interrupted' }) })],
    ]);
  });

  it('rule 144: the event is frozen and every hook gets the same object; the typed handler runs before "*"', async () => {
    const order: string[] = [];
    const events: SessionEvent[] = [];
    const first = defineHook({
      events: {
        'turn.completed': (event) => {
          order.push('first:typed');
          events.push(event);
          expect(Object.isFrozen(event) && Object.isFrozen(event.data)).toBe(true);
          expect(() => {
            (event as { type: string }).type = 'changed';
          }).toThrow(TypeError);
        },
        '*': (event) => {
          if (event.type === 'turn.completed') order.push('first:*');
        },
      },
    });
    const second = defineHook({
      events: {
        'turn.completed': (event) => {
          order.push('second:typed');
          events.push(event);
        },
      },
    });
    const { executor, dispatcher } = wire([mountHook('first', first), mountHook('second', second)]);
    await (await executor.execute(textAgent([{ text: 'ok' }]), 'hi')).result();
    await dispatcher.idle();
    expect(order).toEqual(['first:typed', 'first:*', 'second:typed']);
    expect(events[0]).toBe(events[1]);
    expect(events[0]?.type).toBe('turn.completed');
  });
});

describe('rules 143, 164, 167: one event at a time per session, isolation under concurrency', () => {
  it('rules 141, 143, 164, 167, 172: a slow and a throwing handler hold only their own session; a throw is logged (hook "<name>" handler for <event> threw) and skipped', async () => {
    const calls: { session: string; type: string; phase: 'start' | 'end' }[] = [];
    const inFlight = new Map<string, number>();
    const track = async (event: SessionEvent, ctx: SessionHookContext, body: () => Promise<void>) => {
      const now = (inFlight.get(event.sessionId) ?? 0) + 1;
      inFlight.set(event.sessionId, now);
      // Never two handlers of one session at once.
      expect(now).toBe(1);
      calls.push({ session: ctx.session.title ?? '?', type: event.type, phase: 'start' });
      try {
        await body();
      } finally {
        calls.push({ session: ctx.session.title ?? '?', type: event.type, phase: 'end' });
        inFlight.set(event.sessionId, now - 1);
      }
    };
    const slow = defineHook({
      events: {
        '*': (event, ctx) => track(event, ctx, async () => (ctx.session.title === 'slow' ? sleep(60) : undefined)),
      },
    });
    const throwing = defineHook({
      events: {
        'actions.requested': (event, ctx) =>
          track(event, ctx, async () => {
            if (ctx.session.title === 'slow') throw new Error('audit service down');
          }),
      },
    });
    const after = defineHook({ events: { 'actions.requested': (event, ctx) => track(event, ctx, async () => {}) } });
    const { executor, dispatcher, hookLog } = wire([mountHook('slow', slow), mountHook('throwing', throwing), mountHook('after', after)]);

    const started = performance.now();
    const [a, b] = await Promise.all([
      executor.execute(textAgent(toolThenText), 'session A', { metadata: { title: 'slow' } }),
      executor.execute(textAgent(toolThenText), 'session B', { metadata: { title: 'fast' } }),
    ]);
    const [ra, rb] = await Promise.all([a.result(), b.result()]);
    const resultsAt = performance.now() - started;
    expect([ra.status, rb.status]).toEqual(['completed', 'completed']);
    await dispatcher.idle();

    const ofSession = (title: string) => calls.filter((c) => c.session === title && c.phase === 'start').map((c) => c.type);
    const expected = ['message.received', 'actions.requested', 'actions.requested', 'actions.requested', 'action.result', 'actions.completed', 'message.appended', 'message.appended', 'turn.completed'];
    expect(ofSession('slow')).toEqual(expected);
    expect(ofSession('fast')).toEqual(expected);
    // Session B finished all its handlers while session A was still in its slow ones.
    const fastDone = calls.findIndex((c) => c.session === 'fast' && c.type === 'turn.completed' && c.phase === 'end');
    const slowDone = calls.findIndex((c) => c.session === 'slow' && c.type === 'turn.completed' && c.phase === 'end');
    expect(fastDone).toBeLessThan(slowDone);
    // 7 slow events of 60 ms: the runs' results did not wait for them.
    expect(resultsAt).toBeLessThan(300);
    const threw = hookLog.lines.filter((l) => l.includes('threw'));
    expect(threw).toEqual(['error: hook "throwing" handler for actions.requested threw: audit service down']);
  });
});

describe('rule 163 / C12: a turn never waits on a subscriber', () => {
  it('rule 163 / C12: a subscriber that sleeps 1 s on every event leaves the turn duration unchanged', async () => {
    const script = [{ toolCalls: [{ name: 'increment', args: { by: 1 } }] }, { text: 'ok' }];
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    const turn = async (executor: ReturnType<typeof setup>['executor']) => {
      const t = performance.now();
      const result = await (await executor.execute(textAgent(script), 'go')).result();
      expect(result.status).toBe('completed');
      return performance.now() - t;
    };
    let handled = 0;
    const sleepy = defineHook({
      events: {
        '*': async () => {
          await sleep(1_000);
          handled++;
        },
      },
    });
    const bare = setup();
    const { executor, dispatcher } = wire([mountHook('sleepy', sleepy)]);
    const baseline: number[] = [];
    const hooked: number[] = [];
    // Warm-up turns, then interleaved turns, so JIT and GC land on both sides alike.
    for (let i = 0; i < 5; i++) {
      await turn(bare.executor);
      await turn(executor);
    }
    for (let i = 0; i < 9; i++) {
      baseline.push(await turn(bare.executor));
      hooked.push(await turn(executor));
    }
    // 14 sessions x 6 events x 1 s of handlers are pending; every turn took milliseconds.
    expect(handled).toBe(0);
    expect(Math.max(...hooked)).toBeLessThan(250);
    expect(median(hooked)).toBeLessThan(median(baseline) + 10);
    console.info(`dispatch cost: median turn ${median(hooked).toFixed(1)} ms with a 1 s-per-event subscriber, ${median(baseline).toFixed(1)} ms without`);
    const closing = performance.now();
    await dispatcher.close();
    // close() waits for the handler running in each session (they run in parallel) and drops the rest.
    expect(performance.now() - closing).toBeGreaterThan(500);
    expect(handled).toBe(14);
  });
});

describe('rule 166 / C11: no replay after a host restart', () => {
  it('rule 166 / C11: a dispatcher attached later sees only runs that start after it attached', async () => {
    const base = setup();
    const first = await base.executor.execute(textAgent([{ text: 'one' }]), 'before restart');
    await first.result();

    // The "restarted host": a new executor on the same stores, with hooks attached at start-up.
    const { JSAgentExecutor } = await import('../runtime/executor.js');
    const { VercelAIAdapter } = await import('@helix-agents/llm-vercel');
    const executor = new JSAgentExecutor(base.stateStore, base.streamManager, new VercelAIAdapter(), { logger: memoryLogger() });
    const seen: Seen[] = [];
    const dispatcher = createHookDispatcher({ source: executor, hooks: [recorder('mirror', seen)], logger: memoryLogger() });
    const second = await executor.execute(textAgent([{ text: 'two' }]), 'after restart', { sessionId: first.sessionId });
    await second.result();
    await dispatcher.idle();
    expect(seen.map((s) => s.event.type)).toEqual(['message.received', 'message.appended', 'turn.completed']);
    expect(seen[0]?.event.data).toEqual({ text: 'after restart' });
    expect(Math.min(...seen.map((s) => s.event.index))).toBeGreaterThan(base.streamManager.chunks(first.sessionId).findIndex((c) => c.type === 'end'));
  });

  it('rule 166 / C11: a recovered run does not receive its turn input again', () => {
    const chunk = { type: 'run_started', signal: 'start', input: 'hi', streamId: 's', agentId: 's', agentType: 'a', runId: 'r', timestamp: 1, seq: 4 } as const;
    expect(toSessionEvent(chunk, { sessionId: 's', turnId: 't', recovered: false })).toMatchObject({ type: 'message.received', index: 4, turnId: 't' });
    expect(toSessionEvent(chunk, { sessionId: 's', turnId: 't', recovered: true })).toBeUndefined();
  });
});

describe('rules 159-161, 165: the handler context', () => {
  it('rules 159, 165: eval sessions fire too, with purpose, mode and title from execute metadata', async () => {
    const seen: Seen[] = [];
    const { executor, dispatcher } = wire([recorder('meter', seen)]);
    await (await executor.execute(textAgent([{ text: 'graded' }]), 'eval case 1', { metadata: { purpose: 'eval', mode: 'task', title: 'Case 1' }, userId: 'u1', tags: ['ci'] })).result();
    await dispatcher.idle();
    expect(seen.length).toBeGreaterThan(0);
    expect(seen[0]?.ctx.session).toMatchObject({ purpose: 'eval', mode: 'task', title: 'Case 1', userId: 'u1', tags: ['ci'] });
  });

  it('rules 160, 161: kv is shared by every session of an agent, files are per session unless deployment-scoped, artifacts are tagged', async () => {
    const kv = new InMemoryKVStore();
    const files = new InMemoryFileStore();
    const journal = defineHook({
      events: {
        async 'turn.completed'(event, ctx) {
          const count = (await ctx.host.kv.get<number>('turns')) ?? 0;
          await ctx.host.kv.set('turns', count + 1);
          await ctx.host.kv.set(`${ctx.session.id}:last`, { result: event.data.result as string });
          await ctx.host.files.append('journal.md', `- ${String(event.data.result)}\n`);
          await ctx.host.files.append('all.md', `${ctx.session.id}\n`, { scope: 'deployment' });
          await ctx.artifacts.create({ name: 'reply.txt', content: String(event.data.result), tags: { kind: 'reply' } });
        },
      },
    });
    const { executor, dispatcher, stateStore } = wire([mountHook('memory', journal)], { kv, files, stateRoot: '/tmp/state' });
    const one = await executor.execute(textAgent([{ text: 'first' }, { text: 'again' }]), 'a');
    await one.result();
    const again = await executor.execute(textAgent([{ text: 'again' }]), 'b', { sessionId: one.sessionId });
    await again.result();
    const two = await executor.execute(textAgent([{ text: 'second' }]), 'c');
    await two.result();
    await dispatcher.idle();

    expect(await kv.get('agent/texter', 'turns')).toBe(3);
    expect(await kv.get('agent/texter', `${two.sessionId}:last`)).toEqual({ result: 'second' });
    const read = async (bucket: string, path: string) => new TextDecoder().decode((await files.read(bucket, path))?.data);
    expect(await read(`session/texter/${one.sessionId}`, 'journal.md')).toBe('- first\n- again\n');
    expect(await read(`session/texter/${two.sessionId}`, 'journal.md')).toBe('- second\n');
    expect(await read('deployment/texter', 'all.md')).toBe(`${one.sessionId}\n${one.sessionId}\n${two.sessionId}\n`);
    const artifacts = await files.list(`artifacts/texter/${one.sessionId}`);
    const turnIds = [(await stateStore.getRun(one.runId))?.turnId, (await stateStore.getRun(again.runId))?.turnId];
    expect(artifacts.map((a) => a.metadata?.['tags'])).toEqual(turnIds.map((turnId) => ({ kind: 'reply', sessionId: one.sessionId, turnId })));
  });

  it('rules 161, 162: ctx.artifacts lists and reads back what the session created; ctx.stateRoot and ctx.signal are set', async () => {
    let listed: unknown;
    let content: string | undefined;
    let stateRoot: string | undefined;
    let aborted: boolean | undefined;
    const hook = defineHook({
      events: {
        async 'turn.completed'(_event, ctx) {
          const made = await ctx.artifacts.create({ name: 'out.json', content: '{"a":1}', mediaType: 'application/json' });
          listed = await ctx.artifacts.list();
          const back = await ctx.artifacts.read(made.id);
          content = back && new TextDecoder().decode(back.content);
          stateRoot = ctx.stateRoot;
          aborted = ctx.signal.aborted;
          expect(ctx.artifacts.tag({ x: 'y' })).toEqual({ x: 'y', sessionId: ctx.session.id, turnId: expect.any(String) });
        },
      },
    });
    const { executor, dispatcher } = wire([mountHook('art', hook)], { stateRoot: '/srv/state' });
    await (await executor.execute(textAgent([{ text: 'x' }]), 'go')).result();
    await dispatcher.idle();
    expect(listed).toEqual([expect.objectContaining({ name: 'out.json', mediaType: 'application/json', size: 7 })]);
    expect(content).toBe('{"a":1}');
    expect(stateRoot).toBe('/srv/state');
    expect(aborted).toBe(false);
  });
});

describe('rules 177, 178, 180: names, empty hooks and packs', () => {
  it('rule 178: an empty events map is skipped with a warning; a duplicate name is a ConfigError', () => {
    const logger = memoryLogger();
    const { executor } = setup();
    const dispatcher = createHookDispatcher({ source: executor, hooks: [mountHook('empty', defineHook({ events: {} }))], logger });
    expect(dispatcher.hooks).toEqual([]);
    expect(logger.lines).toEqual(['warn: hook "empty" has an empty events map; skipped']);
    const hook = defineHook({ events: { '*': () => {} } });
    expect(() => createHookDispatcher({ source: executor, hooks: [mountHook('a', hook), mountHook('a', hook)], logger })).toThrow(ConfigError);
  });

  it('rule 180: a pack mounts as <ns>__<name>, disableHook() removes one, and both dispatch in order', async () => {
    const seen: string[] = [];
    const make = (name: string) => defineHook({ events: { 'message.received': () => void seen.push(name) } });
    const pack = mountHooks('audit', { usage: make('usage'), pager: make('pager'), trace: make('trace') }).disableHook('pager');
    expect(pack.hooks.map((h) => h.name)).toEqual(['audit__usage', 'audit__trace']);
    expect(() => pack.disableHook('nope')).toThrow(ConfigError);
    expect(pack.disableHook('audit__trace').hooks.map((h) => h.name)).toEqual(['audit__usage']);
    const { executor, dispatcher } = wire([mountHook('local', make('local')), pack]);
    await (await executor.execute(textAgent([{ text: 'x' }]), 'go')).result();
    await dispatcher.idle();
    expect(seen).toEqual(['local', 'usage', 'trace']);
  });
});
