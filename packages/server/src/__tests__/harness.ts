// The server over real parts: JSAgentExecutor -> VercelAIAdapter -> @ai-sdk/openai (chat) -> a scripted
// OpenAI-compatible server on 127.0.0.1, and the helix app served by @hono/node-server on 127.0.0.1
// (port 0). Clients are the AI SDK's own: its chat transport, readUIMessageStream and AbstractChat.
import { createOpenAI } from '@ai-sdk/openai';
import { AbstractChat, DefaultChatTransport, readUIMessageStream, type ChatState, type ChatStatus, type UIMessage, type UIMessageChunk } from 'ai';
import { defineAgent, type AgentRuntime, InMemoryStateStore, InMemoryStreamManager, JSAgentExecutor, silentLogger, type AgentConfig, type JSAgentExecutorOptions, type StateStore, type StreamChunk, type StreamManager, type StreamReadOptions } from '@helix-agents/sdk';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { startScriptedOpenAIServer, type ScriptedOpenAIServer, type ScriptedOpenAIStep, type ScriptedOpenAIStepFunction } from '@helix-agents/llm-vercel/testing';
import { bearerAuth, createHelixApp, serve, type HelixAppOptions, type HelixServer } from '../index.js';

/** Tokens of the test users. */
export const TOKENS = { alice: 'alice-token-0123456789', bob: 'bob-token-0123456789ab' } as const;
/** The Authorization header of a test user. */
export const as = (user: keyof typeof TOKENS): Record<string, string> => ({ authorization: `Bearer ${TOKENS[user]}` });

/** A running app and what it runs on. */
export interface Harness {
  readonly url: string;
  readonly executor: JSAgentExecutor;
  readonly model: ScriptedOpenAIServer;
  readonly server: HelixServer;
  /** Builds an agent on the scripted model. */
  close(): Promise<void>;
}

/** Options of {@link startHarness}. */
export interface HarnessOptions {
  readonly script: ReadonlyArray<ScriptedOpenAIStep | ScriptedOpenAIStepFunction>;
  /** Which OpenAI API the provider speaks (default `chat`); `responses` streams reasoning. */
  readonly api?: 'chat' | 'responses';
  /** The agents, made on the scripted model (default: one plain agent named `assistant`). */
  readonly agents?: (model: AgentConfig['llmConfig']['model']) => AgentConfig<unknown, unknown>[];
  readonly app?: Partial<HelixAppOptions>;
  readonly executor?: JSAgentExecutorOptions;
  /** Wraps the executor before the app gets it (to observe what the app does with it). */
  readonly runtime?: (executor: JSAgentExecutor) => AgentRuntime;
  /** The stores (default: in memory). */
  readonly stores?: { readonly state: StateStore; readonly stream: StreamManager };
}

const open: Harness[] = [];

/** Starts the scripted model server, the executor and the app; {@link closeAll} stops them. */
export async function startHarness(options: HarnessOptions): Promise<Harness> {
  const model = await startScriptedOpenAIServer(options.script);
  const provider = createOpenAI({ baseURL: model.baseURL, apiKey: 'test-key' });
  const llm = options.api === 'responses' ? provider.responses('gpt-test') : provider.chat('gpt-test');
  const agents = options.agents?.(llm) ?? [defineAgent({ name: 'assistant', systemPrompt: 'Help.', llmConfig: { model: llm } }) as AgentConfig<unknown, unknown>];
  const executor = new JSAgentExecutor(options.stores?.state ?? new InMemoryStateStore(), options.stores?.stream ?? new InMemoryStreamManager(), new VercelAIAdapter(), { logger: silentLogger, ...options.executor });
  const app = createHelixApp({ runtime: options.runtime?.(executor) ?? executor, agents, auth: bearerAuth({ [TOKENS.alice]: 'alice', [TOKENS.bob]: 'bob' }), logger: silentLogger, ...options.app });
  const server = await serve(app, { port: 0 });
  const harness: Harness = {
    url: server.url,
    executor,
    model,
    server,
    close: async () => {
      await server.close();
      await model.close();
      await executor.close();
    },
  };
  open.push(harness);
  return harness;
}

/** Stops every harness started so far (for afterEach). */
export async function closeAll(): Promise<void> {
  for (const h of open.splice(0)) await h.close();
}

/** A session's chunks so far. */
export async function chunksOf(h: Harness, sessionId: string): Promise<StreamChunk[]> {
  const out: StreamChunk[] = [];
  for await (const c of h.executor.readStream(sessionId, { follow: false })) out.push(c);
  return out;
}

