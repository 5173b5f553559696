// Shared parts of the sub-agent scenarios of sub-agent-trees.ts and sub-agent-streams.ts: a recorded child,
// the parent's fold, the prompts, the calls, and the expected hooks and end of a parent with one child.
import { defineAgent, type AgentConfig, type ToolDefinition } from '../../../define.js';
import type { StreamChunk } from '../../../stream.js';
import { createScriptedModel, type ScriptedStep } from '../../../testing/scripted-model.js';
import type { ScenarioContext } from '../context.js';
import { at, C1, C2, fail, R1, R2, row, S1, S2, storedRun, storedSession, toolCall } from '../expect.js';
import { appendToLog, type Counter } from '../fixtures.js';
import { callRows, callsTools, childAnswers, completedRun, completesWithText, entered, foldsChild, newTurn, spawnsChild } from '../fragments.js';
import type { HookLayer } from '../recorder.js';
import type { TraceEvent } from '../trace.js';

/** A child agent `name` over a scripted model with `tools`, its hooks recorded. */
export function child(t: ScenarioContext, name: string, steps: readonly ScriptedStep[], tools: readonly ToolDefinition[] = []): AgentConfig<unknown, unknown> {
  return defineAgent<unknown, unknown>({ name, llmConfig: { model: createScriptedModel(steps), retry: { maxAttempts: 1 } }, tools, hooks: t.hooks() });
}

/** The parent's fold: afterSubAgent logs `<success> <result>`. */
export const fold: HookLayer<Counter, unknown> = {
  hooks: { afterSubAgent: (p, ctx) => appendToLog(ctx, `${p.success ? 'ok' : 'failed'} ${String(p.result)}`) },
};

/** The parent's prompts: its first call (system prompt and input, one tool), its second (plus its reply and the call's row). */
export const FIRST = { messages: 2, tools: 1 };
/** The parent's second prompt (see {@link FIRST}). */
export const SECOND = { messages: 4, tools: 1 };
/** The parent's state after one fold that logged `entry`. */
export const folded = (entry: string) => ({ count: 0, log: [entry] });
/** The parent's one call of `research`. */
export const research = toolCall(C1, 'research', { input: 'look' });
/** The root's call of its middle agent (`delegate`). */
export const dig = toolCall(C1, 'delegate', { input: 'dig' });
/** The middle agent's call of its leaf, which the depth limit refuses. */
export const deeper = toolCall(C2, 'leaf', { input: 'deeper' });
/** The first and second `research` calls of one step (the fan-out limit refuses the second). */
export const one = toolCall(C1, 'research', { input: 'one' });
/** See {@link one}. */
export const two = toolCall(C2, 'research', { input: 'two' });

/** All chunks of a session's stream so far. */
export async function chunksOf(t: ScenarioContext, sessionId: string): Promise<StreamChunk[]> {
  const out: StreamChunk[] = [];
  for await (const chunk of t.runtime.readStream(sessionId, { follow: false })) out.push(chunk);
  return out;
}

/** The hooks of a parent that calls `research` once (the child answers `found it`) and then replies `merged`. */
export function oneChildHooks(): TraceEvent[] {
  return [
    ...newTurn(R1, 0, 'go'),
    ...callsTools(R1, 0, FIRST, 1, research),
    ...spawnsChild(R1, 0, research, 'researcher'),
    ...childAnswers(R2, 'look', 'found it'),
    ...foldsChild(R1, 0, research, 'researcher', { success: true, result: 'found it' }, folded('ok found it'), 2),
    ...completesWithText(R1, 1, SECOND, 3, 'merged', { research: 1 }),
  ];
}

/** A child's run (input `look`) that a stop of its parent ends in its model call: its own onAgentFail(run_interrupted, recoverable). */
export function childStoppedInModelCall(runId: string): TraceEvent[] {
  return [...newTurn(runId, 0, 'look'), at(runId, 0).beforeLLM(1, 0), at(runId, 0).afterLLM('fail', 'run_interrupted'), fail(runId, 0, 'run_interrupted', true)];
}

/** The end of a parent with one child ({@link oneChildHooks}): both runs completed, both sessions as stored. */
export const oneChildEnd = {
  entries: [entered('execute', S1, R1)],
  runs: [completedRun(R1, S1, 'start', { exitReason: 'text', output: 'merged', steps: 2, state: folded('ok found it') }), storedRun(R2, S2, 'start', 'completed', { output: 'found it' })],
  sessions: [
    storedSession(S1, R1, folded('ok found it'), [row.user('go'), ...callRows(research, 'found it'), row.assistant('merged')]),
    storedSession(S2, R2, {}, [row.user('look'), row.assistant('found it')]),
  ],
};
