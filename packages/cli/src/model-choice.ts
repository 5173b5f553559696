/** Which model `helix run` uses: `auto` picks `openai` when OPENAI_API_KEY or OPENAI_BASE_URL is set, else `scripted`. */
export type ModelChoice = 'auto' | 'scripted' | 'openai' | 'agent';

/** The model choices, for flag validation. */
export const MODEL_CHOICES: readonly ModelChoice[] = ['auto', 'scripted', 'openai', 'agent'];
