// What the crash matrices share: the child process that may die, JSON-lines logs, and a run's conversation
// and state in a form that does not depend on the order parallel calls of one step finished in (a replay
// need not repeat it).
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import type { Message } from '@helix-agents/sdk';

/** The JSON lines of `file` (none when it does not exist). */
export function lines<T>(file: string): T[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as T);
}

/** The conversation with each step's tool rows in call-id order (parallel calls append in completion order). */
export function canonical(messages: readonly Message[]): unknown[] {
  const out: Message[] = [];
  let tools: Message[] = [];
  const flush = () => {
    out.push(...tools.sort((a, b) => (a.role === 'tool' && b.role === 'tool' ? a.toolCallId.localeCompare(b.toolCallId) : 0)));
    tools = [];
  };
  for (const m of messages) {
    if (m.role === 'tool') tools.push(m);
    else {
      flush();
      out.push(m);
    }
  }
  flush();
  return out;
}

/** The crash agent's state with its log as a multiset, for the same reason. */
export function canonicalState(state: unknown): unknown {
  const s = state as { count: number; log: string[] };
  return { count: s.count, log: [...s.log].sort() };
}

/** How a crash-test child process ended, with what it printed. */
export interface ChildResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `script` with `args` in a child process that SIGKILLs itself at `crashAt` (HELIX_CRASH_AT), and
 * resolves when it ended. One process (node --import tsx): `tsx file.ts` would start a second node
 * process, and a SIGKILL of its pid would leave the process that writes running.
 */
export function runChild(script: string, args: readonly string[], crashAt?: string): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ['--conditions=helix-source', '--import', 'tsx', script, ...args], {
      env: { ...process.env, HELIX_CRASH_AT: crashAt ?? '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    proc.on('error', reject);
    proc.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}
