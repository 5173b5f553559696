// What two-process.test.ts and its child share (the child module itself runs when imported).
import type { Message } from '@helix-agents/sdk';

/** The child's instructions. */
export type ChildArgs =
  | { readonly mode: 'contend'; readonly connectionString: string; readonly schema: string; readonly name: string; readonly rounds: number; readonly steps: number }
  | { readonly mode: 'stream'; readonly connectionString: string; readonly schema: string; readonly streamId: string; readonly runId: string; readonly chunks: number }
  | { readonly mode: 'stall'; readonly connectionString: string; readonly schema: string; readonly sessionId: string; readonly runId: string; readonly leaseMs: number; readonly stallAfter: number };

/** The two rows a step appends: a torn commit would leave one without the other. */
export function stepRows(runId: string, stepIndex: number): Message[] {
  return [
    { role: 'assistant', content: `${runId}/${stepIndex}/a`, toolCalls: [{ id: `${runId}-${stepIndex}`, name: 'tool', arguments: { stepIndex } }] },
    { role: 'tool', toolCallId: `${runId}-${stepIndex}`, toolName: 'tool', content: { runId, stepIndex, pad: 'p'.repeat(500) } },
  ];
}
