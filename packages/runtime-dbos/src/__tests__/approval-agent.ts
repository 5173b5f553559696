// An agent whose one tool needs approval and appends to a file when it runs (so a test counts runs
// across processes). Deterministic: its scripted model answers the same in every process.
import { appendFileSync } from 'node:fs';
import { z } from 'zod';
import { defineAgent, defineTool } from '@helix-agents/sdk';
import { createScriptedModel } from '@helix-agents/sdk/testing';

/** The agent; `effectsFile` gets one line per run of the tool. */
export function createApprovalAgent(effectsFile: string) {
  const deploy = defineTool({
    name: 'deploy',
    description: 'deploys (needs a human yes)',
    inputSchema: z.object({ target: z.string() }),
    needsApproval: true,
    sideEffects: true,
    execute: (input) => {
      appendFileSync(effectsFile, `${JSON.stringify({ pid: process.pid, target: input.target })}\n`);
      return { deployed: input.target };
    },
  });
  return defineAgent({
    name: 'deployer',
    llmConfig: {
      model: createScriptedModel([(options) => (options.prompt.some((m) => m.role === 'tool') ? { text: 'deployed' } : { toolCalls: [{ name: 'deploy', args: { target: 'prod' }, id: 'd1' }] })], {
        loop: true,
        recordCalls: false,
      }),
    },
    tools: [deploy],
  });
}
