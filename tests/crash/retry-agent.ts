// The agent of the tool-retry crash test (rule 157): one side-effecting, idempotent tool with a retry
// policy whose first try fails after its effect. Every try appends a line to the effects file, so the
// test counts the tries across a crash.
import { appendFileSync } from 'node:fs';
import { z } from 'zod';
import { defineAgent, defineTool } from '@helix-agents/sdk';
import { crashPoint, createScriptedModel } from '@helix-agents/sdk/testing';

/** One line of the effects file: a try of the charge tool. */
export interface TryLine {
  readonly pid: number;
  readonly key: string;
  readonly attempt: number;
}

/** The retry crash agent, logging each try of its tool to `effectsFile`. */
export function createRetryAgent(effectsFile: string) {
  let tries = 0;
  const charge = defineTool({
    name: 'charge',
    description: 'charges a card (a side effect outside helix)',
    inputSchema: z.object({ cents: z.number() }),
    sideEffects: true,
    retry: { maxAttempts: 3, initialDelayMs: 1, idempotent: true },
    execute: (_input, ctx) => {
      tries++;
      appendFileSync(effectsFile, `${JSON.stringify({ pid: process.pid, key: ctx.idempotencyKey, attempt: tries } satisfies TryLine)}\n`);
      // After a try's effect, before its result: the at-most-once window, with retries.
      crashPoint('in_tool');
      if (tries === 1) throw new Error('gateway timeout');
      return { charged: true };
    },
  });
  return defineAgent({
    name: 'retry-crash-agent',
    systemPrompt: 'Charge the card.',
    outputSchema: z.object({ answer: z.string() }),
    llmConfig: {
      model: createScriptedModel(
        [
          (options) =>
            options.prompt.some((m) => m.role === 'tool')
              ? { toolCalls: [{ name: '__finish__', args: { answer: 'done' }, id: 'f' }] }
              : { toolCalls: [{ name: 'charge', args: { cents: 100 }, id: 'c1' }] },
        ],
        { loop: true, recordCalls: false },
      ),
    },
    tools: [charge],
  });
}
