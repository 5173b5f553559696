import { defineAgent } from '@helix-agents/sdk';
import { createScriptedModel } from '@helix-agents/sdk/testing';
import { echoTool } from '../tools/echo.js';

/** A text agent with one tool. */
export default defineAgent({
  name: 'helper',
  description: 'Helps.',
  llmConfig: { model: createScriptedModel([]) },
  tools: [echoTool],
});
