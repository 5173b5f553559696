import type { AgentHooks, HookContext, HookPoint } from '../hooks/types.js';
import { HOOK_POINTS } from '../hooks/types.js';

/** One recorded hook invocation. */
export interface RecordedHook {
  readonly point: HookPoint;
  readonly payload: unknown;
  readonly stepCount: number;
  readonly runId: string;
  /** Order of invocation across the recorder (0-based). */
  readonly seq: number;
}

/** A recorder whose `hooks` record every invocation of every wired hook point. */
export interface HookRecorder {
  readonly hooks: AgentHooks<unknown, unknown>;
  readonly calls: readonly RecordedHook[];
  /** The points fired, in order. */
  points(): HookPoint[];
  /** The invocations of one point. */
  of(point: HookPoint): RecordedHook[];
  clear(): void;
}

/**
 * Records hook invocations, for tests of hook order and payloads. The streaming points (`onTextDelta`,
 * `onThinking`: one call per delta) are recorded only when named in `points`; an onThinking call is
 * recorded with the payload `{ content, isComplete }`.
 */
export function createHookRecorder(options: { readonly points?: readonly HookPoint[] } = {}): HookRecorder {
  const calls: RecordedHook[] = [];
  const hooks: Record<string, unknown> = {};
  for (const point of options.points ?? HOOK_POINTS.filter((p) => p !== 'onTextDelta' && p !== 'onThinking')) {
    if (point === 'onTextDelta') {
      hooks[point] = (delta: string, ctx: HookContext) => void calls.push({ point, payload: delta, stepCount: ctx.stepCount, runId: ctx.runId, seq: calls.length });
    } else if (point === 'onThinking') {
      hooks[point] = (content: string, isComplete: boolean, ctx: HookContext) =>
        void calls.push({ point, payload: { content, isComplete }, stepCount: ctx.stepCount, runId: ctx.runId, seq: calls.length });
    } else if (point === 'onAgentSuspended' || point === 'onAgentResumed' || point === 'onAgentRetry') {
      // Suspension-family hooks take one context argument carrying their fields (rule 2).
      hooks[point] = (ctx: HookContext) => void calls.push({ point, payload: ctx, stepCount: ctx.stepCount, runId: ctx.runId, seq: calls.length });
    } else {
      hooks[point] = (payload: unknown, ctx: HookContext) => void calls.push({ point, payload, stepCount: ctx.stepCount, runId: ctx.runId, seq: calls.length });
    }
  }
  return {
    hooks: hooks as AgentHooks<unknown, unknown>,
    calls,
    points: () => calls.map((c) => c.point),
    of: (point) => calls.filter((c) => c.point === point),
    clear: () => {
      calls.length = 0;
    },
  };
}
