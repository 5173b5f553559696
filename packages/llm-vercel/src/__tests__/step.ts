import type { LanguageModelV3 } from '@ai-sdk/provider';
import type { LLMStepRequest, Message, StepResult } from '@helix-agents/sdk';

export const user = (content: string): Message => ({ role: 'user', content });

/** A request for one step of `model`: no system prompt, tools or parameters unless `extra` gives them. */
export function stepRequest(model: LanguageModelV3, messages: readonly Message[], extra: Partial<LLMStepRequest> = {}): LLMStepRequest {
  return { model, systemPrompt: undefined, messages, tools: [], modelParameters: {}, abortSignal: new AbortController().signal, ...extra };
}

/** The result as a failure; throws (showing it) when the step succeeded. */
export function failure(result: StepResult): Extract<StepResult, { ok: false }> {
  if (result.ok) throw new Error(`expected a failure, got ${JSON.stringify(result)}`);
  return result;
}

/** The result as a success; throws (showing the error) when the step failed. */
export function success(result: StepResult): Extract<StepResult, { ok: true }> {
  if (!result.ok) throw new Error(`expected a success, got ${JSON.stringify(result.error)}`);
  return result;
}
