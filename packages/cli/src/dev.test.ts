// `helix dev` (issue 13, item 7) for real: the CLI in a child process on a free port against a temporary
// project whose agent talks to a scripted OpenAI-compatible server over HTTP (through @ai-sdk/openai).
// It chats through /api/chat, then edits the agent file, a module the agent imports, and a hook, and
// sees the new behaviour after each reload.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedOpenAIServer, type OpenAIChatRequestBody, type ScriptedOpenAIServer, type ScriptedOpenAIStep } from '@helix-agents/llm-vercel/testing';

const BIN = fileURLToPath(new URL('../bin/helix.js', import.meta.url));
const TOKEN = 'dev-test-token-0123456789';

const agentFile = (greeting: string): string => `import { createOpenAI } from '@ai-sdk/openai';
import { defineAgent } from '@helix-agents/sdk';
import { suffix } from '../lib/suffix.js';

const model = createOpenAI({ baseURL: process.env.HELIX_TEST_MODEL_URL, apiKey: 'test-key' }).chat('gpt-test');
export default defineAgent({ name: 'greeter', systemPrompt: '${greeting}' + suffix, llmConfig: { model } });
`;
const suffixFile = (text: string): string => `export const suffix: string = '${text}';\n`;
const hookFile = (version: string): string => `import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineHook } from '@helix-agents/sdk/hooks';

export default defineHook({ events: { 'turn.completed'(event) { writeFileSync(join(process.env.HELIX_TEST_MARKS!, '${version}-' + event.sessionId), 'x'); } } });
`;

// An agent whose tool waits for a gate file, to change the code while one of its runs is in progress.
const workerFile = (version: string): string => `import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createOpenAI } from '@ai-sdk/openai';
import { z } from 'zod';
import { defineAgent, defineTool } from '@helix-agents/sdk';

const marks = process.env.HELIX_TEST_MARKS!;
const version = defineTool({ name: 'version', description: 'The code version', inputSchema: z.object({}), execute: async () => {
  writeFileSync(join(marks, 'tool-started'), 'x');
  while (!existsSync(join(marks, 'gate'))) await new Promise((r) => setTimeout(r, 20));
  return '${version}';
} });
const model = createOpenAI({ baseURL: process.env.HELIX_TEST_MODEL_URL, apiKey: 'test-key' }).chat('gpt-test');
export default defineAgent({ name: 'worker', systemPrompt: 'Work.', tools: [version], llmConfig: { model } });
`;

interface Dev {
  readonly child: ChildProcessWithoutNullStreams;
  readonly url: string;
  stderr: () => string;
  stdout: () => string;
}

function startDev(dir: string, env: Record<string, string>): Promise<Dev> {
  const child = spawn(process.execPath, [BIN, 'dev', '--dir', dir, '--port', '0'], { cwd: dir, env: { ...process.env, ...env, HELIX_DEV_TOKEN: TOKEN }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`helix dev did not start:\n${stdout}\n${stderr}`)), 30_000);
    child.on('exit', (code) => reject(new Error(`helix dev exited with ${code}:\n${stdout}\n${stderr}`)));
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      const match = /devtools: (http:\/\/127\.0\.0\.1:\d+)\/devtools#token=(\S+)/.exec(stdout);
      if (match) {
        clearTimeout(timer);
        resolve({ child, url: match[1]!, stderr: () => stderr, stdout: () => stdout });
      }
    });
  });
}

