import { z } from 'zod';
import { isAgentErrorInfo, type AgentErrorInfo } from '../errors.js';
import type { StepSuccess } from '../llm.js';
import type { ToolResultMessage } from '../messages.js';
import type { StatePatch } from '../stream.js';
import type { ExitReason } from '../hooks/types.js';

// The records the loop hands to its StepRecorder. Replayed data is parsed with these schemas, so a
// record written by another version (or a damaged row) is refused instead of being cast.

const patchSchema: z.ZodType<StatePatch> = z.object({
  op: z.enum(['replace', 'remove', 'add']),
  path: z.array(z.union([z.string(), z.number()])),
  value: z.unknown().optional(),
}) as z.ZodType<StatePatch>;

const patchesSchema = z.array(patchSchema);

const errorInfoSchema = z.custom<AgentErrorInfo>((value) => isAgentErrorInfo(value), 'an AgentErrorInfo');

const toolCallSchema = z.object({ id: z.string(), name: z.string(), arguments: z.unknown() });

const usageSchema = z.object({
  promptTokens: z.number(),
  completionTokens: z.number(),
  totalTokens: z.number(),
  cachedTokens: z.number().optional(),
  cacheWriteTokens: z.number().optional(),
  reasoningTokens: z.number().optional(),
});

/** The start signal's staged marker. */
export interface StartSignalRecord {
  readonly signal?: 'start' | 'resumed' | 'retry';
}

/** Schema of {@link StartSignalRecord}. */
export const startSignalRecord: z.ZodType<StartSignalRecord> = z.object({ signal: z.enum(['start', 'resumed', 'retry']).optional() });

/** A model reply and the state writes its step made before any tool ran (beforeLLMCall / afterLLMCall). */
export interface ModelReplyRecord {
  readonly reply: StepSuccess;
  readonly patches: readonly StatePatch[];
}

/** Schema of {@link ModelReplyRecord}. */
export const modelReplyRecord: z.ZodType<ModelReplyRecord> = z.object({
  reply: z.object({
    ok: z.literal(true),
    text: z.string(),
    reasoning: z.string().optional(),
    toolCalls: z.array(toolCallSchema),
    finishReason: z.string(),
    usage: usageSchema.optional(),
    model: z.string(),
    responseId: z.string().optional(),
  }),
  patches: patchesSchema,
}) as z.ZodType<ModelReplyRecord>;

/** How a finishing call ended the run. */
export interface FinishOutput {
  readonly value: unknown;
  readonly via: 'finish_tool' | 'finish_with';
}

const finishOutputSchema = z.object({ value: z.unknown(), via: z.enum(['finish_tool', 'finish_with']) }) as z.ZodType<FinishOutput>;

/** A side-effecting call's recorded result: its row, its writes, how it went. */
export interface CallResultRecord {
  readonly message: ToolResultMessage;
  readonly patches: readonly StatePatch[];
  /**
   * Each patch's place among the run's writes (one number per patch), so that the recorded writes of
   * parallel calls are replayed in the order they were made, not in the order the calls were recorded.
   */
  readonly seqs?: readonly number[];
  readonly success: boolean;
  readonly durationMs: number;
  readonly finishOutput?: FinishOutput;
}

/** Schema of {@link CallResultRecord}. */
export const callResultRecord: z.ZodType<CallResultRecord> = z.object({
  message: z.object({
    role: z.literal('tool'),
    toolCallId: z.string(),
    toolName: z.string(),
    content: z.unknown(),
    isError: z.boolean().optional(),
    errorInfo: errorInfoSchema.optional(),
  }),
  patches: patchesSchema,
  seqs: z.array(z.number()).optional(),
  success: z.boolean(),
  durationMs: z.number(),
  finishOutput: finishOutputSchema.optional(),
}) as z.ZodType<CallResultRecord>;

/** onAgentComplete's recorded outcome: the output it completed with and the writes it made. */
export interface TerminalRecord {
  readonly output: unknown;
  readonly exitReason: ExitReason;
  readonly patches: readonly StatePatch[];
  /** False when the hook threw (its writes were dropped and the end chunk carries no state). */
  readonly endCarriesState: boolean;
}

/** Schema of {@link TerminalRecord}. */
export const terminalRecord: z.ZodType<TerminalRecord> = z.object({
  output: z.unknown(),
  exitReason: z.enum(['finish_tool', 'finish_with', 'text', 'max_steps']),
  patches: patchesSchema,
  endCarriesState: z.boolean(),
}) as z.ZodType<TerminalRecord>;
