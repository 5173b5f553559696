// Model calls and limits: retried attempts fire both LLM hooks each, exhausted retries fail the run,
// and maxSteps fails a run with an outputSchema but completes one without.
import { at, call, complete, fail, row, run, session, storedRun, storedSession, toolCall } from '../expect.js';
import { agent, calls, INITIAL, text } from '../fixtures.js';
import type { RuntimeScenario } from '../scenario.js';

const R1 = run(1);
const S1 = session(1);
const C1 = call(1);
const C2 = call(2);

/** Model-call attempts and the step limit. */
export const modelCallScenarios: readonly RuntimeScenario[] = [
  {
    name: 'llm/retried-attempt',
    topic: 'model calls and limits',
    description:
      'a retryable provider error is retried within the step: beforeLLMCall and afterLLMCall fire for every attempt, the failed attempt\'s afterLLMCall carries its error (rules 69, 70, C9, D2)',
    async run(t) {
      const a = agent(t, { steps: [{ error: { status: 503 } }, text('second try')] });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 1, 1),
        at(R1, 0).afterLLM('retry', 'provider_server_error', 1),
        at(R1, 0).beforeLLM(2, 1, 2),
        at(R1, 0).afterLLM('text', undefined, 2),
        at(R1, 0).message(1, row.assistant('second try')),
        at(R1, 0).exit('text', 1),
        complete(R1, 1, 'text', 'second try'),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      runs: [storedRun(R1, S1, 'start', 'completed', { output: 'second try', result: { status: 'completed', exitReason: 'text', output: 'second try', steps: 1, state: INITIAL } })],
      sessions: [storedSession(S1, R1, INITIAL, [row.user('go'), row.assistant('second try')])],
    },
  },
  {
    name: 'llm/retries-exhausted',
    topic: 'model calls and limits',
    description: 'when the attempts of a step are used up the run fails with the last classified provider error, which keeps its retryable flag (rule 70, D12)',
    async run(t) {
      const a = agent(t, { attempts: 2, steps: [{ error: { status: 503 } }, { error: { status: 503 } }] });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 1, 1),
        at(R1, 0).afterLLM('retry', 'provider_server_error', 1),
        at(R1, 0).beforeLLM(2, 1, 2),
        at(R1, 0).afterLLM('fail', 'provider_server_error', 2),
        fail(R1, 0, 'provider_server_error', true),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      runs: [storedRun(R1, S1, 'start', 'failed', { error: 'provider_server_error', result: { status: 'failed', error: 'provider_server_error', steps: 0, state: INITIAL } })],
      sessions: [storedSession(S1, R1, INITIAL, [row.user('go')])],
    },
  },
  {
    name: 'limits/max-steps-with-output-schema',
    topic: 'model calls and limits',
    description: 'an agent with an outputSchema that reaches maxSteps without output fails with run_max_steps; onExit does not fire for the step limit (C10, rule 196)',
    async run(t) {
      const a = agent(t, { output: true, maxSteps: 2, steps: [calls(['increment', { by: 1 }]), calls(['increment', { by: 1 }]), calls(['increment', { by: 1 }])] });
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
        at(R1, 1).afterLLM('tool_calls'),
        at(R1, 1).message(3, row.assistant('', toolCall(C2, 'increment', { by: 1 }))),
        at(R1, 1).beforeTool(C2, 'increment', { by: 1 }),
        at(R1, 1).state('tool', { count: 2, log: ['+1', '+1'] }, 'increment'),
        at(R1, 1).message(4, row.tool(C2, 'increment', { by: 1 })),
        at(R1, 1).afterTool(C2, 'increment', { by: 1 }, { by: 1 }),
        fail(R1, 2, 'run_max_steps', false),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      runs: [storedRun(R1, S1, 'start', 'failed', { error: 'run_max_steps', result: { status: 'failed', error: 'run_max_steps', steps: 2, state: { count: 2, log: ['+1', '+1'] } } })],
      sessions: [
        storedSession(S1, R1, { count: 2, log: ['+1', '+1'] }, [
          row.user('go'),
          row.assistant('', toolCall(C1, 'increment', { by: 1 })),
          row.tool(C1, 'increment', { by: 1 }),
          row.assistant('', toolCall(C2, 'increment', { by: 1 })),
          row.tool(C2, 'increment', { by: 1 }),
        ]),
      ],
    },
  },
  {
    name: 'limits/max-steps-without-output-schema',
    topic: 'model calls and limits',
    description: 'an agent without an outputSchema that reaches maxSteps completes with exitReason max_steps and its last text (C10)',
    async run(t) {
      const step = { text: 'still working', toolCalls: [{ name: 'increment', args: { by: 1 } }] };
      const a = agent(t, { maxSteps: 2, steps: [step, step, step] });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('still working', toolCall(C1, 'increment', { by: 1 }))),
        at(R1, 0).beforeTool(C1, 'increment', { by: 1 }),
        at(R1, 0).state('tool', { count: 1, log: ['+1'] }, 'increment'),
        at(R1, 0).message(2, row.tool(C1, 'increment', { by: 1 })),
        at(R1, 0).afterTool(C1, 'increment', { by: 1 }, { by: 1 }),
        at(R1, 1).beforeLLM(4, 1),
        at(R1, 1).afterLLM('tool_calls'),
        at(R1, 1).message(3, row.assistant('still working', toolCall(C2, 'increment', { by: 1 }))),
        at(R1, 1).beforeTool(C2, 'increment', { by: 1 }),
        at(R1, 1).state('tool', { count: 2, log: ['+1', '+1'] }, 'increment'),
        at(R1, 1).message(4, row.tool(C2, 'increment', { by: 1 })),
        at(R1, 1).afterTool(C2, 'increment', { by: 1 }, { by: 1 }),
        complete(R1, 2, 'max_steps', 'still working'),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      runs: [
        storedRun(R1, S1, 'start', 'completed', {
          output: 'still working',
          result: { status: 'completed', exitReason: 'max_steps', output: 'still working', steps: 2, state: { count: 2, log: ['+1', '+1'] } },
        }),
      ],
      sessions: [
        storedSession(S1, R1, { count: 2, log: ['+1', '+1'] }, [
          row.user('go'),
          row.assistant('still working', toolCall(C1, 'increment', { by: 1 })),
          row.tool(C1, 'increment', { by: 1 }),
          row.assistant('still working', toolCall(C2, 'increment', { by: 1 })),
          row.tool(C2, 'increment', { by: 1 }),
        ]),
      ],
    },
  },
];
