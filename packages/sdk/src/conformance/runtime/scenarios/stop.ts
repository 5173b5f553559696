// Stops: handle.stop() / interrupt(), stop by session, and the execute abortSignal, during a model call
// and during tools. A state write persists if and only if the row recording its work persists.
import { z } from 'zod';
import { defineTool, type ToolDefinition } from '../../../define.js';
import type { AgentHandle } from '../../../runtime/agent-runtime.js';
import type { ScriptedStep } from '../../../testing/scripted-model.js';
import type { Deferred, ScenarioContext } from '../context.js';
import { at, call, fail, row, run, session, storedRun, storedSession, toolCall } from '../expect.js';
import { agent, calls, finish, type Counter } from '../fixtures.js';
import type { RuntimeScenario } from '../scenario.js';
import type { ExpectedTrace } from '../trace.js';

const R1 = run(1);
const S1 = session(1);
const C1 = call(1);

/** How a scenario stops the run. */
type StopKind = 'handle.stop' | 'handle.interrupt' | 'runtime.stop' | 'abortSignal';

/** Stops the run of `handle` / `sessionId` the way `kind` says, without waiting for it to end; records what stop() resolves with. */
function stopper(t: ScenarioContext, kind: StopKind): { readonly handle: Deferred<AgentHandle>; readonly sessionId: string; readonly controller: AbortController; stop(): void } {
  const handle = t.deferred<AgentHandle>('the handle');
  const sessionId = t.sessionId();
  const controller = new AbortController();
  const stop = (): void => {
    if (kind === 'abortSignal') {
      controller.abort();
      return;
    }
    const stopped =
      kind === 'runtime.stop'
        ? t.runtime.stop(sessionId, 'user pressed stop')
        : handle.wait().then((h) => (kind === 'handle.stop' ? h.stop('user pressed stop') : h.interrupt('user pressed stop')));
    void stopped.then((result) => t.note(`${kind}() resolved with`, result?.status ?? 'nothing'));
  };
  return { handle, sessionId, controller, stop };
}

/** A model step that stops the run while the call is in progress (the model never answers). */
function stopsInModelCall(stop: () => void): ScriptedStep {
  return () => {
    stop();
    return { ...finish('never'), delayMs: 10_000 };
  };
}

/** A tool that stops the run while it runs, then finishes anyway (its result is recorded). */
function stoppingTool(name: string, stop: () => void, options: { readonly finishWith?: boolean } = {}): ToolDefinition {
  return defineTool({
    name,
    description: 'Stops the run, then finishes.',
    inputSchema: z.object({}),
    ...(options.finishWith ? { finishWith: true } : {}),
    execute: async (_input, ctx) => {
      ctx.updateState<Counter>((d) => void d.log.push(name));
      stop();
      await new Promise((resolve) => setTimeout(resolve, 5));
      return options.finishWith ? { answer: 'from the tool' } : 'finished';
    },
  });
}

/** The expectation of a stop during the first model call (start writes kept, afterLLMCall writes dropped). */
function stoppedInModelCall(kind: StopKind): ExpectedTrace {
  return {
    hooks: [
      at(R1, 0).start('go'),
      at(R1, 0).state('hook', { count: 0, log: ['started'] }),
      at(R1, 0).message(0, row.user('go')),
      at(R1, 0).beforeLLM(2, 2),
      at(R1, 0).afterLLM('fail', 'run_interrupted'),
      at(R1, 0).state('hook', { count: 0, log: ['started', 'llm'] }),
      fail(R1, 0, 'run_interrupted', true),
    ],
    entries: [{ entry: 'execute', session: S1, run: R1 }],
    notes: kind === 'abortSignal' ? [] : [{ label: `${kind}() resolved with`, value: 'interrupted' }],
    runs: [storedRun(R1, S1, 'start', 'interrupted', { error: 'run_interrupted', result: { status: 'interrupted', error: 'run_interrupted', steps: 0, state: { count: 0, log: ['started'] } } })],
    sessions: [storedSession(S1, R1, { count: 0, log: ['started'] }, [row.user('go')])],
  };
}

