// The devtools page (issue 13, item 6) in a real browser: headless Chromium (Debian's package) driven by
// playwright-core, against a real server (JSAgentExecutor -> VercelAIAdapter -> @ai-sdk/openai -> the
// scripted OpenAI-compatible server over HTTP). It sends a message from the chat box, approves the pending
// call with the button, sees the run complete, and takes a screenshot (docs/images/devtools.png with
// HELIX_UPDATE_SCREENSHOTS=1).
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import { z } from 'zod';
import { defineAgent, defineTool, InMemoryUsageStore, type AgentConfig } from '@helix-agents/sdk';
import type { OpenAIChatRequestBody, ScriptedOpenAIStep } from '@helix-agents/llm-vercel/testing';
import { closeAll, get, startHarness, TOKENS, type Harness } from './__tests__/harness.js';

// The committed screenshot is rewritten only on request (HELIX_UPDATE_SCREENSHOTS=1), so a test run leaves the tree clean.
const SCREENSHOT = process.env['HELIX_UPDATE_SCREENSHOTS'] === '1' ? fileURLToPath(new URL('../../../docs/images/devtools.png', import.meta.url)) : join(mkdtempSync(join(tmpdir(), 'helix-devtools-')), 'devtools.png');
const HOSTILE = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>';

function chromiumPath(): string {
  const found = spawnSync('sh', ['-c', 'command -v chromium || command -v chromium-browser'], { encoding: 'utf8' }).stdout.trim().split('\n')[0];
  if (!found) throw new Error('Chromium is not installed: run scripts/ensure-chromium.sh (apt-get install chromium) before the devtools browser test.');
  return found;
}

let wires = 0;
const wire = defineTool({
  name: 'wire',
  description: 'Wire money',
  inputSchema: z.object({ amount: z.number(), memo: z.string() }),
  needsApproval: true,
  execute: async ({ amount }, ctx) => {
    wires++;
    ctx.updateState<{ sent: number }>((d) => void (d.sent += amount));
    return { sent: amount };
  },
});
const lastRole = (body: OpenAIChatRequestBody): unknown => body.messages.at(-1)?.['role'];
const script = (body: OpenAIChatRequestBody): ScriptedOpenAIStep =>
  lastRole(body) === 'tool' ? { textChunks: ['Sent ', '5 ', HOSTILE] } : { text: 'Wiring now.', toolCalls: [{ name: 'wire', args: { amount: 5, memo: HOSTILE }, id: 'call_wire' }] };
const agents = (model: AgentConfig['llmConfig']['model']): AgentConfig<unknown, unknown>[] => [
  defineAgent({
    name: 'banker',
    systemPrompt: 'Move money.',
    llmConfig: { model },
    tools: [wire],
    stateSchema: z.object({ sent: z.number().default(0) }),
    hooks: { beforeTool: () => undefined, afterLLMCall: () => undefined },
  }) as AgentConfig<unknown, unknown>,
];

