/**
 * Named crash points for crash tests: with HELIX_CRASH_AT=<name> (or
 * <name>@<n> for the n-th time it is reached) the process SIGKILLs itself at that point, so a test hits
 * the exact point every time instead of racing a timer. Unset, a crash point costs one comparison.
 */
export type CrashPointName =
  | 'after_k1'
  /** The start signal's journal entry is written; its hook has not been called. */
  | 'after_start_signal'
  | 'in_on_agent_start'
  | 'after_k2'
  | 'in_model_call'
  /** Placed by a test inside a side-effecting tool, after its effect and before its result is recorded. */
  | 'in_tool'
  | 'before_k3'
  | 'after_k3'
  | 'in_on_agent_complete'
  | 'before_k5'
  | 'after_k5'
  /** A sub-agent call recorded its spawn (beforeSubAgent fired); the child has not started. */
  | 'after_child_spawn'
  /** Inside a child run (a crash test's child agent reaches it from a hook or a tool). */
  | 'in_child_run'
  /** A sub-agent call's child ended; the parent has not run afterSubAgent or recorded the call. */
  | 'after_child_end';

function parse(spec: string | undefined): { readonly name: string; readonly nth: number } | undefined {
  if (!spec) return undefined;
  const [name, nth] = spec.split('@');
  return { name: name ?? '', nth: nth === undefined ? 1 : Number(nth) };
}

const armed = parse(process.env['HELIX_CRASH_AT']);
let reached = 0;

/** SIGKILLs this process when HELIX_CRASH_AT names this point (and its occurrence). */
export function crashPoint(name: CrashPointName): void {
  if (armed === undefined || armed.name !== name) return;
  if (++reached < armed.nth) return;
  process.kill(process.pid, 'SIGKILL');
}
