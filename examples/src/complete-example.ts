// The main demo: the spec's Complete Example, showing the hooks as they fire, the streamed text, the
// final output and the usage rollup. Runs on the embedded default store (SQLite in .helix/) and on the
// scripted model unless OPENAI_API_KEY / OPENAI_BASE_URL is set.
import { pathToFileURL } from 'node:url';
import { composeHookManagers, JSAgentExecutor, type AgentResult, type LLMAdapter, type StreamChunk, type UsageRollup } from '@helix-agents/sdk';
import { openSqliteStores } from '@helix-agents/store-sqlite';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { exampleModel } from './model.js';
import { createLoggingHooks, createMetricsHooks, createResearchAgent, researchScript, type Output, type State } from './research-agent.js';

const color = process.stdout.isTTY && !process.env['NO_COLOR'];
const paint = (code: number, text: string): string => (color ? `\u001b[${code}m${text}\u001b[0m` : text);

/**
 * Runs the Complete Example and prints what happened through `write`; `env` picks the model (see
 * model.ts) and HELIX_DB the SQLite file (default `.helix/helix.db`).
 */
export async function runCompleteExample(
  write: (text: string) => void = (t) => process.stdout.write(t),
  env: NodeJS.ProcessEnv = process.env,
): Promise<{
  result: AgentResult<State, Output>;
  usage: UsageRollup | undefined;
}> {
  const { model, description } = exampleModel(researchScript, env);
  let midLine = false;
  const line = (text: string): void => {
    write(`${midLine ? '\n' : ''}${text}\n`);
    midLine = false;
  };
  const hookLine = (text: string): void => line(`${paint(36, '[hook]')} ${text}`);

  line(paint(1, 'helix-agents demo: a research agent with logging and metrics hooks'));
  const stores = openSqliteStores({ path: env['HELIX_DB'] ?? '.helix/helix.db' });
  line(`model: ${description}`);
  line(`store: SQLite at ${stores.database.path}`);
  line('');

  // Text is shown as the model streams it, in order with the hooks (the stream is read after the run).
  const adapter = new VercelAIAdapter();
  const showText: LLMAdapter = {
    generateStep: (request) =>
      adapter.generateStep({
        ...request,
        onTextDelta: (delta) => {
          if (!midLine) write(paint(33, 'model> '));
          write(delta);
          midLine = true;
          request.onTextDelta?.(delta);
        },
      }),
  };
  const executor = new JSAgentExecutor(stores.stateStore, stores.streamManager, showText);
  const researchAgent = createResearchAgent(model);

  const hookManager = composeHookManagers(createLoggingHooks(hookLine), createMetricsHooks(hookLine), {
    beforeLLMCall: (payload, ctx) => line(paint(2, `-- step ${ctx.stepCount + 1}${payload.attempt > 1 ? ` (attempt ${payload.attempt})` : ''}`)),
  });
  const handle = await executor.execute(researchAgent, 'Research quantum computing', {
    hookManager,
    sessionId: `session-${Date.now().toString(36)}`,
    userId: 'user-456',
    tags: ['research', 'quantum'],
    // The SQLite state store is also a usage store: usage lands in each step's commit.
    usageStore: stores.usageStore,
  });

  const result = await handle.result();
  const chunks: StreamChunk[] = [];
  for await (const chunk of handle.stream()) chunks.push(chunk);
  for (const chunk of chunks) {
    if (chunk.type === 'warning') line(`${paint(33, '[warn]')} ${chunk.errorInfo.message}`);
  }
  const usage = await handle.getUsageRollup();
  line('');
  if (result.status === 'completed') {
    line(paint(1, 'Final output:'));
    line(JSON.stringify(result.output, null, 2));
  } else {
    line(paint(31, `Run ${result.status}: ${result.error?.message ?? ''}`));
  }
  line(`Final state: ${JSON.stringify(result.state)}`);
  const counts = new Map<string, number>();
  for (const chunk of chunks) counts.set(chunk.type, (counts.get(chunk.type) ?? 0) + 1);
  line(`Stream (session ${handle.sessionId}): ${chunks.length} chunks recorded (${[...counts].map(([type, n]) => `${n} ${type}`).join(', ')})`);
  if (usage) {
    const t = usage.tokens;
    line(
      `Usage: ${t.total} tokens (${t.prompt} prompt, ${t.completion} completion, ${t.cached} cached), ` +
        `${usage.modelCalls} model calls, ${usage.toolStats.totalCalls} tool calls ` +
        `(${Object.entries(usage.toolStats.byTool)
          .map(([name, s]) => `${name}: ${s.calls} calls, ${s.failures} failed, ${s.totalDurationMs.toFixed(1)} ms`)
          .join('; ')})`,
    );
  }
  stores.close();
  return { result, usage };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { result } = await runCompleteExample();
  process.exitCode = result.status === 'completed' ? 0 : 1;
}
