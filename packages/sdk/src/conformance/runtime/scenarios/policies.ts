// Error policies (fail-run, fail-closed, block-tool, fail-open) at the points where they apply; the
// always-observe-only hooks; onAgentComplete throwing.
import { guardPolicy } from '../../../hooks/manager.js';
import { at, call, complete, fail, row, run, session, storedRun, storedSession, superseded, toolCall } from '../expect.js';
import { agent, calls, deleteTool, finish, INITIAL, lastPromptText, text } from '../fixtures.js';
import type { RuntimeScenario } from '../scenario.js';
import type { JsonValue } from '../trace.js';

const R1 = run(1);
const R2 = run(2);
const S1 = session(1);
const C1 = call(1);
const C2 = call(2);

function boom(message: string): () => never {
  return () => {
    throw new Error(message);
  };
}

/** The start of run R1 of a text agent on input `input`, up to its first beforeLLMCall. */
const firstCall = (input: string) => [at(R1, 0).start(input), at(R1, 0).message(0, row.user(input)), at(R1, 0).beforeLLM(2, 1)];

/** The hooks of an increment(by 1) call at step 0 of R1, up to its tool row (count 1). */
const incrementStep = [
  at(R1, 0).start('go'),
  at(R1, 0).message(0, row.user('go')),
  at(R1, 0).beforeLLM(2, 1),
  at(R1, 0).afterLLM('tool_calls'),
  at(R1, 0).message(1, row.assistant('', toolCall(C1, 'increment', { by: 1 }))),
  at(R1, 0).beforeTool(C1, 'increment', { by: 1 }),
];

/** A run that failed with `error` leaving `state` and `transcript`. */
function failedRun(error: string, steps: number, state: JsonValue, transcript: Parameters<typeof storedSession>[3]) {
  return {
    entries: [{ entry: 'execute' as const, session: S1, run: R1 }],
    runs: [storedRun(R1, S1, 'start', 'failed', { error, result: { status: 'failed', error, steps, state } })],
    sessions: [storedSession(S1, R1, state, transcript)],
  };
}

