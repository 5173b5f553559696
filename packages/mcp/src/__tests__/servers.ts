// Starting the fixture MCP server (fixture-server.ts) as a real child process, over stdio or HTTP, and
// reading what it was asked to do.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InMemoryStateStore, InMemoryStreamManager, JSAgentExecutor, silentLogger, type JSAgentExecutorOptions, type StreamChunk, type ToolResultMessage } from '@helix-agents/sdk';
import type { ScriptedModel } from '@helix-agents/sdk/testing';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import type { McpHttpTransportOptions, McpStdioTransportOptions } from '../connect.js';

export const FIXTURE = join(dirname(fileURLToPath(import.meta.url)), 'fixture-server.ts');
export const TOKEN = 'test-token';

/** One call the fixture server received. */
export interface LoggedCall {
  readonly tool: string;
  readonly args: Record<string, unknown>;
  readonly pid: number;
}

/** A temporary folder with the server's call log; `calls()` reads it, `reset()` empties it. */
export function callLog() {
  const dir = mkdtempSync(join(tmpdir(), 'helix-mcp-'));
  const file = join(dir, 'calls.jsonl');
  writeFileSync(file, '');
  return {
    dir,
    file,
    calls(): LoggedCall[] {
      return readFileSync(file, 'utf8').split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as LoggedCall);
    },
    reset(): void {
      writeFileSync(file, '');
    },
    remove(): void {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The stdio transport options that start the fixture server (`mode` stdio or hostile). */
export function stdioFixture(logFile: string, mode: 'stdio' | 'hostile' = 'stdio', env: Record<string, string> = {}): McpStdioTransportOptions {
  return { command: process.execPath, args: ['--import', 'tsx', FIXTURE, mode], env: { MCP_CALL_LOG: logFile, ...env }, stderr: 'ignore' };
}

/** A fixture server on Streamable HTTP (127.0.0.1, a free port) in its own process. */
export interface HttpFixture {
  readonly url: string;
  readonly child: ChildProcess;
  transport(headers?: Record<string, string>): McpHttpTransportOptions;
  /** Kills the server (SIGKILL) and waits for it to be gone. */
  kill(): Promise<void>;
}

/** Starts the fixture server over HTTP and waits for its port. */
export async function startHttpFixture(logFile: string): Promise<HttpFixture> {
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, 'http'], { env: { ...process.env, MCP_CALL_LOG: logFile, MCP_TOKEN: TOKEN }, stdio: ['ignore', 'pipe', 'ignore'] });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`the HTTP fixture did not start: ${out}`)), 15_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const match = /listening (\d+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    });
    child.once('exit', (code) => reject(new Error(`the HTTP fixture exited with ${String(code)}`)));
  });
  const url = `http://127.0.0.1:${port}/mcp`;
  return {
    url,
    child,
    transport: (headers = { authorization: `Bearer ${TOKEN}` }) => ({ url, headers }),
    kill: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGKILL');
      await gone;
    },
  };
}

/** An executor on the in-memory stores and the real AI SDK adapter. */
export function executorFor({ stateStore = new InMemoryStateStore(), ...options }: JSAgentExecutorOptions & { readonly stateStore?: InMemoryStateStore } = {}) {
  const streamManager = new InMemoryStreamManager();
  const executor = new JSAgentExecutor(stateStore, streamManager, new VercelAIAdapter(), { logger: silentLogger, ...options });
  return { stateStore, streamManager, executor };
}

/** The tool rows of a session's transcript. */
export async function toolRows(stateStore: InMemoryStateStore, sessionId: string): Promise<ToolResultMessage[]> {
  return ((await stateStore.loadSession(sessionId))?.messages ?? []).filter((m): m is ToolResultMessage => m.role === 'tool');
}

/** The tool results the model was shown in its last call, as the AI SDK prompt carries them. */
export function toolResultsSeen(model: ScriptedModel): { toolName: string; output: unknown }[] {
  const last = model.calls[model.calls.length - 1];
  const seen: { toolName: string; output: unknown }[] = [];
  for (const message of last?.prompt ?? []) {
    if (message.role !== 'tool') continue;
    for (const part of message.content) if (part.type === 'tool-result') seen.push({ toolName: part.toolName, output: part.output });
  }
  return seen;
}

/** Every chunk of a stream. */
export async function collect(stream: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const out: StreamChunk[] = [];
  for await (const chunk of stream) out.push(chunk);
  return out;
}
