// Framework overhead per step (issue 2): a zero-latency scripted model, one no-op tool, N steps.
// Compares helix-agents with no hooks, with a no-op handler on every hook point, and the AI SDK's own
// generateText tool loop on the same model. Run: npm run bench  (options: --steps 200 --runs 30 --warmup 20)
import { generateText, stepCountIs, tool } from 'ai';
import { z } from 'zod';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import {
  defineAgent,
  defineTool,
  HOOK_POINTS,
  InMemoryStateStore,
  InMemoryStreamManager,
  JSAgentExecutor,
  silentLogger,
  type AgentHooks,
  type HookPoint,
} from '@helix-agents/sdk';
import { createScriptedModel, type ScriptedStepObject } from '@helix-agents/sdk/testing';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const STEPS = arg('steps', 200);
const RUNS = arg('runs', 30);
const WARMUP = arg('warmup', 20);

const callNoop: ScriptedStepObject = { toolCalls: [{ name: 'noop', args: {} }], usage: { inputTokens: 10, outputTokens: 2 } };
const answer: ScriptedStepObject = { text: 'done', usage: { inputTokens: 10, outputTokens: 1 } };

/** A model that calls the no-op tool steps-1 times, then answers. */
function benchModel(steps: number) {
  return createScriptedModel([(_options, callIndex) => (callIndex % steps === steps - 1 ? answer : callNoop)], { loop: true, recordCalls: false });
}

const noopTool = defineTool({ name: 'noop', description: 'does nothing', inputSchema: z.object({}), execute: () => 'ok' });

function noopHooks(): AgentHooks {
  const hooks: Record<string, () => void> = {};
  for (const point of HOOK_POINTS) hooks[point as HookPoint] = () => {};
  return hooks as AgentHooks;
}

async function helixRun(hooks: AgentHooks | undefined): Promise<number> {
  const executor = new JSAgentExecutor(new InMemoryStateStore(), new InMemoryStreamManager(), new VercelAIAdapter(), { logger: silentLogger });
  const agent = defineAgent({ name: 'bench', llmConfig: { model: benchModel(STEPS) }, tools: [noopTool], maxSteps: STEPS + 1 });
  const started = performance.now();
  const handle = await executor.execute(agent, 'go', hooks ? { hooks } : {});
  const result = await handle.result();
  const elapsed = performance.now() - started;
  if (result.status !== 'completed' || result.stepCount !== STEPS) throw new Error(`helix run ended ${result.status} after ${result.stepCount} steps`);
  return elapsed;
}

async function aiSdkRun(): Promise<number> {
  const started = performance.now();
  const result = await generateText({
    model: benchModel(STEPS),
    prompt: 'go',
    tools: { noop: tool({ description: 'does nothing', inputSchema: z.object({}), execute: async () => 'ok' }) },
    stopWhen: stepCountIs(STEPS),
  });
  const elapsed = performance.now() - started;
  if (result.steps.length !== STEPS) throw new Error(`generateText ran ${result.steps.length} steps`);
  return elapsed;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

const variants: { name: string; run: () => Promise<number> }[] = [
  { name: 'helix, no hooks', run: () => helixRun(undefined) },
  { name: 'helix, no-op handler on every hook point', run: () => helixRun(noopHooks()) },
  { name: 'AI SDK generateText tool loop (reference)', run: aiSdkRun },
];

/**
 * Measures one variant in this process: warm-up, then the median of RUNS. No forced GC between runs: a
 * full collection shrinks the heap and makes the next run pay to grow it again (it doubled the figures).
 */
async function measureVariant(index: number): Promise<number> {
  const variant = variants[index]!;
  for (let i = 0; i < WARMUP; i++) await variant.run();
  const samples: number[] = [];
  for (let i = 0; i < RUNS; i++) samples.push(await variant.run());
  return (median(samples) * 1000) / STEPS;
}

const only = process.argv.indexOf('--variant');
if (only >= 0) {
  // A child: one variant, so no other variant's garbage or JIT state is on its clock.
  process.stdout.write(JSON.stringify({ usPerStep: await measureVariant(Number(process.argv[only + 1])) }));
} else {
  const { execFileSync } = await import('node:child_process');
  const rows: { name: string; usPerStep: number }[] = [];
  for (const [index, variant] of variants.entries()) {
    const out = execFileSync(process.execPath, [...process.execArgv, process.argv[1]!, ...process.argv.slice(2), '--variant', String(index)], { encoding: 'utf8' });
    rows.push({ name: variant.name, usPerStep: (JSON.parse(out) as { usPerStep: number }).usPerStep });
  }
  const reference = rows[2]!.usPerStep;
  console.log(`framework overhead per step: ${STEPS} steps, median of ${RUNS} runs after ${WARMUP} warm-up runs, each variant in its own process, Node ${process.version}`);
  for (const row of rows) {
    console.log(`${row.name.padEnd(44)} ${row.usPerStep.toFixed(1).padStart(8)} µs/step   ${(row.usPerStep / reference).toFixed(3)}x generateText`);
  }
  console.log(`hooks on every point cost ${(rows[1]!.usPerStep / rows[0]!.usPerStep).toFixed(2)}x no hooks`);
}
