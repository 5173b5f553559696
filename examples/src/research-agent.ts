// The complete example: a research agent with logging and metrics hooks,
// composed at execution time. Only the model is swapped: see model.ts.
import { defineAgent, defineTool, type AgentHooks } from '@helix-agents/sdk';
import type { LanguageModel } from '@helix-agents/sdk';
import type { ScriptedStep } from '@helix-agents/sdk/testing';
import { z } from 'zod';

/** The research agent's custom state. */
export const StateSchema = z.object({
  searchCount: z.number().default(0),
  findings: z.array(z.string()).default([]),
});
/** The research agent's state type. */
export type State = z.infer<typeof StateSchema>;

/** The research agent's structured output. */
export const OutputSchema = z.object({
  summary: z.string(),
  sources: z.array(z.string()),
});
/** The research agent's output type. */
export type Output = z.infer<typeof OutputSchema>;

/** The spec's logging hooks, writing through `print`. */
export function createLoggingHooks(print: (line: string) => void): AgentHooks<State, Output> {
  return {
    onAgentStart: (_payload, ctx) => print(`[${ctx.sessionId}] Starting research agent`),
    onAgentComplete: (payload, ctx) => print(`[${ctx.sessionId}] Completed in ${payload.stepCount} steps`),
    beforeTool: (payload, ctx) => print(`[${ctx.sessionId}] Calling: ${payload.tool.name}`),
    afterTool: (payload, ctx) => {
      const status = payload.success ? 'OK' : 'FAILED';
      print(`[${ctx.sessionId}] ${payload.tool.name}: ${status} (${payload.durationMs.toFixed(1)}ms)`);
    },
  };
}

/** The spec's metrics hooks, writing through `print`. */
export function createMetricsHooks(print: (line: string) => void): AgentHooks<State, Output> {
  return {
    afterLLMCall: (payload) => {
      if (payload.usage?.totalTokens) print(`Tokens: ${payload.usage.totalTokens}`);
    },
    onStateChange: (payload) => print(`State updated by ${payload.source}`),
  };
}

/** The search tool: records what it searched in the agent's state. */
export const searchTool = defineTool({
  name: 'search',
  description: 'Search the web',
  inputSchema: z.object({ query: z.string() }),
  execute: async (input, ctx) => {
    ctx.updateState<State>((draft) => {
      draft.searchCount++;
      draft.findings.push(`Found results for: ${input.query}`);
    });
    return { results: [`Result for ${input.query}`] };
  },
});

/** The research agent on a given model. */
export function createResearchAgent(model: LanguageModel) {
  return defineAgent({
    name: 'research-agent',
    systemPrompt: 'You are a research assistant. Use search to find information.',
    stateSchema: StateSchema,
    outputSchema: OutputSchema,
    llmConfig: { model },
    tools: [searchTool],
  });
}

/** What the scripted model plays for the research agent: one search, two in parallel, then the answer. */
export const researchScript: readonly ScriptedStep[] = [
  {
    textChunks: ['Let me ', 'start with ', 'the basics.'],
    toolCalls: [{ name: 'search', args: { query: 'quantum computing basics' } }],
    usage: { inputTokens: 212, outputTokens: 31 },
  },
  {
    textChunks: ['Now the hardware ', 'and the algorithms.'],
    toolCalls: [
      { name: 'search', args: { query: 'superconducting vs trapped-ion qubits' } },
      { name: 'search', args: { query: "Shor's and Grover's algorithms" } },
    ],
    usage: { inputTokens: 389, outputTokens: 52, cachedInputTokens: 200 },
  },
  {
    textChunks: ['I have ', 'enough to ', 'summarize.'],
    toolCalls: [
      {
        name: '__finish__',
        args: {
          summary:
            'Quantum computers use qubits that hold superpositions; superconducting and trapped-ion machines lead today, and algorithms such as Shor\'s and Grover\'s promise speed-ups for factoring and search.',
          sources: ['Result for quantum computing basics', 'Result for superconducting vs trapped-ion qubits', "Result for Shor's and Grover's algorithms"],
        },
      },
    ],
    usage: { inputTokens: 566, outputTokens: 88, cachedInputTokens: 380 },
  },
];
