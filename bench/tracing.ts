// The cost of tracing per step (issue 7): the zero-latency scripted model and no-op tool of bench/loop.ts,
// N steps, with tracing off, with the OpenTelemetry hooks (no provider registered: no-op spans; recording
// spans into a batch processor whose exporter drops them, with and without content) and with the Langfuse
// hooks exporting over OTLP/HTTP to a local sink (with and without content).
//
// Each variant runs in its own process (the Langfuse variants make a lot of garbage and buffers that would
// otherwise be collected on the next variant's clock), in several rounds so that a shared machine's load
// drifts over all variants alike. The sink is another process, so its work is not charged to the variant.
// A traced run flushes its exporter inside the timed region: the export is charged to the run that caused it.
// Run: npm run bench:tracing  (options: --steps 200 --runs 10 --warmup 10 --rounds 3)
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { BasicTracerProvider, BatchSpanProcessor, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { defineAgent, defineTool, InMemoryStateStore, InMemoryStreamManager, JSAgentExecutor, silentLogger, type AgentHooks } from '@helix-agents/sdk';
import { createScriptedModel, type ScriptedStepObject } from '@helix-agents/sdk/testing';
import { createOtelHooks } from '@helix-agents/tracing-otel';
import { createLangfuseHooks } from '@helix-agents/tracing-langfuse';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}
function text(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const STEPS = arg('steps', 200);
const RUNS = arg('runs', 10);
const WARMUP = arg('warmup', 10);
const ROUNDS = arg('rounds', 3);

const VARIANTS = [
  'tracing off',
  'empty handlers on the same hook points (dispatch)',
  'OTel hooks, no provider registered (no-op spans)',
  'OTel hooks, recording, batch + dropping exporter',
  'OTel hooks, recording, captureContent: true',
  'Langfuse hooks, OTLP/HTTP to local sink (default)',
  'Langfuse hooks, captureContent: false',
] as const;

interface Sample {
  readonly wallMs: number;
  readonly cpuMs: number;
}

const callNoop: ScriptedStepObject = { toolCalls: [{ name: 'noop', args: {} }], usage: { inputTokens: 10, outputTokens: 2 } };
const answer: ScriptedStepObject = { text: 'done', usage: { inputTokens: 10, outputTokens: 1 } };

/** A model that calls the no-op tool steps-1 times, then answers (as bench/loop.ts). */
function benchModel(steps: number) {
  return createScriptedModel([(_options, callIndex) => (callIndex % steps === steps - 1 ? answer : callNoop)], { loop: true, recordCalls: false });
}

const noopTool = defineTool({ name: 'noop', description: 'does nothing', inputSchema: z.object({}), execute: () => 'ok' });

/** An exporter that drops spans: what is measured is our hooks, the SDK's span objects and its batching. */
class DroppingExporter implements SpanExporter {
  export(_spans: ReadableSpan[], done: (result: { code: 0 }) => void): void {
    done({ code: 0 });
  }
  async shutdown(): Promise<void> {}
}

async function run(hooks: AgentHooks | undefined, flush?: () => Promise<void>): Promise<Sample> {
  const executor = new JSAgentExecutor(new InMemoryStateStore(), new InMemoryStreamManager(), new VercelAIAdapter(), { logger: silentLogger });
  const agent = defineAgent({ name: 'bench', llmConfig: { model: benchModel(STEPS) }, tools: [noopTool], maxSteps: STEPS + 1 });
  const started = performance.now();
  const cpu = process.cpuUsage();
  const handle = await executor.execute(agent, 'go', { userId: 'bench-user', tags: ['bench'], metadata: { suite: 'tracing' }, ...(hooks ? { hooks } : {}) });
  const result = await handle.result();
  if (flush) await flush();
  const wallMs = performance.now() - started;
  const used = process.cpuUsage(cpu);
  if (result.status !== 'completed' || result.stepCount !== STEPS) throw new Error(`run ended ${result.status} after ${result.stepCount} steps`);
  return { wallMs, cpuMs: (used.user + used.system) / 1000 };
}

/** One variant, in this process: warm up, then measure with a full collection before each run (--expose-gc). */
async function measure(variant: number, sinkUrl: string): Promise<Sample[]> {
  // Large batches and a long schedule, so exports happen in the flush we time rather than at random moments.
  const batch = { maxExportBatchSize: 4096, maxQueueSize: 65536, scheduledDelayMillis: 60_000 };
  const langfuseOptions = { publicKey: 'pk-lf-bench', secretKey: 'sk-lf-bench', baseUrl: sinkUrl, release: 'bench', defaultTags: ['bench'], flushAt: 4096, flushInterval: 60 };
  let once: () => Promise<Sample>;
  let close = async (): Promise<void> => {};
  let openSpans = (): number => 0;
  if (variant === 0) {
    once = () => run(undefined);
  } else if (variant === 1) {
    // What the runtime spends calling handlers at the points tracing uses, whatever they do.
    const empty = Object.fromEntries(Object.keys(createOtelHooks().hooks).map((point) => [point, () => {}])) as AgentHooks;
    once = () => run(empty);
  } else if (variant === 2) {
    const tracing = createOtelHooks();
    openSpans = () => tracing.stats().openSpans;
    once = () => run(tracing.hooks);
  } else if (variant === 3 || variant === 4) {
    const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(new DroppingExporter(), batch)] });
    const tracing = createOtelHooks({ tracerProvider: provider, captureContent: variant === 4 });
    openSpans = () => tracing.stats().openSpans;
    once = () => run(tracing.hooks, () => provider.forceFlush());
    close = () => provider.shutdown();
  } else {
    const tracing = createLangfuseHooks({ ...langfuseOptions, captureContent: variant === 5 });
    openSpans = () => tracing.stats().openSpans;
    once = () => run(tracing.hooks, tracing.flush);
    close = tracing.shutdown;
  }
  for (let i = 0; i < WARMUP; i++) await once();
  const collect = (globalThis as { gc?: () => void }).gc ?? (() => {});
  const samples: Sample[] = [];
  for (let i = 0; i < RUNS; i++) {
    collect();
    samples.push(await once());
  }
  if (openSpans() !== 0) throw new Error(`${openSpans()} spans left open after the runs`);
  await close();
  return samples;
}

