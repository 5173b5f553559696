import { defineAgent } from '@helix-agents/sdk';
import { createScriptedModel } from '@helix-agents/sdk/testing';

/** An agent in a subfolder, without a script. */
export default defineAgent({ name: 'triage', llmConfig: { model: createScriptedModel([]) } });
