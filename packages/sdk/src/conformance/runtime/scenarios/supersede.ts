// Supersede: a newer entry during a model call, the fence refusing the start commit, a supersede raised
// inside a tool body (siblings may finish but nothing persists), a rewind taking over, a lost lease.
import { z } from 'zod';
import { defineTool } from '../../../define.js';
import { RunSupersededError } from '../../../errors.js';
import type { ScriptedStep } from '../../../testing/scripted-model.js';
import { at, call, complete, row, run, session, storedRun, storedSession, superseded, toolCall } from '../expect.js';
import { agent, calls, finish, INITIAL, text, type Counter } from '../fixtures.js';
import type { RuntimeScenario } from '../scenario.js';

const R1 = run(1);
const R2 = run(2);
const R3 = run(3);
const S1 = session(1);
const C1 = call(1);
const C2 = call(2);
const C3 = call(3);
const C4 = call(4);

/** Every way a run is superseded. */
export const supersedeScenarios: readonly RuntimeScenario[] = [
  {
    name: 'supersede/newer-execute-during-model-call',
    topic: 'supersede',
    description:
      'a newer execute() while a run waits for its model: the older run finishes its step in memory, its commit is refused by the fence and it fires onAgentSuperseded only (rules 46–49, D13)',
    async run(t) {
      const sessionId = t.sessionId();
      const calling = t.deferred('the first model call started');
      const gate = t.deferred('the gate');
      const slowModel: ScriptedStep = async () => {
        calling.resolve();
        await gate.wait();
        return finish('a', 'finish-a');
      };
      const first = agent(t, { output: true, steps: [slowModel] });
      const second = agent(t, { output: true, steps: [finish('b', 'finish-b')] });
      const a = await t.execute(first, 'first', { sessionId });
      await calling.wait();
      await t.result(await t.execute(second, 'second', { sessionId }));
      gate.resolve();
      await t.result(a);
    },
    expected: {
      hooks: [
        at(R1, 0).start('first'),
        at(R1, 0).message(0, row.user('first')),
        at(R1, 0).beforeLLM(2, 2),
        at(R2, 0).start('second'),
        at(R2, 0).message(1, row.user('second')),
        at(R2, 0).beforeLLM(3, 2),
        at(R2, 0).afterLLM('finish'),
        at(R2, 0).message(2, row.assistant('', toolCall(C1, '__finish__', { answer: 'b' }))),
        at(R2, 0).message(3, row.tool(C1, '__finish__', { ok: true })),
        at(R2, 0).exit('finish_tool', 1),
        complete(R2, 1, 'finish_tool', { answer: 'b' }),
        at(R1, 0).afterLLM('finish'),
        at(R1, 0).message(1, row.assistant('', toolCall(C2, '__finish__', { answer: 'a' }))),
        at(R1, 0).message(2, row.tool(C2, '__finish__', { ok: true })),
        at(R1, 0).exit('finish_tool', 1),
        superseded(R1),
      ],
      entries: [
        { entry: 'execute', session: S1, run: R1 },
        { entry: 'execute', session: S1, run: R2 },
      ],
      runs: [
        storedRun(R1, S1, 'start', 'superseded', { result: { status: 'superseded', error: 'state_run_superseded' } }),
        storedRun(R2, S1, 'start', 'completed', { output: { answer: 'b' }, result: { status: 'completed', exitReason: 'finish_tool', output: { answer: 'b' }, steps: 1, state: INITIAL } }),
      ],
      sessions: [
        storedSession(S1, R2, INITIAL, [row.user('first'), row.user('second'), row.assistant('', toolCall(C1, '__finish__', { answer: 'b' })), row.tool(C1, '__finish__', { ok: true })]),
      ],
    },
  },
  {
    name: 'supersede/fence-refuses-start-commit',
    topic: 'supersede',
    description: 'a run whose start commit is refused by the fence (a newer run took the session during its onAgentStart) fires onAgentSuperseded and writes nothing (rules 46, 47)',
    async run(t) {
      const sessionId = t.sessionId();
      const second = agent(t, { output: true, steps: [finish('b', 'finish-b')] });
      const first = agent(t, {
        output: true,
        steps: [finish('never')],
        layers: [{ hooks: { onAgentStart: async () => void (await t.result(await t.execute(second, 'second', { sessionId }))) } }],
      });
      await t.result(await t.execute(first, 'first', { sessionId }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('first'),
        at(R2, 0).start('second'),
        at(R2, 0).message(0, row.user('second')),
        at(R2, 0).beforeLLM(2, 2),
        at(R2, 0).afterLLM('finish'),
        at(R2, 0).message(1, row.assistant('', toolCall(C1, '__finish__', { answer: 'b' }))),
        at(R2, 0).message(2, row.tool(C1, '__finish__', { ok: true })),
        at(R2, 0).exit('finish_tool', 1),
        complete(R2, 1, 'finish_tool', { answer: 'b' }),
        at(R1, 0).message(0, row.user('first')),
        superseded(R1),
      ],
      entries: [
        { entry: 'execute', session: S1, run: R1 },
        { entry: 'execute', session: S1, run: R2 },
      ],
      runs: [
        storedRun(R1, S1, 'start', 'superseded', { result: { status: 'superseded', error: 'state_run_superseded' } }),
        storedRun(R2, S1, 'start', 'completed', { output: { answer: 'b' }, result: { status: 'completed', exitReason: 'finish_tool', output: { answer: 'b' }, steps: 1, state: INITIAL } }),
      ],
      sessions: [storedSession(S1, R2, INITIAL, [row.user('second'), row.assistant('', toolCall(C1, '__finish__', { answer: 'b' })), row.tool(C1, '__finish__', { ok: true })])],
    },
  },
  {
    name: 'supersede/raised-in-tool-body',
    topic: 'supersede',
    description:
      'a tool that throws its own run\'s RunSupersededError ends the run at once (onAgentSuperseded); a started sibling finishes and its hooks may follow, but nothing it produces persists and no later tool starts (rules 56–60)',
    async run(t) {
      const sessionId = t.sessionId();
      const slowStarted = t.deferred('the slow sibling started');
      const lateAsked = t.deferred('the late call reached beforeTool');
      const slowGate = t.deferred('the slow sibling may finish');
      const slowDone = t.deferred('the slow sibling finished');
      const supersededD = t.deferred('onAgentSuperseded fired');
      const newer = agent(t, { output: true, steps: [finish('newer', 'finish-newer')] });
      const slow = defineTool({
        name: 'slow',
        description: 'A sibling that is still running when the run ends.',
        inputSchema: z.object({}),
        execute: async (_input, ctx) => {
          slowStarted.resolve();
          await slowGate.wait();
          ctx.updateState<Counter>((d) => void (d.count = 50));
          return 'slow done';
        },
      });
      const fenced = defineTool({
        name: 'fenced',
        description: 'A fenced write that finds its run superseded.',
        inputSchema: z.object({}),
        execute: async (_input, ctx) => {
          await slowStarted.wait();
          await lateAsked.wait();
          // A newer run took the session; this tool's own fenced write is refused.
          await t.result(await t.execute(newer, 'newer', { sessionId }));
          throw new RunSupersededError(ctx.sessionId, ctx.runId, 'a newer run');
        },
      });
      const late = defineTool({
        name: 'late',
        description: 'Must never run.',
        inputSchema: z.object({}),
        execute: () => {
          t.note('the late tool ran', true);
          return 'late';
        },
      });
      const a = agent(t, {
        output: true,
        tools: [slow, fenced, late],
        steps: [calls(['slow', {}], ['fenced', {}], ['late', {}]), finish('never')],
        layers: [
          {
            hooks: {
              beforeTool: async (payload) => {
                if (payload.toolCall.name !== 'late') return;
                lateAsked.resolve();
                await supersededD.wait();
              },
              afterTool: (payload) => {
                if (payload.toolCall.name === 'slow') slowDone.resolve();
              },
              onAgentSuperseded: () => supersededD.resolve(),
            },
          },
        ],
      });
      const handle = await t.execute(a, 'first', { sessionId });
      await t.result(handle);
      slowGate.resolve();
      await slowDone.wait();
      await t.sleep(10);
    },
    expected: {
      hooks: [
        at(R1, 0).start('first'),
        at(R1, 0).message(0, row.user('first')),
        at(R1, 0).beforeLLM(2, 4),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'slow', {}), toolCall(C2, 'fenced', {}), toolCall(C3, 'late', {}))),
        at(R1, 0).beforeTool(C1, 'slow', {}),
        at(R1, 0).beforeTool(C2, 'fenced', {}),
        at(R1, 0).beforeTool(C3, 'late', {}),
        at(R2, 0).start('newer'),
        at(R2, 0).message(1, row.user('newer')),
        at(R2, 0).beforeLLM(3, 2),
        at(R2, 0).afterLLM('finish'),
        at(R2, 0).message(2, row.assistant('', toolCall(C4, '__finish__', { answer: 'newer' }))),
        at(R2, 0).message(3, row.tool(C4, '__finish__', { ok: true })),
        at(R2, 0).exit('finish_tool', 1),
        complete(R2, 1, 'finish_tool', { answer: 'newer' }),
        superseded(R1),
        at(R1, 0).state('tool', { count: 50, log: [] }, 'slow'),
        at(R1, 0).message(1, row.tool(C1, 'slow', 'slow done')),
        at(R1, 0).afterTool(C1, 'slow', {}, 'slow done'),
      ],
      entries: [
        { entry: 'execute', session: S1, run: R1 },
        { entry: 'execute', session: S1, run: R2 },
      ],
      runs: [
        storedRun(R1, S1, 'start', 'superseded', { result: { status: 'superseded', error: 'state_run_superseded' } }),
        storedRun(R2, S1, 'start', 'completed', { output: { answer: 'newer' }, result: { status: 'completed', exitReason: 'finish_tool', output: { answer: 'newer' }, steps: 1, state: INITIAL } }),
      ],
      sessions: [
        storedSession(S1, R2, INITIAL, [row.user('first'), row.user('newer'), row.assistant('', toolCall(C4, '__finish__', { answer: 'newer' })), row.tool(C4, '__finish__', { ok: true })]),
      ],
    },
  },
  {
    name: 'supersede/by-rewind',
    topic: 'supersede',
    description:
      'a from_checkpoint rewind while a run is going supersedes it: the rewind (onAgentResumed, previousRunId the running run) owes the rewound turn\'s start work; the older run fires onAgentSuperseded (rules 22, 46, 107)',
    async run(t) {
      const sessionId = t.sessionId();
      const started = t.deferred('the slow tool started');
      const gate = t.deferred('the gate');
      const slow = defineTool({
        name: 'slow',
        description: 'Waits for the gate.',
        inputSchema: z.object({}),
        execute: async () => {
          started.resolve();
          await gate.wait();
          return 'late';
        },
      });
      const a = agent(t, { tools: [slow], steps: [text('one'), calls(['slow', {}]), text('redo')] });
      await t.result(await t.execute(a, 'first', { sessionId }));
      const second = await t.send(sessionId, 'second');
      await started.wait();
      const endOfFirstTurn = (await t.runtime.listCheckpoints(sessionId)).find((c) => c.kind === 'step');
      if (!endOfFirstTurn) throw new Error('no step checkpoint');
      await t.result(await t.resume(sessionId, { mode: 'from_checkpoint', checkpointId: endOfFirstTurn.checkpointId }));
      gate.resolve();
      await t.result(second);
    },
    expected: {
      hooks: [
        at(R1, 0).start('first'),
        at(R1, 0).message(0, row.user('first')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('text'),
        at(R1, 0).message(1, row.assistant('one')),
        at(R1, 0).exit('text', 1),
        complete(R1, 1, 'text', 'one'),
        at(R2, 0).start('second'),
        at(R2, 0).message(2, row.user('second')),
        at(R2, 0).beforeLLM(4, 1),
        at(R2, 0).afterLLM('tool_calls'),
        at(R2, 0).message(3, row.assistant('', toolCall(C1, 'slow', {}))),
        at(R2, 0).beforeTool(C1, 'slow', {}),
        at(R3, 0).resumed(R2, true),
        at(R3, 0).start('second', false),
        at(R3, 0).message(2, row.user('second')),
        at(R3, 0).beforeLLM(4, 1),
        at(R3, 0).afterLLM('text'),
        at(R3, 0).message(3, row.assistant('redo')),
        at(R3, 0).exit('text', 1),
        complete(R3, 1, 'text', 'redo'),
        at(R2, 0).message(4, row.tool(C1, 'slow', 'late')),
        at(R2, 0).afterTool(C1, 'slow', {}, 'late'),
        superseded(R2),
      ],
      entries: [
        { entry: 'execute', session: S1, run: R1 },
        { entry: 'send', session: S1, run: R2 },
        { entry: 'resume', session: S1, run: R3 },
      ],
      runs: [
        storedRun(R1, S1, 'start', 'completed', { output: 'one', result: { status: 'completed', exitReason: 'text', output: 'one', steps: 1, state: INITIAL } }),
        storedRun(R2, S1, 'start', 'superseded', { result: { status: 'superseded', error: 'state_run_superseded' } }),
        storedRun(R3, S1, 'resumed', 'completed', { output: 'redo', result: { status: 'completed', exitReason: 'text', output: 'redo', steps: 1, state: INITIAL } }),
      ],
      sessions: [storedSession(S1, R3, INITIAL, [row.user('first'), row.assistant('one'), row.user('second'), row.assistant('redo')])],
    },
  },
  {
    name: 'supersede/lost-lease',
    topic: 'supersede',
    description: 'a run that loses its lease to another process is superseded (onAgentSuperseded only) and writes nothing more (rule 46, D13)',
    needs: ['leaseLoss'],
    async run(t) {
      const started = t.deferred('the waiting tool started');
      const wait = defineTool({
        name: 'wait',
        description: 'Waits until the run is told to stop.',
        inputSchema: z.object({}),
        execute: async (_input, ctx) => {
          started.resolve();
          await new Promise<void>((resolve) => ctx.abortSignal.addEventListener('abort', () => resolve(), { once: true }));
          return 'ok';
        },
      });
      const a = agent(t, { output: true, tools: [wait], steps: [calls(['wait', {}]), finish('never')] });
      const handle = await t.execute(a, 'go', { sessionId: t.sessionId() });
      await started.wait();
      await t.leases().takeOver(handle.runId);
      await t.result(handle);
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 2),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'wait', {}))),
        at(R1, 0).beforeTool(C1, 'wait', {}),
        at(R1, 0).message(2, row.tool(C1, 'wait', 'ok')),
        at(R1, 0).afterTool(C1, 'wait', {}, 'ok'),
        superseded(R1),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      runs: [storedRun(R1, S1, 'start', 'running', { result: { status: 'superseded', error: 'state_run_superseded' } })],
      sessions: [storedSession(S1, R1, INITIAL, [row.user('go')])],
    },
  },
];
