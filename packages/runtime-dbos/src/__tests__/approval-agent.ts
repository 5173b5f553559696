// An agent whose one tool needs approval and appends to a file when it runs (so a test counts runs
// across processes). Deterministic: its scripted model answers the same in every process.
import { appendFileSync } from 'node:fs';
import { z } from 'zod';
import { defineAgent, defineTool } from '@helix-agents/sdk';
import { createScriptedModel } from '@helix-agents/sdk/testing';

/** An agent whose tool waits up to 20 s (it honours the run's abort signal): a run to stop while it runs. */
export function createSlowAgent(hooksFile: string) {
  const wait = defineTool({
    name: 'wait',
    description: 'waits a long time',
    inputSchema: z.object({}),
    execute: (_input, ctx) =>
      new Promise((resolve) => {
        const timer = setTimeout(() => resolve({ waited: true }), 20_000);
        ctx.abortSignal.addEventListener('abort', () => {
          clearTimeout(timer);
          resolve({ waited: false });
        });
      }),
  });
  const log = (point: string) => appendFileSync(hooksFile, `${JSON.stringify({ pid: process.pid, point })}\n`);
  return defineAgent({
    name: 'slow',
    llmConfig: { model: createScriptedModel([(options) => (options.prompt.some((m) => m.role === 'tool') ? { text: 'waited' } : { toolCalls: [{ name: 'wait', args: {}, id: 'w1' }] })], { loop: true, recordCalls: false }) },
    tools: [wait],
    hooks: { beforeTool: () => log('beforeTool'), onAgentFail: ({ error }) => log(`onAgentFail:${error.code}`), onAgentComplete: () => log('onAgentComplete') },
  });
}

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

/** An agent whose one tool is a client tool (no execute: the client answers), then reports the answer. */
export function createClientToolAgent() {
  const ask = defineTool({ name: 'ask_user', description: 'asks the user (answered by the client)', inputSchema: z.object({ question: z.string() }) });
  return defineAgent({
    name: 'asker',
    llmConfig: {
      model: createScriptedModel(
        [
          (options) => {
            const row = options.prompt.find((m) => m.role === 'tool');
            if (!row) return { toolCalls: [{ name: 'ask_user', args: { question: 'which colour?' }, id: 'q1' }] };
            const part = row.content[0] as { output?: { value?: unknown } };
            return { text: `the user said ${JSON.stringify(part.output?.value)}` };
          },
        ],
        { loop: true, recordCalls: false },
      ),
    },
    tools: [ask],
  });
}
