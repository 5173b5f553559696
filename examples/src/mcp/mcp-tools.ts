// The tools of an MCP server in a helix agent, under the same hooks and guards as any tool: the agent
// searches the notes server (read-only), tries to delete a note (a tool guard blocks it: the server is
// never called) and adds one (a person approves it first; the run suspends in between).
//   npm run example:mcp
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createHookManager, defineAgent, guardPolicy, InMemoryStateStore, InMemoryStreamManager, JSAgentExecutor, silentLogger, type AgentResult } from '@helix-agents/sdk';
import { createToolGuard } from '@helix-agents/sdk/ready-made';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { connectMcpServer } from '@helix-agents/mcp';
import { exampleModel } from '../model.js';

const script = [
  { toolCalls: [{ name: 'notes__search_notes', args: { query: 'hooks' }, id: 'search' }] },
  { toolCalls: [{ name: 'notes__delete_note', args: { id: 'n2' }, id: 'delete' }] },
  { toolCalls: [{ name: 'notes__add_note', args: { body: 'MCP tools obey helix hooks.' }, id: 'add' }] },
  { text: 'I found your note on hooks, could not delete n2, and added a note about MCP tools.' },
];

/** Runs the example; `print` gets each line. Resolves with the final result of the approved run. */
export async function runMcpExample(print: (line: string) => void = console.log, env: NodeJS.ProcessEnv = process.env): Promise<AgentResult> {
  const server = fileURLToPath(new URL('./notes-server.ts', import.meta.url));
  const notes = await connectMcpServer({ name: 'notes', transport: { command: process.execPath, args: ['--import', 'tsx', server] } });
  try {
    const { model, description } = exampleModel(script, env);
    print(`model: ${description}; server tools: ${(await notes.listTools()).map((t) => `${t.name} -> ${t.helixName}`).join(', ')}`);
    const agent = defineAgent({
      name: 'notes-assistant',
      systemPrompt: 'You manage the user\'s notes with the notes tools.',
      llmConfig: { model },
      // add_note needs a person's approval; search_notes is read-only by the server's annotation, the others are journaled.
      tools: await notes.tools({ needsApproval: (tool) => tool.name === 'add_note' }),
    });
    const guard = createHookManager(createToolGuard({ deny: ['notes__delete_*'] }), { onError: guardPolicy });
    const executor = new JSAgentExecutor(new InMemoryStateStore(), new InMemoryStreamManager(), new VercelAIAdapter(), { logger: silentLogger });
    const hooks = { afterTool: (p: { toolCall: { name: string }; success: boolean; result?: unknown; error?: { message: string } }) => print(`  ${p.toolCall.name}: ${p.success ? JSON.stringify(p.result) : `error: ${p.error?.message}`}`) };
    let result: AgentResult = await (await executor.execute(agent, 'Tidy my notes about hooks.', { sessionId: 'mcp-example', hookManager: guard, hooks })).result();
    // A run waiting for approval suspends; approving starts a fresh run that makes the call (once).
    for (let call = result.suspension?.pending[0]; result.status === 'suspended' && call; call = result.suspension?.pending[0]) {
      print(`  approval asked for ${call.toolName} ${JSON.stringify(call.input)}: approved`);
      result = await (await executor.approve('mcp-example', call.toolCallId, { hookManager: guard, hooks })).result();
    }
    print(`${result.status}: ${String(result.output)}`);
    return result;
  } finally {
    await notes.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await runMcpExample();
