// Sub-agents, part three: what a parent's stream and usage show of its children on every runtime: the
// children's chunks tagged (a grandchild's inside its parent's), a tool with stream: false, the usage rollup.
import { defineAgent } from '../../../define.js';
import type { StreamChunk } from '../../../stream.js';
import { childSessionId, defineSubAgentTool } from '../../../sub-agent-tool.js';
import { createScriptedModel } from '../../../testing/scripted-model.js';
import { C1, R1, R2, row, S1, S2, storedSession } from '../expect.js';
import { agent, calls, inTopic, text, type TopicScenario } from '../fixtures.js';
import { callRows, callsTools, completedRun, completesWithText, entered, foldsChild, newTurn, spawnsChild } from '../fragments.js';
import type { RuntimeScenario } from '../scenario.js';
import type { JsonValue } from '../trace.js';
import { child, chunksOf, dig, FIRST, fold, folded, oneChildEnd, oneChildHooks, SECOND } from './sub-agent-parts.js';

const scenarios: TopicScenario[] = [
  {
    name: 'subagent/stream-carries-child-chunks',
    description:
      "the parent's stream carries the child's chunks as subagent_chunk, each tagged with the child's session, the parent's call id and depth 1, the child's text among them; the child's end is one of them and not the parent's end (the parent's stream has one end, last); a reader of the child's stream sees only the child (issue 11 item 6; rule 79)",
    async run(t) {
      const researcher = child(t, 'researcher', [text('found it')]);
      const lead = agent(t, { name: 'lead', tools: [defineSubAgentTool({ agent: researcher, name: 'research' })], steps: [calls(['research', { input: 'look' }]), text('merged')], layers: [fold] });
      const sessionId = t.sessionId();
      const handle = await t.execute(lead, 'go', { sessionId });
      await t.result(handle);
      const chunks = await chunksOf(t, sessionId);
      const forwarded = chunks.filter((c): c is Extract<StreamChunk, { type: 'subagent_chunk' }> => c.type === 'subagent_chunk');
      const tags = new Map(forwarded.map((c) => [JSON.stringify([c.childSessionId, c.parentToolCallId, c.depth]), { child: c.childSessionId, call: c.parentToolCallId, depth: c.depth }]));
      t.note('tags of the forwarded chunks', [...tags.values()]);
      t.note("the child's text in the parent's stream", forwarded.map((c) => (c.chunk.type === 'text_delta' ? c.chunk.delta : '')).join(''));
      t.note("the child's end is forwarded", forwarded.some((c) => c.chunk.type === 'end'));
      t.note("end chunks of the parent's own", chunks.filter((c) => c.type === 'end').length);
      t.note("the parent's last chunk", chunks.at(-1)?.type);
      const childChunks = await chunksOf(t, forwarded[0]?.childSessionId ?? '');
      t.note("the child's stream has forwarded chunks", childChunks.some((c) => c.type === 'subagent_chunk'));
      t.note("the child's stream has its text", childChunks.map((c) => (c.type === 'text_delta' ? c.delta : '')).join(''));
    },
    expected: {
      hooks: oneChildHooks(),
      ...oneChildEnd,
      notes: [
        { label: 'tags of the forwarded chunks', value: [{ child: S2, call: C1, depth: 1 }] },
        { label: "the child's text in the parent's stream", value: 'found it' },
        { label: "the child's end is forwarded", value: true },
        { label: "end chunks of the parent's own", value: 1 },
        { label: "the parent's last chunk", value: 'end' },
        { label: "the child's stream has forwarded chunks", value: false },
        { label: "the child's stream has its text", value: 'found it' },
      ],
    },
  },
  {
    name: 'subagent/stream-grandchild-tags',
    description:
      "a grandchild's chunks reach the root's stream too: inside the child's subagent_chunk (depth 1, the child's derived session, the root's call) is the grandchild's (depth 2, the grandchild's derived session, the child's call), its text among them; one end of the root's own, last (issue 11 item 6)",
    async run(t) {
      // Only the root is recorded: the trace checks its hooks; the notes check the tags of the tree below it.
      const leaf = defineAgent<unknown, unknown>({ name: 'leaf', llmConfig: { model: createScriptedModel([text('leaf found it')]) } });
      const middle = defineAgent<unknown, unknown>({
        name: 'middle',
        llmConfig: { model: createScriptedModel([{ toolCalls: [{ name: 'leaf', args: { input: 'deeper' }, id: 'to-leaf' }] }, text('shallow')]) },
        tools: [defineSubAgentTool({ agent: leaf })],
      });
      const top = agent(t, { name: 'top', tools: [defineSubAgentTool({ agent: middle, name: 'delegate' })], steps: [{ toolCalls: [{ name: 'delegate', args: { input: 'dig' }, id: 'to-middle' }] }, text('done')], layers: [fold] });
      const sessionId = t.sessionId();
      await t.result(await t.execute(top, 'go', { sessionId }));
      const chunks = await chunksOf(t, sessionId);
      const middleSession = childSessionId(sessionId, 'to-middle');
      const tags = new Map<string, JsonValue>();
      let leafText = '';
      for (const c of chunks) {
        if (c.type !== 'subagent_chunk') continue;
        tags.set(`1 ${c.childSessionId} ${c.parentToolCallId} ${c.depth}`, { depth: c.depth, call: c.parentToolCallId, derived: c.childSessionId === middleSession });
        const inner = c.chunk;
        if (inner.type !== 'subagent_chunk') continue;
        tags.set(`2 ${inner.childSessionId} ${inner.parentToolCallId} ${inner.depth}`, { depth: inner.depth, call: inner.parentToolCallId, derived: inner.childSessionId === childSessionId(middleSession, 'to-leaf') });
        if (inner.chunk.type === 'text_delta') leafText += inner.chunk.delta;
      }
      t.note('tags in the root stream (outer, then inner)', [...tags.values()]);
      t.note("the grandchild's text in the root stream", leafText);
      t.note("end chunks of the root's own", chunks.filter((c) => c.type === 'end').length);
      t.note("the root's last chunk", chunks.at(-1)?.type);
    },
    expected: {
      hooks: [
        ...newTurn(R1, 0, 'go'),
        ...callsTools(R1, 0, FIRST, 1, dig),
        ...spawnsChild(R1, 0, dig, 'middle'),
        ...foldsChild(R1, 0, dig, 'middle', { success: true, result: 'shallow' }, folded('ok shallow'), 2),
        ...completesWithText(R1, 1, SECOND, 3, 'done', { delegate: 1 }),
      ],
      entries: [entered('execute', S1, R1)],
      notes: [
        { label: 'tags in the root stream (outer, then inner)', value: [{ depth: 1, call: C1, derived: true }, { depth: 2, call: 'to-leaf', derived: true }] },
        { label: "the grandchild's text in the root stream", value: 'leaf found it' },
        { label: "end chunks of the root's own", value: 1 },
        { label: "the root's last chunk", value: 'end' },
      ],
      runs: [completedRun(R1, S1, 'start', { exitReason: 'text', output: 'done', steps: 2, state: folded('ok shallow') })],
      sessions: [storedSession(S1, R1, folded('ok shallow'), [row.user('go'), ...callRows(dig, 'shallow'), row.assistant('done')])],
    },
  },
  {
    name: 'subagent/stream-false-keeps-child-chunks-out',
    description:
      "a sub-agent tool with stream: false: the parent's stream carries none of the child's chunks (no text, no end) and has its own end last, the child's own stream has them all, and the hooks, the call's result and the stored sessions are those of the default (issue 11 item 1)",
    async run(t) {
      const researcher = child(t, 'researcher', [text('found it')]);
      const lead = agent(t, { name: 'lead', tools: [defineSubAgentTool({ agent: researcher, name: 'research', stream: false })], steps: [calls(['research', { input: 'look' }]), text('merged')], layers: [fold] });
      const sessionId = t.sessionId();
      await t.result(await t.execute(lead, 'go', { sessionId }));
      const chunks = await chunksOf(t, sessionId);
      t.note("forwarded chunks in the parent's stream", chunks.filter((c) => c.type === 'subagent_chunk').length);
      t.note("the parent's last chunk", chunks.at(-1)?.type);
      const session = await t.runtime.getSession(sessionId);
      const callId = session?.messages.find((m) => m.role === 'tool')?.toolCallId ?? '';
      const childChunks = await chunksOf(t, childSessionId(sessionId, callId));
      t.note("the child's stream has its text", childChunks.map((c) => (c.type === 'text_delta' ? c.delta : '')).join(''));
      t.note("the child's last chunk", childChunks.at(-1)?.type);
    },
    expected: {
      hooks: oneChildHooks(),
      ...oneChildEnd,
      notes: [
        { label: "forwarded chunks in the parent's stream", value: 0 },
        { label: "the parent's last chunk", value: 'end' },
        { label: "the child's stream has its text", value: 'found it' },
        { label: "the child's last chunk", value: 'end' },
      ],
    },
  },
  {
    name: 'subagent/usage-rollup-includes-children',
    description:
      "the parent's getUsageRollup() includes its child: tokens and model calls summed once (parent 2 calls, child 1), the sub-agent tool's stats, and a per-sub-agent breakdown naming the child's session and run with the child's own rollup (issue 11 item 7)",
    async run(t) {
      const usage = { inputTokens: 10, outputTokens: 5 };
      const researcher = child(t, 'researcher', [{ text: 'found it', usage: { inputTokens: 7, outputTokens: 3 } }]);
      const lead = agent(t, { name: 'lead', tools: [defineSubAgentTool({ agent: researcher, name: 'research' })], steps: [{ ...calls(['research', { input: 'look' }]), usage }, { text: 'merged', usage }], layers: [fold] });
      const handle = await t.execute(lead, 'go', { sessionId: t.sessionId(), usageStore: t.usageStore() });
      await t.result(handle);
      const rollup = await handle.getUsageRollup();
      t.note('rollup', {
        tokens: rollup ? { prompt: rollup.tokens.prompt, completion: rollup.tokens.completion, total: rollup.tokens.total } : null,
        modelCalls: rollup?.modelCalls ?? null,
        research: rollup?.toolStats.byTool['research'] ? { calls: rollup.toolStats.byTool['research'].calls, failures: rollup.toolStats.byTool['research'].failures } : null,
        totalToolCalls: rollup?.toolStats.totalCalls ?? null,
        subAgents: (rollup?.subAgents ?? []).map((s) => ({ session: s.sessionId, run: s.runId, modelCalls: s.rollup.modelCalls, total: s.rollup.tokens.total })),
      });
    },
    expected: {
      hooks: oneChildHooks(),
      ...oneChildEnd,
      notes: [
        {
          label: 'rollup',
          value: {
            tokens: { prompt: 27, completion: 13, total: 40 },
            modelCalls: 3,
            research: { calls: 1, failures: 0 },
            totalToolCalls: 1,
            subAgents: [{ session: S2, run: R2, modelCalls: 1, total: 10 }],
          },
        },
      ],
    },
  },
];

/** What a parent's stream and usage show of its children: chunk tags at depth 1 and 2, stream: false, the usage rollup. */
export const subAgentStreamScenarios: readonly RuntimeScenario[] = inTopic('sub-agents', scenarios);
