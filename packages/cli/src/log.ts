import type { Logger } from '@helix-agents/sdk';

/** Where the CLI writes text: process.stdout / process.stderr, or a test's buffer. */
export interface Output {
  write(text: string): void;
  /** True when it is a terminal: live progress then uses spinners and redraws lines. */
  readonly isTTY?: boolean;
}

/**
 * The serve log: one line per message on stderr, `<time> <level> <message>`, so it can be piped apart
 * from the conversation on stdout. Debug lines are written only when `verbose` is set.
 */
export function serveLogger(out: Output, options: { readonly verbose?: boolean; readonly now?: () => Date } = {}): Logger {
  const now = options.now ?? (() => new Date());
  const line = (level: string) => (message: string, fields?: Record<string, unknown>) => {
    const extra = fields && options.verbose ? ` ${JSON.stringify(fields)}` : '';
    out.write(`${now().toISOString()} ${level.padEnd(5)} ${message}${extra}\n`);
  };
  return {
    debug: options.verbose ? line('debug') : () => {},
    info: line('info'),
    warn: line('warn'),
    error: line('error'),
  };
}