/** Polls until `check` holds (10 s at most). */
export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('waitFor: timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The executor with a count of the stream readers open at the moment. */
export function countingReaders(executor: JSAgentExecutor): { runtime: AgentRuntime; open: () => number } {
  let open = 0;
  const runtime = new Proxy(executor, {
    get(target, key) {
      if (key !== 'readStream') {
        const value = Reflect.get(target, key, target) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      }
      return (sessionId: string, options?: StreamReadOptions) =>
        (async function* () {
          open++;
          try {
            yield* target.readStream(sessionId, options);
          } finally {
            open--;
          }
        })();
    },
  });
  return { runtime, open: () => open };
}

/** A user message as useChat sends it. */
export function userMessage(text: string, id = `u-${Math.random().toString(36).slice(2, 10)}`): UIMessage {
  return { id, role: 'user', parts: [{ type: 'text', text }] };
}

/** The AI SDK's own chat transport against the app, as a user. */
export function transport(h: Harness, user: keyof typeof TOKENS): DefaultChatTransport<UIMessage> {
  return new DefaultChatTransport({ api: `${h.url}/api/chat`, headers: as(user) });
}

/** Builds the final message of a UI stream with `ai`'s readUIMessageStream (from `message` when it continues one). */
export async function finalMessage(stream: ReadableStream<UIMessageChunk>, message?: UIMessage): Promise<UIMessage | undefined> {
  let last: UIMessage | undefined;
  for await (const m of readUIMessageStream({ stream, ...(message === undefined ? {} : { message: structuredClone(message) }) })) last = m;
  return last === undefined ? undefined : structuredClone(last);
}

/** A stream of the given chunks. */
export function streamOf(chunks: readonly UIMessageChunk[]): ReadableStream<UIMessageChunk> {
  return new ReadableStream({
    start(controller) {
      for (const c of chunks) controller.enqueue(c);
      controller.close();
    },
  });
}

/** One raw SSE event. */
export interface RawEvent {
  readonly id?: string;
  readonly event?: string;
  readonly data: string;
}

/**
 * Reads a raw event stream until `limit` events came (then drops the connection) or it ends. Comments
 * (keep-alives) are skipped.
 */
export async function readEvents(response: Response, limit = Number.POSITIVE_INFINITY, abort?: AbortController): Promise<RawEvent[]> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  const events: RawEvent[] = [];
  let buffer = '';
  try {
    while (events.length < limit) {
      const { done, value } = await reader.read();
      if (done) break;
      buffer += value;
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0 && events.length < limit) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const fields: Record<string, string> = {};
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) continue;
          const colon = line.indexOf(': ');
          fields[line.slice(0, colon)] = line.slice(colon + 2);
        }
        if (fields['data'] !== undefined) events.push({ ...(fields['id'] === undefined ? {} : { id: fields['id'] }), ...(fields['event'] === undefined ? {} : { event: fields['event'] }), data: fields['data'] });
      }
    }
  } finally {
    abort?.abort();
    await reader.cancel().catch(() => undefined);
  }
  return events;
}

/** The UI chunks of raw events (without `[DONE]`). */
export function uiChunks(events: readonly RawEvent[]): UIMessageChunk[] {
  return events.filter((e) => e.data !== '[DONE]').map((e) => JSON.parse(e.data) as UIMessageChunk);
}

/** POSTs JSON as a user. */
export function post(h: Harness, path: string, body: unknown, user: keyof typeof TOKENS | undefined = 'alice', init: RequestInit = {}): Promise<Response> {
  return fetch(`${h.url}${path}`, { method: 'POST', ...init, headers: { 'content-type': 'application/json', ...(user ? as(user) : {}), ...(init.headers as Record<string, string> | undefined) }, body: typeof body === 'string' ? body : JSON.stringify(body) });
}

/** GETs as a user. */
export function get(h: Harness, path: string, user: keyof typeof TOKENS | undefined = 'alice', headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${h.url}${path}`, { headers: { ...(user ? as(user) : {}), ...headers } });
}

/** A useChat without React: the AI SDK's AbstractChat over a plain array, against the app. */
export class TestChat extends AbstractChat<UIMessage> {
  constructor({ messages, ...init }: (ConstructorParameters<typeof AbstractChat<UIMessage>>[0] extends infer O ? Omit<O & object, 'state'> : never) & { messages?: UIMessage[] }) {
    super({ ...init, state: arrayState(messages ?? []) });
  }
}

function arrayState(messages: UIMessage[]): ChatState<UIMessage> {
  const state: ChatState<UIMessage> = {
    status: 'ready' as ChatStatus,
    error: undefined,
    messages: [...messages],
    pushMessage: (m) => void state.messages.push(m),
    popMessage: () => void state.messages.pop(),
    replaceMessage: (i, m) => {
      state.messages[i] = m;
    },
    snapshot: (thing) => structuredClone(thing),
  };
  return state;
}
