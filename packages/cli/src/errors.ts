import { AgentError } from '@helix-agents/sdk';

/** Exit codes of the `helix` command (sysexits-style for the usage and missing-input cases). */
export const EXIT = Object.freeze({
  ok: 0,
  /** Discovery errors, or the run failed. */
  failed: 1,
  /** Bad flags, an unknown command or agent. */
  usage: 64,
  /** The project folder (or a file it needs) does not exist. */
  noInput: 66,
  /** A bug in the CLI. */
  internal: 70,
  /** Stopped with Ctrl-C. */
  interrupted: 130,
});

/** The codes of {@link CliError}. */
export type CliErrorCode = 'cli_usage' | 'cli_missing_folder' | 'cli_init_conflict' | 'cli_script_invalid' | 'cli_model_unavailable';

const EXIT_BY_CODE: Readonly<Record<CliErrorCode, number>> = {
  cli_usage: EXIT.usage,
  cli_missing_folder: EXIT.noInput,
  cli_init_conflict: EXIT.failed,
  cli_script_invalid: EXIT.failed,
  cli_model_unavailable: EXIT.usage,
};

/** An error the CLI reports to the user as one message, with the process exit code it maps to. */
export class CliError extends AgentError {
  /** The exit code of the process. */
  readonly exitCode: number;

  constructor(code: CliErrorCode, message: string, hint?: string) {
    super(code, message, { layer: 'run', severity: 'error', retryable: false, ...(hint === undefined ? {} : { hint }) });
    this.exitCode = EXIT_BY_CODE[code];
  }

  /** True for a CliError from any copy of this package. */
  static override isInstance(value: unknown): value is CliError {
    return AgentError.isInstance(value) && value.code.startsWith('cli_');
  }
}