/** Error policies at the points where they apply, and the always-observe-only hooks. */
export const policyScenarios: readonly RuntimeScenario[] = [
  {
    name: 'policy/fail-run-on-agent-start',
    topic: 'error policies',
    description: 'under fail-run (the default), a throwing onAgentStart fails the run with hook_failed and onAgentFail fires once; no model call (rules 5, 26, C1)',
    async run(t) {
      const a = agent(t, { steps: [text('never')], layers: [{ hooks: { onAgentStart: boom('no start') } }] });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: { hooks: [at(R1, 0).start('go'), fail(R1, 0, 'hook_failed', false)], ...failedRun('hook_failed', 0, INITIAL, []) },
  },
  {
    name: 'policy/fail-run-initial-on-message',
    topic: 'error policies',
    description: 'a throwing initial onMessage (start work) fails the run and onAgentFail fires once; the start commit never lands (rules 26, 92)',
    async run(t) {
      const a = agent(t, { steps: [text('never')], layers: [{ hooks: { onMessage: (p) => (p.message.role === 'user' ? boom('bad input')() : undefined) } }] });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: { hooks: [at(R1, 0).start('go'), at(R1, 0).message(0, row.user('go')), fail(R1, 0, 'hook_failed', false)], ...failedRun('hook_failed', 0, INITIAL, []) },
  },
  {
    name: 'policy/fail-run-before-llm',
    topic: 'error policies',
    description: 'a throwing beforeLLMCall under fail-run fails the run with hook_failed: no model call, no afterLLMCall (C1, D2)',
    async run(t) {
      const a = agent(t, { steps: [text('never')], layers: [{ hooks: { beforeLLMCall: boom('rate limiter down') } }] });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: { hooks: [...firstCall('go'), fail(R1, 0, 'hook_failed', false)], ...failedRun('hook_failed', 0, INITIAL, [row.user('go')]) },
  },
  {
    name: 'policy/fail-run-after-llm',
    topic: 'error policies',
    description: 'a throwing afterLLMCall under fail-run fails the run before the reply is appended (C1, D2)',
    async run(t) {
      const a = agent(t, { steps: [text('answer')], layers: [{ hooks: { afterLLMCall: boom('metrics down') } }] });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: { hooks: [...firstCall('go'), at(R1, 0).afterLLM('text'), fail(R1, 0, 'hook_failed', false)], ...failedRun('hook_failed', 0, INITIAL, [row.user('go')]) },
  },
  {
    name: 'policy/fail-run-before-tool',
    topic: 'error policies',
    description: 'a throwing beforeTool under fail-run fails the run; afterTool does not fire for that call (C1, D4)',
    async run(t) {
      const a = agent(t, { steps: [calls(['increment', { by: 1 }]), text('never')], layers: [{ hooks: { beforeTool: boom('guard crashed') } }] });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: { hooks: [...incrementStep, fail(R1, 0, 'hook_failed', false)], ...failedRun('hook_failed', 0, INITIAL, [row.user('go')]) },
  },
  {
    name: 'policy/fail-run-after-tool-keeps-llm-writes',
    topic: 'error policies',
    description:
      'a throwing afterTool under fail-run fails the run; a step that fails without a stop keeps its afterLLMCall writes, the failed step\'s tool writes and rows are dropped (rules 126, 129, C1)',
    async run(t) {
      const a = agent(t, {
        steps: [calls(['increment', { by: 1 }]), text('never')],
        layers: [{ hooks: { afterLLMCall: (_p, ctx) => ctx.updateState((d) => void d.log.push('llm')), afterTool: boom('audit down') } }],
      });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).state('hook', { count: 0, log: ['llm'] }),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'increment', { by: 1 }))),
        at(R1, 0).beforeTool(C1, 'increment', { by: 1 }),
        at(R1, 0).state('tool', { count: 1, log: ['llm', '+1'] }, 'increment'),
        at(R1, 0).message(2, row.tool(C1, 'increment', { by: 1 })),
        at(R1, 0).afterTool(C1, 'increment', { by: 1 }, { by: 1 }),
        fail(R1, 0, 'hook_failed', false),
      ],
      ...failedRun('hook_failed', 0, { count: 0, log: ['llm'] }, [row.user('go')]),
    },
  },
  {
    name: 'policy/fail-run-on-state-change',
    topic: 'error policies',
    description: 'a throwing onStateChange under fail-run fails the run at the tool\'s write; the call gets no row and no afterTool (C1)',
    async run(t) {
      const a = agent(t, { steps: [calls(['increment', { by: 1 }]), text('never')], layers: [{ hooks: { onStateChange: boom('mirror down') } }] });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [...incrementStep, at(R1, 0).state('tool', { count: 1, log: ['+1'] }, 'increment'), fail(R1, 0, 'hook_failed', false)],
      ...failedRun('hook_failed', 0, INITIAL, [row.user('go')]),
    },
  },
  {
    name: 'policy/fail-run-on-message',
    topic: 'error policies',
    description: 'a throwing onMessage for the model\'s reply under fail-run fails the run (C1)',
    async run(t) {
      const a = agent(t, { steps: [text('answer')], layers: [{ hooks: { onMessage: (p) => (p.message.role === 'assistant' ? boom('mirror down')() : undefined) } }] });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [...firstCall('go'), at(R1, 0).afterLLM('text'), at(R1, 0).message(1, row.assistant('answer')), fail(R1, 0, 'hook_failed', false)],
      ...failedRun('hook_failed', 0, INITIAL, [row.user('go')]),
    },
  },
  {
    name: 'policy/fail-run-on-exit',
    topic: 'error policies',
    description: 'a throwing onExit under fail-run fails the run before the exiting step is committed (C1, D6)',
    async run(t) {
      const a = agent(t, { steps: [text('answer')], layers: [{ hooks: { onExit: boom('grader down') } }] });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [...firstCall('go'), at(R1, 0).afterLLM('text'), at(R1, 0).message(1, row.assistant('answer')), at(R1, 0).exit('text', 1), fail(R1, 0, 'hook_failed', false)],
      ...failedRun('hook_failed', 0, INITIAL, [row.user('go')]),
    },
  },
  {
    name: 'policy/fail-closed-after-llm',
    topic: 'error policies',
    description: 'under fail-closed, a throwing model-call hook fails the run with hook_blocked (C1, C15)',
    async run(t) {
      const a = agent(t, { steps: [text('answer')], layers: [{ hooks: { afterLLMCall: boom('policy service down') }, onError: 'fail-closed' }] });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: { hooks: [...firstCall('go'), at(R1, 0).afterLLM('text'), fail(R1, 0, 'hook_blocked', false)], ...failedRun('hook_blocked', 0, INITIAL, [row.user('go')]) },
  },
  {
    name: 'policy/fail-closed-after-tool',
    topic: 'error policies',
    description: 'under fail-closed, a throwing afterTool fails the run with hook_blocked (C1, C15)',
    async run(t) {
      const a = agent(t, { steps: [calls(['increment', { by: 1 }]), text('never')], layers: [{ hooks: { afterTool: boom('audit down') }, onError: 'fail-closed' }] });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        ...incrementStep,
        at(R1, 0).state('tool', { count: 1, log: ['+1'] }, 'increment'),
        at(R1, 0).message(2, row.tool(C1, 'increment', { by: 1 })),
        at(R1, 0).afterTool(C1, 'increment', { by: 1 }, { by: 1 }),
        fail(R1, 0, 'hook_blocked', false),
      ],
      ...failedRun('hook_blocked', 0, INITIAL, [row.user('go')]),
    },
  },
  {
    name: 'policy/block-tool-before-tool',
    topic: 'error policies',
    description: 'under block-tool (guardPolicy), a throwing beforeTool blocks the call: hook_blocked row, afterTool blocked, the thrown message goes to the model, the run continues (rule 219, C1, C15, D4)',
    async run(t) {
      const a = agent(t, {
        steps: [
          calls(['increment', { by: 1 }]),
          (options) => {
            t.note('the model saw the error', lastPromptText(options.prompt).includes('path check crashed'));
            return text('ok');
          },
        ],
        layers: [{ hooks: { beforeTool: boom('path check crashed') }, onError: guardPolicy }],
      });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        ...incrementStep,
        at(R1, 0).message(2, row.toolError(C1, 'increment', 'hook_blocked')),
        at(R1, 0).afterToolError(C1, 'increment', { by: 1 }, 'hook_blocked', true),
        at(R1, 1).beforeLLM(4, 1),
        at(R1, 1).afterLLM('text'),
        at(R1, 1).message(3, row.assistant('ok')),
        at(R1, 1).exit('text', 2),
        complete(R1, 2, 'text', 'ok'),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      notes: [{ label: 'the model saw the error', value: true }],
      runs: [storedRun(R1, S1, 'start', 'completed', { output: 'ok', result: { status: 'completed', exitReason: 'text', output: 'ok', steps: 2, state: INITIAL } })],
      sessions: [
        storedSession(S1, R1, INITIAL, [row.user('go'), row.assistant('', toolCall(C1, 'increment', { by: 1 })), row.toolError(C1, 'increment', 'hook_blocked'), row.assistant('ok')]),
      ],
    },
  },
  {
    name: 'policy/fail-open-before-tool',
    topic: 'error policies',
    description: 'under fail-open, a throwing beforeTool is logged and the call runs as if it had returned nothing (C1)',
    async run(t) {
      const a = agent(t, { steps: [calls(['increment', { by: 1 }]), text('ok')], layers: [{ hooks: { beforeTool: boom('flaky guard') }, onError: 'fail-open' }] });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        ...incrementStep,
        at(R1, 0).state('tool', { count: 1, log: ['+1'] }, 'increment'),
        at(R1, 0).message(2, row.tool(C1, 'increment', { by: 1 })),
        at(R1, 0).afterTool(C1, 'increment', { by: 1 }, { by: 1 }),
        at(R1, 1).beforeLLM(4, 1),
        at(R1, 1).afterLLM('text'),
        at(R1, 1).message(3, row.assistant('ok')),
        at(R1, 1).exit('text', 2, { increment: 1 }),
        complete(R1, 2, 'text', 'ok'),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      runs: [storedRun(R1, S1, 'start', 'completed', { output: 'ok', result: { status: 'completed', exitReason: 'text', output: 'ok', steps: 2, state: { count: 1, log: ['+1'] } } })],
      sessions: [
        storedSession(S1, R1, { count: 1, log: ['+1'] }, [row.user('go'), row.assistant('', toolCall(C1, 'increment', { by: 1 })), row.tool(C1, 'increment', { by: 1 }), row.assistant('ok')]),
      ],
    },
  },
  {
    name: 'policy/fail-open-after-hooks',
    topic: 'error policies',
    description: 'under guardPolicy, a throwing afterLLMCall and a throwing afterTool are logged and ignored (fail-open): the run completes (rules 220, 221)',
    async run(t) {
      const a = agent(t, { steps: [calls(['increment', { by: 1 }]), text('ok')], layers: [{ hooks: { afterLLMCall: boom('sink down'), afterTool: boom('sink down') }, onError: guardPolicy }] });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        ...incrementStep,
        at(R1, 0).state('tool', { count: 1, log: ['+1'] }, 'increment'),
        at(R1, 0).message(2, row.tool(C1, 'increment', { by: 1 })),
        at(R1, 0).afterTool(C1, 'increment', { by: 1 }, { by: 1 }),
        at(R1, 1).beforeLLM(4, 1),
        at(R1, 1).afterLLM('text'),
        at(R1, 1).message(3, row.assistant('ok')),
        at(R1, 1).exit('text', 2, { increment: 1 }),
        complete(R1, 2, 'text', 'ok'),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      runs: [storedRun(R1, S1, 'start', 'completed', { output: 'ok', result: { status: 'completed', exitReason: 'text', output: 'ok', steps: 2, state: { count: 1, log: ['+1'] } } })],
      sessions: [
        storedSession(S1, R1, { count: 1, log: ['+1'] }, [row.user('go'), row.assistant('', toolCall(C1, 'increment', { by: 1 })), row.tool(C1, 'increment', { by: 1 }), row.assistant('ok')]),
      ],
    },
  },
  {
    name: 'policy/fail-open-on-agent-start',
    topic: 'error policies',
    description: 'under fail-open, a throwing onAgentStart is logged and the run goes on (C1)',
    async run(t) {
      const a = agent(t, { steps: [text('ok')], layers: [{ hooks: { onAgentStart: boom('tracing down') }, onError: 'fail-open' }] });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [...firstCall('go'), at(R1, 0).afterLLM('text'), at(R1, 0).message(1, row.assistant('ok')), at(R1, 0).exit('text', 1), complete(R1, 1, 'text', 'ok')],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      runs: [storedRun(R1, S1, 'start', 'completed', { output: 'ok', result: { status: 'completed', exitReason: 'text', output: 'ok', steps: 1, state: INITIAL } })],
      sessions: [storedSession(S1, R1, INITIAL, [row.user('go'), row.assistant('ok')])],
    },
  },
  {
    name: 'policy/on-agent-fail-observe-only',
    topic: 'error policies',
    description: 'onAgentFail is always observe-only: a throw is logged even under a fail-run default, it fires once, the run keeps its own error, and its writes are dropped (rules 39, C1, C8)',
    async run(t) {
      const a = agent(t, {
        steps: [{ error: { status: 401 } }],
        layers: [
          {
            hooks: {
              onAgentFail: (_p, ctx) => {
                ctx.updateState((d) => void d.log.push('failed'));
                throw new Error('pager down');
              },
            },
            onError: 'fail-run',
          },
        ],
      });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [...firstCall('go'), at(R1, 0).afterLLM('fail', 'provider_auth'), fail(R1, 0, 'provider_auth', false)],
      ...failedRun('provider_auth', 0, INITIAL, [row.user('go')]),
    },
  },
  {
    name: 'policy/on-agent-superseded-observe-only',
    topic: 'error policies',
    description: 'onAgentSuperseded is always observe-only: a throw is logged and the run still ends superseded (rule 51, C1)',
    async run(t) {
      const sessionId = t.sessionId();
      const second = agent(t, { output: true, steps: [finish('second', 'finish-2')] });
      const first = agent(t, {
        output: true,
        steps: [finish('first', 'finish-1')],
        layers: [
          {
            hooks: {
              onAgentComplete: async () => void (await t.result(await t.execute(second, 'again', { sessionId }))),
              onAgentSuperseded: boom('span exporter down'),
            },
            onError: 'fail-run',
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
        storedRun(R2, S1, 'start', 'completed', { output: { answer: 'second' }, result: { status: 'completed', exitReason: 'finish_tool', output: { answer: 'second' }, steps: 1, state: INITIAL } }),
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
    name: 'policy/on-agent-retry-observe-only',
    topic: 'error policies',
    description: 'onAgentRetry is observe-only: a throw is logged and the retried run goes on (rule 112, C1)',
    async run(t) {
      const sessionId = t.sessionId();
      const a = agent(t, { steps: [{ error: { status: 401 } }, text('retried')], layers: [{ hooks: { onAgentRetry: boom('tracing down') }, onError: 'fail-run' }] });
      await t.result(await t.execute(a, 'go', { sessionId }));
      await t.result(await t.retry(sessionId));
    },
    expected: {
      hooks: [
        ...firstCall('go'),
        at(R1, 0).afterLLM('fail', 'provider_auth'),
        fail(R1, 0, 'provider_auth', false),
        at(R2, 0).retry(R1, true, false),
        at(R2, 0).beforeLLM(2, 1),
        at(R2, 0).afterLLM('text'),
        at(R2, 0).message(1, row.assistant('retried')),
        at(R2, 0).exit('text', 1),
        complete(R2, 1, 'text', 'retried'),
      ],
      entries: [
        { entry: 'execute', session: S1, run: R1 },
        { entry: 'retry', session: S1, run: R2 },
      ],
      runs: [
        storedRun(R1, S1, 'start', 'failed', { error: 'provider_auth', result: { status: 'failed', error: 'provider_auth', steps: 0, state: INITIAL } }),
        storedRun(R2, S1, 'retry', 'completed', { output: 'retried', result: { status: 'completed', exitReason: 'text', output: 'retried', steps: 1, state: INITIAL } }),
      ],
      sessions: [storedSession(S1, R2, INITIAL, [row.user('go'), row.assistant('retried')])],
    },
  },
  {
    name: 'policy/on-agent-resumed-observe-only',
    topic: 'error policies',
    description: 'onAgentResumed is observe-only in-process: a throw is logged and the resume proceeds (rule 104, C1)',
    async run(t) {
      const sessionId = t.sessionId();
      const a = agent(t, { tools: [deleteTool], steps: [calls(['remove', { path: 'x' }]), text('ok')], layers: [{ hooks: { onAgentResumed: boom('tracing down') }, onError: 'fail-run' }] });
      const first = await t.result(await t.execute(a, 'go', { sessionId }));
      await t.result(await t.approve(sessionId, first.suspension?.pending[0]?.toolCallId ?? ''));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'remove', { path: 'x' }))),
        at(R1, 0).beforeTool(C1, 'remove', { path: 'x' }),
        at(R1, 1).suspended('client_tool', [C1]),
        at(R2, 0).resumed(R1),
        at(R2, 0).state('tool', { count: 0, log: ['deleted x'] }, 'remove'),
        at(R2, 0).message(2, row.tool(C1, 'remove', { removed: 'x' })),
        at(R2, 0).afterTool(C1, 'remove', { path: 'x' }, { removed: 'x' }),
        at(R2, 0).beforeLLM(4, 1),
        at(R2, 0).afterLLM('text'),
        at(R2, 0).message(3, row.assistant('ok')),
        at(R2, 0).exit('text', 1, { remove: 1 }),
        complete(R2, 1, 'text', 'ok'),
      ],
      entries: [
        { entry: 'execute', session: S1, run: R1 },
        { entry: 'approve', session: S1, run: R2 },
      ],
      runs: [
        storedRun(R1, S1, 'start', 'suspended', { result: { status: 'suspended', steps: 1, state: INITIAL } }),
        storedRun(R2, S1, 'resumed', 'completed', { output: 'ok', result: { status: 'completed', exitReason: 'text', output: 'ok', steps: 1, state: { count: 0, log: ['deleted x'] } } }),
      ],
      sessions: [
        storedSession(S1, R2, { count: 0, log: ['deleted x'] }, [
          row.user('go'),
          row.assistant('', toolCall(C1, 'remove', { path: 'x' })),
          row.tool(C1, 'remove', { removed: 'x' }),
          row.assistant('ok'),
        ]),
      ],
    },
  },
  {
    name: 'policy/on-agent-suspended-observe-only',
    topic: 'error policies',
    description: 'onAgentSuspended is fail-open everywhere: a throw is logged and the suspension stands (rule 99, D15)',
    async run(t) {
      const a = agent(t, { tools: [deleteTool], steps: [calls(['remove', { path: 'x' }])], layers: [{ hooks: { onAgentSuspended: boom('pager down') }, onError: 'fail-run' }] });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'remove', { path: 'x' }))),
        at(R1, 0).beforeTool(C1, 'remove', { path: 'x' }),
        at(R1, 1).suspended('client_tool', [C1]),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      runs: [storedRun(R1, S1, 'start', 'suspended', { result: { status: 'suspended', steps: 1, state: INITIAL } })],
      sessions: [storedSession(S1, R1, INITIAL, [row.user('go'), row.assistant('', toolCall(C1, 'remove', { path: 'x' }))])],
    },
  },
  {
    name: 'policy/on-agent-complete-throws',
    topic: 'error policies',
    description: 'a throwing onAgentComplete leaves the run completed: its writes are dropped and onAgentFail does not fire (rule 42, C5)',
    async run(t) {
      const a = agent(t, {
        steps: [text('done')],
        layers: [
          {
            hooks: {
              onAgentComplete: (_p, ctx) => {
                ctx.updateState((d) => void d.log.push('partial'));
                throw new Error('metrics down');
              },
            },
          },
        ],
      });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [...firstCall('go'), at(R1, 0).afterLLM('text'), at(R1, 0).message(1, row.assistant('done')), at(R1, 0).exit('text', 1), complete(R1, 1, 'text', 'done')],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      runs: [storedRun(R1, S1, 'start', 'completed', { output: 'done', result: { status: 'completed', exitReason: 'text', output: 'done', steps: 1, state: INITIAL } })],
      sessions: [storedSession(S1, R1, INITIAL, [row.user('go'), row.assistant('done')])],
    },
  },
  {
    name: 'policy/on-agent-complete-writes-kept',
    topic: 'error policies',
    description: 'onAgentComplete\'s writes land in the terminal commit (rule 39)',
    async run(t) {
      const a = agent(t, { steps: [text('done')], layers: [{ hooks: { onAgentComplete: (_p, ctx) => ctx.updateState((d) => void d.log.push('completed')) } }] });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        ...firstCall('go'),
        at(R1, 0).afterLLM('text'),
        at(R1, 0).message(1, row.assistant('done')),
        at(R1, 0).exit('text', 1),
        complete(R1, 1, 'text', 'done'),
        at(R1, 1).state('hook', { count: 0, log: ['completed'] }),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      runs: [storedRun(R1, S1, 'start', 'completed', { output: 'done', result: { status: 'completed', exitReason: 'text', output: 'done', steps: 1, state: { count: 0, log: ['completed'] } } })],
      sessions: [storedSession(S1, R1, { count: 0, log: ['completed'] }, [row.user('go'), row.assistant('done')])],
    },
  },
];
