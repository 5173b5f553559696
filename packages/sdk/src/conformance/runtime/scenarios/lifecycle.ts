// The lifecycle table of the spec: how a run ends decides which terminal hooks fire.
import { z } from 'zod';
import { defineTool } from '../../../define.js';
import { at, call, complete, fail, row, run, session, storedRun, storedSession, superseded, toolCall } from '../expect.js';
import { agent, calls, finish, INITIAL, type Counter } from '../fixtures.js';
import type { RuntimeScenario } from '../scenario.js';

const R1 = run(1);
const R2 = run(2);
const S1 = session(1);
const C1 = call(1);
const C2 = call(2);

/** The rows of the lifecycle table: completes, fails after start, terminal commit fails, superseded, superseded after complete, fails at entry. */
export const lifecycleScenarios: readonly RuntimeScenario[] = [
  {
    name: 'lifecycle/completes',
    topic: 'lifecycle',
    description:
      'a run that completes fires onAgentComplete and no other terminal hook (rules 8, 30, 33); the start work, each step and the __finish__ completion in order',
    async run(t) {
      const a = agent(t, { output: true, steps: [calls(['increment', { by: 2 }]), finish('two')] });
      await t.result(await t.execute(a, 'count to two', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('count to two'),
        at(R1, 0).message(0, row.user('count to two')),
        at(R1, 0).beforeLLM(2, 2),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'increment', { by: 2 }))),
        at(R1, 0).beforeTool(C1, 'increment', { by: 2 }),
        at(R1, 0).state('tool', { count: 2, log: ['+2'] }, 'increment'),
        at(R1, 0).message(2, row.tool(C1, 'increment', { by: 2 })),
        at(R1, 0).afterTool(C1, 'increment', { by: 2 }, { by: 2 }),
        at(R1, 1).beforeLLM(4, 2),
        at(R1, 1).afterLLM('finish'),
        at(R1, 1).message(3, row.assistant('', toolCall(C2, '__finish__', { answer: 'two' }))),
        at(R1, 1).message(4, row.tool(C2, '__finish__', { ok: true })),
        at(R1, 1).exit('finish_tool', 2, { increment: 1 }),
        complete(R1, 2, 'finish_tool', { answer: 'two' }),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      runs: [
        storedRun(R1, S1, 'start', 'completed', {
          output: { answer: 'two' },
          result: { status: 'completed', exitReason: 'finish_tool', output: { answer: 'two' }, steps: 2, state: { count: 2, log: ['+2'] } },
        }),
      ],
      sessions: [
        storedSession(S1, R1, { count: 2, log: ['+2'] }, [
          row.user('count to two'),
          row.assistant('', toolCall(C1, 'increment', { by: 2 })),
          row.tool(C1, 'increment', { by: 2 }),
          row.assistant('', toolCall(C2, '__finish__', { answer: 'two' })),
          row.tool(C2, '__finish__', { ok: true }),
        ]),
      ],
    },
  },
  {
    name: 'lifecycle/fails-after-start',
    topic: 'lifecycle',
    description: 'a run that fails after its start hook fires onAgentFail once, with the error code and recoverable (rules 9, 35); the committed step is kept',
    async run(t) {
      const a = agent(t, { output: true, steps: [calls(['increment', { by: 1 }]), { error: { status: 401, message: 'bad key' } }] });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 2),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'increment', { by: 1 }))),
        at(R1, 0).beforeTool(C1, 'increment', { by: 1 }),
        at(R1, 0).state('tool', { count: 1, log: ['+1'] }, 'increment'),
        at(R1, 0).message(2, row.tool(C1, 'increment', { by: 1 })),
        at(R1, 0).afterTool(C1, 'increment', { by: 1 }, { by: 1 }),
        at(R1, 1).beforeLLM(4, 2),
        at(R1, 1).afterLLM('fail', 'provider_auth'),
        fail(R1, 1, 'provider_auth', false),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      runs: [
        storedRun(R1, S1, 'start', 'failed', {
          error: 'provider_auth',
          result: { status: 'failed', error: 'provider_auth', steps: 1, state: { count: 1, log: ['+1'] } },
        }),
      ],
      sessions: [
        storedSession(S1, R1, { count: 1, log: ['+1'] }, [
          row.user('go'),
          row.assistant('', toolCall(C1, 'increment', { by: 1 })),
          row.tool(C1, 'increment', { by: 1 }),
        ]),
      ],
    },
  },
  {
    name: 'lifecycle/terminal-commit-fails',
    topic: 'lifecycle',
    description:
      'a completing run whose terminal commit fails fires onAgentComplete, then onAgentFail, and ends failed; the complete hook\'s writes are never persisted (rules 43, 44, 45)',
    needs: ['storeFaults'],
    async run(t) {
      const a = agent(t, {
        output: true,
        steps: [finish('done')],
        layers: [{ hooks: { onAgentComplete: (_p, ctx) => ctx.updateState((d) => void d.log.push('complete-write')) } }],
      });
      t.faults().inject('terminal_commit');
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 2),
        at(R1, 0).afterLLM('finish'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, '__finish__', { answer: 'done' }))),
        at(R1, 0).message(2, row.tool(C1, '__finish__', { ok: true })),
        at(R1, 0).exit('finish_tool', 1),
        complete(R1, 1, 'finish_tool', { answer: 'done' }),
        at(R1, 1).state('hook', { count: 0, log: ['complete-write'] }),
        fail(R1, 1, 'state_commit_failed', true),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      runs: [
        storedRun(R1, S1, 'start', 'failed', {
          error: 'state_commit_failed',
          result: { status: 'failed', error: 'state_commit_failed', steps: 1, state: INITIAL },
        }),
      ],
      sessions: [storedSession(S1, R1, INITIAL, [row.user('go'), row.assistant('', toolCall(C1, '__finish__', { answer: 'done' })), row.tool(C1, '__finish__', { ok: true })])],
    },
  },
  {
    name: 'lifecycle/superseded',
    topic: 'lifecycle',
    description:
      'a run superseded by a newer execute() on its session fires onAgentSuperseded only (no complete, no fail) and persists nothing more; the newer run drives the session (rules 46, 47, 48, 49)',
    async run(t) {
      const started = t.deferred('the slow tool started');
      const gate = t.deferred('the gate');
      const slow = defineTool({
        name: 'slow',
        description: 'Waits for the gate.',
        inputSchema: z.object({}),
        execute: async (_input, ctx) => {
          started.resolve();
          await gate.wait();
          ctx.updateState<Counter>((d) => void (d.count = 99));
          return 'late';
        },
      });
      const sessionId = t.sessionId();
      const first = agent(t, { output: true, tools: [slow], steps: [calls(['slow', {}]), finish('a', 'finish-a')] });
      const second = agent(t, { output: true, steps: [finish('b', 'finish-b')] });
      const a = await t.execute(first, 'first', { sessionId });
      await started.wait();
      await t.result(await t.execute(second, 'second', { sessionId }));
      gate.resolve();
      await t.result(a);
    },
    expected: {
      hooks: [
        at(R1, 0).start('first'),
        at(R1, 0).message(0, row.user('first')),
        at(R1, 0).beforeLLM(2, 2),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'slow', {}))),
        at(R1, 0).beforeTool(C1, 'slow', {}),
        at(R2, 0).start('second'),
        at(R2, 0).message(1, row.user('second')),
        at(R2, 0).beforeLLM(3, 2),
        at(R2, 0).afterLLM('finish'),
        at(R2, 0).message(2, row.assistant('', toolCall(C2, '__finish__', { answer: 'b' }))),
        at(R2, 0).message(3, row.tool(C2, '__finish__', { ok: true })),
        at(R2, 0).exit('finish_tool', 1),
        complete(R2, 1, 'finish_tool', { answer: 'b' }),
        at(R1, 0).state('tool', { count: 99, log: [] }, 'slow'),
        at(R1, 0).message(2, row.tool(C1, 'slow', 'late')),
        at(R1, 0).afterTool(C1, 'slow', {}, 'late'),
        superseded(R1),
      ],
      entries: [
        { entry: 'execute', session: S1, run: R1 },
        { entry: 'execute', session: S1, run: R2 },
      ],
      runs: [
        storedRun(R1, S1, 'start', 'superseded', { result: { status: 'superseded', error: 'state_run_superseded' } }),
        storedRun(R2, S1, 'start', 'completed', {
          output: { answer: 'b' },
          result: { status: 'completed', exitReason: 'finish_tool', output: { answer: 'b' }, steps: 1, state: INITIAL },
        }),
      ],
      sessions: [
        storedSession(S1, R2, INITIAL, [
          row.user('first'),
          row.user('second'),
          row.assistant('', toolCall(C2, '__finish__', { answer: 'b' })),
          row.tool(C2, '__finish__', { ok: true }),
        ]),
      ],
    },
  },
  {
    name: 'lifecycle/superseded-after-complete',
    topic: 'lifecycle',
    description:
      'a supersede that lands after onAgentComplete and before the terminal commit fires onAgentComplete, then onAgentSuperseded; the run ends superseded (rules 45, 49)',
    async run(t) {
      const sessionId = t.sessionId();
      const second = agent(t, { output: true, steps: [finish('second', 'finish-2')] });
      const first = agent(t, {
        output: true,
        steps: [finish('first', 'finish-1')],
        layers: [
          {
            hooks: {
              onAgentComplete: async () => {
                await t.result(await t.execute(second, 'again', { sessionId }));
              },
            },
          },
        ],
      });
      await t.result(await t.execute(first, 'go', { sessionId }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 2),
        at(R1, 0).afterLLM('finish'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, '__finish__', { answer: 'first' }))),
        at(R1, 0).message(2, row.tool(C1, '__finish__', { ok: true })),
        at(R1, 0).exit('finish_tool', 1),
        complete(R1, 1, 'finish_tool', { answer: 'first' }),
        at(R2, 0).start('again'),
        at(R2, 0).message(3, row.user('again')),
        at(R2, 0).beforeLLM(5, 2),
        at(R2, 0).afterLLM('finish'),
        at(R2, 0).message(4, row.assistant('', toolCall(C2, '__finish__', { answer: 'second' }))),
        at(R2, 0).message(5, row.tool(C2, '__finish__', { ok: true })),
        at(R2, 0).exit('finish_tool', 1),
        complete(R2, 1, 'finish_tool', { answer: 'second' }),
        superseded(R1),
      ],
      entries: [
        { entry: 'execute', session: S1, run: R1 },
        { entry: 'execute', session: S1, run: R2 },
      ],
      runs: [
        storedRun(R1, S1, 'start', 'superseded', { result: { status: 'superseded', error: 'state_run_superseded' } }),
        storedRun(R2, S1, 'start', 'completed', {
          output: { answer: 'second' },
          result: { status: 'completed', exitReason: 'finish_tool', output: { answer: 'second' }, steps: 1, state: INITIAL },
        }),
      ],
      sessions: [
        storedSession(S1, R2, INITIAL, [
          row.user('go'),
          row.assistant('', toolCall(C1, '__finish__', { answer: 'first' })),
          row.tool(C1, '__finish__', { ok: true }),
          row.user('again'),
          row.assistant('', toolCall(C2, '__finish__', { answer: 'second' })),
          row.tool(C2, '__finish__', { ok: true }),
        ]),
      ],
    },
  },
  {
    name: 'lifecycle/fails-at-entry',
    topic: 'lifecycle',
    description: 'a run that fails at its run-start commit fires no hook at all and the entry rejects with a typed error; the refused entry changes nothing (rules 10, 11, 12, 34)',
    needs: ['storeFaults'],
    async run(t) {
      const sessionId = t.sessionId();
      const a = agent(t, { output: true, steps: [finish('ok')] });
      t.faults().inject('run_start');
      await t.execute(a, 'refused', { sessionId }).catch(() => undefined);
      t.note('session after the refused entry', (await t.runtime.getSession(sessionId)) !== undefined);
      await t.result(await t.execute(a, 'accepted', { sessionId }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('accepted'),
        at(R1, 0).message(0, row.user('accepted')),
        at(R1, 0).beforeLLM(2, 2),
        at(R1, 0).afterLLM('finish'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, '__finish__', { answer: 'ok' }))),
        at(R1, 0).message(2, row.tool(C1, '__finish__', { ok: true })),
        at(R1, 0).exit('finish_tool', 1),
        complete(R1, 1, 'finish_tool', { answer: 'ok' }),
      ],
      entries: [
        { entry: 'execute', rejected: 'state_commit_failed' },
        { entry: 'execute', session: S1, run: R1 },
      ],
      notes: [{ label: 'session after the refused entry', value: false }],
      runs: [
        storedRun(R1, S1, 'start', 'completed', {
          output: { answer: 'ok' },
          result: { status: 'completed', exitReason: 'finish_tool', output: { answer: 'ok' }, steps: 1, state: INITIAL },
        }),
      ],
      sessions: [storedSession(S1, R1, INITIAL, [row.user('accepted'), row.assistant('', toolCall(C1, '__finish__', { answer: 'ok' })), row.tool(C1, '__finish__', { ok: true })])],
    },
  },
  {
    name: 'lifecycle/fails-at-stream-claim',
    topic: 'lifecycle',
    description: 'a failed stream claim is an entry failure too: no hook fires, the entry rejects, and the run is recorded failed (rule 11)',
    needs: ['storeFaults'],
    async run(t) {
      const a = agent(t, { output: true, steps: [finish('never')] });
      t.faults().inject('stream_claim');
      await t.execute(a, 'go', { sessionId: t.sessionId() }).catch(() => undefined);
    },
    expected: {
      hooks: [],
      entries: [{ entry: 'execute', rejected: 'stream_closed' }],
      runs: [storedRun(R1, S1, 'start', 'failed', { error: 'stream_closed' })],
      sessions: [storedSession(S1, R1, INITIAL, [])],
    },
  },
];
