// Model calls and limits: retried attempts fire both LLM hooks each, exhausted retries fail the run,
// and maxSteps fails a run with an outputSchema but completes one without.
import { at, C1, C2, complete, fail, R1, row, toolCall } from '../expect.js';
import { calls, executeOnce, INITIAL, inTopic, text } from '../fixtures.js';
import { callRows, incrementCall, incrementStep, modelAttempt, modelCall, newTurn, soleRunCompleted, soleRunFailed } from '../fragments.js';
import type { RuntimeScenario } from '../scenario.js';

/** Model-call attempts and the step limit. */
export const modelCallScenarios: readonly RuntimeScenario[] = inTopic('model calls and limits', [
  {
    name: 'llm/retried-attempt',
    description:
      'a retryable provider error is retried within the step: beforeLLMCall and afterLLMCall fire for every attempt, the failed attempt\'s afterLLMCall carries its error (rules 69, 70, C9, D2)',
    run: (t) => executeOnce(t, { steps: [{ error: { status: 503 } }, text('second try')] }),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...modelAttempt(R1, 0, { messages: 2, tools: 1 }, 1, 'retry', 'provider_server_error'),
        ...modelAttempt(R1, 0, { messages: 2, tools: 1 }, 2, 'text'),
        at(R1, 0).message(1, row.assistant('second try')),
        at(R1, 0).exit('text', 1),
        complete(R1, 1, 'text', 'second try'),
      ],
      ...soleRunCompleted({ exitReason: 'text', output: 'second try', steps: 1, state: INITIAL }, [row.user('go'), row.assistant('second try')]),
    },
  },
  {
    name: 'llm/retries-exhausted',
    description: 'when the attempts of a step are used up the run fails with the last classified provider error, which keeps its retryable flag (rule 70, D12)',
    run: (t) => executeOnce(t, { attempts: 2, steps: [{ error: { status: 503 } }, { error: { status: 503 } }] }),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...modelAttempt(R1, 0, { messages: 2, tools: 1 }, 1, 'retry', 'provider_server_error'),
        ...modelAttempt(R1, 0, { messages: 2, tools: 1 }, 2, 'fail', 'provider_server_error'),
        fail(R1, 0, 'provider_server_error', true),
      ],
      ...soleRunFailed('provider_server_error', 0, INITIAL, [row.user('go')]),
    },
  },
  {
    name: 'limits/max-steps-with-output-schema',
    description: 'an agent with an outputSchema that reaches maxSteps without output fails with run_max_steps; onExit does not fire for the step limit (C10, rule 196)',
    run: (t) => executeOnce(t, { output: true, maxSteps: 2, steps: [calls(['increment', { by: 1 }]), calls(['increment', { by: 1 }]), calls(['increment', { by: 1 }])] }),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...incrementStep(R1, 0, { messages: 2, tools: 2 }, 1, C1, { by: 1 }, { count: 1, log: ['+1'] }),
        ...incrementStep(R1, 1, { messages: 4, tools: 2 }, 3, C2, { by: 1 }, { count: 2, log: ['+1', '+1'] }),
        fail(R1, 2, 'run_max_steps', false),
      ],
      ...soleRunFailed('run_max_steps', 2, { count: 2, log: ['+1', '+1'] }, [row.user('go'), ...callRows(toolCall(C1, 'increment', { by: 1 }), { by: 1 }), ...callRows(toolCall(C2, 'increment', { by: 1 }), { by: 1 })]),
    },
  },
  {
    name: 'limits/max-steps-without-output-schema',
    description: 'an agent without an outputSchema that reaches maxSteps completes with exitReason max_steps and its last text (C10)',
    async run(t) {
      const step = { text: 'still working', toolCalls: [{ name: 'increment', args: { by: 1 } }] };
      await executeOnce(t, { maxSteps: 2, steps: [step, step, step] });
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...modelCall(R1, 0, { messages: 2, tools: 1 }, 'tool_calls'),
        at(R1, 0).message(1, row.assistant('still working', toolCall(C1, 'increment', { by: 1 }))),
        ...incrementCall(R1, 0, C1, { by: 1 }, { count: 1, log: ['+1'] }, 2),
        ...modelCall(R1, 1, { messages: 4, tools: 1 }, 'tool_calls'),
        at(R1, 1).message(3, row.assistant('still working', toolCall(C2, 'increment', { by: 1 }))),
        ...incrementCall(R1, 1, C2, { by: 1 }, { count: 2, log: ['+1', '+1'] }, 4),
        complete(R1, 2, 'max_steps', 'still working'),
      ],
      ...soleRunCompleted({ exitReason: 'max_steps', output: 'still working', steps: 2, state: { count: 2, log: ['+1', '+1'] } }, [
        row.user('go'),
        row.assistant('still working', toolCall(C1, 'increment', { by: 1 })),
        row.tool(C1, 'increment', { by: 1 }),
        row.assistant('still working', toolCall(C2, 'increment', { by: 1 })),
        row.tool(C2, 'increment', { by: 1 }),
      ]),
    },
  },
]);
