import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

/** An OTLP attribute value (OTLP/HTTP JSON encoding). */
interface AnyValue {
  readonly stringValue?: string;
  readonly boolValue?: boolean;
  readonly intValue?: number | string;
  readonly doubleValue?: number;
  readonly arrayValue?: { readonly values?: readonly AnyValue[] };
}

interface OtlpSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId?: string;
  readonly name: string;
  readonly kind: number;
  readonly startTimeUnixNano: string | number;
  readonly endTimeUnixNano: string | number;
  readonly attributes?: readonly { readonly key: string; readonly value: AnyValue }[];
  readonly status?: { readonly code?: number; readonly message?: string };
}

interface OtlpRequest {
  readonly resourceSpans?: readonly {
    readonly resource?: { readonly attributes?: readonly { readonly key: string; readonly value: AnyValue }[] };
    readonly scopeSpans?: readonly { readonly scope?: { readonly name?: string }; readonly spans?: readonly OtlpSpan[] }[];
  }[];
}

/** A span as the sink decoded it. */
export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string | undefined;
  readonly name: string;
  readonly scope: string | undefined;
  readonly attributes: Readonly<Record<string, unknown>>;
  readonly statusCode: number;
  readonly durationMs: number;
}

/** One HTTP request the sink received. */
export interface ReceivedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly contentType: string | undefined;
}

function decodeValue(value: AnyValue): unknown {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(decodeValue);
  return undefined;
}

const nanos = (t: string | number): number => Number(BigInt(t) / 1000n) / 1000;

/**
 * A local OTLP/HTTP endpoint on 127.0.0.1 that records what an exporter sends. Langfuse's span
 * processor uses the OTLP HTTP exporter, which sends JSON (`application/json`); the sink also accepts
 * gzip, and fails loudly on protobuf so a change of encoding cannot go unnoticed.
 */
export async function startOtlpSink() {
  const requests: ReceivedRequest[] = [];
  const spans: ReceivedSpan[] = [];
  const errors: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const contentType = req.headers['content-type'];
      requests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, contentType });
      try {
        let body = Buffer.concat(chunks);
        if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
        if (!contentType?.startsWith('application/json')) throw new Error(`unexpected content type ${String(contentType)}`);
        const payload = JSON.parse(body.toString('utf8')) as OtlpRequest;
        for (const resource of payload.resourceSpans ?? []) {
          for (const scopeSpans of resource.scopeSpans ?? []) {
            for (const span of scopeSpans.spans ?? []) {
              const attributes: Record<string, unknown> = {};
              for (const { key, value } of span.attributes ?? []) attributes[key] = decodeValue(value);
              spans.push({
                traceId: span.traceId,
                spanId: span.spanId,
                parentSpanId: span.parentSpanId === undefined || span.parentSpanId === '' ? undefined : span.parentSpanId,
                name: span.name,
                scope: scopeSpans.scope?.name,
                attributes,
                statusCode: span.status?.code ?? 0,
                durationMs: nanos(span.endTimeUnixNano) - nanos(span.startTimeUnixNano),
              });
            }
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{}');
      } catch (error) {
        errors.push(error instanceof Error ? error.message : String(error));
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end('{}');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    spans,
    errors,
    close: () => new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve()))),
  };
}

/** The spans of one trace, and lookups by name and observation type. */
export function traceOf(spans: readonly ReceivedSpan[], traceId: string) {
  const inTrace = spans.filter((s) => s.traceId === traceId);
  return {
    spans: inTrace,
    byType: (type: string) => inTrace.filter((s) => s.attributes['langfuse.observation.type'] === type),
    named: (name: string) => inTrace.filter((s) => s.name === name),
    childrenOf: (span: ReceivedSpan) => inTrace.filter((s) => s.parentSpanId === span.spanId),
  };
}

/** Parses a JSON attribute (Langfuse sends input, output and usage as JSON strings). */
export function json(value: unknown): unknown {
  if (typeof value !== 'string') throw new Error(`expected a JSON string attribute, got ${typeof value}`);
  return JSON.parse(value);
}
