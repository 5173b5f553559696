// Scenarios runtime-js failed when the suite was first written (each expectation is what the rules say);
// the runtime was fixed and they are part of the suite, kept together as the regressions they pin.
import type { AgentHandle } from '../../../runtime/agent-runtime.js';
import type { ScriptedModel } from '../../../testing/scripted-model.js';
import { at, by, C1, C2, fail, R1, row, toolCall } from '../expect.js';
import { agent, appendToLog, boom, calls, executeOnce, finish, INITIAL, toolWithoutInput } from '../fixtures.js';
import { allowedCall, callFails, callsTools, newTurn, soleRunFailed, soleRunInterrupted } from '../fragments.js';
import type { RuntimeScenario } from '../scenario.js';

/** Scenarios runtime-js once failed: a blocked model call's note fires onMessage, a fail-closed throw leaves a note, a call a stop cancels still fires afterTool. */
export const regressionScenarios: readonly RuntimeScenario[] = [
  {
    name: 'steer/before-llm-block',
    topic: 'steering',
    description:
      'beforeLLMCall { block } makes no model call and no afterLLMCall, short-circuits later handlers, and fails the run with hook_blocked; the system note with the reason is a conversation row, so onMessage fires for it (rules 90, 216, C3, D11)',
    async run(t) {
      const a = agent(t, {
        output: true,
        steps: [finish('never')],
        layers: [
          { name: 'guard', hooks: { beforeLLMCall: () => ({ block: true, reason: '  prompt contains secrets ' }) } },
          { name: 'later', hooks: { beforeLLMCall: () => undefined } },
        ],
      });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
      t.note('model calls', (a.llmConfig.model as ScriptedModel).callCount);
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        by('guard', at(R1, 0).beforeLLM(2, 2)),
        at(R1, 0).message(1, row.system('Run blocked by an agent hook: prompt contains secrets')),
        fail(R1, 0, 'hook_blocked', false),
      ],
      ...soleRunFailed('hook_blocked', 0, INITIAL, [row.user('go'), row.system('Run blocked by an agent hook: prompt contains secrets')], [{ label: 'model calls', value: 0 }]),
    },
  },
  {
    name: 'policy/fail-closed-before-llm',
    topic: 'error policies',
    description:
      'under fail-closed, a throwing beforeLLMCall is treated like a block: no model call, hook_blocked, onAgentFail once, and a system note with the reason (the error message) that fires onMessage (rules 90, 217, C15, D11)',
    run: (t) => executeOnce(t, { output: true, steps: [finish('never')], layers: [{ hooks: { beforeLLMCall: boom('policy service down') }, onError: 'fail-closed' }] }),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        at(R1, 0).beforeLLM(2, 2),
        at(R1, 0).message(1, row.system('Run blocked by an agent hook: policy service down')),
        fail(R1, 0, 'hook_blocked', false),
      ],
      ...soleRunFailed('hook_blocked', 0, INITIAL, [row.user('go'), row.system('Run blocked by an agent hook: policy service down')]),
    },
  },
  {
    name: 'stop/cancels-running-call',
    topic: 'stop',
    description:
      'a stop while one call has finished and another is still running: the finished call keeps its result and writes; the running one is paired run_stopped, its writes are discarded, and it still fires onStateChange → onMessage → afterTool(success false) in the canonical order (rules 75, 125–127, D3, D4)',
    async run(t) {
      const handleD = t.deferred<AgentHandle>('the handle');
      const quickDone = t.deferred('the quick call finished');
      const quick = toolWithoutInput('quick', 'Finishes before the stop.', (ctx) => {
        appendToLog(ctx, 'quick');
        return 'quick done';
      });
      const stuck = toolWithoutInput('stuck', 'Writes, stops the run, and ends when its abort signal fires.', async (ctx) => {
        await quickDone.wait();
        appendToLog(ctx, 'stuck-partial');
        void handleD.wait().then((h) => h.stop('user pressed stop'));
        await new Promise((_resolve, reject) => ctx.abortSignal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }));
        return 'never';
      });
      const a = agent(t, {
        output: true,
        tools: [quick, stuck],
        steps: [calls(['quick', {}], ['stuck', {}]), finish('never')],
        layers: [{ hooks: { afterTool: (payload) => void (payload.toolCall.name === 'quick' && quickDone.resolve()) } }],
      });
      const handle = await t.execute(a, 'go', { sessionId: t.sessionId() });
      handleD.resolve(handle);
      await t.result(handle);
      await t.sleep(10);
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...callsTools(R1, 0, { messages: 2, tools: 3 }, 1, toolCall(C1, 'quick', {}), toolCall(C2, 'stuck', {})),
        ...allowedCall(R1, 0, toolCall(C1, 'quick', {}), [{ count: 0, log: ['quick'] }], 2, 'quick done'),
        ...callFails(R1, 0, toolCall(C2, 'stuck', {}), [{ count: 0, log: ['quick', 'stuck-partial'] }], 3, 'run_stopped'),
        fail(R1, 0, 'run_interrupted', true),
      ],
      ...soleRunInterrupted(0, { count: 0, log: ['quick'] }, [
        row.user('go'),
        row.assistant('', toolCall(C1, 'quick', {}), toolCall(C2, 'stuck', {})),
        row.tool(C1, 'quick', 'quick done'),
        row.toolError(C2, 'stuck', 'run_stopped'),
      ]),
    },
  },
];
