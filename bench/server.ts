// Load on the HTTP server (issue 13, item 8): concurrent chat streams (POST /api/chat, the AI SDK UI
// message stream) on loopback against the scripted model. The server runs in a child process, so its
// memory is its own; this process is the load generator.
// Run: npm run bench:server   (options: --streams 200 --rounds 3 --chunks 40; at most 500 streams, 10 rounds)
// Prints p50 / p99 time to first byte, UI chunks per second, the server's CPU per UI chunk beside the CPU per
// chunk of the same runs read in process (the ratio is what to compare across machines), and the
// server's memory per open stream (session, run and response of a turn whose reply is held).
import { fork, type ChildProcess } from 'node:child_process';
import { setMaxListeners } from 'node:events';
import { Agent, request } from 'node:http';
import { fileURLToPath } from 'node:url';
import { defineAgent, InMemoryStateStore, InMemoryStreamManager, JSAgentExecutor, silentLogger } from '@helix-agents/sdk';
import { createScriptedModel } from '@helix-agents/sdk/testing';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { bearerAuth, createHelixApp, serve } from '@helix-agents/server';

function arg(name: string, fallback: number, max: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const value = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a positive integer`);
  return Math.min(value, max);
}

const STREAMS = arg('streams', 200, 500);
const ROUNDS = arg('rounds', 3, 10);
const CHUNKS = arg('chunks', 40, 1000);
const ROUND_TIMEOUT_MS = 60_000;
const TOKEN = 'bench-token-0123456789';

type ToChild = { type: 'hold' } | { type: 'release' } | { type: 'memory' } | { type: 'cpu' } | { type: 'in-process'; label: string };
type FromChild = { type: 'ready'; url: string } | { type: 'memory'; heapUsed: number; rss: number } | { type: 'held'; count: number } | { type: 'in-process'; wallMs: number; chunks: number; cpuMicros: number } | { type: 'cpu'; micros: number };

/** The server: one agent whose replies stream CHUNKS text deltas; `hold` makes new replies wait until `release`. */
async function child(): Promise<void> {
  let hold: { promise: Promise<void>; release: () => void } | undefined;
  let held = 0;
  const send = (message: FromChild): void => void process.send?.(message);
  const model = createScriptedModel(
    [
      async () => {
        if (hold) {
          held++;
          send({ type: 'held', count: held });
          await hold.promise;
        }
        return { textChunks: Array.from({ length: CHUNKS }, (_, i) => `word${i} `) };
      },
    ],
    { loop: true, recordCalls: false },
  );
  const runtime = new JSAgentExecutor(new InMemoryStateStore(), new InMemoryStreamManager(), new VercelAIAdapter(), { logger: silentLogger });
  const agent = defineAgent({ name: 'bench', llmConfig: { model } });
  const server = await serve(createHelixApp({ runtime, agents: [agent], auth: bearerAuth({ [TOKEN]: 'bench' }), logger: silentLogger }), { port: 0 });
  process.on('message', (message: ToChild) => {
    if (message.type === 'hold') {
      let release = (): void => {};
      const promise = new Promise<void>((resolve) => (release = resolve));
      hold = { promise, release };
      held = 0;
    } else if (message.type === 'release') {
      hold?.release();
      hold = undefined;
    } else if (message.type === 'in-process') {
      // The reference: the same turns on the same runtime, read in this process without HTTP.
      const started = performance.now();
      const cpu = process.cpuUsage();
      void Promise.all(
        Array.from({ length: STREAMS }, async (_, i) => {
          const handle = await runtime.execute(agent, 'Go.', { sessionId: `${message.label}-${i}` });
          let chunks = 0;
          for await (const chunk of handle.stream()) if (chunk) chunks++;
          return chunks;
        }),
      ).then((counts) => {
        const used = process.cpuUsage(cpu);
        send({ type: 'in-process', wallMs: performance.now() - started, chunks: counts.reduce((a, b) => a + b, 0), cpuMicros: used.user + used.system });
      });
    } else if (message.type === 'cpu') {
      const used = process.cpuUsage();
      send({ type: 'cpu', micros: used.user + used.system });
    } else {
      (globalThis as { gc?: () => void }).gc?.();
      const m = process.memoryUsage();
      send({ type: 'memory', heapUsed: m.heapUsed, rss: m.rss });
    }
  });
  process.on('disconnect', () => void server.close().finally(() => process.exit(0)));
  send({ type: 'ready', url: server.url });
}

function next<T extends FromChild['type']>(proc: ChildProcess, type: T): Promise<Extract<FromChild, { type: T }>> {
  return new Promise((resolve) => {
    const on = (message: FromChild): void => {
      if (message.type !== type) return;
      proc.off('message', on);
      resolve(message as Extract<FromChild, { type: T }>);
    };
    proc.on('message', on);
  });
}

interface StreamStats {
  readonly ttfbMs: number;
  readonly events: number;
}

const agent = new Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY });

/**
 * One chat turn: time to the first body byte, and the UI events until [DONE]. The client is node:http
 * (cheaper than fetch), so the load generator costs little next to the server.
 */
function chat(url: string, id: string, signal: AbortSignal, onFirstByte?: () => void): Promise<StreamStats> {
  const body = JSON.stringify({ id, messages: [{ id: `m-${id}`, role: 'user', parts: [{ type: 'text', text: 'Go.' }] }] });
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(`${url}/api/chat`, { method: 'POST', agent, signal, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`chat ${id}: HTTP ${res.statusCode}`));
      let ttfbMs = -1;
      let events = 0;
      let tail = '';
      res.setEncoding('utf8');
      res.on('data', (text: string) => {
        if (ttfbMs < 0) {
          ttfbMs = performance.now() - started;
          onFirstByte?.();
        }
        const all = tail + text;
        let at = 0;
        for (let end = all.indexOf('\n\n', at); end >= 0; end = all.indexOf('\n\n', at)) {
          if (all[at] !== ':') events++;
          at = end + 2;
        }
        tail = all.slice(at);
      });
      res.on('end', () => resolve({ ttfbMs, events: events - 1 }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
const percentile = (sorted: readonly number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;

interface RoundResult {
  readonly p50: number;
  readonly p99: number;
  readonly chunksPerSecond: number;
  readonly wallMs: number;
  /** The server process's CPU time per UI chunk sent. */
  readonly cpuMicrosPerChunk: number;
}

async function round(proc: ChildProcess, url: string, label: string): Promise<RoundResult> {
  proc.send({ type: 'cpu' } satisfies ToChild);
  const cpuBefore = (await next(proc, 'cpu')).micros;
  const signal = AbortSignal.timeout(ROUND_TIMEOUT_MS);
  setMaxListeners(STREAMS + 10, signal);
  const started = performance.now();
  const stats = await Promise.all(Array.from({ length: STREAMS }, (_, i) => chat(url, `${label}-${i}`, signal)));
  const wallMs = performance.now() - started;
  const ttfb = stats.map((s) => s.ttfbMs).sort((a, b) => a - b);
  const events = stats.reduce((n, s) => n + s.events, 0);
  proc.send({ type: 'cpu' } satisfies ToChild);
  const cpuMicros = (await next(proc, 'cpu')).micros - cpuBefore;
  return { p50: percentile(ttfb, 50), p99: percentile(ttfb, 99), chunksPerSecond: (events / wallMs) * 1000, wallMs, cpuMicrosPerChunk: cpuMicros / events };
}

async function main(): Promise<void> {
  const proc = fork(fileURLToPath(import.meta.url), ['--child', '--chunks', String(CHUNKS)], { execArgv: [...process.execArgv, ...(process.env['BENCH_CPU_PROF'] ? ['--cpu-prof', `--cpu-prof-dir=${process.env['BENCH_CPU_PROF']}`] : [])], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const killer = setTimeout(() => {
    console.error('bench:server: took too long, stopping');
    proc.kill('SIGKILL');
    process.exit(1);
  }, ROUND_TIMEOUT_MS * (ROUNDS + 3));
  try {
    const { url } = await next(proc, 'ready');
    console.log(`bench:server: ${STREAMS} concurrent chat streams, ${CHUNKS} text deltas each, ${ROUNDS} rounds after a warm-up (Node ${process.version})`);
    await round(proc, url, 'warmup');
    const results = [];
    const references = [];
    for (let r = 0; r < ROUNDS; r++) {
      proc.send({ type: 'in-process', label: `ref${r}` } satisfies ToChild);
      const ref = await next(proc, 'in-process');
      references.push(ref.cpuMicros / ref.chunks);
      const result = await round(proc, url, `r${r}`);
      results.push(result);
      console.log(
        `  round ${r + 1}: ttfb p50 ${result.p50.toFixed(1)} ms, p99 ${result.p99.toFixed(1)} ms, ${fmt(result.chunksPerSecond)} UI chunks/s, server CPU ${result.cpuMicrosPerChunk.toFixed(1)} µs per UI chunk; in process without HTTP ${(ref.cpuMicros / ref.chunks).toFixed(1)} µs per run chunk`,
      );
    }
    const mid = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    const median = { p50: mid(results.map((r) => r.p50)), p99: mid(results.map((r) => r.p99)), chunksPerSecond: mid(results.map((r) => r.chunksPerSecond)), cpu: mid(results.map((r) => r.cpuMicrosPerChunk)) };
    const medianRef = mid(references);

    // Memory: STREAMS streams held open (each has its first byte, its model reply waits), against the idle server.
    proc.send({ type: 'memory' } satisfies ToChild);
    const idle = await next(proc, 'memory');
    proc.send({ type: 'hold' } satisfies ToChild);
    const signal = AbortSignal.timeout(ROUND_TIMEOUT_MS);
    setMaxListeners(STREAMS + 10, signal);
    let firstBytes = 0;
    let allOpen: () => void = () => {};
    const opened = new Promise<void>((resolve) => (allOpen = resolve));
    const streams = Array.from({ length: STREAMS }, (_, i) => chat(url, `held-${i}`, signal, () => (++firstBytes === STREAMS ? allOpen() : undefined)));
    await opened;
    await new Promise((r) => setTimeout(r, 200));
    proc.send({ type: 'memory' } satisfies ToChild);
    const loaded = await next(proc, 'memory');
    proc.send({ type: 'release' } satisfies ToChild);
    await Promise.all(streams);
    const perStream = (bytes: number): string => `${(bytes / STREAMS / 1024).toFixed(1)} KiB`;
    console.log(`  median: ttfb p50 ${median.p50.toFixed(1)} ms, p99 ${median.p99.toFixed(1)} ms, ${fmt(median.chunksPerSecond)} UI chunks/s; server CPU ${median.cpu.toFixed(1)} µs per UI chunk = ${(median.cpu / medianRef).toFixed(2)}x the CPU per chunk of the same runs read in process`);
    // rss moves in pages the allocator keeps or returns, so only the heap is divided per stream.
    console.log(`  server memory per open stream (${STREAMS} open, after gc): heap ${perStream(loaded.heapUsed - idle.heapUsed)} (server rss ${(loaded.rss / 1024 / 1024).toFixed(0)} MiB with them open, ${(idle.rss / 1024 / 1024).toFixed(0)} MiB before)`);
  } finally {
    clearTimeout(killer);
    proc.disconnect();
  }
}

if (process.argv.includes('--child')) await child();
else await main();
