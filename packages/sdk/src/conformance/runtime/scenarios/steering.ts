// Steering returns: beforeLLMCall { messages } / { tools }, beforeTool { input } / { block },
// afterTool { result }, onExit { continue, message }; chains of handlers (C3).
import type { Message } from '../../../messages.js';
import { at, by, C1, C2, complete, R1, row, toolCall } from '../expect.js';
import { calls, executeOnce, finish, INITIAL, inTopic, notesLastPrompt, text } from '../fixtures.js';
import { blockedCall, callErrorRows, callRows, callsTools, callSucceeds, completesWithFinish, completesWithText, finishExit, finishRows, incrementStep, newTurn, soleRunCompleted, startsCalls, textExit } from '../fragments.js';
import type { RuntimeScenario } from '../scenario.js';

/** The whole prompt of a model call as text (to check what the model was sent). */
function promptText(prompt: unknown): string {
  return JSON.stringify(prompt);
}

/** Each steering return at each point, and chains of handlers. */
export const steeringScenarios: readonly RuntimeScenario[] = inTopic('steering', [
  {
    name: 'steer/before-llm-messages',
    description: 'beforeLLMCall { messages } rewrites this call only: the model sees the rewrite, the transcript keeps the original and no onMessage fires for it (rule 216, C4)',
    run: (t) =>
      executeOnce(t, {
        steps: [
          (options) => {
            t.note('the model saw the rewrite', promptText(options.prompt).includes('call me at [phone]'));
            t.note('the model saw the original', promptText(options.prompt).includes('555-1234'));
            return text('ok');
          },
        ],
        layers: [
          {
            hooks: {
              beforeLLMCall: (payload) => ({
                messages: payload.messages.map((m): Message => (m.role === 'user' ? { ...m, content: m.content.replace(/\d{3}-\d{4}/g, '[phone]') } : m)),
              }),
            },
          },
        ],
      }, 'call me at 555-1234'),
    expected: {
      hooks: [...newTurn(R1, 0, 'call me at 555-1234'), ...completesWithText(R1, 0, { messages: 2, tools: 1 }, 1, 'ok')],
      ...soleRunCompleted({ exitReason: 'text', output: 'ok', steps: 1, state: INITIAL }, [row.user('call me at 555-1234'), row.assistant('ok')], [
        { label: 'the model saw the rewrite', value: true },
        { label: 'the model saw the original', value: false },
      ]),
    },
  },
  {
    name: 'steer/before-llm-tools',
    description: 'beforeLLMCall { tools } narrows the tools of this call only; the payload the hook saw still lists the agent\'s tools (rule 216, C4)',
    run: (t) =>
      executeOnce(t, {
        steps: [
          (options) => {
            t.note('tools offered to the model', options.tools?.length ?? 0);
            return text('no tools then');
          },
        ],
        layers: [{ hooks: { beforeLLMCall: () => ({ tools: [] }) } }],
      }),
    expected: {
      hooks: [...newTurn(R1, 0, 'go'), ...completesWithText(R1, 0, { messages: 2, tools: 1 }, 1, 'no tools then')],
      ...soleRunCompleted({ exitReason: 'text', output: 'no tools then', steps: 1, state: INITIAL }, [row.user('go'), row.assistant('no tools then')], [{ label: 'tools offered to the model', value: 0 }]),
    },
  },
  {
    name: 'steer/before-llm-chain',
    description: 'beforeLLMCall handlers chain in composition order and each sees the rewrite of the ones before it (C3)',
    run: (t) =>
      executeOnce(t, {
        steps: [
          (options) => {
            t.note('the model saw the added context', promptText(options.prompt).includes('extra context'));
            return text('ok');
          },
        ],
        layers: [
          { name: 'first', hooks: { beforeLLMCall: (payload) => ({ messages: [...payload.messages, { role: 'user', content: 'extra context' }] }) } },
          { name: 'second', hooks: { beforeLLMCall: () => undefined } },
        ],
      }),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        by('first', at(R1, 0).beforeLLM(2, 1)),
        by('second', at(R1, 0).beforeLLM(3, 1)),
        ...textExit(R1, 0, 1, 'ok'),
        complete(R1, 1, 'text', 'ok'),
      ],
      ...soleRunCompleted({ exitReason: 'text', output: 'ok', steps: 1, state: INITIAL }, [row.user('go'), row.assistant('ok')], [{ label: 'the model saw the added context', value: true }]),
    },
  },
  {
    name: 'steer/before-tool-input',
    description: 'beforeTool { input } replaces the whole input; the tool runs with it and afterTool reports the effective input (rule 218)',
    run: (t) =>
      executeOnce(t, {
        output: true,
        steps: [calls(['increment', { by: 5 }]), finish('x')],
        layers: [{ hooks: { beforeTool: () => ({ input: { by: 1 } }) } }],
      }),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...startsCalls(R1, 0, { messages: 2, tools: 2 }, 1, toolCall(C1, 'increment', { by: 5 })),
        ...callSucceeds(R1, 0, toolCall(C1, 'increment', { by: 1 }), [{ count: 1, log: ['+1'] }], 2, { by: 1 }),
        ...completesWithFinish(R1, 1, { messages: 4, tools: 2 }, 3, C2, 'x', { increment: 1 }),
      ],
      ...soleRunCompleted({ exitReason: 'finish_tool', output: { answer: 'x' }, steps: 2, state: { count: 1, log: ['+1'] } }, [row.user('go'), ...callRows(toolCall(C1, 'increment', { by: 5 }), { by: 1 }), ...finishRows(C2, 'x')]),
    },
  },
  {
    name: 'steer/before-tool-block',
    description:
      'beforeTool { block } skips the tool: its error result (hook_blocked) fires onMessage, afterTool fires blocked, the model gets the reason and the loop goes on; blocked calls are not counted (rule 218, C13, D4)',
    run: (t) =>
      executeOnce(t, {
        output: true,
        steps: [calls(['increment', { by: 5 }]), notesLastPrompt(t, 'the model saw the reason', 'counting is forbidden', finish('x'))],
        layers: [{ hooks: { beforeTool: () => ({ block: true, reason: 'counting is forbidden' }) } }],
      }),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...callsTools(R1, 0, { messages: 2, tools: 2 }, 1, toolCall(C1, 'increment', { by: 5 })),
        ...blockedCall(R1, 0, toolCall(C1, 'increment', { by: 5 }), 2),
        ...completesWithFinish(R1, 1, { messages: 4, tools: 2 }, 3, C2, 'x'),
      ],
      ...soleRunCompleted({ exitReason: 'finish_tool', output: { answer: 'x' }, steps: 2, state: INITIAL }, [row.user('go'), ...callErrorRows(toolCall(C1, 'increment', { by: 5 }), 'hook_blocked'), ...finishRows(C2, 'x')], [{ label: 'the model saw the reason', value: true }]),
    },
  },
  {
    name: 'steer/before-tool-invalid-rewrite',
    description: 'a beforeTool { input } that does not match the tool\'s schema blocks the call (hook_blocked); the tool never runs (rule 218)',
    run: (t) =>
      executeOnce(t, {
        steps: [calls(['increment', { by: 5 }]), text('done')],
        layers: [{ hooks: { beforeTool: () => ({ input: { by: 'many' } }) } }],
      }),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...callsTools(R1, 0, { messages: 2, tools: 1 }, 1, toolCall(C1, 'increment', { by: 5 })),
        ...blockedCall(R1, 0, toolCall(C1, 'increment', { by: 5 }), 2),
        ...completesWithText(R1, 1, { messages: 4, tools: 1 }, 3, 'done'),
      ],
      ...soleRunCompleted({ exitReason: 'text', output: 'done', steps: 2, state: INITIAL }, [row.user('go'), ...callErrorRows(toolCall(C1, 'increment', { by: 5 }), 'hook_blocked'), row.assistant('done')]),
    },
  },
  {
    name: 'steer/before-tool-chain',
    description: 'beforeTool handlers chain: each sees the arguments as rewritten before it, the first block wins and later handlers are not called (C3)',
    run: (t) =>
      executeOnce(t, {
        steps: [calls(['increment', { by: 1 }]), text('done')],
        layers: [
          { name: 'rewrite', hooks: { beforeTool: () => ({ input: { by: 2 } }) } },
          { name: 'guard', hooks: { beforeTool: () => ({ block: true, reason: 'no' }) } },
          { name: 'audit', hooks: { beforeTool: () => undefined } },
        ],
      }),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...callsTools(R1, 0, { messages: 2, tools: 1 }, 1, toolCall(C1, 'increment', { by: 1 })),
        by('rewrite', at(R1, 0).beforeTool(C1, 'increment', { by: 1 })),
        by('guard', at(R1, 0).beforeTool(C1, 'increment', { by: 2 })),
        at(R1, 0).message(2, row.toolError(C1, 'increment', 'hook_blocked')),
        at(R1, 0).afterToolError(C1, 'increment', { by: 2 }, 'hook_blocked', true),
        ...completesWithText(R1, 1, { messages: 4, tools: 1 }, 3, 'done'),
      ],
      ...soleRunCompleted({ exitReason: 'text', output: 'done', steps: 2, state: INITIAL }, [row.user('go'), ...callErrorRows(toolCall(C1, 'increment', { by: 1 }), 'hook_blocked'), row.assistant('done')]),
    },
  },
  {
    name: 'steer/after-tool-result',
    description:
      'afterTool { result } replaces what the model sees and what is stored; onMessage saw the row as executed and later afterTool handlers see the rewrite (C16)',
    run: (t) =>
      executeOnce(t, {
        steps: [calls(['increment', { by: 1 }]), notesLastPrompt(t, 'the model saw the rewrite', 'shortened', text('done'))],
        layers: [
          { name: 'rewrite', hooks: { afterTool: () => ({ result: { summary: 'shortened' } }) } },
          { name: 'later', hooks: { afterTool: () => undefined } },
        ],
      }),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...startsCalls(R1, 0, { messages: 2, tools: 1 }, 1, toolCall(C1, 'increment', { by: 1 })),
        at(R1, 0).state('tool', { count: 1, log: ['+1'] }, 'increment'),
        at(R1, 0).message(2, row.tool(C1, 'increment', { by: 1 })),
        by('rewrite', at(R1, 0).afterTool(C1, 'increment', { by: 1 }, { by: 1 })),
        by('later', at(R1, 0).afterTool(C1, 'increment', { by: 1 }, { summary: 'shortened' })),
        ...completesWithText(R1, 1, { messages: 4, tools: 1 }, 3, 'done', { increment: 1 }),
      ],
      ...soleRunCompleted({ exitReason: 'text', output: 'done', steps: 2, state: { count: 1, log: ['+1'] } }, [row.user('go'), ...callRows(toolCall(C1, 'increment', { by: 1 }), { summary: 'shortened' }), row.assistant('done')], [{ label: 'the model saw the rewrite', value: true }]),
    },
  },
  {
    name: 'steer/on-exit-continue',
    description: 'onExit { continue, message } keeps the run going: the exiting step is committed, the message is appended (onMessage) and the loop continues (rules 194, 195, D6)',
    run: (t) =>
      executeOnce(t, {
        steps: [text('done?'), calls(['increment', { by: 1 }]), text('now done')],
        layers: [
          {
            hooks: {
              onExit: (payload) => ((payload.toolCallCounts['increment'] ?? 0) === 0 ? { continue: true, message: 'You must call increment first.' } : undefined),
            },
          },
        ],
      }),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        at(R1, 0).beforeLLM(2, 1),
        ...textExit(R1, 0, 1, 'done?'),
        at(R1, 0).message(2, row.user('You must call increment first.')),
        ...incrementStep(R1, 1, { messages: 4, tools: 1 }, 3, C1, { by: 1 }, { count: 1, log: ['+1'] }),
        ...completesWithText(R1, 2, { messages: 6, tools: 1 }, 5, 'now done', { increment: 1 }),
      ],
      ...soleRunCompleted({ exitReason: 'text', output: 'now done', steps: 3, state: { count: 1, log: ['+1'] } }, [
        row.user('go'),
        row.assistant('done?'),
        row.user('You must call increment first.'),
        ...callRows(toolCall(C1, 'increment', { by: 1 }), { by: 1 }),
        row.assistant('now done'),
      ]),
    },
  },
  {
    name: 'steer/on-exit-continue-after-finish',
    description: 'onExit may keep going after a __finish__: the output is not promoted, the step is committed with the message, and the next finish completes the run (D6)',
    run: (t) =>
      executeOnce(t, {
        output: true,
        steps: [finish('draft', 'finish-1'), finish('final', 'finish-2')],
        layers: [{ hooks: { onExit: (payload) => ((payload.output as { answer: string }).answer === 'draft' ? { continue: true, message: 'Polish it.' } : undefined) } }],
      }),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        at(R1, 0).beforeLLM(2, 2),
        ...finishExit(R1, 0, 1, C1, 'draft'),
        at(R1, 0).message(3, row.user('Polish it.')),
        ...completesWithFinish(R1, 1, { messages: 5, tools: 2 }, 4, C2, 'final'),
      ],
      ...soleRunCompleted({ exitReason: 'finish_tool', output: { answer: 'final' }, steps: 2, state: INITIAL }, [row.user('go'), ...finishRows(C1, 'draft'), row.user('Polish it.'), ...finishRows(C2, 'final')]),
    },
  },
  {
    name: 'steer/on-exit-bounded-by-max-steps',
    description: 'an onExit that always continues is bounded by maxSteps; the run then completes with exitReason max_steps and its last text (rules 195, 196, C10, D6)',
    run: (t) => executeOnce(t, { maxSteps: 3, steps: [text('a'), text('b'), text('c')], layers: [{ hooks: { onExit: () => ({ continue: true }) } }] }),
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        at(R1, 0).beforeLLM(2, 1),
        ...textExit(R1, 0, 1, 'a'),
        at(R1, 1).beforeLLM(3, 1),
        ...textExit(R1, 1, 2, 'b'),
        at(R1, 2).beforeLLM(4, 1),
        ...textExit(R1, 2, 3, 'c'),
        complete(R1, 3, 'max_steps', 'c'),
      ],
      ...soleRunCompleted({ exitReason: 'max_steps', output: 'c', steps: 3, state: INITIAL }, [row.user('go'), row.assistant('a'), row.assistant('b'), row.assistant('c')]),
    },
  },
]);
