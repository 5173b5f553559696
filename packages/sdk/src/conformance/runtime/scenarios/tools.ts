// Tool calls: the canonical order beforeTool → onStateChange → onMessage → afterTool, parallel calls,
// unknown tools and invalid arguments (no tool hooks), failing tools, finishWith and __finish__.
import { z } from 'zod';
import { defineTool } from '../../../define.js';
import { at, C1, C2, C3, complete, R1, row, S1, storedSession, toolCall } from '../expect.js';
import { appendToLog, calls, type Counter, executeOnce, finish, incrementTool, INITIAL, inTopic, logs, text, toolWithoutInput } from '../fixtures.js';
import { allowedCall, callErrorRows, callFails, callRows, callsTools, completedRun, completesWithFinish, completesWithText, entered, finishRows, incrementCall, modelCall, newTurn, soleRunCompleted } from '../fragments.js';
import type { RuntimeScenario } from '../scenario.js';

/** Writes the state twice: the count, then the log. */
const twiceTool = toolWithoutInput('twice', 'Two separate state writes.', (ctx) => {
  ctx.updateState<Counter>((d) => void (d.count += 1));
  appendToLog(ctx, 'twice');
  return 'written';
});

/** Appends a note to the log. */
const noteTool = defineTool({
  name: 'note',
  description: 'Logs a note.',
  inputSchema: z.object({ text: z.string() }),
  execute: (input, ctx) => {
    appendToLog(ctx, input.text);
    return 'noted';
  },
});

/** Writes the state, then throws. */
const explodeTool = toolWithoutInput('explode', 'Fails.', (ctx) => {
  appendToLog(ctx, 'before the failure');
  throw new Error('kaboom');
});

/** A finishWith tool: its result becomes the agent's output. */
const reportTool = defineTool({
  name: 'report',
  description: 'Finishes with a report.',
  inputSchema: z.object({ text: z.string() }),
  finishWith: true,
  execute: (input) => ({ answer: input.text.toUpperCase() }),
});

