// What a failed model attempt reports before afterLLMCall fires: the warning chunk of a retried attempt
// (D12), settled first, so that afterLLMCall's payload carries a failed write as `onErrorFailure`
// (docs/rules.md, rule 68); and, with `afterLLMCallOnThrow` (C2), the afterLLMCall of an adapter that threw.
import { AgentError, type AgentErrorInfo } from '../errors.js';
import type { WriteScope } from './hook-dispatch.js';
import type { Run } from './run.js';

/**
 * Writes the warning of a retried attempt (once per distinct error message) and waits for it. Returns
 * the `stream_write_failed` error when the report could not be written (the write threw, or the run no
 * longer owns its stream), else undefined. The failure is logged too.
 */
export async function reportRetriedAttempt(run: Run, warned: Set<string>, error: AgentErrorInfo, attempt: number, maxAttempts: number): Promise<AgentErrorInfo | undefined> {
  const key = `${error.code}:${error.message}`;
  if (warned.has(key)) return undefined;
  warned.add(key);
  let problem: string | undefined;
  try {
    const written = await run.setup.writer.write({ type: 'warning', errorInfo: { ...error, severity: 'warning', details: { ...error.details, attempt, maxAttempts } }, ...run.chunkBase() });
    if (written === false) problem = 'the run no longer owns its stream';
  } catch (thrown) {
    problem = thrown instanceof Error ? thrown.message : String(thrown);
  }
  if (problem === undefined) return undefined;
  run.setup.logger.error(`could not write the error report of model attempt ${attempt}: ${problem}`, { runId: run.setup.runId });
  return new AgentError('stream_write_failed', `The error report of model attempt ${attempt} could not be written to the stream: ${problem}`, { details: { attempt, reported: error.code } }).info;
}

/** C2 with `afterLLMCallOnThrow`: an adapter that threw still reaches afterLLMCall, with the run's error and `threw: true`. */
export async function afterLLMCallOnThrow(run: Run, error: AgentError, attempt: number, durationMs: number, scope: WriteScope): Promise<void> {
  if (run.setup.reconcile?.afterLLMCallOnThrow !== true || !run.hooks.has('afterLLMCall')) return;
  const model = run.setup.model.modelId;
  const info = error.info;
  await run.hooks.fire('afterLLMCall', { result: { ok: false, error: info, model }, plan: { kind: 'fail', error: info }, durationMs, model, attempt, error: info, threw: true }, scope);
}
