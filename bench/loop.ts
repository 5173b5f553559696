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
// Warm every variant up, then interleave the measured runs so JIT and GC drift hit all of them alike.
for (let i = 0; i < WARMUP; i++) for (const v of variants) await v.run();
const samples = variants.map(() => [] as number[]);
// A full collection before each measured run, outside the timed region, so one variant's garbage is
// not collected on another's clock (run with --expose-gc, as `npm run bench` does).
const collect = (globalThis as { gc?: () => void }).gc ?? (() => {});
for (let i = 0; i < RUNS; i++) {
  for (const [k, v] of variants.entries()) {
    collect();
    samples[k]!.push(await v.run());
  }
}
const rows = variants.map((v, k) => ({ name: v.name, usPerStep: (median(samples[k]!) * 1000) / STEPS }));
const reference = rows[2]!.usPerStep;
console.log(`framework overhead per step: ${STEPS} steps, median of ${RUNS} runs, Node ${process.version}`);
for (const row of rows) {
  console.log(`${row.name.padEnd(44)} ${row.usPerStep.toFixed(1).padStart(8)} µs/step   ${(row.usPerStep / reference).toFixed(2)}x generateText`);
}
console.log(`hooks on every point cost ${(rows[1]!.usPerStep / rows[0]!.usPerStep).toFixed(2)}x no hooks`);
