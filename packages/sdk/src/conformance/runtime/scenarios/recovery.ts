// recover(): a run whose process died continues from its last commit, pairs its hooks with the start
// that fired in the dead process, and re-runs only the start work its turn still owes.
import { at, call, complete, row, run, session, storedRun, storedSession, toolCall } from '../expect.js';
import { agent, calls, finish, INITIAL } from '../fixtures.js';
import type { RuntimeScenario } from '../scenario.js';

const R1 = run(1);
const S1 = session(1);
const C1 = call(1);
const C2 = call(2);
const C3 = call(3);

/** Runs continued by recover() after their process died (capability crashRecovery). */
export const recoveryScenarios: readonly RuntimeScenario[] = [
  {
    name: 'recover/died-in-start-work',
    topic: 'recovery',
    description:
      'a process that died before its turn\'s start commit: the recovered run does not fire its start signal again but owes the start work, so onAgentStart(startSignal false) and onMessage for the input fire again (rules 13, 21, 22)',
    needs: ['crashRecovery'],
    async run(t) {
      const sessionId = t.sessionId();
      const a = agent(t, { output: true, steps: [finish('done')] });
      const doomed = await t.crashes().startDoomed('turn_start');
      await t.executeOn(doomed.runtime, a, 'go', { sessionId });
      await doomed.died;
      const [handle] = await t.recover({ agents: [a] });
      if (handle) await t.result(handle);
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).start('go', false),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 2),
        at(R1, 0).afterLLM('finish'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, '__finish__', { answer: 'done' }))),
        at(R1, 0).message(2, row.tool(C1, '__finish__', { ok: true })),
        at(R1, 0).exit('finish_tool', 1),
        complete(R1, 1, 'finish_tool', { answer: 'done' }),
      ],
      entries: [
        { entry: 'execute', session: S1, run: R1 },
        { entry: 'recover', session: S1, run: R1 },
      ],
      runs: [storedRun(R1, S1, 'start', 'completed', { output: { answer: 'done' }, result: { status: 'completed', exitReason: 'finish_tool', output: { answer: 'done' }, steps: 1, state: INITIAL } })],
      sessions: [storedSession(S1, R1, INITIAL, [row.user('go'), row.assistant('', toolCall(C1, '__finish__', { answer: 'done' })), row.tool(C1, '__finish__', { ok: true })])],
    },
  },
  {
    name: 'recover/died-mid-step',
    topic: 'recovery',
    description:
      'a process that died before its first step commit: the recovered run keeps the committed start work (no start hook again) and redoes the uncommitted step; the dead step\'s writes are lost (rules 23, 125)',
    needs: ['crashRecovery'],
    async run(t) {
      const sessionId = t.sessionId();
      const a = agent(t, { output: true, steps: [calls(['increment', { by: 1 }]), calls(['increment', { by: 1 }]), finish('done')] });
      const doomed = await t.crashes().startDoomed('step');
      await t.executeOn(doomed.runtime, a, 'go', { sessionId });
      await doomed.died;
      const [handle] = await t.recover({ agents: [a] });
      if (handle) await t.result(handle);
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
        at(R1, 0).beforeLLM(2, 2),
        at(R1, 0).afterLLM('tool_calls'),
        at(R1, 0).message(1, row.assistant('', toolCall(C2, 'increment', { by: 1 }))),
        at(R1, 0).beforeTool(C2, 'increment', { by: 1 }),
        at(R1, 0).state('tool', { count: 1, log: ['+1'] }, 'increment'),
        at(R1, 0).message(2, row.tool(C2, 'increment', { by: 1 })),
        at(R1, 0).afterTool(C2, 'increment', { by: 1 }, { by: 1 }),
        at(R1, 1).beforeLLM(4, 2),
        at(R1, 1).afterLLM('finish'),
        at(R1, 1).message(3, row.assistant('', toolCall(C3, '__finish__', { answer: 'done' }))),
        at(R1, 1).message(4, row.tool(C3, '__finish__', { ok: true })),
        at(R1, 1).exit('finish_tool', 2, { increment: 1 }),
        complete(R1, 2, 'finish_tool', { answer: 'done' }),
      ],
      entries: [
        { entry: 'execute', session: S1, run: R1 },
        { entry: 'recover', session: S1, run: R1 },
      ],
      runs: [
        storedRun(R1, S1, 'start', 'completed', {
          output: { answer: 'done' },
          result: { status: 'completed', exitReason: 'finish_tool', output: { answer: 'done' }, steps: 2, state: { count: 1, log: ['+1'] } },
        }),
      ],
      sessions: [
        storedSession(S1, R1, { count: 1, log: ['+1'] }, [
          row.user('go'),
          row.assistant('', toolCall(C2, 'increment', { by: 1 })),
          row.tool(C2, 'increment', { by: 1 }),
          row.assistant('', toolCall(C3, '__finish__', { answer: 'done' })),
          row.tool(C3, '__finish__', { ok: true }),
        ]),
      ],
    },
  },
  {
    name: 'recover/died-before-terminal-commit',
    topic: 'recovery',
    description:
      'a process that died after onAgentComplete and before its terminal commit: the recovered run replays the hook\'s recorded outcome (its writes included) instead of firing it again, then commits (rules 13, 36, 39)',
    needs: ['crashRecovery'],
    async run(t) {
      const sessionId = t.sessionId();
      const a = agent(t, { output: true, steps: [finish('done')], layers: [{ hooks: { onAgentComplete: (_p, ctx) => ctx.updateState((d) => void d.log.push('complete')) } }] });
      const doomed = await t.crashes().startDoomed('terminal');
      await t.executeOn(doomed.runtime, a, 'go', { sessionId });
      await doomed.died;
      const [handle] = await t.recover({ agents: [a] });
      if (handle) await t.result(handle);
    },
    expected: {
      hooks: [
        at(R1, 0).start('go'),
        at(R1, 0).message(0, row.user('go')),
        at(R1, 0).beforeLLM(2, 2),
        at(R1, 0).afterLLM('finish'),
        at(R1, 0).message(1, row.assistant('', toolCall(C1, '__finish__', { answer: 'done' }))),
        at(R1, 0).message(2, row.tool(C1, '__finish__', { ok: true })),
        at(R1, 0).exit('finish_tool', 1),
        complete(R1, 1, 'finish_tool', { answer: 'done' }),
        at(R1, 1).state('hook', { count: 0, log: ['complete'] }),
      ],
      entries: [
        { entry: 'execute', session: S1, run: R1 },
        { entry: 'recover', session: S1, run: R1 },
      ],
      runs: [
        storedRun(R1, S1, 'start', 'completed', {
          output: { answer: 'done' },
          result: { status: 'completed', exitReason: 'finish_tool', output: { answer: 'done' }, steps: 1, state: { count: 0, log: ['complete'] } },
        }),
      ],
      sessions: [storedSession(S1, R1, { count: 0, log: ['complete'] }, [row.user('go'), row.assistant('', toolCall(C1, '__finish__', { answer: 'done' })), row.tool(C1, '__finish__', { ok: true })])],
    },
  },
];
