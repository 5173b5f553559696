/** Test helpers for adapter users: a scripted OpenAI-compatible HTTP server. */
export { startScriptedOpenAIServer } from './openai-server.js';
export type {
  OpenAIChatRequestBody,
  ScriptedOpenAIServer,
  ScriptedOpenAIStep,
  ScriptedOpenAIStepFunction,
  ScriptedOpenAIUsage,
} from './openai-server.js';
