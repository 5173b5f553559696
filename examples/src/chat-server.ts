// A chat server for the AI SDK's useChat: one agent with a tool and a tool that needs a person's
// approval, durable sessions on SQLite (ownership too, so a restart keeps who owns what), bearer-token
// auth, and CORS for a local web app.
//   npm run example:chat-server        # prints the URL and a token; see docs/server.md for the React client
//   HELIX_TOKEN=... HELIX_CORS_ORIGIN=http://localhost:5173 PORT=3000 npm run example:chat-server
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { defineAgent, defineTool, JSAgentExecutor } from '@helix-agents/sdk';
import type { ScriptedStep } from '@helix-agents/sdk/testing';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { openSqliteStores, SqliteKVStore } from '@helix-agents/store-sqlite';
import { bearerAuth, createHelixApp, KVSessionOwners, serve, type HelixServer } from '@helix-agents/server';
import { exampleModel } from './model.js';

const weather = defineTool({
  name: 'get_weather',
  description: 'The weather in a city',
  inputSchema: z.object({ city: z.string() }),
  execute: ({ city }) => ({ city, forecast: 'sunny', celsius: 21 }),
});

const sendEmail = defineTool({
  name: 'send_email',
  description: 'Sends an email (a person approves it first)',
  inputSchema: z.object({ to: z.string(), subject: z.string() }),
  needsApproval: true,
  execute: ({ to, subject }) => ({ sent: true, to, subject }),
});

// What the scripted model answers (without OPENAI_API_KEY): it reads the last message of the prompt.
const lastText = (prompt: readonly { role: string; content: unknown }[]): { role: string; text: string } => {
  const last = prompt[prompt.length - 1];
  const parts = Array.isArray(last?.content) ? (last.content as { type: string; text?: string; output?: { value?: unknown } }[]) : [];
  return { role: last?.role ?? '', text: parts.map((p) => p.text ?? JSON.stringify(p.output?.value ?? null)).join(' ') };
};
const script: ScriptedStep[] = [
  (options) => {
    const { role, text } = lastText(options.prompt);
    if (role === 'tool') return { textChunks: ['Done: ', text, '.'] };
    if (/mail/i.test(text)) return { text: 'I will send it once you approve.', toolCalls: [{ name: 'send_email', args: { to: 'team@example.com', subject: text.slice(0, 60) } }] };
    if (/weather/i.test(text)) return { toolCalls: [{ name: 'get_weather', args: { city: 'Lisbon' } }] };
    return { textChunks: ['You said: ', text, '. Ask me about the weather, or to send an email.'] };
  },
];

/** Options of {@link startChatServer}. */
export interface ChatServerOptions {
  /** 0 picks a free port (default: $PORT or 3000). */
  readonly port?: number;
  /** The SQLite file (default $HELIX_DB or `.helix/chat.db`). */
  readonly dbPath?: string;
  /** The bearer token of the one user, `demo` (default $HELIX_TOKEN, else a random one). */
  readonly token?: string;
  /** A web app's origin allowed to call the server (default $HELIX_CORS_ORIGIN; none: same origin only). */
  readonly corsOrigin?: string;
  readonly env?: NodeJS.ProcessEnv;
}

/** A running chat server: its URL, the token to send, and how to stop it. */
export interface ChatServer {
  readonly url: string;
  readonly token: string;
  readonly modelDescription: string;
  close(): Promise<void>;
}

/** Starts the chat server: useChat talks to `${url}/api/chat` with `Authorization: Bearer ${token}`. */
export async function startChatServer(options: ChatServerOptions = {}): Promise<ChatServer> {
  const env = options.env ?? process.env;
  const dbPath = options.dbPath ?? env['HELIX_DB'] ?? '.helix/chat.db';
  if (dbPath !== ':memory:') mkdirSync(dirname(dbPath), { recursive: true });
  const stores = openSqliteStores({ path: dbPath });
  const { model, description } = exampleModel(script, env, { loop: true, recordCalls: false });
  const agent = defineAgent({ name: 'assistant', systemPrompt: 'You are a helpful assistant. Use the tools when they help.', llmConfig: { model }, tools: [weather, sendEmail] });
  const runtime = new JSAgentExecutor(stores.stateStore, stores.streamManager, new VercelAIAdapter());
  const token = options.token ?? env['HELIX_TOKEN'] ?? randomBytes(18).toString('base64url');
  const corsOrigin = options.corsOrigin ?? env['HELIX_CORS_ORIGIN'];
  const app = createHelixApp({
    runtime,
    agents: [agent],
    auth: bearerAuth({ [token]: 'demo' }),
    owners: new KVSessionOwners(new SqliteKVStore(stores.database)),
    usageStore: stores.usageStore,
    ...(corsOrigin ? { cors: { origins: [corsOrigin] } } : {}),
  });
  // Runs a previous process left running continue here.
  await runtime.recover({ agents: [agent] });
  const server: HelixServer = await serve(app, { port: options.port ?? Number(env['PORT'] ?? 3000) });
  return {
    url: server.url,
    token,
    modelDescription: description,
    close: async () => {
      await server.close();
      await runtime.close();
      stores.close();
    },
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const server = await startChatServer();
  console.log(`helix chat server on ${server.url} (model: ${server.modelDescription})`);
  console.log(`token: ${server.token}`);
  console.log(`try:   curl -N ${server.url}/api/chat -H 'authorization: Bearer ${server.token}' -H 'content-type: application/json' \\`);
  console.log(`         -d '{"id":"chat-1","messages":[{"id":"m1","role":"user","parts":[{"type":"text","text":"What is the weather?"}]}]}'`);
  const stop = (): void => void server.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
