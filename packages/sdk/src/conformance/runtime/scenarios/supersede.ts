// Supersede: a newer entry during a model call, the fence refusing the start commit, a supersede raised
// inside a tool body (siblings may finish but nothing persists), a rewind taking over, a lost lease.
import { RunSupersededError } from '../../../errors.js';
import { at, C1, C2, C3, C4, R1, R2, R3, row, S1, storedSession, superseded, toolCall } from '../expect.js';
import { agent, calls, finish, gatedStep, gatedTool, INITIAL, inTopic, newerExecuteWhileGated, resumeFromFirstStep, text, toolWithoutInput } from '../fixtures.js';
import { allowedCall, callsTools, callSucceeds, completedRun, completesWithFinish, completesWithText, entered, finishExit, finishRows, newTurn, owedStartWork, startsCalls, supersededByFinishingRun, supersededRun } from '../fragments.js';
import type { RuntimeScenario } from '../scenario.js';

/** Every way a run is superseded. */
export const supersedeScenarios: readonly RuntimeScenario[] = inTopic('supersede', [
  {
    name: 'supersede/newer-execute-during-model-call',
    description:
      'a newer execute() while a run waits for its model: the older run finishes its step in memory, its commit is refused by the fence and it fires onAgentSuperseded only (rules 46–49, D13)',
    async run(t) {
      const slowModel = gatedStep(t, finish('a', 'finish-a'));
      await newerExecuteWhileGated(t, { output: true, steps: [slowModel.step] }, slowModel);
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'first'),
        at(R1, 0).beforeLLM(2, 2),
        ...newTurn(R2, 1, 'second'),
        ...completesWithFinish(R2, 0, { messages: 3, tools: 2 }, 2, C1, 'b'),
        ...finishExit(R1, 0, 1, C2, 'a'),
        superseded(R1),
      ],
      ...supersededByFinishingRun('b', [row.user('first'), row.user('second'), ...finishRows(C1, 'b')]),
    },
  },
  {
    name: 'supersede/fence-refuses-start-commit',
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
        ...newTurn(R2, 0, 'second'),
        ...completesWithFinish(R2, 0, { messages: 2, tools: 2 }, 1, C1, 'b'),
        at(R1, 0).message(0, row.user('first')),
        superseded(R1),
      ],
      ...supersededByFinishingRun('b', [row.user('second'), ...finishRows(C1, 'b')]),
    },
  },
  {
    name: 'supersede/raised-in-tool-body',
    description:
      'a tool that throws its own run\'s RunSupersededError ends the run at once (onAgentSuperseded); a started sibling finishes and its hooks may follow, but nothing it produces persists and no later tool starts (rules 56–60)',
    async run(t) {
      const sessionId = t.sessionId();
      // The sibling that is still running when the run ends.
      const slow = gatedTool(t, { write: (d) => void (d.count = 50), result: 'slow done' });
      const lateAsked = t.deferred('the late call reached beforeTool');
      const slowDone = t.deferred('the slow sibling finished');
      const supersededD = t.deferred('onAgentSuperseded fired');
      const newer = agent(t, { output: true, steps: [finish('newer', 'finish-newer')] });
      const fenced = toolWithoutInput('fenced', 'A fenced write that finds its run superseded.', async (ctx) => {
        await slow.started.wait();
        await lateAsked.wait();
        // A newer run took the session; this tool's own fenced write is refused.
        await t.result(await t.execute(newer, 'newer', { sessionId }));
        throw new RunSupersededError(ctx.sessionId, ctx.runId, 'a newer run');
      });
      const late = toolWithoutInput('late', 'Must never run.', () => {
        t.note('the late tool ran', true);
        return 'late';
      });
      const a = agent(t, {
        output: true,
        tools: [slow.tool, fenced, late],
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
      slow.gate.resolve();
      await slowDone.wait();
      await t.sleep(10);
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'first'),
        ...startsCalls(R1, 0, { messages: 2, tools: 4 }, 1, toolCall(C1, 'slow', {}), toolCall(C2, 'fenced', {}), toolCall(C3, 'late', {})),
        ...newTurn(R2, 1, 'newer'),
        ...completesWithFinish(R2, 0, { messages: 3, tools: 2 }, 2, C4, 'newer'),
        superseded(R1),
        ...callSucceeds(R1, 0, toolCall(C1, 'slow', {}), [{ count: 50, log: [] }], 1, 'slow done'),
      ],
      ...supersededByFinishingRun('newer', [row.user('first'), row.user('newer'), ...finishRows(C4, 'newer')]),
    },
  },
  {
    name: 'supersede/by-rewind',
    description:
      'a from_checkpoint rewind while a run is going supersedes it: the rewind (onAgentResumed, previousRunId the running run) owes the rewound turn\'s start work; the older run fires onAgentSuperseded (rules 22, 46, 107)',
    async run(t) {
      const sessionId = t.sessionId();
      const slow = gatedTool(t);
      const a = agent(t, { tools: [slow.tool], steps: [text('one'), calls(['slow', {}]), text('redo')] });
      await t.result(await t.execute(a, 'first', { sessionId }));
      const second = await t.send(sessionId, 'second');
      await slow.started.wait();
      // The first step checkpoint is the end of the first turn.
      await t.result(await resumeFromFirstStep(t, sessionId));
      slow.gate.resolve();
      await t.result(second);
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'first'),
        ...completesWithText(R1, 0, { messages: 2, tools: 1 }, 1, 'one'),
        ...newTurn(R2, 2, 'second'),
        ...startsCalls(R2, 0, { messages: 4, tools: 1 }, 3, toolCall(C1, 'slow', {})),
        at(R3, 0).resumed(R2, true),
        ...owedStartWork(R3, 2, 'second'),
        ...completesWithText(R3, 0, { messages: 4, tools: 1 }, 3, 'redo'),
        ...callSucceeds(R2, 0, toolCall(C1, 'slow', {}), [], 4, 'late'),
        superseded(R2),
      ],
      entries: [entered('execute', S1, R1), entered('send', S1, R2), entered('resume', S1, R3)],
      runs: [completedRun(R1, S1, 'start', { exitReason: 'text', output: 'one', steps: 1, state: INITIAL }), supersededRun(R2, S1), completedRun(R3, S1, 'resumed', { exitReason: 'text', output: 'redo', steps: 1, state: INITIAL })],
      sessions: [storedSession(S1, R3, INITIAL, [row.user('first'), row.assistant('one'), row.user('second'), row.assistant('redo')])],
    },
  },
  {
    name: 'supersede/lost-lease',
    description: 'a run that loses its lease to another process is superseded (onAgentSuperseded only) and writes nothing more (rule 46, D13)',
    needs: ['leaseLoss'],
    async run(t) {
      const started = t.deferred('the waiting tool started');
      const wait = toolWithoutInput('wait', 'Waits until the run is told to stop.', async (ctx) => {
        started.resolve();
        await new Promise<void>((resolve) => ctx.abortSignal.addEventListener('abort', () => resolve(), { once: true }));
        return 'ok';
      });
      const a = agent(t, { output: true, tools: [wait], steps: [calls(['wait', {}]), finish('never')] });
      const handle = await t.execute(a, 'go', { sessionId: t.sessionId() });
      await started.wait();
      await t.leases().takeOver(handle.runId);
      await t.result(handle);
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...callsTools(R1, 0, { messages: 2, tools: 2 }, 1, toolCall(C1, 'wait', {})),
        ...allowedCall(R1, 0, toolCall(C1, 'wait', {}), [], 2, 'ok'),
        superseded(R1),
      ],
      entries: [entered('execute', S1, R1)],
      runs: [supersededRun(R1, S1, 'running')],
      sessions: [storedSession(S1, R1, INITIAL, [row.user('go')])],
    },
  },
]);
