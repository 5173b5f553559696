import { createOpenAI } from '@ai-sdk/openai';
import type { LanguageModel } from '@helix-agents/sdk';
import { createScriptedModel } from '@helix-agents/sdk/testing';
import { CliError } from './errors.js';
import type { ModelChoice } from './model-choice.js';
import type { ProjectAgent } from './project.js';
import { defaultScript, prepareScript } from './script.js';


/** The model a run uses and how to describe it in the serve log. */
export interface ChosenModel {
  readonly model: LanguageModel;
  readonly kind: 'scripted' | 'openai' | 'agent';
  readonly description: string;
}

/**
 * Picks the model of a run. `scripted` plays `agents/<name>.script.json` (or a default one-line
 * script), with `{{message}}` replaced by the message; `openai` builds the configured model from
 * OPENAI_BASE_URL (an OpenAI-compatible server, chat API) or OPENAI_API_KEY, and OPENAI_MODEL
 * (default gpt-4o-mini); `agent` keeps the model of the agent's own llmConfig.
 */
export function chooseModel(choice: ModelChoice, agent: ProjectAgent, message: string, env: NodeJS.ProcessEnv): ChosenModel {
  const configured = env['OPENAI_API_KEY'] !== undefined || env['OPENAI_BASE_URL'] !== undefined;
  const kind = choice === 'auto' ? (configured ? 'openai' : 'scripted') : choice;
  if (kind === 'agent') return { model: agent.agent.llmConfig.model, kind, description: `the model of ${agent.file}` };
  if (kind === 'openai') {
    if (!configured) throw new CliError('cli_model_unavailable', '--model openai needs OPENAI_API_KEY (or OPENAI_BASE_URL for an OpenAI-compatible server).');
    const modelId = env['OPENAI_MODEL'] ?? 'gpt-4o-mini';
    const baseURL = env['OPENAI_BASE_URL'];
    if (baseURL) {
      const provider = createOpenAI({ baseURL, apiKey: env['OPENAI_API_KEY'] ?? 'not-needed' });
      return { model: provider.chat(modelId), kind, description: `${modelId} at ${baseURL}` };
    }
    return { model: createOpenAI({ apiKey: env['OPENAI_API_KEY'] })(modelId), kind, description: `OpenAI ${modelId}` };
  }
  const steps = prepareScript(agent.script?.steps ?? defaultScript(), message);
  return {
    model: createScriptedModel(steps, { modelId: 'scripted' }),
    kind: 'scripted',
    description: agent.script ? `the scripted model playing ${agent.script.file}` : 'the scripted model (default script)',
  };
}
