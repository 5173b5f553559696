import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Token counts a scripted reply reports, sent in OpenAI's `usage` shape. */
export interface ScriptedOpenAIUsage {
  readonly inputTokens?: number;
  readonly outputTokens?: number;
  /** Sent as `prompt_tokens_details.cached_tokens`. */
  readonly cachedInputTokens?: number;
  /** Sent as `prompt_tokens_details.cache_write_tokens`. */
  readonly cacheWriteTokens?: number;
  /** Sent as `completion_tokens_details.reasoning_tokens`. */
  readonly reasoningTokens?: number;
}

/** One scripted answer of the server to `POST /v1/chat/completions`. */
export interface ScriptedOpenAIStep {
  /** The reply text; streamed in a few chunks unless `textChunks` is given. */
  readonly text?: string;
  /** The reply text as exact stream chunks. */
  readonly textChunks?: readonly string[];
  /**
   * Reasoning summary deltas, sent before the text as one reasoning item (Responses API only,
   * `POST /v1/responses`: Chat Completions has no reasoning stream in the OpenAI provider).
   */
  readonly reasoningChunks?: readonly string[];
  /** Tool calls; when streamed, each call's arguments are split over several chunks. */
  readonly toolCalls?: ReadonlyArray<{ readonly name: string; readonly args: unknown; readonly id?: string }>;
  /** Defaults to 10 prompt and 5 completion tokens. */
  readonly usage?: ScriptedOpenAIUsage;
  /** OpenAI's raw finish_reason; defaults to `tool_calls` or `stop`. */
  readonly finishReason?: string;
  /** The `model` the reply reports; defaults to the requested one. */
  readonly model?: string;
  /** An HTTP status >= 400 answers with an OpenAI-style error body. */
  readonly status?: number;
  /** The error body to send instead of the default `{ error: { message, type, param, code } }`. */
  readonly errorBody?: unknown;
  /** Extra response headers, e.g. `{ 'retry-after': '2' }`. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Wait before answering. */
  readonly delayMs?: number;
}

/** The JSON body of a Chat Completions request, as recorded by the server. */
export interface OpenAIChatRequestBody {
  readonly model: string;
  readonly messages: ReadonlyArray<Readonly<Record<string, unknown>>>;
  readonly stream?: boolean;
  readonly stream_options?: { readonly include_usage?: boolean };
  readonly tools?: ReadonlyArray<Readonly<Record<string, unknown>>>;
  readonly [key: string]: unknown;
}

/** A step computed from the request body (and its index), to answer based on the prompt. */
export type ScriptedOpenAIStepFunction = (body: OpenAIChatRequestBody, index: number) => ScriptedOpenAIStep;

/** A running scripted OpenAI-compatible server. */
export interface ScriptedOpenAIServer {
  /** `http://127.0.0.1:PORT`. */
  readonly url: string;
  /** `http://127.0.0.1:PORT/v1`, the `baseURL` for `createOpenAI`. */
  readonly baseURL: string;
  /** The JSON body of every chat completions request, in arrival order. */
  readonly requests: OpenAIChatRequestBody[];
  /** Stops the server and closes every open connection (keep-alive ones included). */
  close(): Promise<void>;
}

const ERROR_TEXT: Readonly<Record<number, { readonly message: string; readonly type: string; readonly code: string | null }>> = {
  400: { message: 'Invalid request.', type: 'invalid_request_error', code: null },
  401: { message: 'Incorrect API key provided: test. You can find your API key at https://platform.openai.com/account/api-keys.', type: 'invalid_request_error', code: 'invalid_api_key' },
  403: { message: 'You are not allowed to sample from this model.', type: 'invalid_request_error', code: null },
  404: { message: 'The model does not exist or you do not have access to it.', type: 'invalid_request_error', code: 'model_not_found' },
  429: { message: 'Rate limit reached for requests. Please try again later.', type: 'requests', code: 'rate_limit_exceeded' },
  500: { message: 'The server had an error while processing your request. Sorry about that!', type: 'server_error', code: null },
  503: { message: 'The engine is currently overloaded, please try again later.', type: 'server_error', code: null },
};


function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

function sendJson(response: ServerResponse, status: number, body: unknown, headers: Readonly<Record<string, string>> = {}): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}

