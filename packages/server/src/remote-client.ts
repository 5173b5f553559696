import {
  AgentError,
  agentErrorFromInfo,
  isAgentErrorInfo,
  remoteSessionId,
  type RemoteAgentClient,
  type RemoteAgentResult,
  type RemoteCallOptions,
  type RemoteRunRef,
  type RemoteStartRequest,
  type RemoteStreamItem,
  type RemoteStreamOptions,
  type StreamChunk,
  type UsageRollup,
} from '@helix-agents/sdk';

/** Options of {@link HttpRemoteAgentClient}. */
export interface HttpRemoteAgentClientOptions {
  /** The helix server, e.g. `https://agents.example.com` (its native API is under `/api/sessions`). */
  readonly baseUrl: string;
  /** Sent as `Authorization: Bearer <token>` (the server's bearerAuth maps it to the user that owns the children). */
  readonly token?: string;
  /** Other headers for every request (e.g. a cookie or a different auth scheme). */
  readonly headers?: Readonly<Record<string, string>>;
  /** How long one wait for a result lasts on the server before the client asks again (default 30 s). */
  readonly resultWaitMs?: number;
  /** The fetch to use (default: the global one). */
  readonly fetch?: typeof fetch;
}

/**
 * A {@link RemoteAgentClient} over a helix server's native API, for `defineRemoteSubAgentTool`: the
 * child runs on the server as a session of the token's user. A start is idempotent: the child's session
 * id is derived from the idempotency key and the server answers a repeated start with the run it already
 * started (`ifExists: 'return'`), so a recovered parent gets its child back. The parent's session, call
 * and depth go to the child's run as metadata (`helix.parentSessionId`, `helix.parentToolCallId`,
 * `helix.depth`); the child's user is the server's authenticated one. Cursors are the server's stream
 * offsets. Errors the server answers are rethrown as AgentErrors with the server's AgentErrorInfo.
 */
export class HttpRemoteAgentClient implements RemoteAgentClient {
  readonly #base: string;
  readonly #headers: Readonly<Record<string, string>>;
  readonly #waitMs: number;
  readonly #fetch: typeof fetch;
  readonly #starting = new Map<string, Promise<RemoteRunRef>>();