/** One chat turn through the UI protocol endpoint; the assistant's text from the text-delta parts. */
async function chat(dev: Dev, chatId: string, text: string, token = TOKEN, agent?: string): Promise<{ status: number; text: string }> {
  const response = await fetch(`${dev.url}/api/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ id: chatId, trigger: 'submit-message', ...(agent === undefined ? {} : { agent }), messages: [{ id: `u-${chatId}`, role: 'user', parts: [{ type: 'text', text }] }] }),
  });
  const body = await response.text();
  if (response.status !== 200) return { status: response.status, text: body };
  const deltas = body
    .split('\n')
    .filter((l) => l.startsWith('data: {'))
    .map((l) => JSON.parse(l.slice(6)) as { type: string; delta?: string })
    .filter((p) => p.type === 'text-delta')
    .map((p) => p.delta)
    .join('');
  return { status: 200, text: deltas };
}

async function until(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('helix dev in a child process', () => {
  const root = mkdtempSync(join(tmpdir(), 'helix-dev-'));
  const dir = join(root, 'project');
  const marks = join(root, 'marks');
  let model: ScriptedOpenAIServer;
  let dev: Dev | undefined;
  beforeAll(async () => {
    // The model answers with the system prompt it was given, so a reloaded prompt shows in the reply.
    const reply = (body: OpenAIChatRequestBody): ScriptedOpenAIStep => {
      const system = String(body.messages[0]?.['content']);
      const last = body.messages.at(-1);
      if (last?.['role'] === 'tool') return { text: `tool said ${String(last['content'])}` };
      return system === 'Work.' ? { toolCalls: [{ name: 'version', args: {} }] } : { text: `[${system}]` };
    };
    model = await startScriptedOpenAIServer(Array.from({ length: 30 }, () => reply));
    for (const sub of ['agents', 'hooks', 'lib']) mkdirSync(join(dir, sub), { recursive: true });
    mkdirSync(marks);
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'dev-test', private: true, type: 'module' }));
    writeFileSync(join(dir, 'agents', 'greeter.ts'), agentFile('Hello'));
    writeFileSync(join(dir, 'lib', 'suffix.ts'), suffixFile('!'));
    writeFileSync(join(dir, 'hooks', 'mark.ts'), hookFile('v1'));
    writeFileSync(join(dir, 'agents', 'worker.ts'), workerFile('v1'));
  });
  afterAll(async () => {
    if (dev && dev.child.exitCode === null) {
      dev.child.kill('SIGINT');
      await new Promise((r) => dev!.child.once('exit', r));
    }
    await model?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('serves the project on 127.0.0.1 behind its token, and a changed agent file, imported module or hook is live after the reload; a run in progress finishes on its old code', async () => {
    dev = await startDev(dir, { HELIX_TEST_MODEL_URL: model.baseURL, HELIX_TEST_MARKS: marks });
    expect(dev.stdout()).toContain(`/devtools#token=${TOKEN}`);
    expect(dev.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

    // Without the token: 401 everywhere but the page (which asks for the token).
    expect((await fetch(`${dev.url}/api/sessions`)).status).toBe(401);
    expect((await chat(dev, 'c0', 'hi', 'wrong-token-0123456789')).status).toBe(401);
    const page = await fetch(`${dev.url}/devtools`);
    expect(page.status).toBe(401);
    expect(await page.text()).toContain('helix devtools');

    expect(await chat(dev, 'c1', 'Hi')).toEqual({ status: 200, text: '[Hello!]' });
    await until(() => existsSync(join(marks, 'v1-c1')), 'the v1 hook');

    // The agent file changes: the next turn runs the new agent.
    writeFileSync(join(dir, 'agents', 'greeter.ts'), agentFile('Bonjour'));
    await until(() => /reload \d+: agents greeter/.test(dev!.stderr()), 'the first reload');
    expect(await chat(dev, 'c2', 'Hi')).toEqual({ status: 200, text: '[Bonjour!]' });

    // A module the agent imports changes: the whole project-local graph is imported afresh.
    const reloads = (dev.stderr().match(/reload \d+: agents/g) ?? []).length;
    writeFileSync(join(dir, 'lib', 'suffix.ts'), suffixFile('?'));
    await until(() => (dev!.stderr().match(/reload \d+: agents/g) ?? []).length > reloads, 'the second reload');
    expect(await chat(dev, 'c3', 'Hi')).toEqual({ status: 200, text: '[Bonjour?]' });

    // The hook changes: the next turn is handled by the new hook only.
    const before = (dev.stderr().match(/reload \d+: agents/g) ?? []).length;
    writeFileSync(join(dir, 'hooks', 'mark.ts'), hookFile('v2'));
    await until(() => (dev!.stderr().match(/reload \d+: agents/g) ?? []).length > before, 'the hook reload');
    expect(await chat(dev, 'c4', 'Hi')).toEqual({ status: 200, text: '[Bonjour?]' });
    await until(() => existsSync(join(marks, 'v2-c4')), 'the v2 hook');
    expect(existsSync(join(marks, 'v1-c4'))).toBe(false);

    // A run in progress at a reload finishes on the code it started with; the next run gets the new code.
    const running = chat(dev, 'w1', 'Which version?', TOKEN, 'worker');
    await until(() => existsSync(join(marks, 'tool-started')), 'the worker tool to start');
    const beforeWorker = (dev.stderr().match(/reload \d+: agents/g) ?? []).length;
    writeFileSync(join(dir, 'agents', 'worker.ts'), workerFile('v2'));
    await until(() => (dev!.stderr().match(/reload \d+: agents/g) ?? []).length > beforeWorker, 'the worker reload');
    writeFileSync(join(marks, 'gate'), 'open');
    expect(await running).toEqual({ status: 200, text: 'tool said v1' });
    expect(await chat(dev, 'w2', 'Which version?', TOKEN, 'worker')).toEqual({ status: 200, text: 'tool said v2' });

    // A broken edit keeps the last good code serving.
    writeFileSync(join(dir, 'agents', 'greeter.ts'), 'export default 42;\n');
    await until(() => /the project has errors; still serving/.test(dev!.stderr()), 'the refused reload');
    expect(await chat(dev, 'c5', 'Hi')).toEqual({ status: 200, text: '[Bonjour?]' });

    // The sessions are in the project's SQLite store.
    expect(existsSync(join(dir, '.helix', 'helix.db'))).toBe(true);
    const sessions = (await (await fetch(`${dev.url}/api/sessions`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as { sessions: { sessionId: string }[] };
    expect(sessions.sessions.map((s) => s.sessionId).sort()).toEqual(['c1', 'c2', 'c3', 'c4', 'c5', 'w1', 'w2']);

    dev.child.kill('SIGINT');
    const code = await new Promise<number | null>((r) => dev!.child.once('exit', r));
    expect(code).toBe(0);
  }, 90_000);
});
