// The main demo: the spec's Complete Example, showing the hooks as they fire, the streamed text, the
// final output and the usage rollup. Runs on the scripted model unless OPENAI_API_KEY / OPENAI_BASE_URL is set.
import { pathToFileURL } from 'node:url';
import { composeHookManagers, InMemoryStateStore, InMemoryStreamManager, JSAgentExecutor, type AgentResult, type UsageRollup } from '@helix-agents/sdk';
import { InMemoryUsageStore } from '@helix-agents/store-memory';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { exampleModel } from './model.js';
import { createLoggingHooks, createMetricsHooks, createResearchAgent, researchScript, type Output, type State } from './research-agent.js';

const color = process.stdout.isTTY && !process.env['NO_COLOR'];
const paint = (code: number, text: string): string => (color ? `\u001b[${code}m${text}\u001b[0m` : text);

/** Runs the Complete Example and prints what happened through `write`; `env` picks the model (see model.ts). */
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

  line(paint(1, 'helix-agents demo: the research agent of hooks-lifecycle.md'));
  line(`model: ${description}`);
  line('');

  const stateStore = new InMemoryStateStore();
  const streamManager = new InMemoryStreamManager();
  const usageStore = new InMemoryUsageStore();
  const executor = new JSAgentExecutor(stateStore, streamManager, new VercelAIAdapter());
  const researchAgent = createResearchAgent(model);

  const hookManager = composeHookManagers(createLoggingHooks(hookLine), createMetricsHooks(hookLine));
  const handle = await executor.execute(researchAgent, 'Research quantum computing', {
    hookManager,
    sessionId: 'session-123',
    userId: 'user-456',
    tags: ['research', 'quantum'],
    usageStore,
  });

  for await (const chunk of handle.stream()) {
    if (chunk.type === 'step_start') line(paint(2, `-- step ${chunk.stepIndex + 1}${chunk.attempt > 1 ? ` (attempt ${chunk.attempt})` : ''}`));
    else if (chunk.type === 'text_delta') {
      if (!midLine) write(paint(33, 'model> '));
      write(chunk.delta);
      midLine = true;
    } else if (chunk.type === 'tool_start') line(`${paint(35, '[tool]')} ${chunk.toolName} ${JSON.stringify(chunk.arguments)}`);
    else if (chunk.type === 'warning') line(`${paint(33, '[warn]')} ${chunk.errorInfo.message}`);
    else if (chunk.type === 'error') line(`${paint(31, '[error]')} ${chunk.errorInfo.code}: ${chunk.errorInfo.message}`);
  }

  const result = await handle.result();
  const usage = await handle.getUsageRollup();
  line('');
  if (result.status === 'completed') {
    line(paint(1, 'Final output:'));
    line(JSON.stringify(result.output, null, 2));
  } else {
    line(paint(31, `Run ${result.status}: ${result.error?.message ?? ''}`));
  }
  line(`Final state: ${JSON.stringify(result.state)}`);
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
  return { result, usage };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { result } = await runCompleteExample();
  process.exitCode = result.status === 'completed' ? 0 : 1;
}