describe('the devtools page in headless Chromium', () => {
  let browser: Browser;
  let h: Harness;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: chromiumPath(), headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
    h = await startHarness({ script: [script, script], agents, executor: { auditHooks: 'all' }, app: { usageStore: new InMemoryUsageStore() } });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await closeAll();
  });

  it('chat from the box, approve with the button, see the run complete with its timeline, commits, hooks and tail; hostile text stays text', async () => {
    wires = 0;
    const context = await browser.newContext({ viewport: { width: 1440, height: 1100 } });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    // The page load carries no Authorization header: 401 with the page, which reads the token from the fragment.
    const response = await page.goto(`${h.url}/devtools#token=${TOKENS.alice}`);
    expect(response?.status()).toBe(401);
    expect(response?.headers()['content-security-policy']).toContain("default-src 'none'");
    await page.locator('#app').waitFor({ state: 'visible' });
    expect(page.url()).not.toContain(TOKENS.alice);
    expect(await page.locator('#agent option').allTextContents()).toEqual(['banker']);

    await page.fill('#message', 'Send 5 to Bob.');
    await page.click('#send');
    const approve = page.locator('button.approve');
    await approve.waitFor({ state: 'visible', timeout: 15_000 });
    await expect.poll(() => page.locator('#session-status').textContent()).toBe('suspended');
    expect(await page.locator('.approval pre').textContent()).toContain('<img src=x onerror=');
    expect(wires).toBe(0);

    await approve.click();
    await expect.poll(() => page.locator('#session-status').textContent(), { timeout: 15_000 }).toBe('completed');
    expect(wires).toBe(1);
    await expect.poll(() => page.locator('#tail .line.end').count()).toBe(1);
    await expect.poll(() => page.locator('#approvals').isHidden()).toBe(true);

    // The timeline: two runs (the suspended one and the approval's), the commits K1 to K5, the tool call, hook firings.
    await expect.poll(() => page.locator('[data-lane=runs] .item').count()).toBe(2);
    const commitLabels = await page.locator('[data-lane=commits] .item').allTextContents();
    for (const label of ['K1', 'K2', 'K3', 'K4', 'K5']) expect(commitLabels).toContain(label);
    expect(await page.locator('[data-lane=tools] .item.ok').allTextContents()).toEqual([expect.stringMatching(/^wire \d+(\.\d)? ms$/)]);
    expect(await page.locator('[data-lane=hooks] .item').count()).toBeGreaterThanOrEqual(2);
    const hookPoints = await page.locator('#hooks tr.hook-row td:nth-child(2)').allTextContents();
    expect(hookPoints).toEqual(expect.arrayContaining(['beforeTool', 'afterLLMCall']));
    // The state diff of the commit that ran the tool.
    expect(await page.locator('.diff').allTextContents()).toContain('~ /sent = 5');
    // Usage is shown from the usage store (the scripted server reports 10 + 5 tokens per call; two calls).
    expect(await page.locator('#summary').textContent()).toContain('20 in · 10 out · 2 model calls · 1 tool calls');
    // The model's and the tool's hostile text is shown as text: nothing of it became markup or ran.
    expect(await page.locator('#messages').textContent()).toContain(HOSTILE);
    expect(await page.locator('#tail').textContent()).toContain('onerror');
    expect(await page.locator('img').count()).toBe(0);
    expect(await page.locator('script').count()).toBe(1);
    expect(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined();

    // Click a timeline item: its details show in the inspector.
    await page.locator('[data-lane=tools] .item').click();
    expect(await page.locator('#inspect').textContent()).toContain('"toolName": "wire"');

    mkdirSync(dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    expect(readFileSync(SCREENSHOT).subarray(1, 4).toString('latin1')).toBe('PNG');
    expect(errors).toEqual([]);
    await context.close();
  }, 60_000);

  it("without a token the page asks for one; another user's token sees none of alice's sessions (404 on them)", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${h.url}/devtools`);
    await page.locator('#login').waitFor({ state: 'visible' });
    expect(await page.locator('#app').isHidden()).toBe(true);
    await page.fill('#token', 'not-a-valid-token-at-all');
    await page.click('#login-form button');
    await expect.poll(() => page.locator('#login-error').textContent()).toBe('The server refused this token.');

    await page.fill('#token', TOKENS.bob);
    await page.click('#login-form button');
    await page.locator('#app').waitFor({ state: 'visible' });
    await expect.poll(() => page.locator('#sessions li.empty').count()).toBe(1);
    expect(await page.locator('button.session').count()).toBe(0);
    const aliceSessions = (await (await get(h, '/api/sessions')).json()) as { sessions: { sessionId: string }[] };
    const alices = aliceSessions.sessions[0]?.sessionId;
    expect(alices).toBeDefined();
    const status = await page.evaluate(async ([id, token]) => (await fetch(`/api/sessions/${id}/timeline`, { headers: { authorization: `Bearer ${token}` } })).status, [alices, TOKENS.bob] as const);
    expect(status).toBe(404);
    await context.close();
  }, 60_000);
});