/** An OTLP/HTTP endpoint in a child process that reads and discards what it receives; `GET /stats` reports the traffic. */
async function startSink(): Promise<{ url: string; stats: () => Promise<{ requests: number; bytes: number }>; close: () => Promise<void> }> {
  const child = spawn(
    process.execPath,
    [
      '-e',
      `
      const http = require('node:http');
      let bytes = 0, requests = 0;
      const server = http.createServer((req, res) => {
        if (req.method === 'GET') { res.end(JSON.stringify({ requests, bytes })); return; }
        req.on('data', (chunk) => { bytes += chunk.length; });
        req.on('end', () => { requests++; res.writeHead(200, { 'content-type': 'application/json' }); res.end('{}'); });
      });
      server.keepAliveTimeout = 60000;
      server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
      process.stdin.on('end', () => process.exit(0));
      process.stdin.resume();
      `,
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const port = await new Promise<number>((resolve) => child.stdout.once('data', (data: Buffer) => resolve(Number(data.toString().trim()))));
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    stats: async () => (await (await fetch(`${url}/stats`)).json()) as { requests: number; bytes: number },
    close: async () => {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.stdin.end();
      await exited;
    },
  };
}

/** Runs one variant in a child process with this process's flags (--expose-gc, the helix-source condition, tsx). */
function measureInChild(variant: number, sinkUrl: string): Promise<Sample[]> {
  const args = [...process.execArgv, fileURLToPath(import.meta.url), '--variant', String(variant), '--sink', sinkUrl, '--steps', String(STEPS), '--runs', String(RUNS), '--warmup', String(WARMUP)];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (data: Buffer) => (out += data.toString()));
  return new Promise((resolve, reject) =>
    child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as Sample[]) : reject(new Error(`variant ${variant} exited with ${code}`)))),
  );
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

const variantArg = text('variant');
if (variantArg !== undefined) {
  process.stdout.write(JSON.stringify(await measure(Number(variantArg), text('sink') ?? '')));
} else {
  const sink = await startSink();
  const samples = VARIANTS.map(() => [] as Sample[]);
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < VARIANTS.length; k++) samples[k]!.push(...(await measureInChild(k, sink.url)));
  }
  const perStep = (ms: number) => (ms * 1000) / STEPS;
  const rows = VARIANTS.map((name, k) => ({
    name,
    wall: perStep(median(samples[k]!.map((s) => s.wallMs))),
    cpu: perStep(median(samples[k]!.map((s) => s.cpuMs))),
  }));
  const off = rows[0]!;
  // CPU time is the steadier figure on a shared machine (other processes inflate wall time); both are medians.
  console.log(`tracing cost per step: ${STEPS} steps (a model call and a tool call each), median of ${ROUNDS}×${RUNS} runs, Node ${process.version}`);
  console.log(`${''.padEnd(50)} ${'wall µs/step'.padStart(13)} ${'CPU µs/step'.padStart(12)} ${'CPU vs off'.padStart(11)}`);
  for (const row of rows) {
    const delta = row === off ? '' : `+${(row.cpu - off.cpu).toFixed(1)}`;
    console.log(`${row.name.padEnd(50)} ${row.wall.toFixed(1).padStart(13)} ${row.cpu.toFixed(1).padStart(12)} ${delta.padStart(11)}`);
  }
  const received = await sink.stats();
  console.log(`the sink received ${received.requests} OTLP/HTTP requests, ${(received.bytes / 1e6).toFixed(1)} MB`);
  await sink.close();
}
