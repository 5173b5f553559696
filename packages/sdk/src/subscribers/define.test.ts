import { describe, expect, it } from 'vitest';
import { ConfigError } from '../errors.js';
import { createSessionHookContext } from './context.js';
import { defineHook, hookEventKeys, hookNameProblem, isHookDefinition, mountHook, mountHooks } from './define.js';
import { InMemoryFileStore } from './memory.js';
import type { SessionEvent } from './events.js';
import type { SessionHookContext } from './context.js';

describe('defineHook', () => {
  it('rule 171: returns a plain frozen object whose handlers a unit test can call directly', async () => {
    const seen: string[] = [];
    const hook = defineHook({ events: { 'turn.completed': async (event) => void seen.push(String(event.data.result)) } });
    expect(Object.isFrozen(hook) && Object.isFrozen(hook.events)).toBe(true);
    expect(Object.keys(hook)).toEqual(['events']);
    expect(isHookDefinition(hook)).toBe(true);
    expect(isHookDefinition({ events: {} })).toBe(false);
    const event: SessionEvent<'turn.completed'> = { type: 'turn.completed', index: 0, sessionId: 's', at: 0, data: { result: 'ok' } };
    await hook.events['turn.completed'](event, {} as SessionHookContext);
    expect(seen).toEqual(['ok']);
    expect(hookEventKeys(hook)).toEqual(['turn.completed']);
  });

  it('createSessionHookContext gives a unit test real kv, files and artifacts to inspect', async () => {
    const files = new InMemoryFileStore();
    const hook = defineHook({
      events: {
        async 'message.received'(event, ctx) {
          await ctx.host.files.append('journal.md', `${event.data.text}\n`);
          await ctx.host.kv.set(`${ctx.session.id}:seen`, true);
          await ctx.artifacts.create({ name: 'copy.txt', content: event.data.text });
        },
      },
    });
    const ctx = createSessionHookContext({ session: { id: 's1', purpose: 'eval' }, agentName: 'bot', turnId: 't1', files });
    await hook.events['message.received']({ type: 'message.received', index: 0, sessionId: 's1', turnId: 't1', at: 0, data: { text: 'hello' } }, ctx);
    expect(ctx.session).toMatchObject({ id: 's1', purpose: 'eval', mode: 'chat' });
    expect(await ctx.host.files.read('journal.md')).toBe('hello\n');
    expect(await ctx.host.files.read('journal.md', { scope: 'deployment' })).toBeUndefined();
    expect(await ctx.host.kv.get('s1:seen')).toBe(true);
    expect((await ctx.artifacts.list()).map((a) => [a.name, a.tags])).toEqual([['copy.txt', { sessionId: 's1', turnId: 't1' }]]);
    expect(await files.list('session/bot/s1')).toHaveLength(1);
  });

  it('rule 161: artifacts created within one millisecond still list oldest first (their ids sort in creation order)', async () => {
    const ctx = createSessionHookContext({ session: { id: 's1' }, agentName: 'bot', turnId: 't1' });
    const names = Array.from({ length: 200 }, (_, i) => `a${i}.txt`);
    for (const name of names) await ctx.artifacts.create({ name, content: name });
    const listed = await ctx.artifacts.list();
    expect(listed.map((a) => a.name)).toEqual(names);
    expect(new Set(listed.map((a) => a.id)).size).toBe(names.length);
  });

  it('refuses keys outside the vocabulary and handlers that are not functions', () => {
    expect(() => defineHook({ events: { 'turn.complete': () => {} } as never })).toThrow(ConfigError);
    expect(() => defineHook({ events: { 'turn.completed': 'nope' } as never })).toThrow(/not a function/);
    expect(() => defineHook({} as never)).toThrow(/events map/);
  });
});

describe('rule 177: hook names', () => {
  it('are path-like and cannot contain "__"', () => {
    expect(hookNameProblem('memory')).toBeUndefined();
    expect(hookNameProblem('audit/usage')).toBeUndefined();
    expect(hookNameProblem('my_hook-2.v1')).toBeUndefined();
    expect(hookNameProblem('pack__usage')).toMatch(/cannot contain "__"/);
    for (const bad of ['', '/abs', 'a//b', 'a/', 'sp ace', '../up', '.hidden']) expect(hookNameProblem(bad), bad).toBeDefined();
    expect(() => mountHook('x__y', defineHook({ events: {} }))).toThrow(ConfigError);
    expect(() => mountHook('x', { events: {} } as never)).toThrow(/not a defineHook/);
  });

  it('rule 180: pack namespaces and names are checked too', () => {
    const hook = defineHook({ events: { '*': () => {} } });
    expect(() => mountHooks('a__b', { x: hook })).toThrow(ConfigError);
    expect(() => mountHooks('a/b', { x: hook })).toThrow(ConfigError);
    expect(() => mountHooks('ns', { 'x__y': hook })).toThrow(ConfigError);
    expect(mountHooks('ns', { 'sub/x': hook }).hooks.map((h) => h.name)).toEqual(['ns__sub/x']);
  });
});
