import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Message, StreamChunk, UsageRollup } from '@helix-agents/sdk';
import type { RunRecord } from '@helix-agents/sdk/store';
import { openSqliteStores } from '@helix-agents/store-sqlite';
import Database from 'better-sqlite3';
import { CliError } from './errors.js';
import type { Output } from './log.js';

/** One line of `helix sessions`. */
export interface SessionSummary {
  readonly sessionId: string;
  readonly agent: string;
  readonly runs: number;
  /** The status of the session's latest run. */
  readonly status: string;
  readonly lastStartedAt: number;
}

/** What `helix sessions show ID` prints. */
export interface SessionDetails {
  readonly sessionId: string;
  readonly agent: string;
  readonly runs: readonly RunRecord[];
  readonly messages: readonly Message[];
  readonly hookDecisions: readonly Extract<StreamChunk, { type: 'hook_decision' }>[];
  readonly usage: UsageRollup;
}

/** The project's store, `<dir>/.helix/helix.db` (or `database`); a missing one is a CliError, never an empty new file. */
function storePath(dir: string, database: string | undefined): string {
  const path = database ?? join(resolve(dir), '.helix', 'helix.db');
  if (!existsSync(path)) throw new CliError('cli_missing_folder', `No helix store at ${path}.`, 'Run an agent first (`helix run --dir <project> --message ...`), or pass --dir.');
  return path;
}

/** The sessions of a project's SQLite store, the most recently started first. */
export function listSessions(dir: string, database?: string): SessionSummary[] {
  // Read-only: listing never migrates or writes the store. The state store has no listing port, so this reads its tables.
  const db = new Database(storePath(dir, database), { readonly: true, fileMustExist: true });
  try {
    const rows = db
      .prepare(
        `SELECT s.session_id AS sessionId, s.agent_type AS agent, count(r.run_id) AS runs,
                coalesce(max(r.started_at), 0) AS lastStartedAt,
                (SELECT r2.status FROM runs r2 WHERE r2.session_id = s.session_id ORDER BY r2.started_at DESC, r2.rowid DESC LIMIT 1) AS status
           FROM sessions s LEFT JOIN runs r ON r.session_id = s.session_id
          GROUP BY s.session_id ORDER BY lastStartedAt DESC, s.sid DESC`,
      )
      .all() as { sessionId: string; agent: string; runs: number; lastStartedAt: number; status: string | null }[];
    return rows.map((row) => ({ ...row, status: row.status ?? 'none' }));
  } finally {
    db.close();
  }
}

/** A session's runs, transcript, hook decisions and usage. */
export async function sessionDetails(dir: string, sessionId: string, database?: string): Promise<SessionDetails> {
  const path = storePath(dir, database);
  const db = new Database(path, { readonly: true, fileMustExist: true });
  let runIds: string[];
  try {
    runIds = (db.prepare('SELECT run_id FROM runs WHERE session_id = ? ORDER BY started_at, rowid').pluck().all(sessionId) as string[]);
  } finally {
    db.close();
  }
  const stores = openSqliteStores({ path });
  try {
    const session = await stores.stateStore.loadSession(sessionId);
    if (!session) throw new CliError('cli_usage', `No session "${sessionId}" in ${path}.`, 'List them with `helix sessions`.');
    const runs: RunRecord[] = [];
    for (const id of runIds) {
      const run = await stores.stateStore.getRun(id);
      if (run) runs.push(run);
    }
    const hookDecisions: Extract<StreamChunk, { type: 'hook_decision' }>[] = [];
    for await (const chunk of stores.streamManager.read(sessionId, { follow: false })) if (chunk.type === 'hook_decision') hookDecisions.push(chunk);
    const usage = await stores.usageStore.getRollup({ sessionId });
    return { sessionId, agent: session.agentType, runs, messages: session.messages, hookDecisions, usage };
  } finally {
    stores.close();
  }
}

const when = (ms: number): string => (ms > 0 ? new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '-');
const text = (value: unknown): string => (typeof value === 'string' ? value : JSON.stringify(value) ?? '');

/** Prints `helix sessions`. */
export function printSessions(sessions: readonly SessionSummary[], out: Output): void {
  if (sessions.length === 0) {
    out.write('No sessions yet.\n');
    return;
  }
  for (const s of sessions) out.write(`${s.sessionId}  ${s.agent}  ${s.runs} run${s.runs === 1 ? '' : 's'}  ${s.status}  ${when(s.lastStartedAt)}\n`);
}

/** Prints `helix sessions show ID`: runs, transcript, hook decisions and usage. */
export function printSessionDetails(d: SessionDetails, out: Output): void {
  out.write(`session ${d.sessionId} (agent "${d.agent}")\n\nruns:\n`);
  for (const r of d.runs) {
    const took = r.endedAt === undefined ? '' : ` in ${r.endedAt - r.startedAt} ms`;
    out.write(`  ${r.runId}  ${r.status}  ${r.signal}  ${r.stepCount} step${r.stepCount === 1 ? '' : 's'}  ${when(r.startedAt)}${took}${r.error ? `  ${r.error.code}: ${r.error.message}` : ''}\n`);
  }
  out.write('\ntranscript:\n');
  for (const m of d.messages) {
    if (m.role === 'tool') out.write(`  tool ${m.toolName}${m.isError ? ' (error)' : ''}: ${text(m.content)}\n`);
    else if (m.role === 'assistant') {
      if (m.content !== '') out.write(`  assistant: ${m.content}\n`);
      for (const call of m.toolCalls ?? []) out.write(`  assistant -> ${call.name} ${text(call.arguments)}\n`);
    } else out.write(`  ${m.role}: ${m.content}\n`);
  }
  out.write(`\nhook decisions:${d.hookDecisions.length === 0 ? ' none\n' : '\n'}`);
  for (const h of d.hookDecisions) out.write(`  ${h.hookPoint} ${h.hookName}: ${h.decision}${h.reason ? ` (${h.reason})` : ''} ${h.durationMs} ms\n`);
  const u = d.usage;
  out.write(
    `\nusage: ${u.modelCalls} model call${u.modelCalls === 1 ? '' : 's'} (${u.failedModelCalls} failed), ${u.tokens.prompt} in / ${u.tokens.completion} out tokens, ${u.toolStats.totalCalls} tool call${u.toolStats.totalCalls === 1 ? '' : 's'} (${u.toolStats.failures} failed)\n`,
  );
}