// Splits text into pieces so the client has to reassemble it, as it must with a real stream.
function split(text: string, pieces: number): string[] {
  if (text.length <= 1) return [text];
  const size = Math.max(1, Math.ceil(text.length / pieces));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

function usageBody(usage: ScriptedOpenAIUsage | undefined): Record<string, unknown> {
  const prompt = usage?.inputTokens ?? 10;
  const completion = usage?.outputTokens ?? 5;
  const body: Record<string, unknown> = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  if (usage?.cachedInputTokens !== undefined || usage?.cacheWriteTokens !== undefined) {
    body['prompt_tokens_details'] = {
      cached_tokens: usage.cachedInputTokens ?? 0,
      ...(usage.cacheWriteTokens === undefined ? {} : { cache_write_tokens: usage.cacheWriteTokens }),
    };
  }
  if (usage?.reasoningTokens !== undefined) body['completion_tokens_details'] = { reasoning_tokens: usage.reasoningTokens };
  return body;
}

function answer(response: ServerResponse, body: OpenAIChatRequestBody, step: ScriptedOpenAIStep, index: number): void {
  const headers = step.headers ?? {};
  if (step.status !== undefined && step.status >= 400) {
    const known = ERROR_TEXT[step.status] ?? { message: `Request failed with status ${step.status}.`, type: 'server_error', code: null };
    sendJson(response, step.status, step.errorBody ?? { error: { ...known, param: null } }, headers);
    return;
  }
  const id = `chatcmpl-scripted-${index}`;
  const created = 1_700_000_000 + index;
  const model = step.model ?? body.model;
  const toolCalls = (step.toolCalls ?? []).map((call, i) => ({ id: call.id ?? `call_${index}_${i}`, name: call.name, arguments: JSON.stringify(call.args ?? {}) }));
  const finishReason = step.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop');
  const text = step.textChunks?.join('') ?? step.text;

  if (body.stream !== true) {
    sendJson(
      response,
      step.status ?? 200,
      {
        id,
        object: 'chat.completion',
        created,
        model,
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: text ?? null,
              refusal: null,
              ...(toolCalls.length === 0
                ? {}
                : { tool_calls: toolCalls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } })) }),
            },
            logprobs: null,
            finish_reason: finishReason,
          },
        ],
        usage: usageBody(step.usage),
        system_fingerprint: 'fp_scripted',
      },
      headers,
    );
    return;
  }

  response.writeHead(step.status ?? 200, { ...headers, 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}): void => {
    response.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, system_fingerprint: 'fp_scripted', choices, ...extra })}\n\n`);
  };
  const delta = (value: Record<string, unknown>, finish: string | null = null): void => {
    chunk([{ index: 0, delta: value, logprobs: null, finish_reason: finish }]);
  };
  // OpenAI opens a text reply with an empty content delta and a tool-call reply with null content.
  delta({ role: 'assistant', content: text === undefined ? null : '', refusal: null });
  if (text !== undefined && text !== '') for (const piece of step.textChunks ?? split(text, 3)) delta({ content: piece });
  toolCalls.forEach((call, i) => {
    delta({ tool_calls: [{ index: i, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] });
    for (const piece of split(call.arguments, 3)) delta({ tool_calls: [{ index: i, function: { arguments: piece } }] });
  });
  delta({}, finishReason);
  if (body.stream_options?.include_usage === true) chunk([], { usage: usageBody(step.usage) });
  response.end('data: [DONE]\n\n');
}

// The Responses API, streamed, for what the provider reads from it here: reasoning summaries and text.
function answerResponses(response: ServerResponse, body: OpenAIChatRequestBody, step: ScriptedOpenAIStep, index: number): void {
  if (body.stream !== true || (step.toolCalls ?? []).length > 0 || (step.status !== undefined && step.status >= 400)) {
    sendJson(response, 400, { error: { message: 'The scripted /v1/responses streams reasoning and text only.', type: 'invalid_request_error', param: null, code: null } });
    return;
  }
  response.writeHead(200, { ...step.headers, 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  let sequence = 0;
  const event = (type: string, fields: Record<string, unknown>): void => {
    response.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...fields })}\n\n`);
  };
  event('response.created', { response: { id: `resp_scripted_${index}`, created_at: 1_700_000_000 + index, model: step.model ?? body.model, status: 'in_progress' } });
  let output = 0;
  const thoughts = step.reasoningChunks ?? [];
  if (thoughts.length > 0) {
    const item = { type: 'reasoning', id: `rs_${index}`, encrypted_content: null };
    event('response.output_item.added', { output_index: output, item });
    event('response.reasoning_summary_part.added', { item_id: item.id, output_index: output, summary_index: 0, part: { type: 'summary_text', text: '' } });
    for (const delta of thoughts) event('response.reasoning_summary_text.delta', { item_id: item.id, output_index: output, summary_index: 0, delta });
    event('response.reasoning_summary_part.done', { item_id: item.id, output_index: output, summary_index: 0, part: { type: 'summary_text', text: thoughts.join('') } });
    event('response.output_item.done', { output_index: output++, item });
  }
  const text = step.textChunks?.join('') ?? step.text ?? '';
  if (text !== '') {
    const item = { type: 'message', id: `msg_${index}`, role: 'assistant', status: 'in_progress', content: [] };
    event('response.output_item.added', { output_index: output, item });
    for (const delta of step.textChunks ?? split(text, 3)) event('response.output_text.delta', { item_id: item.id, output_index: output, content_index: 0, delta, logprobs: [] });
    event('response.output_item.done', { output_index: output, item: { ...item, status: 'completed' } });
  }
  const u = step.usage;
  const usage = {
    input_tokens: u?.inputTokens ?? 10,
    input_tokens_details: { cached_tokens: u?.cachedInputTokens ?? 0 },
    output_tokens: u?.outputTokens ?? 5,
    output_tokens_details: { reasoning_tokens: u?.reasoningTokens ?? 0 },
  };
  event('response.completed', { response: { id: `resp_scripted_${index}`, status: 'completed', usage } });
  response.end();
}

