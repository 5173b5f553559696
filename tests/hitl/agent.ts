// The agent of the process-restart test: it asks the client a question (a client tool) and needs a
// person's approval to send an email, so a run suspends twice.
import { z } from 'zod';
import { defineAgent, defineTool } from '@helix-agents/sdk';
import { createScriptedModel } from '@helix-agents/sdk/testing';

/** Emails "sent" by this process (the side effect). */
export const sent: string[] = [];

/** The agent; every process builds the same one. */
export function createRestartAgent() {
  const ask = defineTool({ name: 'ask_user', description: 'asks the user', inputSchema: z.object({ question: z.string() }) });
  const email = defineTool({
    name: 'send_email',
    description: 'sends an email (needs approval)',
    inputSchema: z.object({ to: z.string() }),
    needsApproval: true,
    sideEffects: true,
    execute: (input) => {
      sent.push(input.to);
      return { sent: input.to };
    },
  });
  return defineAgent({
    name: 'restart-agent',
    llmConfig: {
      model: createScriptedModel([
        (options) => {
          const tools = options.prompt.filter((m) => m.role === 'tool').length;
          if (tools === 0) return { toolCalls: [{ name: 'ask_user', args: { question: 'Who?' }, id: 'ask' }] };
          if (tools === 1) return { toolCalls: [{ name: 'send_email', args: { to: 'bob@example.com' }, id: 'mail' }] };
          return { text: 'Sent.' };
        },
      ], { loop: true }),
    },
    tools: [ask, email],
  });
}
