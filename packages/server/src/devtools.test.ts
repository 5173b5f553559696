// The devtools page's server side (issue 13, item 6): the page behind auth, its CSP, the timeline
// endpoint (runs, steps, tool calls, commits K1-K5 with their state diffs, hook firings) and ownership.
import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { z } from 'zod';
import { defineAgent, defineTool, type AgentConfig, type CheckpointInfo, type StreamChunk } from '@helix-agents/sdk';
import type { OpenAIChatRequestBody, ScriptedOpenAIStep } from '@helix-agents/llm-vercel/testing';
import { buildTimeline, DEVTOOLS_CSP, type SessionTimeline } from './index.js';
import { DEVTOOLS_SCRIPT } from './devtools-script.js';
import { closeAll, get, post, startHarness, waitFor, type Harness } from './__tests__/harness.js';

afterEach(closeAll);

const lastRole = (body: OpenAIChatRequestBody): unknown => body.messages.at(-1)?.['role'];
const add = defineTool({ name: 'add', description: 'Add', inputSchema: z.object({ by: z.number() }), execute: async ({ by }, ctx) => (ctx.updateState<{ n: number }>((d) => void (d.n += by)), by) });
const wipe = defineTool({ name: 'wipe', description: 'Wipe', inputSchema: z.object({}), execute: async () => 'wiped' });
const pay = defineTool({ name: 'pay', description: 'Pay', inputSchema: z.object({ amount: z.number() }), needsApproval: true, execute: async ({ amount }, ctx) => (ctx.updateState<{ n: number }>((d) => void (d.n -= amount)), 'paid') });
const script = (body: OpenAIChatRequestBody): ScriptedOpenAIStep => {
  const tools = body.messages.filter((m) => m['role'] === 'tool').length;
  if (lastRole(body) !== 'tool') return { toolCalls: [{ name: 'add', args: { by: 2 }, id: 'call_add' }, { name: 'wipe', args: {}, id: 'call_wipe' }] };
  if (tools === 2) return { toolCalls: [{ name: 'pay', args: { amount: 1 }, id: 'call_pay' }] };
  return { text: 'done' };
};
const agents = (model: AgentConfig['llmConfig']['model']): AgentConfig<unknown, unknown>[] => [
  defineAgent({
    name: 'counter',
    llmConfig: { model },
    tools: [add, wipe, pay],
    stateSchema: z.object({ n: z.number().default(0) }),
    hooks: { beforeTool: ({ toolCall }) => (toolCall.name === 'wipe' ? { block: true, reason: 'wiping is not allowed here' } : undefined) },
  }) as AgentConfig<unknown, unknown>,
];
const start = (h: Harness, sessionId: string): Promise<Response> => post(h, '/api/sessions', { input: 'Count.', sessionId });
const statusOf = async (h: Harness, sessionId: string): Promise<string | undefined> => ((await (await get(h, `/api/sessions/${sessionId}`)).json()) as { status?: string }).status;

