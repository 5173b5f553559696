/**
 * @helix-agents/sdk/host: what a runtime that runs loops somewhere else (a durable-execution engine)
 * writes code against. It supplies a {@link RunHost} to `JSAgentExecutor` (option `host`), drives each
 * run's loop with a {@link Pacer} one committed step at a time, and continues claimed runs through the
 * {@link RunLauncher} it is bound to. Users of the runtime do not need it.
 */
export { Pacer, PacedRecorder } from '../runtime/pacer.js';
export type { HostedBegin, RunHost } from '../runtime/run-host.js';
export type { BeginSpec, RecordedStart, RunLauncher, RunStartedInfo } from '../runtime/run-entry.js';
export { JournalStepRecorder } from '../runtime/step-recorder.js';
export type { JournalOwner, RecordOptions, StepKey, StepOutcome, StepRecorder } from '../runtime/step-recorder.js';
