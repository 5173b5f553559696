// Stops: handle.stop() / interrupt(), stop by session, and the execute abortSignal, during a model call
// and during tools. A state write persists if and only if the row recording its work persists.
import type { AgentConfig, ToolContext, ToolDefinition } from '../../../define.js';
import type { AgentHandle } from '../../../runtime/agent-runtime.js';
import type { ScriptedStep } from '../../../testing/scripted-model.js';
import type { ScenarioContext } from '../context.js';
import { at, C1, fail, R1, row, toolCall } from '../expect.js';
import { agent, appendToLog, calls, type Counter, finish, inTopic, logs, toolWithoutInput, type TopicScenario } from '../fixtures.js';
import { allowedCall, callRows, callsTools, modelAttempt, modelCall, newTurn, soleRunInterrupted } from '../fragments.js';
import type { RuntimeScenario } from '../scenario.js';
import type { ExpectedTrace, TraceNote } from '../trace.js';

/** How a scenario stops the run. */
type StopKind = 'handle.stop' | 'handle.interrupt' | 'runtime.stop' | 'abortSignal';

/** A run on a new session and the way a scenario stops it. */
interface Stopper {
  /** Stops the run the way the kind says, without waiting for it to end; records what stop() resolves with. */
  stop(): void;
  /** Executes `a` on 'go' in the session (with the abortSignal for kind abortSignal), waits for its result, then 5 ms more for late hooks. */
  runToEnd(a: AgentConfig<Counter, unknown>): Promise<void>;
}

/** A {@link Stopper} of kind `kind` on a new session. */
function stopper(t: ScenarioContext, kind: StopKind): Stopper {
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
  const runToEnd = async (a: AgentConfig<Counter, unknown>): Promise<void> => {
    const started = await t.execute(a, 'go', { sessionId, ...(kind === 'abortSignal' ? { abortSignal: controller.signal } : {}) });
    handle.resolve(started);
    await t.result(started);
    await t.sleep(5);
  };
  return { stop, runToEnd };
}

/** The note a stop of kind `kind` records: what stop() resolved with (interrupted); none for the abortSignal. */
function stopNotes(kind: StopKind): TraceNote[] {
  return kind === 'abortSignal' ? [] : [{ label: `${kind}() resolved with`, value: 'interrupted' }];
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
  const execute = async (ctx: ToolContext): Promise<unknown> => {
    appendToLog(ctx, name);
    stop();
    await new Promise((resolve) => setTimeout(resolve, 5));
    return options.finishWith ? { answer: 'from the tool' } : 'finished';
  };
  return toolWithoutInput(name, 'Stops the run, then finishes.', execute, options);
}

/** The expectation of a stop during the first model call (start writes kept, afterLLMCall writes dropped). */
function stoppedInModelCall(kind: StopKind): ExpectedTrace {
  return {
    hooks: [
      ...newTurn(R1, 0, 'go', [{ count: 0, log: ['started'] }]),
      ...modelAttempt(R1, 0, { messages: 2, tools: 2 }, 1, 'fail', 'run_interrupted'),
      at(R1, 0).state('hook', { count: 0, log: ['started', 'llm'] }),
      fail(R1, 0, 'run_interrupted', true),
    ],
    ...soleRunInterrupted(0, { count: 0, log: ['started'] }, [row.user('go')], stopNotes(kind)),
  };
}

function modelCallScenario(kind: StopKind): TopicScenario {
  return {
    name: `stop/${kind}-during-model-call`,
    description: `${kind} during a model call: the call ends run_interrupted, onAgentFail(run_interrupted, recoverable), the step's afterLLMCall writes are discarded, the turn's start writes kept (rules 14, 125, 126, 130, C6)`,
    async run(t) {
      const s = stopper(t, kind);
      await s.runToEnd(agent(t, { output: true, steps: [stopsInModelCall(s.stop)], layers: [{ hooks: { onAgentStart: logs('started'), afterLLMCall: logs('llm') } }] }));
    },
    expected: stoppedInModelCall(kind),
  };
}

function toolScenario(kind: StopKind): TopicScenario {
  return {
    name: `stop/${kind}-during-tools`,
    description: `${kind} while a tool runs: the call that finishes keeps its recorded result and writes, afterLLMCall writes are discarded, the rows land in the terminal commit, the run ends interrupted (rules 125–127, C6)`,
    async run(t) {
      const s = stopper(t, kind);
      await s.runToEnd(agent(t, { output: true, tools: [stoppingTool('work', s.stop)], steps: [calls(['work', {}]), finish('never')], layers: [{ hooks: { afterLLMCall: logs('llm') } }] }));
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...modelCall(R1, 0, { messages: 2, tools: 2 }, 'tool_calls', [{ count: 0, log: ['llm'] }]),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'work', {}))),
        ...allowedCall(R1, 0, toolCall(C1, 'work', {}), [{ count: 0, log: ['llm', 'work'] }], 2, 'finished'),
        fail(R1, 0, 'run_interrupted', true),
      ],
      ...soleRunInterrupted(0, { count: 0, log: ['work'] }, [row.user('go'), ...callRows(toolCall(C1, 'work', {}), 'finished')], stopNotes(kind)),
    },
  };
}

/** Both stop kinds during a model call and during tools, with the kept and discarded writes. */
export const stopScenarios: readonly RuntimeScenario[] = inTopic('stop', [
  modelCallScenario('handle.stop'),
  modelCallScenario('abortSignal'),
  modelCallScenario('runtime.stop'),
  toolScenario('handle.interrupt'),
  toolScenario('abortSignal'),
  {
    name: 'stop/finish-with-call-kept',
    description: 'a finishWith call that ran before the stop keeps its result and writes, but the stopped run does not complete: it ends interrupted and onExit does not fire (rules 126, 127)',
    async run(t) {
      const s = stopper(t, 'handle.interrupt');
      await s.runToEnd(agent(t, { output: true, tools: [stoppingTool('report', s.stop, { finishWith: true })], steps: [calls(['report', {}])] }));
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...callsTools(R1, 0, { messages: 2, tools: 2 }, 1, toolCall(C1, 'report', {})),
        ...allowedCall(R1, 0, toolCall(C1, 'report', {}), [{ count: 0, log: ['report'] }], 2, { answer: 'from the tool' }),
        fail(R1, 0, 'run_interrupted', true),
      ],
      ...soleRunInterrupted(0, { count: 0, log: ['report'] }, [row.user('go'), ...callRows(toolCall(C1, 'report', {}), { answer: 'from the tool' })], stopNotes('handle.interrupt')),
    },
  },
]);
