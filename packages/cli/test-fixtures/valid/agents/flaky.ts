import { defineAgent } from '@helix-agents/sdk';
import { createScriptedModel } from '@helix-agents/sdk/testing';

/** An agent whose script fails the model call, so its turn fails. */
export default defineAgent({ name: 'flaky', llmConfig: { model: createScriptedModel([]) } });