function modelCallScenario(kind: StopKind): RuntimeScenario {
  return {
    name: `stop/${kind}-during-model-call`,
    topic: 'stop',
    description: `${kind} during a model call: the call ends run_interrupted, onAgentFail(run_interrupted, recoverable), the step's afterLLMCall writes are discarded, the turn's start writes kept (rules 14, 125, 126, 130, C6)`,
    async run(t) {
      const s = stopper(t, kind);
      const a = agent(t, {
        output: true,
        steps: [stopsInModelCall(s.stop)],
        layers: [{ hooks: { onAgentStart: (_p, ctx) => ctx.updateState((d) => void d.log.push('started')), afterLLMCall: (_p, ctx) => ctx.updateState((d) => void d.log.push('llm')) } }],
      });
      const handle = await t.execute(a, 'go', { sessionId: s.sessionId, ...(kind === 'abortSignal' ? { abortSignal: s.controller.signal } : {}) });
      s.handle.resolve(handle);
      await t.result(handle);
      await t.sleep(5);
    },
    expected: stoppedInModelCall(kind),
  };
}

function toolScenario(kind: StopKind): RuntimeScenario {
  return {
    name: `stop/${kind}-during-tools`,
    topic: 'stop',
    description: `${kind} while a tool runs: the call that finishes keeps its recorded result and writes, afterLLMCall writes are discarded, the rows land in the terminal commit, the run ends interrupted (rules 125–127, C6)`,
    async run(t) {
      const s = stopper(t, kind);
      const a = agent(t, {
        output: true,
        tools: [stoppingTool('work', s.stop)],
        steps: [calls(['work', {}]), finish('never')],
        layers: [{ hooks: { afterLLMCall: (_p, ctx) => ctx.updateState((d) => void d.log.push('llm')) } }],
      });
      const handle = await t.execute(a, 'go', { sessionId: s.sessionId, ...(kind === 'abortSignal' ? { abortSignal: s.controller.signal } : {}) });
      s.handle.resolve(handle);
      await t.result(handle);
      await t.sleep(5);
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 2),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).state('hook', { count: 0, log: ['llm'] }),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'work', {}))),
        at(R1, 0).beforeTool(C1, 'work', {}),
        at(R1, 0).state('tool', { count: 0, log: ['llm', 'work'] }, 'work'),
        at(R1, 0).message(2, row.tool(C1, 'work', 'finished')),
        at(R1, 0).afterTool(C1, 'work', {}, 'finished'),
        fail(R1, 0, 'run_interrupted', true),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      notes: kind === 'abortSignal' ? [] : [{ label: `${kind}() resolved with`, value: 'interrupted' }],
      runs: [storedRun(R1, S1, 'start', 'interrupted', { error: 'run_interrupted', result: { status: 'interrupted', error: 'run_interrupted', steps: 0, state: { count: 0, log: ['work'] } } })],
      sessions: [storedSession(S1, R1, { count: 0, log: ['work'] }, [row.user('go'), row.assistant('', toolCall(C1, 'work', {})), row.tool(C1, 'work', 'finished')])],
    },
  };
}

/** Both stop kinds during a model call and during tools, with the kept and discarded writes. */
export const stopScenarios: readonly RuntimeScenario[] = [
  modelCallScenario('handle.stop'),
  modelCallScenario('abortSignal'),
  modelCallScenario('runtime.stop'),
  toolScenario('handle.interrupt'),
  toolScenario('abortSignal'),
  {
    name: 'stop/finish-with-call-kept',
    topic: 'stop',
    description: 'a finishWith call that ran before the stop keeps its result and writes, but the stopped run does not complete: it ends interrupted and onExit does not fire (rules 126, 127)',
    async run(t) {
      const s = stopper(t, 'handle.interrupt');
      const a = agent(t, { output: true, tools: [stoppingTool('report', s.stop, { finishWith: true })], steps: [calls(['report', {}])] });
      const handle = await t.execute(a, 'go', { sessionId: s.sessionId });
      s.handle.resolve(handle);
      await t.result(handle);
      await t.sleep(5);
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 2),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'report', {}))),
        at(R1, 0).beforeTool(C1, 'report', {}),
        at(R1, 0).state('tool', { count: 0, log: ['report'] }, 'report'),
        at(R1, 0).message(2, row.tool(C1, 'report', { answer: 'from the tool' })),
        at(R1, 0).afterTool(C1, 'report', {}, { answer: 'from the tool' }),
        fail(R1, 0, 'run_interrupted', true),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      notes: [{ label: 'handle.interrupt() resolved with', value: 'interrupted' }],
      runs: [storedRun(R1, S1, 'start', 'interrupted', { error: 'run_interrupted', result: { status: 'interrupted', error: 'run_interrupted', steps: 0, state: { count: 0, log: ['report'] } } })],
      sessions: [storedSession(S1, R1, { count: 0, log: ['report'] }, [row.user('go'), row.assistant('', toolCall(C1, 'report', {})), row.tool(C1, 'report', { answer: 'from the tool' })])],
    },
  },
];

