import type { WriteScope } from './hook-dispatch.js';
import type { Run } from './run.js';

/** The callbacks one model attempt hands its adapter, and how to wait for the hooks they started. */
export interface StreamCallbacks {
  readonly onTextDelta: (delta: string) => void;
  readonly onReasoningDelta: (delta: string) => void;
  readonly onReasoningEnd: () => void;
  /** Resolves once every onTextDelta / onThinking invocation of the attempt settled; undefined when none ran (nothing to wait for). */
  drain(): Promise<void> | undefined;
}

/**
 * The stream callbacks of one model attempt: each delta becomes a `text_delta` / `reasoning_delta`
 * chunk and, when a handler is registered, an onTextDelta / onThinking invocation. The hooks run in
 * order on a queue the adapter never waits for; the attempt drains it before its reply is used. A
 * point nobody handles costs one boolean read per delta: no payload, no promise.
 */
export function streamCallbacks(run: Run, stepIndex: number, stepScope: WriteScope): StreamCallbacks {
  const wantsText = run.hooks.has('onTextDelta');
  const wantsThinking = run.hooks.has('onThinking');
  // Nobody listens: the attempt keeps no state of its own, so every such attempt of the run shares one set.
  if (!wantsText && !wantsThinking) return (run.plainStreamCallbacks ??= plainCallbacks(run));
  let queue: Promise<void> | undefined;
  let block = '';
  // The hooks' writes are booked with the step's; their queued onStateChange are dropped (observers do not
  // steer). Made when a hook first fires: an attempt nobody streams to builds none.
  let scope: WriteScope | undefined;
  const enqueue = (point: 'onTextDelta' | 'onThinking', args: readonly unknown[]): void => {
    const hookScope = (scope ??= { ...stepScope, changes: [] });
    const fire = (): Promise<void> => run.hooks.fireStreaming(point, args, hookScope);
    queue = queue === undefined ? fire() : queue.then(fire);
  };
  return {
    onTextDelta(delta) {
      run.emitNoWait({ type: 'text_delta', stepIndex, delta, ...run.chunkBase() });
      if (wantsText) enqueue('onTextDelta', [delta]);
    },
    onReasoningDelta(delta) {
      run.emitNoWait({ type: 'reasoning_delta', stepIndex, delta, ...run.chunkBase() });
      if (!wantsThinking) return;
      block += delta;
      enqueue('onThinking', [delta, false]);
    },
    onReasoningEnd() {
      run.emitNoWait({ type: 'reasoning_delta', stepIndex, delta: '', blockEnd: true, ...run.chunkBase() });
      if (!wantsThinking) return;
      const content = block;
      block = '';
      enqueue('onThinking', [content, true]);
    },
    drain() {
      return queue;
    },
  };
}

/**
 * The stream callbacks of an attempt no onTextDelta / onThinking handler listens to: each delta is a chunk,
 * and nothing is queued. Made once a run and shared by its attempts, so a chunk takes its step index from the
 * run when the delta comes (an attempt's deltas come while it runs, within its step).
 */
function plainCallbacks(run: Run): StreamCallbacks {
  return {
    onTextDelta(delta) {
      run.emitNoWait({ type: 'text_delta', stepIndex: run.stepCount, delta, ...run.chunkBase() });
    },
    onReasoningDelta(delta) {
      run.emitNoWait({ type: 'reasoning_delta', stepIndex: run.stepCount, delta, ...run.chunkBase() });
    },
    onReasoningEnd() {
      run.emitNoWait({ type: 'reasoning_delta', stepIndex: run.stepCount, delta: '', blockEnd: true, ...run.chunkBase() });
    },
    drain() {
      return undefined;
    },
  };
}
