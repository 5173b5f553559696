import type { JSONSchema7, LanguageModelV3FunctionTool } from '@ai-sdk/provider';
import type { LLMStepRequest } from '@helix-agents/sdk';

type LLMToolSpec = LLMStepRequest['tools'][number];

// Tool specs and the loop's tool list are stable across steps; converting them once per object keeps a step cheap.
const toolCache = new WeakMap<LLMToolSpec, LanguageModelV3FunctionTool>();
const listCache = new WeakMap<readonly LLMToolSpec[], LanguageModelV3FunctionTool[]>();

/** The V3 function tool for one of our tool specs (cached per spec object). */
export function toFunctionTool(spec: LLMToolSpec): LanguageModelV3FunctionTool {
  let tool = toolCache.get(spec);
  if (tool === undefined) {
    tool = { type: 'function', name: spec.name, description: spec.description, inputSchema: spec.inputSchema as JSONSchema7 };
    toolCache.set(spec, tool);
  }
  return tool;
}

/** The V3 function tools for a tool list, or undefined when there are none (some providers refuse an empty list). */
export function toFunctionTools(specs: readonly LLMToolSpec[]): LanguageModelV3FunctionTool[] | undefined {
  if (specs.length === 0) return undefined;
  let tools = listCache.get(specs);
  if (tools === undefined) {
    tools = specs.map(toFunctionTool);
    listCache.set(specs, tools);
  }
  return tools;
}