describe('the /devtools page', () => {
  it('goes through auth: without a token 401 with the static page (which asks for one), with one 200 and the same page; no session data in it', async () => {
    const h = await startHarness({ script: [script, script, script], agents });
    expect((await start(h, 'secret-session-1')).status).toBe(202);
    const anonymous = await fetch(`${h.url}/devtools`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
    expect(anonymous.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const page = await anonymous.text();
    expect(page).toContain('<title>helix devtools</title>');
    expect(page).not.toContain('secret-session-1');
    const signedIn = await get(h, '/devtools');
    expect(signedIn.status).toBe(200);
    expect(await signedIn.text()).toBe(page);
    // Everything else stays JSON 401 without the token.
    const data = await fetch(`${h.url}/api/agents`);
    expect(data.status).toBe(401);
    expect(await data.json()).toMatchObject({ code: 'http_unauthorized' });
    expect((await fetch(`${h.url}/devtools/other`)).status).toBe(401);
  });

  it('sends a CSP that only allows its own inline script and style (by hash) and requests to its own origin', async () => {
    const h = await startHarness({ script: [], agents });
    const response = await get(h, '/devtools');
    const csp = response.headers.get('content-security-policy') ?? '';
    expect(csp).toBe(DEVTOOLS_CSP);
    const scriptHash = `'sha256-${createHash('sha256').update(DEVTOOLS_SCRIPT, 'utf8').digest('base64')}'`;
    expect(csp).toContain(`script-src ${scriptHash}`);
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('cache-control')).toBe('no-store');
    const html = await response.text();
    // One inline script, exactly the hashed one; no external script or stylesheet (nothing fetched at run time).
    expect(html.match(/<script/g)).toHaveLength(1);
    expect(html).toContain(`<script>${DEVTOOLS_SCRIPT}</script>`);
    expect(html).not.toMatch(/<script[^>]+src=|<link[^>]+href=|https?:\/\//);
  });

  it('the page script never hands text to an HTML parser (no innerHTML, outerHTML, insertAdjacentHTML, document.write, eval)', () => {
    for (const sink of ['innerHTML', 'outerHTML', 'insertAdjacentHTML', 'document.write', 'eval(', 'new Function', 'srcdoc', '.href =', "setAttribute('on", "setAttribute('style"]) expect(DEVTOOLS_SCRIPT).not.toContain(sink);
    // Text reaches the page only through textContent (and text nodes).
    expect(DEVTOOLS_SCRIPT).toContain('textContent');
  });

  it("with auth: 'none' the page and its data need no token (user local)", async () => {
    const h = await startHarness({ script: [], agents, app: { auth: 'none' } });
    expect((await fetch(`${h.url}/devtools`)).status).toBe(200);
    expect((await fetch(`${h.url}/api/agents`)).status).toBe(200);
  });

  it('devtools: false serves no page (404 once authenticated)', async () => {
    const h = await startHarness({ script: [], agents, app: { devtools: false } });
    expect((await fetch(`${h.url}/devtools`)).status).toBe(401);
    expect((await get(h, '/devtools')).status).toBe(404);
  });
});

describe('GET /api/sessions/:id/timeline', () => {
  it('lists the runs, steps, tool calls, commits K1-K5 with the state patches each made durable, and the hook firings with decision, reason and duration', async () => {
    const h = await startHarness({ script: [script, script, script], agents, executor: { auditHooks: 'all' } });
    expect((await start(h, 'tl-1')).status).toBe(202);
    await waitFor(async () => (await statusOf(h, 'tl-1')) === 'suspended');
    expect((await post(h, '/api/sessions/tl-1/approve', { toolCallId: 'call_pay' })).status).toBe(202);
    await waitFor(async () => (await statusOf(h, 'tl-1')) === 'completed');
    const response = await get(h, '/api/sessions/tl-1/timeline');
    expect(response.status).toBe(200);
    const tl = (await response.json()) as SessionTimeline;
    const [first, second] = tl.runs;
    expect(tl.runs.map((r) => [r.signal, r.status])).toEqual([['start', 'suspended'], ['resumed', 'completed']]);
    expect(tl.commits.filter((c) => c.runId === first!.runId).map((c) => c.label)).toEqual(['K1', 'K2', 'K3', 'K4']);
    expect(tl.commits.filter((c) => c.runId === second!.runId).map((c) => c.label)).toEqual(['K1', 'K3', 'K3', 'K5']);
    // add's patch is in the first step commit, pay's in the resume commit that delivered its result.
    const withPatches = tl.commits.filter((c) => c.patches.length > 0);
    expect(withPatches.map((c) => [c.runId, c.label, c.patches])).toEqual([
      [first!.runId, 'K3', [{ op: 'replace', path: ['n'], value: 2 }]],
      [second!.runId, 'K3', [{ op: 'replace', path: ['n'], value: 1 }]],
    ]);
    expect(tl.tools.map((t) => [t.toolName, t.success, t.approval === true])).toEqual([['add', true, false], ['wipe', false, false], ['pay', true, true]]);
    expect(tl.tools.every((t) => t.endedAt === undefined || t.endedAt >= t.startedAt)).toBe(true);
    expect(tl.steps.map((s) => [s.runId === first!.runId ? 1 : 2, s.stepIndex])).toEqual([[1, 0], [1, 1], [2, 0]]);
    const block = tl.hooks.find((x) => x.decision === 'block');
    expect(block).toMatchObject({ hookPoint: 'beforeTool', decision: 'block', reason: 'wiping is not allowed here', toolCallId: 'call_wipe' });
    expect(tl.hooks.filter((x) => x.hookPoint === 'beforeTool').map((x) => x.decision)).toEqual(['allow', 'block', 'allow']);
    expect(tl.hooks.every((x) => x.durationMs >= 0 && x.at >= tl.startedAt!)).toBe(true);
    expect(tl.nextSeq).toBeGreaterThan(10);
  });

  it("is the owner's only: another user 404, no token 401, a bad id 400", async () => {
    const h = await startHarness({ script: [script], agents });
    expect((await start(h, 'tl-2')).status).toBe(202);
    expect((await get(h, '/api/sessions/tl-2/timeline', 'bob')).status).toBe(404);
    expect((await fetch(`${h.url}/api/sessions/tl-2/timeline`)).status).toBe(401);
    expect((await get(h, '/api/sessions/..%2Fetc/timeline')).status).toBe(400);
    expect((await get(h, '/api/sessions/nope/timeline')).status).toBe(404);
    expect(await (await get(h, '/api/agents', 'bob')).json()).toEqual({ agents: [{ name: 'counter' }] });
  });
});

describe('buildTimeline', () => {
  const base = { streamId: 's', agentId: 's', agentType: 'a', runId: 'r1' };
  it('every state patch lands on exactly one commit of its run: the first (after K1) at or after it, none after the last', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 100 }), { maxLength: 30 }), fc.uniqueArray(fc.integer({ min: 1, max: 100 }), { maxLength: 6 }), (patchTimes, commitTimes) => {
        const chunks: StreamChunk[] = [{ ...base, seq: 0, timestamp: 0, type: 'run_started', signal: 'start' }];
        patchTimes.forEach((t, i) => chunks.push({ ...base, seq: i + 1, timestamp: t, type: 'state_patch', source: 'tool', patches: [{ op: 'replace', path: ['p', i], value: t }] }));
        const checkpoints: CheckpointInfo[] = commitTimes.map((t, i) => ({ checkpointId: `c${i}`, sessionId: 's', runId: 'r1', kind: 'step', stepCount: i, messageCount: i, createdAt: t }));
        const tl = buildTimeline('s', chunks, checkpoints);
        const last = commitTimes.length === 0 ? -1 : Math.max(...commitTimes);
        const placed = tl.commits.flatMap((c) => c.patches.map((p) => ({ at: c.at, i: p.path[1] as number })));
        expect(placed).toHaveLength(patchTimes.filter((t) => t <= last).length);
        for (const { at, i } of placed) {
          const t = patchTimes[i]!;
          expect(at).toBe(Math.min(...commitTimes.filter((c) => c >= t)));
        }
        expect(tl.commits.map((c) => c.at)).toEqual([...tl.commits.map((c) => c.at)].sort((a, b) => a - b));
        expect(tl.commits.find((c) => c.label === 'K1')?.patches).toEqual([]);
      }),
    );
  });

  it('caps the patches of one commit at 200 and says so', () => {
    const chunks: StreamChunk[] = [{ ...base, seq: 0, timestamp: 0, type: 'run_started', signal: 'start' }];
    for (let i = 0; i < 250; i++) chunks.push({ ...base, seq: i + 1, timestamp: 1, type: 'state_patch', source: 'tool', patches: [{ op: 'add', path: ['x', i], value: i }] });
    const tl = buildTimeline('s', chunks, [{ checkpointId: 'c', sessionId: 's', runId: 'r1', kind: 'state', stepCount: 1, messageCount: 1, createdAt: 2 }]);
    const k5 = tl.commits.find((c) => c.label === 'K5');
    expect(k5?.patches).toHaveLength(200);
    expect(k5?.patchesTruncated).toBe(true);
  });
});
