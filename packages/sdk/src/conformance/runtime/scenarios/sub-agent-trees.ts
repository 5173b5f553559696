// Sub-agents, part two: what a parent does with its children on every runtime. A wave of parallel children
// whose folds compose, a stop and a supersede of a parent whose child runs, and the depth and fan-out limits.
import { defineAgent, type AgentConfig } from '../../../define.js';
import type { Draft } from '../../../hooks/types.js';
import { defineSubAgentTool } from '../../../sub-agent-tool.js';
import { createScriptedModel, type ScriptedStep } from '../../../testing/scripted-model.js';
import type { Deferred, ScenarioContext } from '../context.js';
import { at, C1, C2, C3, C4, fail, R1, R2, R3, row, S1, S2, storedRun, storedSession, superseded, toolCall } from '../expect.js';
import { agent, calls, type Counter, CounterState, INITIAL, inTopic, lastPromptText, text, type TopicScenario } from '../fixtures.js';
import { callErrorRows, callRows, callsTools, completedRun, completesWithText, entered, foldsChild, interruptedRun, newTurn, spawnsChild, supersededRun } from '../fragments.js';
import type { HookLayer } from '../recorder.js';
import type { RuntimeScenario } from '../scenario.js';
import type { JsonValue, TraceEvent, TraceToolCall } from '../trace.js';
import { child, childStoppedInModelCall, deeper, dig, FIRST, fold, folded, one, research, SECOND, two } from './sub-agent-parts.js';

/** A fold of one child of the wave into the parent's counter state. */
type WaveFold = (d: Draft<Counter>) => void;

/**
 * The wave: four children (inputs task-a … task-d) whose outcomes are recorded in the order c, a, d, b;
 * their folds remove, push, and edit one path twice (d, then b), and add to the counter.
 */
const WAVE: Readonly<Record<string, WaveFold>> = {
  a: (d) => void d.log.push('a'),
  b: (d) => {
    d.log[1] = 'B';
    d.count += 2;
  },
  c: (d) => {
    d.log.splice(0, 1);
    d.count += 3;
  },
  d: (d) => void (d.log[1] = 'D'),
};
const WAVE_ORDER = ['c', 'a', 'd', 'b'] as const;
const WAVE_START = { count: 1, log: ['x', 'y', 'z'] };
/** The parent's state after each recorded fold, as running the folds one after another gives it. */
const WAVE_STATES = [
  { count: 4, log: ['y', 'z'] },
  { count: 4, log: ['y', 'z', 'a'] },
  { count: 4, log: ['y', 'D', 'a'] },
  { count: 6, log: ['y', 'B', 'a'] },
];
const task = (id: string) => toolCall(id, 'work', { input: `task-${id === C1 ? 'a' : id === C2 ? 'b' : id === C3 ? 'c' : 'd'}` });
const [TA, TB, TC, TD] = [task(C1), task(C2), task(C3), task(C4)] as const;

/** afterSubAgent of wave call `c` at step 0 (a success with the child's output `r-<x>`). */
const waveAfter = (c: TraceToolCall): TraceEvent => ({ point: 'afterSubAgent', run: R1, step: 0, call: c.call, agentType: 'worker', success: true });
/** A wave call's result row (at `index`) and afterTool. */
const waveEnd = (c: TraceToolCall, index: number): TraceEvent[] => {
  const result = `r-${String((c.args as { input: string }).input).slice(5)}`;
  return [at(R1, 0).message(index, row.tool(c.call, c.tool, result)), at(R1, 0).afterTool(c.call, c.tool, c.args, result)];
};

/**
 * The wave's children: one unrecorded agent (the scenario checks the parent) whose model, for input
 * task-x, waits until all four children called it, then until its turn (`turns[x]`) comes.
 */
function waveWorker(t: ScenarioContext, turns: Readonly<Record<string, Deferred>>): AgentConfig<unknown, unknown> {
  const started = Object.fromEntries(Object.keys(WAVE).map((x) => [x, t.deferred(`child ${x} called its model`)]));
  const step: ScriptedStep = async (options) => {
    const x = /task-([a-d])/.exec(lastPromptText(options.prompt))?.[1] ?? '?';
    started[x]?.resolve();
    await Promise.all(Object.values(started).map((d) => d.wait()));
    await turns[x]?.wait();
    return text(`r-${x}`);
  };
  return defineAgent<unknown, unknown>({ name: 'worker', llmConfig: { model: createScriptedModel([step], { loop: true }), retry: { maxAttempts: 1 } } });
}

