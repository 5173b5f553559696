// An approval flow (human in the loop): the agent wants to delete a file; a person approves, edits the
// arguments, or rejects; the run suspends in between (durably, on SQLite) and a fresh run continues.
//   npm run example:approval                 # asks at the terminal
//   runApprovalFlow({ decide })              # the same flow, driven by code (see approval-flow.test.ts)
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { defineAgent, defineTool, JSAgentExecutor, silentLogger, type AgentResult, type PendingCall } from '@helix-agents/sdk';
import { createScriptedModel } from '@helix-agents/sdk/testing';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { openSqliteStores } from '@helix-agents/store-sqlite';
import { z } from 'zod';
import { exampleModel } from './model.js';

/** What the person decided about a call. */
export type Decision = { readonly decision: 'approve'; readonly input?: { readonly path: string } } | { readonly decision: 'reject'; readonly reason?: string };

/** Options of {@link runApprovalFlow}. */
export interface ApprovalFlowOptions {
  /** Decides each call waiting for approval. */
  readonly decide: (call: PendingCall) => Decision | Promise<Decision>;
  /** The SQLite file (default `.helix/helix.db`). */
  readonly dbPath?: string;
  /** Picks the model (see model.ts); the scripted one by default. */
  readonly env?: NodeJS.ProcessEnv;
  readonly print?: (line: string) => void;
}

/** The workspace the tools act on (a stand-in for a real folder). */
const files = new Map<string, string>();

const listFiles = defineTool({
  name: 'list_files',
  description: 'Lists the files in the workspace',
  inputSchema: z.object({}),
  execute: () => [...files.keys()],
});

const deleteFile = defineTool({
  name: 'delete_file',
  description: 'Deletes a file (a person must approve it)',
  inputSchema: z.object({ path: z.string() }),
  needsApproval: true,
  sideEffects: true,
  execute: (input) => {
    if (!files.delete(input.path)) throw new Error(`No such file: ${input.path}`);
    return { deleted: input.path };
  },
});

/** The scripted model: lists files, asks to delete the old draft, then reports what happened. */
const createScript = () => createScriptedModel([
  { toolCalls: [{ name: 'list_files', args: {}, id: 'list' }] },
  { text: 'The old draft is obsolete; I will delete it.', toolCalls: [{ name: 'delete_file', args: { path: 'notes/old-draft.txt' }, id: 'del' }] },
  (options) => {
    const last = options.prompt.at(-1);
    const part = last?.role === 'tool' ? last.content[0] : undefined;
    const output = part?.type === 'tool-result' ? part.output : undefined;
    const text = output?.type === 'json' ? JSON.stringify(output.value) : output && 'value' in output ? String(output.value) : '';
    return { text: text.includes('deleted') ? `Done: ${text}.` : `Understood, I kept the file (${text}).` };
  },
]);

/** Runs the flow: the agent suspends at the approval, `decide` answers, a fresh run continues. */
export async function runApprovalFlow(options: ApprovalFlowOptions): Promise<AgentResult> {
  const print = options.print ?? console.log;
  files.clear();
  files.set('notes/old-draft.txt', 'first draft').set('notes/todo.txt', 'buy milk');
  const stores = openSqliteStores({ path: options.dbPath ?? '.helix/helix.db' });
  const model = exampleModel([], options.env ?? process.env);
  const agent = defineAgent({
    name: 'file-cleaner',
    systemPrompt: 'You tidy the workspace. Delete obsolete files, but only with approval.',
    llmConfig: { model: model.scripted ? createScript() : model.model },
    tools: [listFiles, deleteFile],
  });
  const executor = new JSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter(), { agents: [agent], logger: silentLogger });
  try {
    let result: AgentResult = await (await executor.execute(agent, 'Tidy up my notes folder.', { sessionId: `cleanup-${Date.now().toString(36)}` })).result();
    while (result.status === 'suspended' && result.suspension) {
      for (const call of result.suspension.pending) {
        print(`The agent wants to run ${call.toolName} ${JSON.stringify(call.input)}`);
        const decision = await options.decide(call);
        print(decision.decision === 'approve' ? `approved${decision.input ? ` with ${JSON.stringify(decision.input)}` : ''}` : `rejected${decision.reason ? `: ${decision.reason}` : ''}`);
        const handle =
          decision.decision === 'approve'
            ? await executor.approve(result.sessionId, call.toolCallId, decision.input ? { input: decision.input } : {})
            : await executor.reject(result.sessionId, call.toolCallId, decision.reason ? { reason: decision.reason } : {});
        result = await handle.result();
      }
    }
    print(result.status === 'completed' ? `agent: ${String(result.output)}` : `run ${result.status}: ${result.error?.message ?? ''}`);
    return result;
  } finally {
    stores.close();
  }
}

/** A decider that asks at the terminal: [y]es, [e]dit the path, or [n]o with a reason. Close it when done. */
export function terminalDecider(
  input: NodeJS.ReadableStream = process.stdin,
  output: NodeJS.WritableStream = process.stdout,
): ApprovalFlowOptions['decide'] & { close(): void } {
  // One reader for the whole flow, iterated, so lines typed (or piped) ahead of a prompt are not lost.
  const rl = createInterface({ input, terminal: false });
  const lines = rl[Symbol.asyncIterator]();
  const ask = async (question: string): Promise<string> => {
    output.write(question);
    const next = await lines.next();
    if (next.done === true) throw new Error('The input closed before an answer.');
    return String(next.value).trim();
  };
  const decide = async (call: PendingCall): Promise<Decision> => {
    for (;;) {
      const answer = (await ask('Approve? [y]es / [e]dit / [n]o: ')).toLowerCase();
      if (answer === 'y' || answer === 'yes') return { decision: 'approve' };
      if (answer === 'e' || answer === 'edit') return { decision: 'approve', input: { path: await ask(`New path (was ${(call.input as { path: string }).path}): `) } };
      if (answer === 'n' || answer === 'no') return { decision: 'reject', reason: await ask('Why not? ') };
    }
  };
  return Object.assign(decide, { close: () => rl.close() });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const decide = terminalDecider();
  try {
    const result = await runApprovalFlow({ decide });
    process.exitCode = result.status === 'completed' ? 0 : 1;
  } finally {
    decide.close();
  }
}
