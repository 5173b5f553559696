// The reconciliation options of docs/rules.md §2 (C2, C6, C16): each keeps the default policy unless set.

/** The opt-in variants of three §2 policies (executor options; see docs/tools-advanced.md). */
export interface ReconcileOptions {
  /**
   * C2: when the model adapter's `generateStep` throws (an adapter or loop bug, not a provider failure),
   * afterLLMCall fires with `error` (`run_internal_error`) and `threw: true` before the run fails. Default false: no afterLLMCall.
   */
  readonly afterLLMCallOnThrow?: boolean;
  /**
   * C6: whether an interrupted run (stop(), interrupt(), the execute abortSignal) fires onAgentFail with
   * `run_interrupted`. Default true; false skips the hook (the run still ends `interrupted`, its terminal
   * commit and stream are unchanged).
   */
  readonly interruptFiresOnAgentFail?: boolean;
  /**
   * C16: run the afterTool chain before the result row is appended, so onMessage sees the rewritten row
   * (a redacting afterTool hides the original from onMessage observers too). Default false: onMessage
   * sees the row as executed and afterTool's rewrite replaces it afterwards.
   */
  readonly rewriteBeforeOnMessage?: boolean;
}

/** The options as a run reads them (defaults applied). */
export interface ResolvedReconcileOptions {
  readonly afterLLMCallOnThrow: boolean;
  readonly interruptFiresOnAgentFail: boolean;
  readonly rewriteBeforeOnMessage: boolean;
}

/** The defaults: the §2 policies as written. */
export const DEFAULT_RECONCILE: ResolvedReconcileOptions = Object.freeze({ afterLLMCallOnThrow: false, interruptFiresOnAgentFail: true, rewriteBeforeOnMessage: false });

/** `options` with the defaults applied. */
export function resolveReconcile(options: ReconcileOptions): ResolvedReconcileOptions {
  return Object.freeze({
    afterLLMCallOnThrow: options.afterLLMCallOnThrow === true,
    interruptFiresOnAgentFail: options.interruptFiresOnAgentFail !== false,
    rewriteBeforeOnMessage: options.rewriteBeforeOnMessage === true,
  });
}