  constructor(options: HttpRemoteAgentClientOptions) {
    const url = new URL(options.baseUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new AgentError('config_invalid', `HttpRemoteAgentClient needs an http(s) baseUrl, got ${url.protocol}.`);
    this.#base = url.href.replace(/\/+$/, '');
    this.#headers = { ...options.headers, ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }) };
    this.#waitMs = options.resultWaitMs ?? 30_000;
    this.#fetch = options.fetch ?? fetch;
  }

  start(request: RemoteStartRequest, options: RemoteCallOptions = {}): Promise<RemoteRunRef> {
    // Two starts with one key at once share the first request.
    const key = request.idempotencyKey;
    let pending = this.#starting.get(key);
    if (!pending) {
      pending = this.#start(request, options).finally(() => this.#starting.delete(key));
      this.#starting.set(key, pending);
    }
    return pending;
  }

  async #start(request: RemoteStartRequest, options: RemoteCallOptions): Promise<RemoteRunRef> {
    const metadata: Record<string, string> = {
      ...Object.fromEntries(Object.entries(request.metadata ?? {}).map(([k, v]) => [k.slice(0, 100), v.slice(0, 1000)])),
      'helix.parentSessionId': request.parentSessionId.slice(0, 1000),
      'helix.parentToolCallId': request.parentToolCallId.slice(0, 1000),
      'helix.depth': String(request.depth),
    };
    const body = {
      agent: request.agentType,
      input: request.input,
      sessionId: remoteSessionId(request.idempotencyKey),
      ifExists: 'return',
      metadata,
      ...(request.tags === undefined ? {} : { tags: request.tags.slice(0, 20).map((t) => t.slice(0, 100)) }),
    };
    const answer = (await this.#json('POST', '/api/sessions', body, options.signal)) as { sessionId?: unknown; runId?: unknown };
    if (typeof answer.sessionId !== 'string' || typeof answer.runId !== 'string') throw new AgentError('subagent_remote_invalid', 'The server answered a start without a session and run id.');
    return { sessionId: answer.sessionId, runId: answer.runId };
  }

  async *stream(ref: RemoteRunRef, options: RemoteStreamOptions = {}): AsyncIterable<RemoteStreamItem> {
    const after = options.after;
    if (after !== undefined && !/^\d{1,15}$/.test(after)) throw new AgentError('run_invalid_input', "This client's cursors are stream offsets; the cursor given is not one.");
    const query = new URLSearchParams({ run: ref.runId, from: after === undefined ? '0' : String(Number(after) + 1) });
    const response = await this.#request('GET', `${sessionPath(ref)}/stream?${query.toString()}`, undefined, options.signal);
    if (!response.body) return;
    for await (const event of sseEvents(response.body, options.signal)) {
      if (event.event === 'done') return;
      if (event.event !== undefined || event.id === undefined) continue;
      const chunk = JSON.parse(event.data) as StreamChunk;
      yield { chunk, cursor: event.id };
    }
  }

  async result(ref: RemoteRunRef, options: RemoteCallOptions = {}): Promise<RemoteAgentResult> {
    for (;;) {
      options.signal?.throwIfAborted();
      const view = (await this.#json('GET', `${sessionPath(ref)}/runs/${encodeURIComponent(ref.runId)}/result?waitMs=${this.#waitMs}`, undefined, options.signal)) as {
        status?: unknown;
        output?: unknown;
        error?: unknown;
        usage?: unknown;
      };
      if (view.status === 'running') continue;
      if (typeof view.status !== 'string') throw new AgentError('subagent_remote_invalid', 'The server answered a result without a status.');
      return {
        status: view.status as RemoteAgentResult['status'],
        ...(view.output === undefined ? {} : { output: view.output }),
        ...(isAgentErrorInfo(view.error) ? { error: view.error } : {}),
        ...(view.usage === undefined ? {} : { usage: view.usage as UsageRollup }),
      };
    }
  }

  async stop(ref: RemoteRunRef, reason?: string): Promise<void> {
    await this.#json('POST', `${sessionPath(ref)}/stop`, reason === undefined ? {} : { reason: reason.slice(0, 1000) });
  }

  async #json(method: 'GET' | 'POST', path: string, body?: unknown, signal?: AbortSignal): Promise<unknown> {
    const response = await this.#request(method, path, body, signal);
    return response.json() as Promise<unknown>;
  }

  async #request(method: 'GET' | 'POST', path: string, body: unknown, signal: AbortSignal | undefined): Promise<Response> {
    const response = await this.#fetch(`${this.#base}${path}`, {
      method,
      headers: { ...this.#headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      ...(signal === undefined ? {} : { signal }),
    });
    if (response.ok) return response;
    const text = await response.text().catch(() => '');
    let info: unknown;
    try {
      info = JSON.parse(text);
    } catch {
      info = undefined;
    }
    if (isAgentErrorInfo(info)) throw agentErrorFromInfo(info);
    throw new AgentError('subagent_remote_error', `The helix server answered ${method} ${path.split('?')[0]} with HTTP ${response.status}.`, { retryable: response.status >= 500, details: { status: response.status } });
  }
}

function sessionPath(ref: RemoteRunRef): string {
  return `/api/sessions/${encodeURIComponent(ref.sessionId)}`;
}

/** The events of an SSE body (comments skipped), until it ends or `signal` aborts. */
async function* sseEvents(body: ReadableStream<Uint8Array>, signal: AbortSignal | undefined): AsyncGenerator<{ id?: string; event?: string; data: string }> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  const onAbort = (): void => void reader.cancel().catch(() => undefined);
  signal?.addEventListener('abort', onAbort, { once: true });
  let buffer = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += value;
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event: { id?: string; event?: string; data?: string } = {};
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) continue;
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'id') event.id = value;
          else if (field === 'event') event.event = value;
          else if (field === 'data') event.data = event.data === undefined ? value : `${event.data}\n${value}`;
        }
        if (event.data !== undefined) yield { ...(event.id === undefined ? {} : { id: event.id }), ...(event.event === undefined ? {} : { event: event.event }), data: event.data };
      }
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
    await reader.cancel().catch(() => undefined);
  }
}
