// Steering returns: beforeLLMCall { messages } / { tools }, beforeTool { input } / { block },
// afterTool { result }, onExit { continue, message }; chains of handlers (C3).
import type { Message } from '../../../messages.js';
import { at, by, call, complete, row, run, session, storedRun, storedSession, toolCall } from '../expect.js';
import { agent, calls, finish, INITIAL, lastPromptText, text } from '../fixtures.js';
import type { RuntimeScenario } from '../scenario.js';

const R1 = run(1);
const S1 = session(1);
const C1 = call(1);
const C2 = call(2);

/** The whole prompt of a model call as text (to check what the model was sent). */
function promptText(prompt: unknown): string {
  return JSON.stringify(prompt);
}

/** Each steering return at each point, and chains of handlers. */
export const steeringScenarios: readonly RuntimeScenario[] = [
  {
    name: 'steer/before-llm-messages',
    topic: 'steering',
    description: 'beforeLLMCall { messages } rewrites this call only: the model sees the rewrite, the transcript keeps the original and no onMessage fires for it (rule 216, C4)',
    async run(t) {
      const a = agent(t, {
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
      });
      await t.result(await t.execute(a, 'call me at 555-1234', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('call me at 555-1234'),
        at(R1, 0).message(0, row.user('call me at 555-1234')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('text'),
        at(R1, 0).message(1, row.assistant('ok')),
        at(R1, 0).exit('text', 1),
        complete(R1, 1, 'text', 'ok'),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      notes: [
        { label: 'the model saw the rewrite', value: true },
        { label: 'the model saw the original', value: false },
      ],
      runs: [storedRun(R1, S1, 'start', 'completed', { output: 'ok', result: { status: 'completed', exitReason: 'text', output: 'ok', steps: 1, state: INITIAL } })],
      sessions: [storedSession(S1, R1, INITIAL, [row.user('call me at 555-1234'), row.assistant('ok')])],
    },
  },
  {
    name: 'steer/before-llm-tools',
    topic: 'steering',
    description: 'beforeLLMCall { tools } narrows the tools of this call only; the payload the hook saw still lists the agent\'s tools (rule 216, C4)',
    async run(t) {
      const a = agent(t, {
        steps: [
          (options) => {
            t.note('tools offered to the model', options.tools?.length ?? 0);
            return text('no tools then');
          },
        ],
        layers: [{ hooks: { beforeLLMCall: () => ({ tools: [] }) } }],
      });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('text'),
        at(R1, 0).message(1, row.assistant('no tools then')),
        at(R1, 0).exit('text', 1),
        complete(R1, 1, 'text', 'no tools then'),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      notes: [{ label: 'tools offered to the model', value: 0 }],
      runs: [storedRun(R1, S1, 'start', 'completed', { output: 'no tools then', result: { status: 'completed', exitReason: 'text', output: 'no tools then', steps: 1, state: INITIAL } })],
      sessions: [storedSession(S1, R1, INITIAL, [row.user('go'), row.assistant('no tools then')])],
    },
  },
  {
    name: 'steer/before-llm-chain',
    topic: 'steering',
    description: 'beforeLLMCall handlers chain in composition order and each sees the rewrite of the ones before it (C3)',
    async run(t) {
      const a = agent(t, {
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
      });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        by('first', at(R1, 0).beforeLLM(2, 1)),
        by('second', at(R1, 0).beforeLLM(3, 1)),
        at(R1, 0).afterLLM('text'),
        at(R1, 0).message(1, row.assistant('ok')),
        at(R1, 0).exit('text', 1),
        complete(R1, 1, 'text', 'ok'),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      notes: [{ label: 'the model saw the added context', value: true }],
      runs: [storedRun(R1, S1, 'start', 'completed', { output: 'ok', result: { status: 'completed', exitReason: 'text', output: 'ok', steps: 1, state: INITIAL } })],
      sessions: [storedSession(S1, R1, INITIAL, [row.user('go'), row.assistant('ok')])],
    },
  },
  {
    name: 'steer/before-tool-input',
    topic: 'steering',
    description: 'beforeTool { input } replaces the whole input; the tool runs with it and afterTool reports the effective input (rule 218)',
    async run(t) {
      const a = agent(t, {
        output: true,
        steps: [calls(['increment', { by: 5 }]), finish('x')],
        layers: [{ hooks: { beforeTool: () => ({ input: { by: 1 } }) } }],
      });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 2),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'increment', { by: 5 }))),
        at(R1, 0).beforeTool(C1, 'increment', { by: 5 }),
        at(R1, 0).state('tool', { count: 1, log: ['+1'] }, 'increment'),
        at(R1, 0).message(2, row.tool(C1, 'increment', { by: 1 })),
        at(R1, 0).afterTool(C1, 'increment', { by: 1 }, { by: 1 }),
        at(R1, 1).beforeLLM(4, 2),
        at(R1, 1).afterLLM('finish'),
        at(R1, 1).message(3, row.assistant('', toolCall(C2, '__finish__', { answer: 'x' }))),
        at(R1, 1).message(4, row.tool(C2, '__finish__', { ok: true })),
        at(R1, 1).exit('finish_tool', 2, { increment: 1 }),
        complete(R1, 2, 'finish_tool', { answer: 'x' }),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      runs: [
        storedRun(R1, S1, 'start', 'completed', {
          output: { answer: 'x' },
          result: { status: 'completed', exitReason: 'finish_tool', output: { answer: 'x' }, steps: 2, state: { count: 1, log: ['+1'] } },
        }),
      ],
      sessions: [
        storedSession(S1, R1, { count: 1, log: ['+1'] }, [
          row.user('go'),
          row.assistant('', toolCall(C1, 'increment', { by: 5 })),
          row.tool(C1, 'increment', { by: 1 }),
          row.assistant('', toolCall(C2, '__finish__', { answer: 'x' })),
          row.tool(C2, '__finish__', { ok: true }),
        ]),
      ],
    },
  },
  {
    name: 'steer/before-tool-block',
    topic: 'steering',
    description:
      'beforeTool { block } skips the tool: its error result (hook_blocked) fires onMessage, afterTool fires blocked, the model gets the reason and the loop goes on; blocked calls are not counted (rule 218, C13, D4)',
    async run(t) {
      const a = agent(t, {
        output: true,
        steps: [
          calls(['increment', { by: 5 }]),
          (options) => {
            t.note('the model saw the reason', lastPromptText(options.prompt).includes('counting is forbidden'));
            return finish('x');
          },
        ],
        layers: [{ hooks: { beforeTool: () => ({ block: true, reason: 'counting is forbidden' }) } }],
      });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 2),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'increment', { by: 5 }))),
        at(R1, 0).beforeTool(C1, 'increment', { by: 5 }),
        at(R1, 0).message(2, row.toolError(C1, 'increment', 'hook_blocked')),
        at(R1, 0).afterToolError(C1, 'increment', { by: 5 }, 'hook_blocked', true),
        at(R1, 1).beforeLLM(4, 2),
        at(R1, 1).afterLLM('finish'),
        at(R1, 1).message(3, row.assistant('', toolCall(C2, '__finish__', { answer: 'x' }))),
        at(R1, 1).message(4, row.tool(C2, '__finish__', { ok: true })),
        at(R1, 1).exit('finish_tool', 2),
        complete(R1, 2, 'finish_tool', { answer: 'x' }),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      notes: [{ label: 'the model saw the reason', value: true }],
      runs: [storedRun(R1, S1, 'start', 'completed', { output: { answer: 'x' }, result: { status: 'completed', exitReason: 'finish_tool', output: { answer: 'x' }, steps: 2, state: INITIAL } })],
      sessions: [
        storedSession(S1, R1, INITIAL, [
          row.user('go'),
          row.assistant('', toolCall(C1, 'increment', { by: 5 })),
          row.toolError(C1, 'increment', 'hook_blocked'),
          row.assistant('', toolCall(C2, '__finish__', { answer: 'x' })),
          row.tool(C2, '__finish__', { ok: true }),
        ]),
      ],
    },
  },
  {
    name: 'steer/before-tool-invalid-rewrite',
    topic: 'steering',
    description: 'a beforeTool { input } that does not match the tool\'s schema blocks the call (hook_blocked); the tool never runs (rule 218)',
    async run(t) {
      const a = agent(t, {
        steps: [calls(['increment', { by: 5 }]), text('done')],
        layers: [{ hooks: { beforeTool: () => ({ input: { by: 'many' } }) } }],
      });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'increment', { by: 5 }))),
        at(R1, 0).beforeTool(C1, 'increment', { by: 5 }),
        at(R1, 0).message(2, row.toolError(C1, 'increment', 'hook_blocked')),
        at(R1, 0).afterToolError(C1, 'increment', { by: 5 }, 'hook_blocked', true),
        at(R1, 1).beforeLLM(4, 1),
        at(R1, 1).afterLLM('text'),
        at(R1, 1).message(3, row.assistant('done')),
        at(R1, 1).exit('text', 2),
        complete(R1, 2, 'text', 'done'),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      runs: [storedRun(R1, S1, 'start', 'completed', { output: 'done', result: { status: 'completed', exitReason: 'text', output: 'done', steps: 2, state: INITIAL } })],
      sessions: [
        storedSession(S1, R1, INITIAL, [
          row.user('go'),
          row.assistant('', toolCall(C1, 'increment', { by: 5 })),
          row.toolError(C1, 'increment', 'hook_blocked'),
          row.assistant('done'),
        ]),
      ],
    },
  },
  {
    name: 'steer/before-tool-chain',
    topic: 'steering',
    description: 'beforeTool handlers chain: each sees the arguments as rewritten before it, the first block wins and later handlers are not called (C3)',
    async run(t) {
      const a = agent(t, {
        steps: [calls(['increment', { by: 1 }]), text('done')],
        layers: [
          { name: 'rewrite', hooks: { beforeTool: () => ({ input: { by: 2 } }) } },
          { name: 'guard', hooks: { beforeTool: () => ({ block: true, reason: 'no' }) } },
          { name: 'audit', hooks: { beforeTool: () => undefined } },
        ],
      });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'increment', { by: 1 }))),
        by('rewrite', at(R1, 0).beforeTool(C1, 'increment', { by: 1 })),
        by('guard', at(R1, 0).beforeTool(C1, 'increment', { by: 2 })),
        at(R1, 0).message(2, row.toolError(C1, 'increment', 'hook_blocked')),
        at(R1, 0).afterToolError(C1, 'increment', { by: 2 }, 'hook_blocked', true),
        at(R1, 1).beforeLLM(4, 1),
        at(R1, 1).afterLLM('text'),
        at(R1, 1).message(3, row.assistant('done')),
        at(R1, 1).exit('text', 2),
        complete(R1, 2, 'text', 'done'),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      runs: [storedRun(R1, S1, 'start', 'completed', { output: 'done', result: { status: 'completed', exitReason: 'text', output: 'done', steps: 2, state: INITIAL } })],
      sessions: [
        storedSession(S1, R1, INITIAL, [
          row.user('go'),
          row.assistant('', toolCall(C1, 'increment', { by: 1 })),
          row.toolError(C1, 'increment', 'hook_blocked'),
          row.assistant('done'),
        ]),
      ],
    },
  },
  {
    name: 'steer/after-tool-result',
    topic: 'steering',
    description:
      'afterTool { result } replaces what the model sees and what is stored; onMessage saw the row as executed and later afterTool handlers see the rewrite (C16)',
    async run(t) {
      const a = agent(t, {
        steps: [
          calls(['increment', { by: 1 }]),
          (options) => {
            t.note('the model saw the rewrite', lastPromptText(options.prompt).includes('shortened'));
            return text('done');
          },
        ],
        layers: [
          { name: 'rewrite', hooks: { afterTool: () => ({ result: { summary: 'shortened' } }) } },
          { name: 'later', hooks: { afterTool: () => undefined } },
        ],
      });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'increment', { by: 1 }))),
        at(R1, 0).beforeTool(C1, 'increment', { by: 1 }),
        at(R1, 0).state('tool', { count: 1, log: ['+1'] }, 'increment'),
        at(R1, 0).message(2, row.tool(C1, 'increment', { by: 1 })),
        by('rewrite', at(R1, 0).afterTool(C1, 'increment', { by: 1 }, { by: 1 })),
        by('later', at(R1, 0).afterTool(C1, 'increment', { by: 1 }, { summary: 'shortened' })),
        at(R1, 1).beforeLLM(4, 1),
        at(R1, 1).afterLLM('text'),
        at(R1, 1).message(3, row.assistant('done')),
        at(R1, 1).exit('text', 2, { increment: 1 }),
        complete(R1, 2, 'text', 'done'),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      notes: [{ label: 'the model saw the rewrite', value: true }],
      runs: [storedRun(R1, S1, 'start', 'completed', { output: 'done', result: { status: 'completed', exitReason: 'text', output: 'done', steps: 2, state: { count: 1, log: ['+1'] } } })],
      sessions: [
        storedSession(S1, R1, { count: 1, log: ['+1'] }, [
          row.user('go'),
          row.assistant('', toolCall(C1, 'increment', { by: 1 })),
          row.tool(C1, 'increment', { summary: 'shortened' }),
          row.assistant('done'),
        ]),
      ],
    },
  },
  {
    name: 'steer/on-exit-continue',
    topic: 'steering',
    description: 'onExit { continue, message } keeps the run going: the exiting step is committed, the message is appended (onMessage) and the loop continues (rules 194, 195, D6)',
    async run(t) {
      const a = agent(t, {
        steps: [text('done?'), calls(['increment', { by: 1 }]), text('now done')],
        layers: [
          {
            hooks: {
              onExit: (payload) => ((payload.toolCallCounts['increment'] ?? 0) === 0 ? { continue: true, message: 'You must call increment first.' } : undefined),
            },
          },
        ],
      });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('text'),
        at(R1, 0).message(1, row.assistant('done?')),
        at(R1, 0).exit('text', 1),
        at(R1, 0).message(2, row.user('You must call increment first.')),
        at(R1, 1).beforeLLM(4, 1),
        at(R1, 1).afterLLM('tool_calls'),
        at(R1, 1).message(3, row.assistant('', toolCall(C1, 'increment', { by: 1 }))),
        at(R1, 1).beforeTool(C1, 'increment', { by: 1 }),
        at(R1, 1).state('tool', { count: 1, log: ['+1'] }, 'increment'),
        at(R1, 1).message(4, row.tool(C1, 'increment', { by: 1 })),
        at(R1, 1).afterTool(C1, 'increment', { by: 1 }, { by: 1 }),
        at(R1, 2).beforeLLM(6, 1),
        at(R1, 2).afterLLM('text'),
        at(R1, 2).message(5, row.assistant('now done')),
        at(R1, 2).exit('text', 3, { increment: 1 }),
        complete(R1, 3, 'text', 'now done'),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      runs: [storedRun(R1, S1, 'start', 'completed', { output: 'now done', result: { status: 'completed', exitReason: 'text', output: 'now done', steps: 3, state: { count: 1, log: ['+1'] } } })],
      sessions: [
        storedSession(S1, R1, { count: 1, log: ['+1'] }, [
          row.user('go'),
          row.assistant('done?'),
          row.user('You must call increment first.'),
          row.assistant('', toolCall(C1, 'increment', { by: 1 })),
          row.tool(C1, 'increment', { by: 1 }),
          row.assistant('now done'),
        ]),
      ],
    },
  },
  {
    name: 'steer/on-exit-continue-after-finish',
    topic: 'steering',
    description: 'onExit may keep going after a __finish__: the output is not promoted, the step is committed with the message, and the next finish completes the run (D6)',
    async run(t) {
      const a = agent(t, {
        output: true,
        steps: [finish('draft', 'finish-1'), finish('final', 'finish-2')],
        layers: [{ hooks: { onExit: (payload) => ((payload.output as { answer: string }).answer === 'draft' ? { continue: true, message: 'Polish it.' } : undefined) } }],
      });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 2),
        at(R1, 0).afterLLM('finish'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, '__finish__', { answer: 'draft' }))),
        at(R1, 0).message(2, row.tool(C1, '__finish__', { ok: true })),
        at(R1, 0).exit('finish_tool', 1),
        at(R1, 0).message(3, row.user('Polish it.')),
        at(R1, 1).beforeLLM(5, 2),
        at(R1, 1).afterLLM('finish'),
        at(R1, 1).message(4, row.assistant('', toolCall(C2, '__finish__', { answer: 'final' }))),
        at(R1, 1).message(5, row.tool(C2, '__finish__', { ok: true })),
        at(R1, 1).exit('finish_tool', 2),
        complete(R1, 2, 'finish_tool', { answer: 'final' }),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      runs: [storedRun(R1, S1, 'start', 'completed', { output: { answer: 'final' }, result: { status: 'completed', exitReason: 'finish_tool', output: { answer: 'final' }, steps: 2, state: INITIAL } })],
      sessions: [
        storedSession(S1, R1, INITIAL, [
          row.user('go'),
          row.assistant('', toolCall(C1, '__finish__', { answer: 'draft' })),
          row.tool(C1, '__finish__', { ok: true }),
          row.user('Polish it.'),
          row.assistant('', toolCall(C2, '__finish__', { answer: 'final' })),
          row.tool(C2, '__finish__', { ok: true }),
        ]),
      ],
    },
  },
  {
    name: 'steer/on-exit-bounded-by-max-steps',
    topic: 'steering',
    description: 'an onExit that always continues is bounded by maxSteps; the run then completes with exitReason max_steps and its last text (rules 195, 196, C10, D6)',
    async run(t) {
      const a = agent(t, { maxSteps: 3, steps: [text('a'), text('b'), text('c')], layers: [{ hooks: { onExit: () => ({ continue: true }) } }] });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('text'),
        at(R1, 0).message(1, row.assistant('a')),
        at(R1, 0).exit('text', 1),
        at(R1, 1).beforeLLM(3, 1),
        at(R1, 1).afterLLM('text'),
        at(R1, 1).message(2, row.assistant('b')),
        at(R1, 1).exit('text', 2),
        at(R1, 2).beforeLLM(4, 1),
        at(R1, 2).afterLLM('text'),
        at(R1, 2).message(3, row.assistant('c')),
        at(R1, 2).exit('text', 3),
        complete(R1, 3, 'max_steps', 'c'),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      runs: [storedRun(R1, S1, 'start', 'completed', { output: 'c', result: { status: 'completed', exitReason: 'max_steps', output: 'c', steps: 3, state: INITIAL } })],
      sessions: [storedSession(S1, R1, INITIAL, [row.user('go'), row.assistant('a'), row.assistant('b'), row.assistant('c')])],
    },
  },
];