/** Tool calls: the canonical order, parallel calls, calls that fire no tool hook, finishing tools. */
export const toolScenarios: readonly RuntimeScenario[] = inTopic('tools', [
  {
    name: 'tools/canonical-order',
    description: 'one call fires beforeTool, then onStateChange for each of its writes, then onMessage for its result, then afterTool (rule 75, D3)',
    run: (t) => executeOnce(t, { tools: [twiceTool], steps: [calls(['twice', {}]), text('done')] }),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...callsTools(R1, 0, { messages: 2, tools: 1 }, 1, toolCall(C1, 'twice', {})),
        at(R1, 0).beforeTool(C1, 'twice', {}),
        at(R1, 0).state('tool', { count: 1, log: [] }, 'twice'),
        at(R1, 0).state('tool', { count: 1, log: ['twice'] }, 'twice'),
        at(R1, 0).message(2, row.tool(C1, 'twice', 'written')),
        at(R1, 0).afterTool(C1, 'twice', {}, 'written'),
        ...completesWithText(R1, 1, { messages: 4, tools: 1 }, 3, 'done', { twice: 1 }),
      ],
      ...soleRunCompleted({ exitReason: 'text', output: 'done', steps: 2, state: { count: 1, log: ['twice'] } }, [row.user('go'), ...callRows(toolCall(C1, 'twice', {}), 'written'), row.assistant('done')]),
    },
  },
  {
    name: 'tools/parallel-calls',
    description: 'the calls of one step each follow the canonical order (hooks of parallel calls are ordered per call, D16); their result rows are listed in the model\'s order (rules 75, 77)',
    run: (t) => executeOnce(t, { tools: [incrementTool, noteTool], steps: [calls(['increment', { by: 3 }], ['note', { text: 'hello' }]), text('done')] }),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...callsTools(R1, 0, { messages: 2, tools: 2 }, 1, toolCall(C1, 'increment', { by: 3 }), toolCall(C2, 'note', { text: 'hello' })),
        ...incrementCall(R1, 0, C1, { by: 3 }, { count: 3, log: ['+3'] }, 2),
        ...allowedCall(R1, 0, toolCall(C2, 'note', { text: 'hello' }), [{ count: 3, log: ['+3', 'hello'] }], 3, 'noted'),
        ...completesWithText(R1, 1, { messages: 5, tools: 2 }, 4, 'done', { increment: 1, note: 1 }),
      ],
      entries: [entered('execute', S1, R1)],
      runs: [completedRun(R1, S1, 'start', { exitReason: 'text', output: 'done', steps: 2, state: { count: 3, log: ['+3', 'hello'] } })],
      sessions: [
        storedSession(S1, R1, { count: 3, log: ['+3', 'hello'] }, [
          row.user('go'),
          row.assistant('', toolCall(C1, 'increment', { by: 3 }), toolCall(C2, 'note', { text: 'hello' })),
          row.tool(C1, 'increment', { by: 3 }),
          row.tool(C2, 'note', 'noted'),
          row.assistant('done'),
        ]),
      ],
    },
  },
  {
    name: 'tools/unknown-tool',
    description: 'a call to a tool the agent does not have fires no tool hook: a tool_not_found result goes back to the model (onMessage only) and the loop goes on (D5)',
    run: (t) => executeOnce(t, { output: true, steps: [calls(['nope', {}]), finish('recovered')] }),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...callsTools(R1, 0, { messages: 2, tools: 2 }, 1, toolCall(C1, 'nope', {})),
        at(R1, 0).message(2, row.toolError(C1, 'nope', 'tool_not_found')),
        ...completesWithFinish(R1, 1, { messages: 4, tools: 2 }, 3, C2, 'recovered'),
      ],
      ...soleRunCompleted({ exitReason: 'finish_tool', output: { answer: 'recovered' }, steps: 2, state: INITIAL }, [row.user('go'), ...callErrorRows(toolCall(C1, 'nope', {}), 'tool_not_found'), ...finishRows(C2, 'recovered')]),
    },
  },
  {
    name: 'tools/invalid-arguments',
    description: 'arguments that fail the tool\'s schema fire no tool hook: a tool_invalid_input result goes back to the model (onMessage only); invalid calls are not counted (D5)',
    run: (t) => executeOnce(t, { steps: [calls(['increment', { by: 'x' }]), text('sorry')] }),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...callsTools(R1, 0, { messages: 2, tools: 1 }, 1, toolCall(C1, 'increment', { by: 'x' })),
        at(R1, 0).message(2, row.toolError(C1, 'increment', 'tool_invalid_input')),
        ...completesWithText(R1, 1, { messages: 4, tools: 1 }, 3, 'sorry'),
      ],
      ...soleRunCompleted({ exitReason: 'text', output: 'sorry', steps: 2, state: INITIAL }, [row.user('go'), ...callErrorRows(toolCall(C1, 'increment', { by: 'x' }), 'tool_invalid_input'), row.assistant('sorry')]),
    },
  },
  {
    name: 'tools/tool-throws',
    description:
      'a tool that throws ends its call with a tool_failed result (onMessage) and afterTool(success false); the run goes on and the writes recorded with the failed call persist (rules 74, 125, D4)',
    run: (t) => executeOnce(t, { tools: [explodeTool], steps: [calls(['explode', {}]), text('it failed')] }),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...callsTools(R1, 0, { messages: 2, tools: 1 }, 1, toolCall(C1, 'explode', {})),
        ...callFails(R1, 0, toolCall(C1, 'explode', {}), [{ count: 0, log: ['before the failure'] }], 2, 'tool_failed'),
        ...completesWithText(R1, 1, { messages: 4, tools: 1 }, 3, 'it failed', { explode: 1 }),
      ],
      ...soleRunCompleted({ exitReason: 'text', output: 'it failed', steps: 2, state: { count: 0, log: ['before the failure'] } }, [row.user('go'), ...callErrorRows(toolCall(C1, 'explode', {}), 'tool_failed'), row.assistant('it failed')]),
    },
  },
  {
    name: 'tools/finish-with',
    description: 'a finishWith tool runs its full hook sequence, then its output is promoted and onAgentComplete fires with exitReason finish_with (rule 31, D7)',
    run: (t) => executeOnce(t, { output: true, tools: [reportTool], steps: [calls(['report', { text: 'done' }])] }),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...callsTools(R1, 0, { messages: 2, tools: 2 }, 1, toolCall(C1, 'report', { text: 'done' })),
        ...allowedCall(R1, 0, toolCall(C1, 'report', { text: 'done' }), [], 2, { answer: 'DONE' }),
        at(R1, 0).exit('finish_with', 1, { report: 1 }),
        complete(R1, 1, 'finish_with', { answer: 'DONE' }),
      ],
      ...soleRunCompleted({ exitReason: 'finish_with', output: { answer: 'DONE' }, steps: 1, state: INITIAL }, [row.user('go'), ...callRows(toolCall(C1, 'report', { text: 'done' }), { answer: 'DONE' })]),
    },
  },
  {
    name: 'tools/finish-tool-invalid-output',
    description: '__finish__ is internal (no tool hooks); an output that fails the outputSchema goes back to the model as tool_invalid_input and the run goes on (D7)',
    run: (t) => executeOnce(t, { output: true, steps: [calls(['__finish__', { wrong: 1 }]), finish('fixed')] }),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        at(R1, 0).beforeLLM(2, 2),
        at(R1, 0).afterLLM('finish'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, '__finish__', { wrong: 1 }))),
        at(R1, 0).message(2, row.toolError(C1, '__finish__', 'tool_invalid_input')),
        ...completesWithFinish(R1, 1, { messages: 4, tools: 2 }, 3, C2, 'fixed'),
      ],
      ...soleRunCompleted({ exitReason: 'finish_tool', output: { answer: 'fixed' }, steps: 2, state: INITIAL }, [row.user('go'), ...callErrorRows(toolCall(C1, '__finish__', { wrong: 1 }), 'tool_invalid_input'), ...finishRows(C2, 'fixed')]),
    },
  },
  {
    name: 'tools/finish-tool-on-text-agent',
    description: 'an agent without an outputSchema has no __finish__: the call gets tool_not_found, no tool hooks, and the run goes on (D5, D7)',
    run: (t) => executeOnce(t, { steps: [finish('nope'), text('plain answer')] }),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('finish'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, '__finish__', { answer: 'nope' }))),
        at(R1, 0).message(2, row.toolError(C1, '__finish__', 'tool_not_found')),
        ...completesWithText(R1, 1, { messages: 4, tools: 1 }, 3, 'plain answer'),
      ],
      ...soleRunCompleted({ exitReason: 'text', output: 'plain answer', steps: 2, state: INITIAL }, [row.user('go'), ...callErrorRows(toolCall(C1, '__finish__', { answer: 'nope' }), 'tool_not_found'), row.assistant('plain answer')]),
    },
  },
  {
    name: 'tools/hook-state-writes',
    description: 'a hook\'s updateState fires onStateChange with source hook right after the hook; writes made inside onStateChange apply without firing it again (rules 89, D9)',
    run: (t) => executeOnce(t, { steps: [text('ok')], layers: [{ hooks: { afterLLMCall: logs('llm'), onStateChange: logs('seen') } }] }),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...modelCall(R1, 0, { messages: 2, tools: 1 }, 'text', [{ count: 0, log: ['llm'] }]),
        at(R1, 0).message(1, row.assistant('ok')),
        at(R1, 0).exit('text', 1),
        complete(R1, 1, 'text', 'ok'),
      ],
      ...soleRunCompleted({ exitReason: 'text', output: 'ok', steps: 1, state: { count: 0, log: ['llm', 'seen'] } }, [row.user('go'), row.assistant('ok')]),
    },
  },
  {
    name: 'tools/mixed-step',
    description: 'a step with an allowed call, an unknown tool and invalid arguments: only the valid call fires tool hooks; every call gets a result row (D3, D5)',
    run: (t) => executeOnce(t, { steps: [calls(['increment', { by: 1 }], ['missing', {}], ['increment', { by: 'x' }]), text('done')] }),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...callsTools(R1, 0, { messages: 2, tools: 1 }, 1, toolCall(C1, 'increment', { by: 1 }), toolCall(C2, 'missing', {}), toolCall(C3, 'increment', { by: 'x' })),
        ...incrementCall(R1, 0, C1, { by: 1 }, { count: 1, log: ['+1'] }, 2),
        at(R1, 0).message(3, row.toolError(C2, 'missing', 'tool_not_found')),
        at(R1, 0).message(4, row.toolError(C3, 'increment', 'tool_invalid_input')),
        ...completesWithText(R1, 1, { messages: 6, tools: 1 }, 5, 'done', { increment: 1 }),
      ],
      entries: [entered('execute', S1, R1)],
      runs: [completedRun(R1, S1, 'start', { exitReason: 'text', output: 'done', steps: 2, state: { count: 1, log: ['+1'] } })],
      sessions: [
        storedSession(S1, R1, { count: 1, log: ['+1'] }, [
          row.user('go'),
          row.assistant('', toolCall(C1, 'increment', { by: 1 }), toolCall(C2, 'missing', {}), toolCall(C3, 'increment', { by: 'x' })),
          row.tool(C1, 'increment', { by: 1 }),
          row.toolError(C2, 'missing', 'tool_not_found'),
          row.toolError(C3, 'increment', 'tool_invalid_input'),
          row.assistant('done'),
        ]),
      ],
    },
  },
]);
