// Which model `helix run` uses (issue 15, items 4 and 5): the agent's own by default; --model scripted or
// --model openai override it; an OpenAI-compatible server needs a base URL and no key.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './cli.js';

const OWN = fileURLToPath(new URL('../test-fixtures/own-model', import.meta.url));
// Inside the package, so the copied projects resolve @helix-agents/* as the fixtures do.
const root = mkdtempSync(fileURLToPath(new URL('../.test-tmp-', import.meta.url)));

function io(env: NodeJS.ProcessEnv = {}) {
  const out: string[] = [];
  const err: string[] = [];
  return {
    stdout: () => out.join(''),
    stderr: () => err.join(''),
    io: { stdout: { write: (t: string) => void out.push(t) }, stderr: { write: (t: string) => void err.push(t) }, env },
  };
}

/** A minimal OpenAI-compatible server: the chat completions API only (streamed), as llama.cpp or vLLM serve it. */
interface Seen {
  readonly path: string;
  readonly authorization: string | undefined;
  readonly model: string;
}
const seen: Seen[] = [];
let server: Server;
let baseURL: string;

async function body(request: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of request) text += String(chunk);
  return text;
}

beforeAll(async () => {
  server = createServer((request, response) => {
    void body(request).then((text) => {
      if (request.method !== 'POST' || request.url !== '/v1/chat/completions') {
        response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: `no route ${request.url}` }));
        return;
      }
      const parsed = JSON.parse(text) as { model: string };
      seen.push({ path: request.url, authorization: request.headers.authorization, model: parsed.model });
      const chunk = (delta: object, finish: string | null, usage?: object): string =>
        `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 0, model: parsed.model, choices: [{ index: 0, delta, finish_reason: finish }], ...(usage ? { usage } : {}) })}\n\n`;
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(chunk({ role: 'assistant', content: 'Hello from the ' }, null));
      response.write(chunk({ content: 'local server.' }, null));
      response.write(chunk({}, 'stop', { prompt_tokens: 7, completion_tokens: 5, total_tokens: 12 }));
      response.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(root, { recursive: true, force: true });
});

const run = (args: readonly string[], env: NodeJS.ProcessEnv = {}) => {
  const r = io(env);
  // A copy of the project per run: its store (.helix/) is written next to it.
  const dir = join(mkdtempSync(join(root, 'project-')), 'own-model');
  cpSync(OWN, dir, { recursive: true });
  return { r, done: runCli(['run', '--dir', dir, '--plain', '--message', 'hi there', ...args], r.io) };
};

describe('helix run: the model', () => {
  it("uses the agent's own model by default, with or without OPENAI_API_KEY", async () => {
    for (const env of [{}, { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' }]) {
      const { r, done } = run([], { ...env, HOME: root });
      expect(await done, r.stderr()).toBe(0);
      expect(r.stdout()).toContain('The agent’s own model speaking.');
      expect(r.stderr()).toContain("on the agent's own model (scripted own-model, from agents/own.ts)");
    }
    const agent = run(['--model', 'agent']);
    expect(await agent.done).toBe(0);
    expect(agent.r.stdout()).toContain('The agent’s own model speaking.');
  });

  it('--model scripted plays the script file instead', async () => {
    const { r, done } = run(['--model', 'scripted']);
    expect(await done, r.stderr()).toBe(0);
    expect(r.stdout()).toContain('The script file speaking: hi there');
    expect(r.stdout()).not.toContain('own model');
  });

  it('--model openai talks to an OpenAI-compatible server through its chat API, with a base URL and no key', async () => {
    seen.length = 0;
    const fromEnv = run(['--model', 'openai'], { OPENAI_BASE_URL: baseURL, OPENAI_MODEL: 'local-llama' });
    expect(await fromEnv.done, fromEnv.r.stderr()).toBe(0);
    expect(fromEnv.r.stdout()).toContain('Hello from the local server.');
    expect(fromEnv.r.stderr()).toContain(`local-llama at ${baseURL} (chat API)`);

    const fromFlag = run(['--model', 'openai', '--base-url', baseURL]);
    expect(await fromFlag.done, fromFlag.r.stderr()).toBe(0);
    expect(fromFlag.r.stdout()).toContain('Hello from the local server.');
    expect(seen.map((s) => [s.path, s.model])).toEqual([
      ['/v1/chat/completions', 'local-llama'],
      ['/v1/chat/completions', 'gpt-4o-mini'],
    ]);
  });

  it('--model openai with neither a key nor a base URL, and --base-url without --model openai, are usage errors', async () => {
    const none = run(['--model', 'openai']);
    expect(await none.done).toBe(64);
    expect(none.r.stderr()).toContain('--model openai needs OPENAI_API_KEY, or OPENAI_BASE_URL / --base-url');
    const stray = run(['--base-url', baseURL]);
    expect(await stray.done).toBe(64);
    expect(stray.r.stderr()).toContain('--base-url goes with --model openai');
  });
});