/** A lead whose `research` child waits in its model call (10 s); `inModel` resolves once the child is there. */
function leadWithWaitingChild(t: ScenarioContext): { lead: AgentConfig<Counter, unknown>; inModel: Deferred } {
  const inModel = t.deferred('the child model call started');
  const researcher = child(t, 'researcher', [
    () => {
      inModel.resolve();
      return { text: 'never', delayMs: 10_000 };
    },
  ]);
  const lead = agent(t, { name: 'lead', tools: [defineSubAgentTool({ agent: researcher, name: 'research' })], steps: [calls(['research', { input: 'look' }]), text('never')], layers: [fold] });
  return { lead, inModel };
}

const scenarios: TopicScenario[] = [
  {
    name: 'subagent/parallel-folds-compose',
    description:
      "one step fans out to four children at once; their afterSubAgent ctx.updateState folds (a removal, a push, additions, two edits of one path) compose without locks: after each recorded outcome the parent's state equals running the folds one after another in recorded order (c, a, d, b), the same path goes to the last writer, and afterSubAgent fires once per child (the spawns and the first outcome share one stretch, listed call by call; rules 80–84)",
    async run(t) {
      const turns = Object.fromEntries(Object.keys(WAVE).map((x) => [x, t.deferred(`the turn of child ${x}`)]));
      const worker = waveWorker(t, turns);
      const folds: HookLayer<Counter, unknown> = {
        hooks: {
          afterSubAgent: (p, ctx) => ctx.updateState((d) => WAVE[String((p.call.input as { input: string }).input).slice(5)]?.(d)),
          // The next child answers once this one's outcome went all the way through.
          afterTool: (p) => {
            const x = String((p.toolCall.arguments as { input: string }).input).slice(5);
            const next = WAVE_ORDER[WAVE_ORDER.indexOf(x as (typeof WAVE_ORDER)[number]) + 1];
            if (next) turns[next]?.resolve();
          },
        },
      };
      const lead = agent(t, { name: 'lead', tools: [defineSubAgentTool({ agent: worker, name: 'work' })], steps: [calls(...Object.keys(WAVE).map((x) => ['work', { input: `task-${x}` }] as const)), text('done')], layers: [folds] });
      turns[WAVE_ORDER[0]]?.resolve();
      await t.result(await t.execute(lead, 'go', { sessionId: t.sessionId(), initialState: WAVE_START }));
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...callsTools(R1, 0, FIRST, 1, TA, TB, TC, TD),
        ...spawnsChild(R1, 0, TA, 'worker'),
        ...spawnsChild(R1, 0, TB, 'worker'),
        ...spawnsChild(R1, 0, TC, 'worker'),
        waveAfter(TC),
        ...spawnsChild(R1, 0, TD, 'worker'),
        at(R1, 0).state('hook', WAVE_STATES[0] as JsonValue),
        waveAfter(TA),
        ...waveEnd(TC, 2),
        at(R1, 0).state('hook', WAVE_STATES[1] as JsonValue),
        ...waveEnd(TA, 3),
        waveAfter(TD),
        at(R1, 0).state('hook', WAVE_STATES[2] as JsonValue),
        waveAfter(TB),
        ...waveEnd(TD, 4),
        at(R1, 0).state('hook', WAVE_STATES[3] as JsonValue),
        ...waveEnd(TB, 5),
        ...completesWithText(R1, 1, { messages: 7, tools: 1 }, 6, 'done', { work: 4 }),
      ],
      entries: [entered('execute', S1, R1)],
      runs: [completedRun(R1, S1, 'start', { exitReason: 'text', output: 'done', steps: 2, state: WAVE_STATES[3] as JsonValue })],
      sessions: [
        storedSession(S1, R1, WAVE_STATES[3] as JsonValue, [
          row.user('go'),
          row.assistant('', TA, TB, TC, TD),
          ...[TA, TB, TC, TD].map((c) => row.tool(c.call, c.tool, `r-${String((c.args as { input: string }).input).slice(5)}`)),
          row.assistant('done'),
        ]),
      ],
    },
  },
  {
    name: 'subagent/stop-parent-stops-child',
    description:
      "handle.stop() of a parent while its child waits for its model: the child is stopped too and fires its own onAgentFail(run_interrupted, recoverable); the parent's call ends with the child's outcome and the parent ends interrupted (onAgentFail) (issue 11 item 8; rules 125, 126)",
    async run(t) {
      const { lead, inModel } = leadWithWaitingChild(t);
      const handle = await t.execute(lead, 'go', { sessionId: t.sessionId() });
      await inModel.wait();
      t.note('stop() resolved with', (await handle.stop('user pressed stop')).status);
      await t.result(handle);
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...callsTools(R1, 0, FIRST, 1, research),
        ...spawnsChild(R1, 0, research, 'researcher'),
        ...childStoppedInModelCall(R2),
        // The parent hears the child's outcome; the call a stop ended is paired run_stopped and its fold is discarded (rule 126).
        { point: 'afterSubAgent', run: R1, step: 0, call: C1, agentType: 'researcher', success: false, error: 'run_interrupted' },
        at(R1, 0).state('hook', folded('failed undefined')),
        at(R1, 0).message(2, row.toolError(C1, 'research', 'run_stopped')),
        at(R1, 0).afterToolError(C1, 'research', { input: 'look' }, 'run_stopped'),
        fail(R1, 0, 'run_interrupted', true),
      ],
      entries: [entered('execute', S1, R1)],
      notes: [{ label: 'stop() resolved with', value: 'interrupted' }],
      runs: [interruptedRun(R1, S1, 'start', 0, INITIAL), storedRun(R2, S2, 'start', 'interrupted', { error: 'run_interrupted' })],
      sessions: [storedSession(S1, R1, INITIAL, [row.user('go'), ...callErrorRows(research, 'run_stopped')]), storedSession(S2, R2, {}, [row.user('look')])],
    },
  },
  {
    name: 'subagent/supersede-parent-ends-child',
    description:
      "a newer execute() on the parent's session while its child waits for its model: the child is stopped and fires its own onAgentFail(run_interrupted, recoverable); the parent fires onAgentSuperseded only and writes nothing more; the newer run completes (issue 11 item 8; rules 46–49)",
    async run(t) {
      const { lead, inModel } = leadWithWaitingChild(t);
      const sessionId = t.sessionId();
      // The newer run's hooks are not recorded: they would interleave with the older tree's ending.
      const newer = defineAgent<Counter, unknown>({ name: 'lead', stateSchema: CounterState, llmConfig: { model: createScriptedModel([text('newer')]) } });
      const handle = await t.execute(lead, 'first', { sessionId });
      await inModel.wait();
      await t.result(await t.execute(newer, 'second', { sessionId }));
      await t.result(handle);
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'first'),
        ...callsTools(R1, 0, FIRST, 1, research),
        ...spawnsChild(R1, 0, research, 'researcher'),
        ...childStoppedInModelCall(R3),
        // The parent does not fold a child it no longer owns: no afterSubAgent, no afterTool.
        superseded(R1),
      ],
      entries: [entered('execute', S1, R1), entered('execute', S1, R2)],
      runs: [supersededRun(R1, S1), completedRun(R2, S1, 'start', { exitReason: 'text', output: 'newer', steps: 1, state: INITIAL }), storedRun(R3, S2, 'start', 'interrupted', { error: 'run_interrupted' })],
      sessions: [storedSession(S1, R2, INITIAL, [row.user('first'), row.user('second'), row.assistant('newer')]), storedSession(S2, R3, {}, [row.user('look')])],
    },
  },
  {
    name: 'subagent/lost-lease-ends-child',
    description:
      "a parent that loses its lease to another process while its child waits for its model is superseded the same way: the child is stopped and fires its own onAgentFail(run_interrupted, recoverable), the parent fires onAgentSuperseded only (no afterSubAgent, no afterTool) and writes nothing more (issue 11 item 8; rule 46, D13)",
    needs: ['leaseLoss'],
    async run(t) {
      const { lead, inModel } = leadWithWaitingChild(t);
      const handle = await t.execute(lead, 'go', { sessionId: t.sessionId() });
      await inModel.wait();
      await t.leases().takeOver(handle.runId);
      await t.result(handle);
    },
    expected: {
      hooks: [...newTurn(R1, 0, 'go'), ...callsTools(R1, 0, FIRST, 1, research), ...spawnsChild(R1, 0, research, 'researcher'), ...childStoppedInModelCall(R2), superseded(R1)],
      entries: [entered('execute', S1, R1)],
      runs: [supersededRun(R1, S1, 'running'), storedRun(R2, S2, 'start', 'interrupted', { error: 'run_interrupted' })],
      sessions: [storedSession(S1, R1, INITIAL, [row.user('go')]), storedSession(S2, R2, {}, [row.user('look')])],
    },
  },
  {
    name: 'subagent/depth-limit',
    description:
      "under maxSubAgentDepth 1 a child's own sub-agent call is refused after its beforeTool with subagent_depth_exceeded (no beforeSubAgent, no grandchild run); the child's model gets the typed error and the child goes on, and so does the parent (issue 11 item 8)",
    limits: { maxSubAgentDepth: 1 },
    async run(t) {
      const leaf = defineAgent<unknown, unknown>({ name: 'leaf', llmConfig: { model: createScriptedModel([text('never')]) } });
      const middle = child(t, 'middle', [{ toolCalls: [{ name: 'leaf', args: { input: 'deeper' }, id: 'middle-call' }] }, text('shallow')], [defineSubAgentTool({ agent: leaf })]);
      const top = agent(t, { name: 'top', tools: [defineSubAgentTool({ agent: middle, name: 'delegate' })], steps: [calls(['delegate', { input: 'dig' }]), text('done')], layers: [fold] });
      await t.result(await t.execute(top, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...callsTools(R1, 0, FIRST, 1, dig),
        ...spawnsChild(R1, 0, dig, 'middle'),
        ...newTurn(R2, 0, 'dig'),
        ...callsTools(R2, 0, { messages: 1, tools: 1 }, 1, deeper),
        at(R2, 0).beforeTool(C2, 'leaf', { input: 'deeper' }),
        at(R2, 0).message(2, row.toolError(C2, 'leaf', 'subagent_depth_exceeded')),
        at(R2, 0).afterToolError(C2, 'leaf', { input: 'deeper' }, 'subagent_depth_exceeded'),
        ...completesWithText(R2, 1, { messages: 3, tools: 1 }, 3, 'shallow', { leaf: 1 }),
        ...foldsChild(R1, 0, dig, 'middle', { success: true, result: 'shallow' }, folded('ok shallow'), 2),
        ...completesWithText(R1, 1, SECOND, 3, 'done', { delegate: 1 }),
      ],
      entries: [entered('execute', S1, R1)],
      runs: [completedRun(R1, S1, 'start', { exitReason: 'text', output: 'done', steps: 2, state: folded('ok shallow') }), storedRun(R2, S2, 'start', 'completed', { output: 'shallow' })],
      sessions: [
        storedSession(S1, R1, folded('ok shallow'), [row.user('go'), ...callRows(dig, 'shallow'), row.assistant('done')]),
        storedSession(S2, R2, {}, [row.user('dig'), ...callErrorRows(deeper, 'subagent_depth_exceeded'), row.assistant('shallow')]),
      ],
    },
  },
  {
    name: 'subagent/fan-out-limit',
    description:
      "under maxSubAgentsPerStep 1 a step's second sub-agent call is refused after its beforeTool with subagent_fanout_exceeded (no beforeSubAgent, no child), while the first runs its child; the model gets both results and the parent goes on (issue 11 item 8; calls listed call by call, D16)",
    limits: { maxSubAgentsPerStep: 1 },
    async run(t) {
      // The child is not recorded: the parent's hooks of the two calls then form one stretch.
      const researcher = defineAgent<unknown, unknown>({ name: 'researcher', llmConfig: { model: createScriptedModel([text('found it')]) } });
      const lead = agent(t, { name: 'lead', tools: [defineSubAgentTool({ agent: researcher, name: 'research' })], steps: [calls(['research', { input: 'one' }], ['research', { input: 'two' }]), text('merged')] });
      await t.result(await t.execute(lead, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...callsTools(R1, 0, FIRST, 1, one, two),
        ...spawnsChild(R1, 0, one, 'researcher'),
        { point: 'afterSubAgent', run: R1, step: 0, call: C1, agentType: 'researcher', success: true },
        at(R1, 0).message(2, row.tool(C1, 'research', 'found it')),
        at(R1, 0).afterTool(C1, 'research', { input: 'one' }, 'found it'),
        at(R1, 0).beforeTool(C2, 'research', { input: 'two' }),
        at(R1, 0).message(3, row.toolError(C2, 'research', 'subagent_fanout_exceeded')),
        at(R1, 0).afterToolError(C2, 'research', { input: 'two' }, 'subagent_fanout_exceeded'),
        ...completesWithText(R1, 1, { messages: 5, tools: 1 }, 4, 'merged', { research: 2 }),
      ],
      entries: [entered('execute', S1, R1)],
      runs: [completedRun(R1, S1, 'start', { exitReason: 'text', output: 'merged', steps: 2, state: INITIAL })],
      sessions: [
        storedSession(S1, R1, INITIAL, [row.user('go'), row.assistant('', one, two), row.tool(C1, 'research', 'found it'), row.toolError(C2, 'research', 'subagent_fanout_exceeded'), row.assistant('merged')]),
      ],
    },
  },
];

/** What a parent does with its children on every runtime: folds of a parallel wave, stop, supersede, limits. */
export const subAgentTreeScenarios: readonly RuntimeScenario[] = inTopic('sub-agents', scenarios);
