import { readFileSync } from 'node:fs';
import type { ScriptedStepObject } from '@helix-agents/sdk/testing';
import { z } from 'zod';

const Usage = z.strictObject({
  inputTokens: z.number().int().nonnegative().optional(),
  outputTokens: z.number().int().nonnegative().optional(),
  cachedInputTokens: z.number().int().nonnegative().optional(),
  cacheWriteTokens: z.number().int().nonnegative().optional(),
  reasoningTokens: z.number().int().nonnegative().optional(),
});

const Step = z.strictObject({
  text: z.string().optional(),
  textChunks: z.array(z.string()).optional(),
  reasoning: z.string().optional(),
  toolCalls: z.array(z.strictObject({ name: z.string().min(1), args: z.unknown().optional(), id: z.string().optional() })).optional(),
  usage: Usage.optional(),
  delayMs: z.number().int().nonnegative().optional(),
  chunkDelayMs: z.number().int().nonnegative().optional(),
  error: z
    .strictObject({
      status: z.number().int().optional(),
      message: z.string().optional(),
      kind: z.enum(['network', 'timeout', 'invalid-response']).optional(),
    })
    .optional(),
  modelId: z.string().optional(),
});

/** An agent's script file: an array of steps, or `{ "steps": [...] }`. */
const ScriptFile = z.union([z.array(Step).min(1), z.strictObject({ steps: z.array(Step).min(1) })]);

/** What reading a script file gives: the steps, or why they are unusable. */
export type ScriptRead = { readonly ok: true; readonly steps: readonly ScriptedStepObject[] } | { readonly ok: false; readonly problem: string };

/**
 * Reads and checks `agents/<name>.script.json`: the scripted model's replies, one per model call.
 * Step fields are those of the SDK's scripted model (text, textChunks, toolCalls, usage, delays, error).
 */
export function readScript(path: string): ScriptRead {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    return { ok: false, problem: `not readable JSON: ${error instanceof Error ? error.message : String(error)}` };
  }
  const parsed = ScriptFile.safeParse(json);
  if (!parsed.success) return { ok: false, problem: `not a script (an array of steps): ${z.prettifyError(parsed.error).replaceAll('\n', ' ')}` };
  const steps = Array.isArray(parsed.data) ? parsed.data : parsed.data.steps;
  return { ok: true, steps: steps as readonly ScriptedStepObject[] };
}

/** The script of an agent that ships none: it answers every message in text, streamed word by word. */
export function defaultScript(): readonly ScriptedStepObject[] {
  return [{ text: 'This is the scripted model: it echoes your message ({{message}}). Set OPENAI_API_KEY for a real model, or ship agents/<name>.script.json.' }];
}

function fill(value: unknown, message: string): unknown {
  if (typeof value === 'string') return value.replaceAll('{{message}}', message);
  if (Array.isArray(value)) return value.map((item) => fill(item, message));
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v, message)]));
  return value;
}

/** The steps with `{{message}}` replaced by the user's message, and plain text split into word deltas so it streams. */
export function prepareScript(steps: readonly ScriptedStepObject[], message: string): ScriptedStepObject[] {
  return steps.map((step) => {
    const filled = fill(step, message) as ScriptedStepObject;
    if (filled.text === undefined || filled.textChunks !== undefined) return filled;
    const { text, ...rest } = filled;
    return { ...rest, textChunks: text.match(/\S+\s*|\s+/g) ?? [text] };
  });
}
