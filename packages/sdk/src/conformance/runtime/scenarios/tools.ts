// Tool calls: the canonical order beforeTool → onStateChange → onMessage → afterTool, parallel calls,
// unknown tools and invalid arguments (no tool hooks), failing tools, finishWith and __finish__.
import { z } from 'zod';
import { defineTool } from '../../../define.js';
import { at, call, complete, row, run, session, storedRun, storedSession, toolCall } from '../expect.js';
import { agent, calls, finish, incrementTool, INITIAL, text, type Counter } from '../fixtures.js';
import type { RuntimeScenario } from '../scenario.js';

const R1 = run(1);
const S1 = session(1);
const C1 = call(1);
const C2 = call(2);
const C3 = call(3);

/** Writes the state twice: the count, then the log. */
const twiceTool = defineTool({
  name: 'twice',
  description: 'Two separate state writes.',
  inputSchema: z.object({}),
  execute: (_input, ctx) => {
    ctx.updateState<Counter>((d) => void (d.count += 1));
    ctx.updateState<Counter>((d) => void d.log.push('twice'));
    return 'written';
  },
});

/** Appends a note to the log. */
const noteTool = defineTool({
  name: 'note',
  description: 'Logs a note.',
  inputSchema: z.object({ text: z.string() }),
  execute: (input, ctx) => {
    ctx.updateState<Counter>((d) => void d.log.push(input.text));
    return 'noted';
  },
});

