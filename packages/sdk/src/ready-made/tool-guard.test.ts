import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError, createHookManager, defineTool, guardPolicy, type AfterToolPayload, type HookDecisionChunk, type ToolResultMessage } from '../index.js';
import { createHookRecorder } from '../testing/index.js';
import { counterAgent, finish, incrementTool, setup, throwing } from '../__tests__/harness.js';
import { expectContainment } from '../__tests__/containment.js';
import { compileToolGuard, createToolGuard, pathInside } from './tool-guard.js';

describe('compileToolGuard (pure decisions)', () => {
  it('deny and allow lists take names and globs; deny wins over allow', () => {
    const check = compileToolGuard({ allow: ['read_*', 'search', 'shell'], deny: ['shell', '*_admin'] });
    expect(check('read_file', {})).toEqual({ allowed: true });
    expect(check('search', {})).toEqual({ allowed: true });
    expect(check('shell', {})).toEqual({ allowed: false, reason: "Tool 'shell' is on the tool guard's deny list." });
    expect(check('read_admin', {})).toMatchObject({ allowed: false });
    expect(check('write_file', {})).toEqual({ allowed: false, reason: "Tool 'write_file' is not on the tool guard's allow list (allowed: read_*, search, shell)." });
    // Globs match whole names, and other RegExp characters are literal.
    expect(compileToolGuard({ deny: ['a.b'] })('axb', {})).toEqual({ allowed: true });
    expect(compileToolGuard({ allow: [] })('anything', {})).toMatchObject({ allowed: false, reason: expect.stringContaining('allowed: none') });
  });

  it('argument deny rules block matching values and say which pattern matched', () => {
    const check = compileToolGuard({ argumentRules: [{ tool: 'write_file', path: 'path', deny: [/\.env$/, /(^|\/)\.git\//] }] });
    expect(check('write_file', { path: 'src/index.ts' })).toEqual({ allowed: true });
    expect(check('write_file', { path: 'config/.env' })).toEqual({
      allowed: false,
      reason: "Argument 'path' of tool 'write_file' is not allowed: 'config/.env' matches /\\.env$/.",
    });
    expect(check('write_file', { path: '.git/config' })).toMatchObject({ allowed: false });
    expect(check('read_file', { path: '.env' })).toEqual({ allowed: true });
    // A missing argument is not checked: the tool's schema decides whether it is required.
    expect(check('write_file', {})).toEqual({ allowed: true });
  });

  it('pathInside resolves the path, so ../ and absolute paths cannot escape and a sibling with the same prefix is outside', () => {
    const inside = pathInside('/work/project', { cwd: '/work/project' });
    expectContainment(
      inside,
      ['src/a.ts', '/work/project/src/a.ts', '/work/project', '.'],
      ['../secrets.txt', 'src/../../etc/passwd', '/work/project/../other/x', '/work/projectX/a', '/etc/passwd', 'a\0b'],
    );
    expect(pathInside('/work/project', { cwd: '/work/project/src' })('../README.md')).toBe(true);
    expect(pathInside('/work/project', { cwd: '/work/project/src' })('../../x')).toBe(false);

    const check = compileToolGuard({ argumentRules: [{ tool: '*', path: 'path', allow: [inside] }] });
    expect(check('write_file', { path: 'src/a.ts' })).toEqual({ allowed: true });
    expect(check('write_file', { path: '../outside' })).toEqual({
      allowed: false,
      reason: "Argument 'path' of tool 'write_file' is not allowed: '../outside' matches none of pathInside(/work/project).",
    });
    // A prefix RegExp is the trap pathInside avoids.
    expect(/^\/work\/project\//.test('/work/project/../../etc/passwd')).toBe(true);
  });

  it('dot paths reach nested values; * walks arrays and objects; arrays at the end are checked item by item', () => {
    const check = compileToolGuard({
      argumentRules: [
        { tool: 'copy', path: 'options.target', deny: [/^\/etc\//] },
        { tool: 'bulk', path: 'files.*.path', deny: [/\.pem$/] },
        { tool: 'zip', path: 'paths', deny: [/\.env$/] },
        { tool: 'http', path: 'port', allow: [/^(80|443)$/] },
      ],
    });
    expect(check('copy', { options: { target: '/etc/hosts' } })).toMatchObject({ allowed: false });
    expect(check('copy', { options: { target: '/tmp/hosts' } })).toEqual({ allowed: true });
    expect(check('bulk', { files: [{ path: 'a.txt' }, { path: 'key.pem' }] })).toMatchObject({ allowed: false, reason: expect.stringContaining("'key.pem'") });
    expect(check('bulk', { files: { one: { path: 'b.pem' } } })).toMatchObject({ allowed: false });
    expect(check('zip', { paths: ['a', 'b/.env'] })).toMatchObject({ allowed: false });
    expect(check('http', { port: 443 })).toEqual({ allowed: true });
    expect(check('http', { port: 8080 })).toMatchObject({ allowed: false, reason: expect.stringContaining("'8080' matches none of /^(80|443)$/") });
  });

  it('a global RegExp answers the same every time (lastIndex is reset)', () => {
    const check = compileToolGuard({ argumentRules: [{ tool: 'w', path: 'p', deny: [/\.env$/g] }] });
    expect([check('w', { p: '.env' }), check('w', { p: '.env' }), check('w', { p: '.env' })].map((d) => d.allowed)).toEqual([false, false, false]);
  });

  it('refuses rules without matchers or path', () => {
    expect(() => compileToolGuard({ argumentRules: [{ tool: 'w', path: 'p' }] })).toThrow(ConfigError);
    expect(() => compileToolGuard({ argumentRules: [{ tool: 'w', path: '', deny: [/x/] }] })).toThrow(/dot path/);
    expect(() => compileToolGuard({ argumentRules: [{ tool: 'w', path: 'p', deny: ['x' as never] }] })).toThrow(/RegExp or a function/);
  });
});

describe('createToolGuard in a run', () => {
  const writeFile = defineTool({ name: 'write_file', description: 'write', inputSchema: z.object({ path: z.string() }), execute: (input) => ({ wrote: input.path }) });

  it('blocks with its reason: the model gets an error result, afterTool sees blocked: true, the audit names toolGuard', async () => {
    const { executor, stateStore, streamManager } = setup();
    const rec = createHookRecorder({ points: ['afterTool'] });
    const agent = counterAgent(
      [
        {
          toolCalls: [
            { name: 'increment', args: { by: 1 }, id: 'i1' },
            { name: 'write_file', args: { path: '../../etc/passwd' }, id: 'w1' },
            { name: 'write_file', args: { path: 'notes.txt' }, id: 'w2' },
          ],
        },
        finish('ok'),
      ],
      { tools: [incrementTool, writeFile] },
    );
    const guardHooks = createToolGuard({ deny: ['increment'], argumentRules: [{ tool: 'write_file', path: 'path', allow: [pathInside('/work/project', { cwd: '/work/project' })] }] });
    const handle = await executor.execute(agent, 'go', { hookManager: createHookManager(guardHooks, { onError: guardPolicy }), hooks: rec.hooks });
    const result = await handle.result();
    expect(result.status).toBe('completed');
    expect(result.state.count).toBe(0);
    const rows = (await stateStore.loadSession(handle.sessionId))!.messages.filter((m): m is ToolResultMessage => m.role === 'tool');
    expect(rows.find((r) => r.toolCallId === 'i1')).toMatchObject({ isError: true, content: `Tool "increment" was blocked by an agent hook: Tool 'increment' is on the tool guard's deny list.` });
    expect(rows.find((r) => r.toolCallId === 'w1')).toMatchObject({ isError: true, errorInfo: { code: 'hook_blocked', details: { name: 'toolGuard' } } });
    expect(rows.find((r) => r.toolCallId === 'w2')).toMatchObject({ content: { wrote: 'notes.txt' } });
    const blocked = rec.of('afterTool').map((c) => c.payload as AfterToolPayload).filter((p) => p.blocked).map((p) => p.toolCall.id).sort();
    expect(blocked).toEqual(['i1', 'w1']);
    const audits = streamManager
      .chunks(handle.sessionId)
      .filter((c): c is HookDecisionChunk => c.type === 'hook_decision')
      .map((d) => [d.toolCallId, d.hookName, d.decision])
      .sort();
    expect(audits).toEqual([
      ['i1', 'toolGuard', 'block'],
      ['w1', 'toolGuard', 'block'],
    ]);
  });

  it("issue 4 item 3: with the SDK's own approvals (needsApproval), a call the guard blocks never produces an approval request", async () => {
    const { executor, streamManager } = setup();
    const guarded = defineTool({ name: 'write_file', description: 'write', inputSchema: z.object({ path: z.string() }), needsApproval: true, execute: (input) => ({ wrote: input.path }) });
    const agent = counterAgent(
      [
        {
          toolCalls: [
            { name: 'write_file', args: { path: '.env' }, id: 'bad' },
            { name: 'write_file', args: { path: 'notes.txt' }, id: 'ok' },
          ],
        },
        finish('x'),
      ],
      { tools: [guarded] },
    );
    const hookManager = createHookManager(createToolGuard({ argumentRules: [{ tool: 'write_file', path: 'path', deny: [/\.env$/] }] }), { onError: guardPolicy });
    const handle = await executor.execute(agent, 'go', { hookManager });
    const result = await handle.result();
    expect(result.suspension?.pending.map((p) => p.toolCallId)).toEqual(['ok']);
    const requests = streamManager.chunks(handle.sessionId).filter((c) => c.type === 'tool_approval_request');
    expect(requests).toEqual([expect.objectContaining({ toolCallId: 'ok' })]);
  });

  it('with guardPolicy, a matcher that throws blocks the call (block-tool) instead of letting it run', async () => {
    const { executor, stateStore } = setup();
    const explode = throwing('policy store unreachable');
    const agent = counterAgent([{ toolCalls: [{ name: 'write_file', args: { path: 'a' }, id: 'w' }] }, finish('ok')], { tools: [writeFile] });
    const handle = await executor.execute(agent, 'go', {
      hookManager: createHookManager(createToolGuard({ argumentRules: [{ tool: '*', path: 'path', deny: [explode] }] }), { onError: guardPolicy }),
    });
    expect((await handle.result()).status).toBe('completed');
    const row = (await stateStore.loadSession(handle.sessionId))!.messages.find((m): m is ToolResultMessage => m.role === 'tool')!;
    expect(row).toMatchObject({ isError: true, errorInfo: { code: 'hook_blocked', details: { threw: true } } });
    expect(String(row.content)).toContain('policy store unreachable');
  });
});
