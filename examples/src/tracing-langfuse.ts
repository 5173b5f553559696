// The tracing example: createLangfuseHooks on the research
// agent. With LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY set (and LANGFUSE_BASE_URL for a self-hosted or
// US instance) the trace goes to Langfuse; without them it goes to a local stand-in on 127.0.0.1 that
// prints what Langfuse would have received.
// Run: node --conditions=helix-source --import tsx examples/src/tracing-langfuse.ts
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { defineAgent, InMemoryStateStore, InMemoryStreamManager, JSAgentExecutor, type AgentResult } from '@helix-agents/sdk';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { createLangfuseHooks } from '@helix-agents/tracing-langfuse';
import { exampleModel } from './model.js';
import { OutputSchema, researchScript, searchTool, StateSchema, type Output, type State } from './research-agent.js';

/** An observation as the local stand-in received it. */
export interface ReceivedObservation {
  readonly name: string;
  readonly type: string;
  readonly traceId: string;
  readonly parentSpanId: string | undefined;
  /** Start time, ns since the epoch (as OTLP sends it). */
  readonly start: bigint;
  readonly attributes: Readonly<Record<string, unknown>>;
}

/** Runs the spec's Langfuse example; `env` picks the model (model.ts) and where the trace goes. */
export async function runLangfuseExample(
  write: (text: string) => void = (t) => process.stdout.write(t),
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ result: AgentResult<State, Output>; received: readonly ReceivedObservation[] }> {
  const { model, description } = exampleModel(researchScript, env);
  const toLangfuse = Boolean(env['LANGFUSE_PUBLIC_KEY'] && env['LANGFUSE_SECRET_KEY']);
  const standIn = toLangfuse ? undefined : await startStandIn();

  // As in the spec; keys and URL come from LANGFUSE_PUBLIC_KEY / LANGFUSE_SECRET_KEY / LANGFUSE_BASE_URL.
  const { hooks, flush, shutdown } = createLangfuseHooks({
    release: '1.0.0',
    defaultTags: ['production'],
    ...(standIn ? { publicKey: 'pk-lf-local', secretKey: 'sk-lf-local', baseUrl: standIn.url } : {}),
  });

  const agent = defineAgent({
    name: 'my-agent',
    systemPrompt: 'You are a research assistant. Use search to find information.',
    stateSchema: StateSchema,
    outputSchema: OutputSchema,
    llmConfig: { model },
    tools: [searchTool],
    hooks, // Automatically traces all execution
  });
  const executor = new JSAgentExecutor(new InMemoryStateStore(), new InMemoryStreamManager(), new VercelAIAdapter());
  write(`model: ${description}\n`);

  // Execute with metadata for attribution
  const handle = await executor.execute(agent, 'Research quantum computing', {
    userId: 'user-123',
    sessionId: 'conversation-456',
    tags: ['premium'],
    metadata: { feature: 'chat' },
  });
  const result = await handle.result();

  // Flush in serverless environments (a long-lived server calls shutdown() once, when it stops).
  await flush();
  await shutdown();

  if (!standIn) {
    write(`run ${result.status}; trace sent to ${env['LANGFUSE_BASE_URL'] ?? 'https://cloud.langfuse.com'} (session conversation-456)\n`);
    return { result, received: [] };
  }
  await standIn.close();
  const received = standIn.received;
  write(`run ${result.status}; what Langfuse would receive (${standIn.requests} OTLP/HTTP request(s) to /api/public/otel/v1/traces):\n`);
  const root = received.find((o) => o.parentSpanId === undefined);
  if (root) {
    const a = root.attributes;
    write(`trace "${String(a['langfuse.trace.name'])}" user=${String(a['user.id'])} session=${String(a['session.id'])} tags=${JSON.stringify(a['langfuse.trace.tags'])} release=${String(a['langfuse.release'])}\n`);
  }
  // Children in the order they started, as Langfuse's timeline shows them.
  for (const o of [...received].sort((x, y) => (x.parentSpanId === undefined ? -1 : y.parentSpanId === undefined ? 1 : x.start < y.start ? -1 : 1))) {
    const usage = o.attributes['langfuse.observation.usage_details'];
    write(`  ${o.type.padEnd(10)} ${o.name}${typeof usage === 'string' ? `  usage=${usage}` : ''}\n`);
  }
  return { result, received };
}

/** A local OTLP/HTTP endpoint standing in for Langfuse: it decodes the JSON the exporter sends. */
async function startStandIn() {
  const received: ReceivedObservation[] = [];
  let requests = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests++;
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans?: {
          scopeSpans?: {
            spans?: { name: string; traceId: string; parentSpanId?: string; startTimeUnixNano: string | number; attributes?: { key: string; value: Record<string, unknown> }[] }[];
          }[];
        }[];
      };
      for (const span of (body.resourceSpans ?? []).flatMap((r) => r.scopeSpans ?? []).flatMap((s) => s.spans ?? [])) {
        const attributes: Record<string, unknown> = {};
        for (const { key, value } of span.attributes ?? []) {
          const v = value['arrayValue'] as { values?: Record<string, unknown>[] } | undefined;
          attributes[key] = v ? (v.values ?? []).map((x) => Object.values(x)[0]) : Object.values(value)[0];
        }
        received.push({
          name: span.name,
          type: String(attributes['langfuse.observation.type'] ?? 'span'),
          traceId: span.traceId,
          parentSpanId: span.parentSpanId ? span.parentSpanId : undefined,
          start: BigInt(span.startTimeUnixNano),
          attributes,
        });
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    get requests() {
      return requests;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { result } = await runLangfuseExample();
  process.exitCode = result.status === 'completed' ? 0 : 1;
}
