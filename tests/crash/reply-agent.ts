// The agent of the model-reply journaling crash test: no side-effecting tool (so by default its replies
// are not journaled), and a scripted model that logs every call it answers and names the process that
// answered in its reply, so the test sees whether a recovered step called the model again or replayed.
import { appendFileSync } from 'node:fs';
import { z } from 'zod';
import { defineAgent, defineTool } from '@helix-agents/sdk';
import { createScriptedModel } from '@helix-agents/sdk/testing';

/** One line of the model-calls log: which process answered which turn, and the turn's input (a worker serves many sessions). */
export interface ModelCallLine {
  readonly pid: number;
  readonly turn: number;
  readonly input: string;
}

/** The reply agent; `callsFile` receives one JSON line per model call. */
export function createReplyAgent(callsFile: string) {
  const note = defineTool({
    name: 'note',
    description: 'notes a text in the state (no effect outside helix)',
    inputSchema: z.object({ text: z.string() }),
    execute: (input, ctx) => {
      ctx.updateState<{ notes: string[] }>((d) => void d.notes.push(input.text));
      return { noted: input.text };
    },
  });
  return defineAgent({
    name: 'reply-agent',
    stateSchema: z.object({ notes: z.array(z.string()).default([]) }),
    llmConfig: {
      model: createScriptedModel(
        [
          (options) => {
            const turn = options.prompt.filter((m) => m.role === 'assistant').length;
            const user = options.prompt.find((m) => m.role === 'user');
            const input = user?.role === 'user' ? user.content.map((part) => (part.type === 'text' ? part.text : '')).join('') : '';
            appendFileSync(callsFile, `${JSON.stringify({ pid: process.pid, turn, input } satisfies ModelCallLine)}\n`);
            if (turn === 0) return { toolCalls: [{ name: 'note', args: { text: `asked in ${process.pid}` }, id: 'n1' }], usage: { inputTokens: 10, outputTokens: 3 } };
            return { text: `done in ${process.pid}`, usage: { inputTokens: 20, outputTokens: 4 } };
          },
        ],
        { loop: true, recordCalls: false },
      ),
    },
    tools: [note],
  });
}
