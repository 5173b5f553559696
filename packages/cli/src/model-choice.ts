/**
 * Which model `helix run` uses: `auto` (the default) and `agent` keep the model of the agent's own
 * `llmConfig`; `scripted` plays `agents/<name>.script.json`; `openai` uses OpenAI or an
 * OpenAI-compatible server (OPENAI_BASE_URL / --base-url).
 */
export type ModelChoice = 'auto' | 'scripted' | 'openai' | 'agent';

/** The model choices, for flag validation. */
export const MODEL_CHOICES: readonly ModelChoice[] = ['auto', 'scripted', 'openai', 'agent'];
