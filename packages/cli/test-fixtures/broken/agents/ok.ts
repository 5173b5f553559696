import { defineAgent } from '@helix-agents/sdk';
import { createScriptedModel } from '@helix-agents/sdk/testing';

/** A valid agent beside the broken files. */
export default defineAgent({ name: 'ok', llmConfig: { model: createScriptedModel([]) } });
