import { defineAgent } from '@helix-agents/sdk';
import { createScriptedModel } from '@helix-agents/sdk/testing';

/** An agent that brings its own model: `helix run` must use it unless --model overrides it. */
export default defineAgent({
  name: 'own',
  llmConfig: { model: createScriptedModel([{ text: 'The agent’s own model speaking.' }], { modelId: 'own-model' }) },
});