/** Writes the state, then throws. */
const explodeTool = defineTool({
  name: 'explode',
  description: 'Fails.',
  inputSchema: z.object({}),
  execute: (_input, ctx) => {
    ctx.updateState<Counter>((d) => void d.log.push('before the failure'));
    throw new Error('kaboom');
  },
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
export const toolScenarios: readonly RuntimeScenario[] = [
  {
    name: 'tools/canonical-order',
    topic: 'tools',
    description: 'one call fires beforeTool, then onStateChange for each of its writes, then onMessage for its result, then afterTool (rule 75, D3)',
    async run(t) {
      const a = agent(t, { tools: [twiceTool], steps: [calls(['twice', {}]), text('done')] });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'twice', {}))),
        at(R1, 0).beforeTool(C1, 'twice', {}),
        at(R1, 0).state('tool', { count: 1, log: [] }, 'twice'),
        at(R1, 0).state('tool', { count: 1, log: ['twice'] }, 'twice'),
        at(R1, 0).message(2, row.tool(C1, 'twice', 'written')),
        at(R1, 0).afterTool(C1, 'twice', {}, 'written'),
        at(R1, 1).beforeLLM(4, 1),
        at(R1, 1).afterLLM('text'),
        at(R1, 1).message(3, row.assistant('done')),
        at(R1, 1).exit('text', 2, { twice: 1 }),
        complete(R1, 2, 'text', 'done'),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      runs: [storedRun(R1, S1, 'start', 'completed', { output: 'done', result: { status: 'completed', exitReason: 'text', output: 'done', steps: 2, state: { count: 1, log: ['twice'] } } })],
      sessions: [
        storedSession(S1, R1, { count: 1, log: ['twice'] }, [row.user('go'), row.assistant('', toolCall(C1, 'twice', {})), row.tool(C1, 'twice', 'written'), row.assistant('done')]),
      ],
    },
  },
  {
    name: 'tools/parallel-calls',
    topic: 'tools',
    description: 'the calls of one step each follow the canonical order (hooks of parallel calls are ordered per call, D16); their result rows are listed in the model\'s order (rules 75, 77)',
    async run(t) {
      const a = agent(t, { tools: [incrementTool, noteTool], steps: [calls(['increment', { by: 3 }], ['note', { text: 'hello' }]), text('done')] });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 2),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'increment', { by: 3 }), toolCall(C2, 'note', { text: 'hello' }))),
        at(R1, 0).beforeTool(C1, 'increment', { by: 3 }),
        at(R1, 0).state('tool', { count: 3, log: ['+3'] }, 'increment'),
        at(R1, 0).message(2, row.tool(C1, 'increment', { by: 3 })),
        at(R1, 0).afterTool(C1, 'increment', { by: 3 }, { by: 3 }),
        at(R1, 0).beforeTool(C2, 'note', { text: 'hello' }),
        at(R1, 0).state('tool', { count: 3, log: ['+3', 'hello'] }, 'note'),
        at(R1, 0).message(3, row.tool(C2, 'note', 'noted')),
        at(R1, 0).afterTool(C2, 'note', { text: 'hello' }, 'noted'),
        at(R1, 1).beforeLLM(5, 2),
        at(R1, 1).afterLLM('text'),
        at(R1, 1).message(4, row.assistant('done')),
        at(R1, 1).exit('text', 2, { increment: 1, note: 1 }),
        complete(R1, 2, 'text', 'done'),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      runs: [storedRun(R1, S1, 'start', 'completed', { output: 'done', result: { status: 'completed', exitReason: 'text', output: 'done', steps: 2, state: { count: 3, log: ['+3', 'hello'] } } })],
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
    topic: 'tools',
    description: 'a call to a tool the agent does not have fires no tool hook: a tool_not_found result goes back to the model (onMessage only) and the loop goes on (D5)',
    async run(t) {
      const a = agent(t, { output: true, steps: [calls(['nope', {}]), finish('recovered')] });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 2),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'nope', {}))),
        at(R1, 0).message(2, row.toolError(C1, 'nope', 'tool_not_found')),
        at(R1, 1).beforeLLM(4, 2),
        at(R1, 1).afterLLM('finish'),
        at(R1, 1).message(3, row.assistant('', toolCall(C2, '__finish__', { answer: 'recovered' }))),
        at(R1, 1).message(4, row.tool(C2, '__finish__', { ok: true })),
        at(R1, 1).exit('finish_tool', 2),
        complete(R1, 2, 'finish_tool', { answer: 'recovered' }),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      runs: [storedRun(R1, S1, 'start', 'completed', { output: { answer: 'recovered' }, result: { status: 'completed', exitReason: 'finish_tool', output: { answer: 'recovered' }, steps: 2, state: INITIAL } })],
      sessions: [
        storedSession(S1, R1, INITIAL, [
          row.user('go'),
          row.assistant('', toolCall(C1, 'nope', {})),
          row.toolError(C1, 'nope', 'tool_not_found'),
          row.assistant('', toolCall(C2, '__finish__', { answer: 'recovered' })),
          row.tool(C2, '__finish__', { ok: true }),
        ]),
      ],
    },
  },
  {
    name: 'tools/invalid-arguments',
    topic: 'tools',
    description: 'arguments that fail the tool\'s schema fire no tool hook: a tool_invalid_input result goes back to the model (onMessage only); invalid calls are not counted (D5)',
    async run(t) {
      const a = agent(t, { steps: [calls(['increment', { by: 'x' }]), text('sorry')] });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'increment', { by: 'x' }))),
        at(R1, 0).message(2, row.toolError(C1, 'increment', 'tool_invalid_input')),
        at(R1, 1).beforeLLM(4, 1),
        at(R1, 1).afterLLM('text'),
        at(R1, 1).message(3, row.assistant('sorry')),
        at(R1, 1).exit('text', 2),
        complete(R1, 2, 'text', 'sorry'),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      runs: [storedRun(R1, S1, 'start', 'completed', { output: 'sorry', result: { status: 'completed', exitReason: 'text', output: 'sorry', steps: 2, state: INITIAL } })],
      sessions: [
        storedSession(S1, R1, INITIAL, [
          row.user('go'),
          row.assistant('', toolCall(C1, 'increment', { by: 'x' })),
          row.toolError(C1, 'increment', 'tool_invalid_input'),
          row.assistant('sorry'),
        ]),
      ],
    },
  },
  {
    name: 'tools/tool-throws',
    topic: 'tools',
    description:
      'a tool that throws ends its call with a tool_failed result (onMessage) and afterTool(success false); the run goes on and the writes recorded with the failed call persist (rules 74, 125, D4)',
    async run(t) {
      const a = agent(t, { tools: [explodeTool], steps: [calls(['explode', {}]), text('it failed')] });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'explode', {}))),
        at(R1, 0).beforeTool(C1, 'explode', {}),
        at(R1, 0).state('tool', { count: 0, log: ['before the failure'] }, 'explode'),
        at(R1, 0).message(2, row.toolError(C1, 'explode', 'tool_failed')),
        at(R1, 0).afterToolError(C1, 'explode', {}, 'tool_failed'),
        at(R1, 1).beforeLLM(4, 1),
        at(R1, 1).afterLLM('text'),
        at(R1, 1).message(3, row.assistant('it failed')),
        at(R1, 1).exit('text', 2, { explode: 1 }),
        complete(R1, 2, 'text', 'it failed'),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      runs: [
        storedRun(R1, S1, 'start', 'completed', { output: 'it failed', result: { status: 'completed', exitReason: 'text', output: 'it failed', steps: 2, state: { count: 0, log: ['before the failure'] } } }),
      ],
      sessions: [
        storedSession(S1, R1, { count: 0, log: ['before the failure'] }, [
          row.user('go'),
          row.assistant('', toolCall(C1, 'explode', {})),
          row.toolError(C1, 'explode', 'tool_failed'),
          row.assistant('it failed'),
        ]),
      ],
    },
  },
  {
    name: 'tools/finish-with',
    topic: 'tools',
    description: 'a finishWith tool runs its full hook sequence, then its output is promoted and onAgentComplete fires with exitReason finish_with (rule 31, D7)',
    async run(t) {
      const a = agent(t, { output: true, tools: [reportTool], steps: [calls(['report', { text: 'done' }])] });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 2),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'report', { text: 'done' }))),
        at(R1, 0).beforeTool(C1, 'report', { text: 'done' }),
        at(R1, 0).message(2, row.tool(C1, 'report', { answer: 'DONE' })),
        at(R1, 0).afterTool(C1, 'report', { text: 'done' }, { answer: 'DONE' }),
        at(R1, 0).exit('finish_with', 1, { report: 1 }),
        complete(R1, 1, 'finish_with', { answer: 'DONE' }),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      runs: [storedRun(R1, S1, 'start', 'completed', { output: { answer: 'DONE' }, result: { status: 'completed', exitReason: 'finish_with', output: { answer: 'DONE' }, steps: 1, state: INITIAL } })],
      sessions: [storedSession(S1, R1, INITIAL, [row.user('go'), row.assistant('', toolCall(C1, 'report', { text: 'done' })), row.tool(C1, 'report', { answer: 'DONE' })])],
    },
  },
  {
    name: 'tools/finish-tool-invalid-output',
    topic: 'tools',
    description: '__finish__ is internal (no tool hooks); an output that fails the outputSchema goes back to the model as tool_invalid_input and the run goes on (D7)',
    async run(t) {
      const a = agent(t, { output: true, steps: [calls(['__finish__', { wrong: 1 }]), finish('fixed')] });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 2),
        at(R1, 0).afterLLM('finish'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, '__finish__', { wrong: 1 }))),
        at(R1, 0).message(2, row.toolError(C1, '__finish__', 'tool_invalid_input')),
        at(R1, 1).beforeLLM(4, 2),
        at(R1, 1).afterLLM('finish'),
        at(R1, 1).message(3, row.assistant('', toolCall(C2, '__finish__', { answer: 'fixed' }))),
        at(R1, 1).message(4, row.tool(C2, '__finish__', { ok: true })),
        at(R1, 1).exit('finish_tool', 2),
        complete(R1, 2, 'finish_tool', { answer: 'fixed' }),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      runs: [storedRun(R1, S1, 'start', 'completed', { output: { answer: 'fixed' }, result: { status: 'completed', exitReason: 'finish_tool', output: { answer: 'fixed' }, steps: 2, state: INITIAL } })],
      sessions: [
        storedSession(S1, R1, INITIAL, [
          row.user('go'),
          row.assistant('', toolCall(C1, '__finish__', { wrong: 1 })),
          row.toolError(C1, '__finish__', 'tool_invalid_input'),
          row.assistant('', toolCall(C2, '__finish__', { answer: 'fixed' })),
          row.tool(C2, '__finish__', { ok: true }),
        ]),
      ],
    },
  },
  {
    name: 'tools/finish-tool-on-text-agent',
    topic: 'tools',
    description: 'an agent without an outputSchema has no __finish__: the call gets tool_not_found, no tool hooks, and the run goes on (D5, D7)',
    async run(t) {
      const a = agent(t, { steps: [finish('nope'), text('plain answer')] });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('finish'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, '__finish__', { answer: 'nope' }))),
        at(R1, 0).message(2, row.toolError(C1, '__finish__', 'tool_not_found')),
        at(R1, 1).beforeLLM(4, 1),
        at(R1, 1).afterLLM('text'),
        at(R1, 1).message(3, row.assistant('plain answer')),
        at(R1, 1).exit('text', 2),
        complete(R1, 2, 'text', 'plain answer'),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      runs: [storedRun(R1, S1, 'start', 'completed', { output: 'plain answer', result: { status: 'completed', exitReason: 'text', output: 'plain answer', steps: 2, state: INITIAL } })],
      sessions: [
        storedSession(S1, R1, INITIAL, [
          row.user('go'),
          row.assistant('', toolCall(C1, '__finish__', { answer: 'nope' })),
          row.toolError(C1, '__finish__', 'tool_not_found'),
          row.assistant('plain answer'),
        ]),
      ],
    },
  },
  {
    name: 'tools/hook-state-writes',
    topic: 'tools',
    description: 'a hook\'s updateState fires onStateChange with source hook right after the hook; writes made inside onStateChange apply without firing it again (rules 89, D9)',
    async run(t) {
      const a = agent(t, {
        steps: [text('ok')],
        layers: [
          {
            hooks: {
              afterLLMCall: (_p, ctx) => ctx.updateState((d) => void d.log.push('llm')),
              onStateChange: (_p, ctx) => ctx.updateState((d) => void d.log.push('seen')),
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
        at(R1, 0).state('hook', { count: 0, log: ['llm'] }),
        at(R1, 0).message(1, row.assistant('ok')),
        at(R1, 0).exit('text', 1),
        complete(R1, 1, 'text', 'ok'),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      runs: [storedRun(R1, S1, 'start', 'completed', { output: 'ok', result: { status: 'completed', exitReason: 'text', output: 'ok', steps: 1, state: { count: 0, log: ['llm', 'seen'] } } })],
      sessions: [storedSession(S1, R1, { count: 0, log: ['llm', 'seen'] }, [row.user('go'), row.assistant('ok')])],
    },
  },
  {
    name: 'tools/mixed-step',
    topic: 'tools',
    description: 'a step with an allowed call, an unknown tool and invalid arguments: only the valid call fires tool hooks; every call gets a result row (D3, D5)',
    async run(t) {
      const a = agent(t, { steps: [calls(['increment', { by: 1 }], ['missing', {}], ['increment', { by: 'x' }]), text('done')] });
      await t.result(await t.execute(a, 'go', { sessionId: t.sessionId() }));
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 1),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, 'increment', { by: 1 }), toolCall(C2, 'missing', {}), toolCall(C3, 'increment', { by: 'x' }))),
        at(R1, 0).beforeTool(C1, 'increment', { by: 1 }),
        at(R1, 0).state('tool', { count: 1, log: ['+1'] }, 'increment'),
        at(R1, 0).message(2, row.tool(C1, 'increment', { by: 1 })),
        at(R1, 0).afterTool(C1, 'increment', { by: 1 }, { by: 1 }),
        at(R1, 0).message(3, row.toolError(C2, 'missing', 'tool_not_found')),
        at(R1, 0).message(4, row.toolError(C3, 'increment', 'tool_invalid_input')),
        at(R1, 1).beforeLLM(6, 1),
        at(R1, 1).afterLLM('text'),
        at(R1, 1).message(5, row.assistant('done')),
        at(R1, 1).exit('text', 2, { increment: 1 }),
        complete(R1, 2, 'text', 'done'),
      ],
      entries: [{ entry: 'execute', session: S1, run: R1 }],
      runs: [storedRun(R1, S1, 'start', 'completed', { output: 'done', result: { status: 'completed', exitReason: 'text', output: 'done', steps: 2, state: { count: 1, log: ['+1'] } } })],
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
];