/**
 * Starts a real HTTP server on 127.0.0.1 (a free port) that speaks the OpenAI Chat Completions API
 * (`POST /v1/chat/completions`, streaming and not), and the streamed Responses API for reasoning and
 * text (`POST /v1/responses`, its request bodies recorded in `requests` too), and answers each request with the next step of
 * `script`, so a real AI SDK provider can be tested over the wire.
 */
export async function startScriptedOpenAIServer(
  script: ReadonlyArray<ScriptedOpenAIStep | ScriptedOpenAIStepFunction>,
): Promise<ScriptedOpenAIServer> {
  const requests: OpenAIChatRequestBody[] = [];
  // Pending delays end with the server, so close() never leaves a timer holding the process open.
  const timers = new Set<NodeJS.Timeout>();
  const sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, ms);
      timers.add(timer);
    });
  const server = createServer((request, response) => {
    void (async () => {
      const route = request.url?.split('?')[0];
      if (request.method !== 'POST' || (route !== '/v1/chat/completions' && route !== '/v1/responses')) {
        sendJson(response, 404, { error: { message: `Unknown route ${request.method} ${request.url}.`, type: 'invalid_request_error', param: null, code: null } });
        return;
      }
      let body: OpenAIChatRequestBody;
      try {
        body = JSON.parse(await readBody(request)) as OpenAIChatRequestBody;
      } catch {
        sendJson(response, 400, { error: { message: 'The request body is not valid JSON.', type: 'invalid_request_error', param: null, code: null } });
        return;
      }
      const index = requests.length;
      requests.push(body);
      const entry = script[index];
      if (entry === undefined) {
        // A clear answer rather than a hang: the test sees why its request failed.
        sendJson(response, 500, {
          error: { message: `startScriptedOpenAIServer: request ${index + 1} has no scripted step (${script.length} scripted).`, type: 'script_exhausted', param: null, code: null },
        });
        return;
      }
      const step = typeof entry === 'function' ? entry(body, index) : entry;
      if (step.delayMs !== undefined && step.delayMs > 0) await sleep(step.delayMs);
      if (response.destroyed) return;
      if (route === '/v1/responses') answerResponses(response, body, step, index);
      else answer(response, body, step, index);
    })().catch((error: unknown) => {
      if (!response.headersSent) sendJson(response, 500, { error: { message: String(error), type: 'server_error', param: null, code: null } });
      else response.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  let closing: Promise<void> | undefined;
  return {
    url,
    baseURL: `${url}/v1`,
    requests,
    close: () => {
      // Idempotent, so a test may close early and an afterEach may close again.
      closing ??= new Promise<void>((resolve, reject) => {
        for (const timer of timers) clearTimeout(timer);
        timers.clear();
        server.close((error) => (error === undefined ? resolve() : reject(error)));
        // close() waits for idle keep-alive sockets; end them so the test process can exit.
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
