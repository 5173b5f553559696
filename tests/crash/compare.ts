// What the crash matrices compare: JSON-lines logs, and a run's conversation and state in a form that does
// not depend on the order parallel calls of one step finished in (a replay need not repeat it).
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
