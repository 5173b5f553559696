import { createOpenAI, openai } from '@ai-sdk/openai';
import type { LanguageModel } from '@helix-agents/sdk';
import { createScriptedModel, type ScriptedModelOptions, type ScriptedStep } from '@helix-agents/sdk/testing';

/** Which model the examples run on, and why. */
export interface ExampleModel {
  readonly model: LanguageModel;
  readonly description: string;
  readonly scripted: boolean;
}

/**
 * The model for an example: an OpenAI-compatible server when OPENAI_BASE_URL is set (e.g. a local
 * llama.cpp or vLLM server), OpenAI when OPENAI_API_KEY is set, otherwise the scripted model playing
 * `script` (with `scripted` options, e.g. `{ loop: true }` for a server that answers forever). OPENAI_MODEL
 * picks the model id (default gpt-4o-mini).
 */
export function exampleModel(script: readonly ScriptedStep[], env: NodeJS.ProcessEnv = process.env, scripted?: ScriptedModelOptions): ExampleModel {
  const modelId = env['OPENAI_MODEL'] ?? 'gpt-4o-mini';
  const baseURL = env['OPENAI_BASE_URL'];
  if (baseURL) {
    const provider = createOpenAI({ baseURL, apiKey: env['OPENAI_API_KEY'] ?? 'not-needed' });
    return { model: provider.chat(modelId), description: `${modelId} at ${baseURL}`, scripted: false };
  }
  if (env['OPENAI_API_KEY']) return { model: openai(modelId), description: `OpenAI ${modelId}`, scripted: false };
  return {
    model: createScriptedModel(script, scripted),
    description: 'the scripted model (set OPENAI_API_KEY, or OPENAI_BASE_URL for an OpenAI-compatible server, to use a real one)',
    scripted: true,
  };
}
