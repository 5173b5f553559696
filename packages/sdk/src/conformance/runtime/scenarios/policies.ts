// Error policies (fail-run, fail-closed, block-tool, fail-open) at the points where they apply; the
// always-observe-only hooks; onAgentComplete throwing.
import { guardPolicy } from '../../../hooks/manager.js';
import { at, C1, complete, fail, R1, R2, row, S1, toolCall } from '../expect.js';
import { appendToLog, boom, calls, type CounterWriter, deleteTool, executeOnce, executeThen, INITIAL, inTopic, logs, notesLastPrompt, pendingCallIds, text } from '../fixtures.js';
import { approvedRemoveTrace, blockedCall, callErrorRows, callRows, callsAndSuspends, callsTools, completesWithText, failedRun, failsInModelCall, incrementCall, modelCall, newTurn, retryCompletedWithText, soleRunCompleted, soleRunFailed, soleRunSuspended, textExit } from '../fragments.js';
import type { RuntimeScenario } from '../scenario.js';
import type { ExpectedTrace } from '../trace.js';
import { supersedeAfterComplete, supersededAfterCompleteTrace } from './lifecycle.js';

/** A hook handler that appends `entry` to the log, then throws `message`. */
function logsThenThrows(entry: string, message: string): (payload: unknown, ctx: CounterWriter) => never {
  return (_payload, ctx) => {
    appendToLog(ctx, entry);
    throw new Error(message);
  };
}

/** R1's new turn 'go' up to its first beforeLLMCall (2 messages, 1 tool). */
const firstCall = [...newTurn(R1, 0, 'go'), at(R1, 0).beforeLLM(2, 1)];

/** R1's new turn 'go' up to the onMessage of the model's increment(by 1) call (call C1, row 1). */
const asksToIncrement = [...newTurn(R1, 0, 'go'), ...callsTools(R1, 0, { messages: 2, tools: 1 }, 1, toolCall(C1, 'increment', { by: 1 }))];

/**
 * The trace of R1 on 'go' as if no hook had thrown: the model's increment(by 1) call runs, then the model
 * answers 'ok' and the run completes (the fail-open scenarios).
 */
const incrementedThenOk: ExpectedTrace = {
  hooks: [...asksToIncrement, ...incrementCall(R1, 0, C1, { by: 1 }, { count: 1, log: ['+1'] }, 2), ...completesWithText(R1, 1, { messages: 4, tools: 1 }, 3, 'ok', { increment: 1 })],
  ...soleRunCompleted({ exitReason: 'text', output: 'ok', steps: 2, state: { count: 1, log: ['+1'] } }, [row.user('go'), ...callRows(toolCall(C1, 'increment', { by: 1 }), { by: 1 }), row.assistant('ok')]),
};

