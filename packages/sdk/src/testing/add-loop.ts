import { z } from 'zod';
import { defineAgent, defineTool, type AgentConfig } from '../define.js';
import type { LLMAdapter, LLMStepRequest, StepResult } from '../llm.js';
import { createScriptedModel } from './scripted-model.js';

/** What {@link createAddLoop} returns: an adapter and the agent it drives. */
export interface AddLoop {
  /** Answers every step with one `add` call until the run has `steps - 1` tool results, then with text. */
  readonly adapter: LLMAdapter;
  /** An agent with the pure `add` tool, whose step limit leaves room for `steps` steps. */
  readonly agent: AgentConfig<unknown, unknown>;
}

/**
 * A deterministic loop of `steps` steps with no model behind it, for store and benchmark tests: give
 * `adapter` to the executor in place of a model adapter and run `agent`. Step k calls `add(k, 1)`; the
 * last step answers `done`.
 */
export function createAddLoop(steps: number): AddLoop {
  const adapter: LLMAdapter = {
    async generateStep(request: LLMStepRequest): Promise<StepResult> {
      const step = (request.messages.length - 1) / 2;
      if (step >= steps - 1) return { ok: true, text: 'done', toolCalls: [], finishReason: 'stop', model: 'add-loop' };
      return { ok: true, text: '', toolCalls: [{ id: `c${step}`, name: 'add', arguments: { a: step, b: 1 } }], finishReason: 'tool-calls', model: 'add-loop' };
    },
  };
  const add = defineTool({ name: 'add', description: 'Adds two numbers.', inputSchema: z.object({ a: z.number(), b: z.number() }), execute: ({ a, b }) => a + b });
  const agent = defineAgent({ name: 'adder', llmConfig: { model: createScriptedModel([{ text: 'unused' }]) }, tools: [add], maxSteps: steps + 1 }) as AgentConfig<unknown, unknown>;
  return { adapter, agent };
}
