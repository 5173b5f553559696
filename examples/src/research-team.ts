// A lead agent fans out to five researcher sub-agents in one step; each researcher's afterSubAgent fold
// writes its findings into notes[threadId]. The folds of parallel children compose: disjoint edits all
// survive. The researchers' text streams live through the lead's stream (each chunk tagged with the call
// that started its child), printed as it comes. Run: npm run example:research-team  (scripted models;
// nothing leaves the machine)
import { z } from 'zod';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { defineAgent, defineSubAgentTool, InMemoryStateStore, InMemoryStreamManager, InMemoryUsageStore, JSAgentExecutor, type Draft, type StreamChunk } from '@helix-agents/sdk';
import { createScriptedModel } from '@helix-agents/sdk/testing';

const TOPICS = ['batteries', 'solar', 'wind', 'hydrogen', 'grid storage'];

const Notes = z.object({
  notes: z.array(z.object({ topic: z.string(), status: z.enum(['open', 'covered', 'failed']), finding: z.string() })).default([]),
});
type NotesState = z.infer<typeof Notes>;

/** A researcher: its scripted model answers with a finding about the topic it is given. */
export const researcher = defineAgent({
  name: 'researcher',
  systemPrompt: 'Research one topic and answer in one sentence.',
  llmConfig: {
    // The finding streams in three pieces, a few milliseconds apart, so the five researchers' text interleaves.
    model: createScriptedModel([(options) => ({ textChunks: [`Finding about ${lastUserText(options.prompt)}:`, ' costs fell', ' again this year.'], chunkDelayMs: 4, delayMs: 5 })], { loop: true }),
  },
});

/** Where the example prints (the terminal; the test collects the lines). */
let print: (line: string) => void = (line) => console.log(line);

function lastUserText(prompt: readonly { role: string; content: unknown }[]): string {
  const last = [...prompt].reverse().find((m) => m.role === 'user');
  const parts = Array.isArray(last?.content) ? (last.content as { type: string; text?: string }[]) : [];
  return parts.map((p) => p.text ?? '').join('');
}

/** The lead: one step with five parallel sub-agent calls, then a summary. */
export const lead = defineAgent({
  name: 'lead',
  systemPrompt: 'Split the question into topics and delegate each to a researcher.',
  stateSchema: Notes,
  llmConfig: {
    model: createScriptedModel([
      { toolCalls: TOPICS.map((topic, threadId) => ({ name: 'research', args: { threadId, topic }, id: `thread-${threadId}` })) },
      { text: `Summary: ${TOPICS.length} topics researched.` },
    ]),
  },
  tools: [
    defineSubAgentTool({
      agent: researcher,
      name: 'research',
      description: 'Research one topic.',
      inputSchema: z.object({ threadId: z.number().int(), topic: z.string() }),
      input: (args) => args.topic,
    }),
  ],
  hooks: {
    onAgentStart: (_payload, ctx) => {
      ctx.updateState((draft) => {
        (draft as Draft<NotesState>).notes = TOPICS.map((topic) => ({ topic, status: 'open', finding: '' }));
      });
    },
    beforeSubAgent: (payload) => print(`  → ${payload.call.id} starts a ${payload.agentConfig?.name ?? payload.call.agentType}`),
    afterSubAgent: (payload, ctx) => {
      const { threadId } = payload.call.input as { threadId: number };
      ctx.updateState((draft) => {
        const note = (draft as Draft<NotesState>).notes[threadId];
        if (!note) return;
        note.status = payload.success ? 'covered' : 'failed';
        note.finding = String(payload.result ?? payload.error?.message ?? '');
      });
      print(`  ← ${payload.call.id} ${payload.success ? 'covered' : 'failed'} in ${payload.durationMs.toFixed(0)} ms`);
    },
  },
});

/** The line a chunk of the lead's stream prints as it arrives: a researcher's text and end (tagged with its call and depth), the lead's own text; none for the rest. */
export function liveLine(chunk: StreamChunk): string | undefined {
  if (chunk.type === 'text_delta') return `  lead › ${chunk.delta}`;
  if (chunk.type !== 'subagent_chunk') return undefined;
  const who = `  ⋯ ${chunk.parentToolCallId} (depth ${chunk.depth})`;
  if (chunk.chunk.type === 'text_delta') return `${who} › ${chunk.chunk.delta}`;
  if (chunk.chunk.type === 'end') return `${who} ended`;
  return undefined;
}

/** Runs the lead, printing its stream live through `out`, and returns what the example prints at the end (tested in examples.test.ts). */
export async function runResearchTeam(out: (line: string) => void = print): Promise<{ readonly state: NotesState; readonly output: unknown; readonly childChunks: number; readonly modelCalls: number }> {
  print = out;
  const executor = new JSAgentExecutor(new InMemoryStateStore(), new InMemoryStreamManager(), new VercelAIAdapter());
  const usageStore = new InMemoryUsageStore();
  const handle = await executor.execute(lead, 'What is new in clean energy?', { usageStore });
  let childChunks = 0;
  for await (const chunk of handle.stream()) {
    if (chunk.type === 'subagent_chunk') childChunks++;
    const line = liveLine(chunk);
    if (line !== undefined) out(line);
  }
  const result = await handle.result();
  const rollup = await handle.getUsageRollup();
  return { state: result.state as NotesState, output: result.output, childChunks, modelCalls: rollup?.modelCalls ?? 0 };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log('research team: a lead fans out to five researchers');
  const { state, output, childChunks, modelCalls } = await runResearchTeam();
  for (const [threadId, note] of state.notes.entries()) console.log(`notes[${threadId}] ${note.status.padEnd(7)} ${note.topic}: ${note.finding}`);
  console.log(`output: ${String(output)}`);
  console.log(`${childChunks} child chunks streamed live in the lead's stream; ${modelCalls} model calls in the lead's usage, its children's included`);
}
