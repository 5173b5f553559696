// HttpRemoteAgentClient (issue 13, item 3): a parent in this process runs a remote sub-agent on a helix
// server through its native API, over real HTTP.
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, defineRemoteSubAgentTool, defineTool, InMemoryStateStore, InMemoryStreamManager, JSAgentExecutor, silentLogger, type AgentConfig, type RemoteStartRequest, type StreamChunk, type SubAgentChunk } from '@helix-agents/sdk';
import { createGate, createScriptedModel } from '@helix-agents/sdk/testing';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import type { OpenAIChatRequestBody, ScriptedOpenAIStep } from '@helix-agents/llm-vercel/testing';
import { HttpRemoteAgentClient } from './index.js';
import { closeAll, get, startHarness, TOKENS, waitFor } from './__tests__/harness.js';

afterEach(closeAll);

const researcher = (model: AgentConfig['llmConfig']['model']) => [defineAgent({ name: 'researcher', systemPrompt: 'Research.', llmConfig: { model } }) as AgentConfig<unknown, unknown>];
const request = (key: string, agentType = 'researcher'): RemoteStartRequest => ({ agentType, input: 'Find hooks.', idempotencyKey: key, parentSessionId: 'parent-1', parentToolCallId: 'call_1', depth: 1 });

describe('HttpRemoteAgentClient', () => {
  it('a parent runs a remote sub-agent on the server: the output comes back, the child streams into the parent, and the child is the token user\u2019s session', async () => {
    const h = await startHarness({ script: [{ textChunks: ['Hooks ', 'observe.'], usage: { inputTokens: 7, outputTokens: 3 } }], agents: researcher });
    const client = new HttpRemoteAgentClient({ baseUrl: h.url, token: TOKENS.alice });
    const research = defineRemoteSubAgentTool({ name: 'research', description: 'Ask the researcher', inputSchema: z.object({ input: z.string() }), agentType: 'researcher', client });
    const parentModel = createScriptedModel([{ toolCalls: [{ name: 'research', args: { input: 'What do hooks do?' } }] }, { text: 'They observe.' }]);
    const parent = new JSAgentExecutor(new InMemoryStateStore(), new InMemoryStreamManager(), new VercelAIAdapter(), { logger: silentLogger });
    const handle = await parent.execute(defineAgent({ name: 'lead', llmConfig: { model: parentModel }, tools: [research] }), 'Go');
    const chunks: StreamChunk[] = [];
    for await (const c of handle.stream()) chunks.push(c);
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'completed', output: 'They observe.' });
    const toolRow = (await parent.getSession(handle.sessionId))!.messages.find((m) => m.role === 'tool');
    expect(toolRow).toMatchObject({ toolName: 'research', content: 'Hooks observe.' });
    const forwarded = chunks.filter((c): c is SubAgentChunk => c.type === 'subagent_chunk');
    expect(forwarded.map((c) => c.chunk.type)).toEqual(expect.arrayContaining(['run_started', 'text_delta', 'end']));
    const childSession = forwarded[0]!.childSessionId;
    expect(h.model.requests[0]!.messages.at(-1)).toMatchObject({ role: 'user', content: 'What do hooks do?' });
    // On the server the child is alice's session, with the parent named in its run's metadata.
    const details = (await (await get(h, `/api/sessions/${childSession}`)).json()) as { runs: { options: { userId: string; metadata: Record<string, string> } }[] };
    expect(details.runs[0]!.options).toMatchObject({ userId: 'alice', metadata: { 'helix.parentSessionId': handle.sessionId, 'helix.depth': '1' } });
    expect((await get(h, `/api/sessions/${childSession}`, 'bob')).status).toBe(404);
    await parent.close();
  });

  it('a start is idempotent by key (one after another and at once), and stream resumes after a cursor', async () => {
    const h = await startHarness({ script: [{ textChunks: ['a', 'b', 'c'] }, { text: 'second' }], agents: researcher });
    const client = new HttpRemoteAgentClient({ baseUrl: h.url, token: TOKENS.alice });
    const [one, two] = await Promise.all([client.start(request('key-1')), new HttpRemoteAgentClient({ baseUrl: h.url, token: TOKENS.alice }).start(request('key-1'))]);
    expect(two).toEqual(one);
    expect(await client.start(request('key-1'))).toEqual(one);
    expect(await client.result(one)).toMatchObject({ status: 'completed', output: 'abc' });
    expect(h.model.requests).toHaveLength(1);
    const all = [];
    for await (const item of client.stream(one)) all.push(item);
    expect(all.map((i) => i.chunk.type)).toEqual(['run_started', 'step_start', 'text_delta', 'text_delta', 'text_delta', 'end']);
    const rest = [];
    for await (const item of client.stream(one, { after: all[2]!.cursor })) rest.push(item);
    expect(rest).toEqual(all.slice(3));
    await expect(async () => {
      for await (const item of client.stream(one, { after: 'x' })) void item;
    }).rejects.toMatchObject({ code: 'run_invalid_input' });
  });

  it('stop ends a running child (interrupted), and server refusals come back as AgentErrors with the server\u2019s codes', async () => {
    const gate = createGate();
    const hold = defineTool({ name: 'hold', description: 'Hold', inputSchema: z.object({}), execute: async (_i, ctx) => (await Promise.race([gate.opened, new Promise((r) => ctx.abortSignal.addEventListener('abort', r))]), 'held') });
    const script = (body: OpenAIChatRequestBody): ScriptedOpenAIStep => (body.messages.at(-1)?.['role'] === 'tool' ? { text: 'x' } : { toolCalls: [{ name: 'hold', args: {}, id: 'call_hold' }] });
    const h = await startHarness({ script: [script, script], agents: (model) => [defineAgent({ name: 'researcher', llmConfig: { model }, tools: [hold] }) as AgentConfig<unknown, unknown>] });
    const client = new HttpRemoteAgentClient({ baseUrl: h.url, token: TOKENS.alice });
    const ref = await client.start(request('key-stop'));
    await waitFor(async () => {
      for await (const c of h.executor.readStream(ref.sessionId, { follow: false })) if (c.type === 'tool_start') return true;
      return false;
    });
    await client.stop(ref, 'parent stopped');
    expect(await client.result(ref)).toMatchObject({ status: 'interrupted', error: { code: 'run_interrupted' } });
    gate.open();
    await expect(client.start(request('key-x', 'nobody'))).rejects.toMatchObject({ code: 'http_unknown_agent' });
    await expect(new HttpRemoteAgentClient({ baseUrl: h.url, token: 'wrong-token-0123456789' }).start(request('key-y'))).rejects.toMatchObject({ code: 'http_unauthorized' });
    await expect(new HttpRemoteAgentClient({ baseUrl: h.url, token: TOKENS.bob }).result(ref)).rejects.toMatchObject({ code: 'http_not_found' });
    expect(() => new HttpRemoteAgentClient({ baseUrl: 'file:///etc/passwd' })).toThrow(/http\(s\) baseUrl/);
  });
});
