/** Where the runtime reports what it handled without failing a run (observe-only hook errors, stream write errors). */
export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** The default logger: warnings and errors to stderr, debug and info dropped. */
export const consoleLogger: Logger = {
  debug() {},
  info() {},
  warn(message, fields) {
    console.warn(`[helix] ${message}`, ...(fields ? [fields] : []));
  },
  error(message, fields) {
    console.error(`[helix] ${message}`, ...(fields ? [fields] : []));
  },
};

/** A logger that drops everything. */
export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };
