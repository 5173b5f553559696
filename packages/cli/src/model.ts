import { createOpenAI } from '@ai-sdk/openai';
import type { LanguageModel } from '@helix-agents/sdk';
import { createScriptedModel } from '@helix-agents/sdk/testing';
import { CliError } from './errors.js';
import type { ModelChoice } from './model-choice.js';
import type { ProjectAgent } from './project.js';
import { defaultScript, prepareScript } from './script.js';


/** The model a run uses and how to describe it in the serve log. */
export interface ChosenModel {
  /** A language model, or the agent's own model id (resolved by an executor's providers registry). */
  readonly model: LanguageModel | string;
  readonly kind: 'scripted' | 'openai' | 'agent';
  readonly description: string;
}

/** Where `--model openai` finds its server: OPENAI_BASE_URL (or `--base-url`), OPENAI_API_KEY and OPENAI_MODEL. */
export interface OpenAIOptions {
  /** An OpenAI-compatible server's base URL, e.g. `http://127.0.0.1:8080/v1`; overrides OPENAI_BASE_URL. */
  readonly baseURL?: string;
}

/**
 * Picks the model of a run. `auto` (the default) and `agent` keep the model of the agent's own llmConfig,
 * whatever provider it is (a scripted model, OpenAI, a local server). `scripted` plays
 * `agents/<name>.script.json` (or a default one-line script), with `{{message}}` replaced by the message.
 * `openai` builds a model from OPENAI_BASE_URL (or `baseURL`: an OpenAI-compatible server through its chat
 * API, no key needed) or OPENAI_API_KEY (OpenAI), and OPENAI_MODEL (default gpt-4o-mini).
 */
export function chooseModel(choice: ModelChoice, agent: ProjectAgent, message: string, env: NodeJS.ProcessEnv, options: OpenAIOptions = {}): ChosenModel {
  if (choice === 'auto' || choice === 'agent') {
    const { model } = agent.agent.llmConfig;
    const named = typeof model === 'string' ? model : `${model.provider} ${model.modelId}`;
    return { model, kind: 'agent', description: `the agent's own model (${named}, from ${agent.file})` };
  }
  if (choice === 'openai') {
    const baseURL = options.baseURL ?? env['OPENAI_BASE_URL'];
    const apiKey = env['OPENAI_API_KEY'];
    if (!baseURL && !apiKey) {
      throw new CliError('cli_model_unavailable', '--model openai needs OPENAI_API_KEY, or OPENAI_BASE_URL / --base-url for an OpenAI-compatible server (no key needed).');
    }
    const modelId = env['OPENAI_MODEL'] ?? 'gpt-4o-mini';
    if (baseURL) {
      // Local OpenAI-compatible servers serve the chat API, not the Responses API that openai(id) calls.
      const provider = createOpenAI({ baseURL, apiKey: apiKey ?? 'not-needed' });
      return { model: provider.chat(modelId), kind: 'openai', description: `${modelId} at ${baseURL} (chat API)` };
    }
    return { model: createOpenAI({ apiKey })(modelId), kind: 'openai', description: `OpenAI ${modelId}` };
  }
  const steps = prepareScript(agent.script?.steps ?? defaultScript(), message);
  return {
    model: createScriptedModel(steps, { modelId: 'scripted' }),
    kind: 'scripted',
    description: agent.script ? `the scripted model playing ${agent.script.file}` : 'the scripted model (default script)',
  };
}
