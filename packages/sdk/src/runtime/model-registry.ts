import type { AgentConfig } from '../define.js';
import { ConfigError } from '../errors.js';
import type { LanguageModel, ModelRegistry } from '../llm.js';

/**
 * The language model an agent's runs call: its `llmConfig.model` itself, or, for a model id such as
 * `'openai:gpt-4o-mini'`, what `providers` resolves it to. An id without a registry, an unknown provider
 * or model, and anything that is not a language model are ConfigErrors naming the agent and the id.
 */
export function resolveModel(agent: AgentConfig<unknown, unknown>, providers: ModelRegistry | undefined): LanguageModel {
  const configured = agent.llmConfig.model;
  if (typeof configured !== 'string') return configured;
  const details = { agent: agent.name, model: configured };
  if (providers === undefined) {
    throw new ConfigError(
      `Agent "${agent.name}" names its model by id ('${configured}'), but the executor has no providers registry: pass new JSAgentExecutor(..., { providers: createProviderRegistry({ ... }) }).`,
      details,
    );
  }
  let model: unknown;
  try {
    model = providers.languageModel(configured);
  } catch (error) {
    throw new ConfigError(`Agent "${agent.name}": the model '${configured}' is not in the providers registry (${error instanceof Error ? error.message : String(error)}).`, {
      ...details,
      ...(error instanceof Error ? { cause: error.name } : {}),
    });
  }
  if (!isLanguageModel(model)) {
    throw new ConfigError(`Agent "${agent.name}": the providers registry returned no language model for '${configured}'.`, details);
  }
  return model;
}

function isLanguageModel(value: unknown): value is LanguageModel {
  const model = value as Partial<LanguageModel> | null | undefined;
  return typeof model === 'object' && model !== null && typeof model.doStream === 'function' && typeof model.doGenerate === 'function' && typeof model.modelId === 'string';
}