/** Error policies at the points where they apply, and the always-observe-only hooks. */
export const policyScenarios: readonly RuntimeScenario[] = inTopic('error policies', [
  {
    name: 'policy/fail-run-on-agent-start',
    description: 'under fail-run (the default), a throwing onAgentStart fails the run with hook_failed and onAgentFail fires once; no model call (rules 5, 26, C1)',
    run: (t) => executeOnce(t, { steps: [text('never')], layers: [{ hooks: { onAgentStart: boom('no start') } }] }),
    expected: { hooks: [at(R1, 0).start('go'), fail(R1, 0, 'hook_failed', false)], ...soleRunFailed('hook_failed', 0, INITIAL, []) },
  },
  {
    name: 'policy/fail-run-initial-on-message',
    description: 'a throwing initial onMessage (start work) fails the run and onAgentFail fires once; the start commit never lands (rules 26, 92)',
    run: (t) => executeOnce(t, { steps: [text('never')], layers: [{ hooks: { onMessage: (p) => (p.message.role === 'user' ? boom('bad input')() : undefined) } }] }),
    expected: { hooks: [...newTurn(R1, 0, 'go'), fail(R1, 0, 'hook_failed', false)], ...soleRunFailed('hook_failed', 0, INITIAL, []) },
  },
  {
    name: 'policy/fail-run-before-llm',
    description: 'a throwing beforeLLMCall under fail-run fails the run with hook_failed: no model call, no afterLLMCall (C1, D2)',
    run: (t) => executeOnce(t, { steps: [text('never')], layers: [{ hooks: { beforeLLMCall: boom('rate limiter down') } }] }),
    expected: { hooks: [...firstCall, fail(R1, 0, 'hook_failed', false)], ...soleRunFailed('hook_failed', 0, INITIAL, [row.user('go')]) },
  },
  {
    name: 'policy/fail-run-after-llm',
    description: 'a throwing afterLLMCall under fail-run fails the run before the reply is appended (C1, D2)',
    run: (t) => executeOnce(t, { steps: [text('answer')], layers: [{ hooks: { afterLLMCall: boom('metrics down') } }] }),
    expected: { hooks: [...firstCall, at(R1, 0).afterLLM('text'), fail(R1, 0, 'hook_failed', false)], ...soleRunFailed('hook_failed', 0, INITIAL, [row.user('go')]) },
  },
  {
    name: 'policy/fail-run-before-tool',
    description: 'a throwing beforeTool under fail-run fails the run; afterTool does not fire for that call (C1, D4)',
    run: (t) => executeOnce(t, { steps: [calls(['increment', { by: 1 }]), text('never')], layers: [{ hooks: { beforeTool: boom('guard crashed') } }] }),
    expected: { hooks: [...asksToIncrement, at(R1, 0).beforeTool(C1, 'increment', { by: 1 }), fail(R1, 0, 'hook_failed', false)], ...soleRunFailed('hook_failed', 0, INITIAL, [row.user('go')]) },
  },
  {
    name: 'policy/fail-run-after-tool-keeps-llm-writes',
    description:
      'a throwing afterTool under fail-run fails the run; a step that fails without a stop keeps its afterLLMCall writes, the failed step\'s tool writes and rows are dropped (rules 126, 129, C1)',
    run: (t) => executeOnce(t, { steps: [calls(['increment', { by: 1 }]), text('never')], layers: [{ hooks: { afterLLMCall: logs('llm'), afterTool: boom('audit down') } }] }),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...modelCall(R1, 0, { messages: 2, tools: 1 }, 'tool_calls', [{ count: 0, log: ['llm'] }]),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'increment', { by: 1 }))),
        ...incrementCall(R1, 0, C1, { by: 1 }, { count: 1, log: ['llm', '+1'] }, 2),
        fail(R1, 0, 'hook_failed', false),
      ],
      ...soleRunFailed('hook_failed', 0, { count: 0, log: ['llm'] }, [row.user('go')]),
    },
  },
  {
    name: 'policy/fail-run-on-state-change',
    description: 'a throwing onStateChange under fail-run fails the run at the tool\'s write; the call gets no row and no afterTool (C1)',
    run: (t) => executeOnce(t, { steps: [calls(['increment', { by: 1 }]), text('never')], layers: [{ hooks: { onStateChange: boom('mirror down') } }] }),
    expected: {
      hooks: [...asksToIncrement, at(R1, 0).beforeTool(C1, 'increment', { by: 1 }), at(R1, 0).state('tool', { count: 1, log: ['+1'] }, 'increment'), fail(R1, 0, 'hook_failed', false)],
      ...soleRunFailed('hook_failed', 0, INITIAL, [row.user('go')]),
    },
  },
  {
    name: 'policy/fail-run-on-message',
    description: 'a throwing onMessage for the model\'s reply under fail-run fails the run (C1)',
    run: (t) => executeOnce(t, { steps: [text('answer')], layers: [{ hooks: { onMessage: (p) => (p.message.role === 'assistant' ? boom('mirror down')() : undefined) } }] }),
    expected: {
      hooks: [...firstCall, at(R1, 0).afterLLM('text'), at(R1, 0).message(1, row.assistant('answer')), fail(R1, 0, 'hook_failed', false)],
      ...soleRunFailed('hook_failed', 0, INITIAL, [row.user('go')]),
    },
  },
  {
    name: 'policy/fail-run-on-exit',
    description: 'a throwing onExit under fail-run fails the run before the exiting step is committed (C1, D6)',
    run: (t) => executeOnce(t, { steps: [text('answer')], layers: [{ hooks: { onExit: boom('grader down') } }] }),
    expected: { hooks: [...firstCall, ...textExit(R1, 0, 1, 'answer'), fail(R1, 0, 'hook_failed', false)], ...soleRunFailed('hook_failed', 0, INITIAL, [row.user('go')]) },
  },
  {
    name: 'policy/fail-closed-after-llm',
    description: 'under fail-closed, a throwing model-call hook fails the run with hook_blocked (C1, C15)',
    run: (t) => executeOnce(t, { steps: [text('answer')], layers: [{ hooks: { afterLLMCall: boom('policy service down') }, onError: 'fail-closed' }] }),
    expected: { hooks: [...firstCall, at(R1, 0).afterLLM('text'), fail(R1, 0, 'hook_blocked', false)], ...soleRunFailed('hook_blocked', 0, INITIAL, [row.user('go')]) },
  },
  {
    name: 'policy/fail-closed-after-tool',
    description: 'under fail-closed, a throwing afterTool fails the run with hook_blocked (C1, C15)',
    run: (t) => executeOnce(t, { steps: [calls(['increment', { by: 1 }]), text('never')], layers: [{ hooks: { afterTool: boom('audit down') }, onError: 'fail-closed' }] }),
    expected: {
      hooks: [...asksToIncrement, ...incrementCall(R1, 0, C1, { by: 1 }, { count: 1, log: ['+1'] }, 2), fail(R1, 0, 'hook_blocked', false)],
      ...soleRunFailed('hook_blocked', 0, INITIAL, [row.user('go')]),
    },
  },
  {
    name: 'policy/block-tool-before-tool',
    description: 'under block-tool (guardPolicy), a throwing beforeTool blocks the call: hook_blocked row, afterTool blocked, the thrown message goes to the model, the run continues (rule 219, C1, C15, D4)',
    run: (t) =>
      executeOnce(t, {
        steps: [calls(['increment', { by: 1 }]), notesLastPrompt(t, 'the model saw the error', 'path check crashed', text('ok'))],
        layers: [{ hooks: { beforeTool: boom('path check crashed') }, onError: guardPolicy }],
      }),
    expected: {
      hooks: [...asksToIncrement, ...blockedCall(R1, 0, toolCall(C1, 'increment', { by: 1 }), 2), ...completesWithText(R1, 1, { messages: 4, tools: 1 }, 3, 'ok')],
      ...soleRunCompleted({ exitReason: 'text', output: 'ok', steps: 2, state: INITIAL }, [row.user('go'), ...callErrorRows(toolCall(C1, 'increment', { by: 1 }), 'hook_blocked'), row.assistant('ok')], [{ label: 'the model saw the error', value: true }]),
    },
  },
  {
    name: 'policy/fail-open-before-tool',
    description: 'under fail-open, a throwing beforeTool is logged and the call runs as if it had returned nothing (C1)',
    run: (t) => executeOnce(t, { steps: [calls(['increment', { by: 1 }]), text('ok')], layers: [{ hooks: { beforeTool: boom('flaky guard') }, onError: 'fail-open' }] }),
    expected: incrementedThenOk,
  },
  {
    name: 'policy/fail-open-after-hooks',
    description: 'under guardPolicy, a throwing afterLLMCall and a throwing afterTool are logged and ignored (fail-open): the run completes (rules 220, 221)',
    run: (t) => executeOnce(t, { steps: [calls(['increment', { by: 1 }]), text('ok')], layers: [{ hooks: { afterLLMCall: boom('sink down'), afterTool: boom('sink down') }, onError: guardPolicy }] }),
    expected: incrementedThenOk,
  },
  {
    name: 'policy/fail-open-on-agent-start',
    description: 'under fail-open, a throwing onAgentStart is logged and the run goes on (C1)',
    run: (t) => executeOnce(t, { steps: [text('ok')], layers: [{ hooks: { onAgentStart: boom('tracing down') }, onError: 'fail-open' }] }),
    expected: {
      hooks: [...newTurn(R1, 0, 'go'), ...completesWithText(R1, 0, { messages: 2, tools: 1 }, 1, 'ok')],
      ...soleRunCompleted({ exitReason: 'text', output: 'ok', steps: 1, state: INITIAL }, [row.user('go'), row.assistant('ok')]),
    },
  },
  {
    name: 'policy/on-agent-fail-observe-only',
    description: 'onAgentFail is always observe-only: a throw is logged even under a fail-run default, it fires once, the run keeps its own error, and its writes are dropped (rules 39, C1, C8)',
    run: (t) => executeOnce(t, { steps: [{ error: { status: 401 } }], layers: [{ hooks: { onAgentFail: logsThenThrows('failed', 'pager down') }, onError: 'fail-run' }] }),
    expected: { hooks: [...newTurn(R1, 0, 'go'), ...failsInModelCall(R1, 0, { messages: 2, tools: 1 }, 'provider_auth', false)], ...soleRunFailed('provider_auth', 0, INITIAL, [row.user('go')]) },
  },
  {
    name: 'policy/on-agent-superseded-observe-only',
    description: 'onAgentSuperseded is always observe-only: a throw is logged and the run still ends superseded (rule 51, C1)',
    run: (t) => supersedeAfterComplete(t, { hooks: { onAgentSuperseded: boom('span exporter down') }, onError: 'fail-run' }),
    expected: supersededAfterCompleteTrace,
  },
  {
    name: 'policy/on-agent-retry-observe-only',
    description: 'onAgentRetry is observe-only: a throw is logged and the retried run goes on (rule 112, C1)',
    run: (t) => executeThen(t, { steps: [{ error: { status: 401 } }, text('retried')], layers: [{ hooks: { onAgentRetry: boom('tracing down') }, onError: 'fail-run' }] }, 'go', (sessionId) => t.retry(sessionId)),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...failsInModelCall(R1, 0, { messages: 2, tools: 1 }, 'provider_auth', false),
        at(R2, 0).retry(R1, true, false),
        ...completesWithText(R2, 0, { messages: 2, tools: 1 }, 1, 'retried'),
      ],
      ...retryCompletedWithText(failedRun(R1, S1, 'start', 'provider_auth', 0, INITIAL), 'retried', INITIAL, [row.user('go'), row.assistant('retried')]),
    },
  },
  {
    name: 'policy/on-agent-resumed-observe-only',
    description: 'onAgentResumed is observe-only in-process: a throw is logged and the resume proceeds (rule 104, C1)',
    run: (t) =>
      executeThen(t, { tools: [deleteTool], steps: [calls(['remove', { path: 'x' }]), text('ok')], layers: [{ hooks: { onAgentResumed: boom('tracing down') }, onError: 'fail-run' }] }, 'go', (sessionId, first) =>
        t.approve(sessionId, pendingCallIds(first)[0]),
      ),
    expected: approvedRemoveTrace({ input: 'go', path: 'x', reply: 'ok' }),
  },
  {
    name: 'policy/on-agent-suspended-observe-only',
    description: 'onAgentSuspended is fail-open everywhere: a throw is logged and the suspension stands (rule 99, D15)',
    run: (t) => executeOnce(t, { tools: [deleteTool], steps: [calls(['remove', { path: 'x' }])], layers: [{ hooks: { onAgentSuspended: boom('pager down') }, onError: 'fail-run' }] }),
    expected: {
      hooks: [...newTurn(R1, 0, 'go'), ...callsAndSuspends(R1, 0, { messages: 2, tools: 1 }, 1, toolCall(C1, 'remove', { path: 'x' }))],
      ...soleRunSuspended(INITIAL, [row.user('go'), row.assistant('', toolCall(C1, 'remove', { path: 'x' }))]),
    },
  },
  {
    name: 'policy/on-agent-complete-throws',
    description: 'a throwing onAgentComplete leaves the run completed: its writes are dropped and onAgentFail does not fire (rule 42, C5)',
    run: (t) => executeOnce(t, { steps: [text('done')], layers: [{ hooks: { onAgentComplete: logsThenThrows('partial', 'metrics down') } }] }),
    expected: {
      hooks: [...firstCall, ...textExit(R1, 0, 1, 'done'), complete(R1, 1, 'text', 'done')],
      ...soleRunCompleted({ exitReason: 'text', output: 'done', steps: 1, state: INITIAL }, [row.user('go'), row.assistant('done')]),
    },
  },
  {
    name: 'policy/on-agent-complete-writes-kept',
    description: 'onAgentComplete\'s writes land in the terminal commit (rule 39)',
    run: (t) => executeOnce(t, { steps: [text('done')], layers: [{ hooks: { onAgentComplete: logs('completed') } }] }),
    expected: {
      hooks: [...firstCall, ...textExit(R1, 0, 1, 'done'), complete(R1, 1, 'text', 'done'), at(R1, 1).state('hook', { count: 0, log: ['completed'] })],
      ...soleRunCompleted({ exitReason: 'text', output: 'done', steps: 1, state: { count: 0, log: ['completed'] } }, [row.user('go'), row.assistant('done')]),
    },
  },
]);
