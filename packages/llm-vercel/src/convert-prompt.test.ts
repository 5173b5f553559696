import type { Message } from '@helix-agents/sdk';
import { describe, expect, it } from 'vitest';
import { PromptConverter, convertMessage } from './convert-prompt.js';
import { user } from './__tests__/step.js';
const assistantCalls = (...ids: string[]): Message => ({
  role: 'assistant',
  content: '',
  toolCalls: ids.map((id) => ({ id, name: 'lookup', arguments: { id } })),
});
const result = (id: string, ...content: [unknown?]): Message => ({ role: 'tool', toolCallId: id, toolName: 'lookup', content: content.length === 0 ? { ok: id } : content[0] });

describe('convertMessage', () => {
  it('converts each role to its V3 form', () => {
    expect(convertMessage({ role: 'system', content: 'note' })).toEqual({ role: 'system', content: 'note' });
    expect(convertMessage(user('hi'))).toEqual({ role: 'user', content: [{ type: 'text', text: 'hi' }] });
    expect(convertMessage({ role: 'assistant', content: 'plain', reasoning: 'hidden' })).toEqual({ role: 'assistant', content: [{ type: 'text', text: 'plain' }] });
    expect(convertMessage({ role: 'assistant', content: 'Let me look.', toolCalls: [{ id: 'c1', name: 'lookup', arguments: '{"broken' }] })).toEqual({
      role: 'assistant',
      content: [
        { type: 'text', text: 'Let me look.' },
        { type: 'tool-call', toolCallId: 'c1', toolName: 'lookup', input: '{"broken' },
      ],
    });
    expect(convertMessage(assistantCalls('c1'))).toEqual({ role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'lookup', input: { id: 'c1' } }] });
  });

  it('a user message with attachments: its text, then a file part each (base64 as is, a URL as a URL); no empty text part', () => {
    const withFiles: Message = {
      role: 'user',
      content: 'Look',
      attachments: [
        { type: 'image', mediaType: 'image/png', data: 'iVBORw0KGgo=' },
        { type: 'file', mediaType: 'application/pdf', filename: 'a.pdf', url: 'https://example.com/a.pdf' },
      ],
    };
    expect(convertMessage(withFiles)).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'Look' },
        { type: 'file', mediaType: 'image/png', data: 'iVBORw0KGgo=' },
        { type: 'file', mediaType: 'application/pdf', filename: 'a.pdf', data: new URL('https://example.com/a.pdf') },
      ],
    });
    const onlyImage = convertMessage({ role: 'user', content: '', attachments: [{ type: 'image', mediaType: 'image/*', url: 'https://example.com/c.jpg' }] });
    expect(onlyImage).toEqual({ role: 'user', content: [{ type: 'file', mediaType: 'image/*', data: new URL('https://example.com/c.jpg') }] });
  });

  it('sends tool outputs as text or JSON, and failed calls as error-text or error-json', () => {
    const output = (message: Message): unknown => (convertMessage(message) as { output: unknown }).output;
    expect(output(result('a', { rows: 2 }))).toEqual({ type: 'json', value: { rows: 2 } });
    expect(output(result('a', 'plain text'))).toEqual({ type: 'text', value: 'plain text' });
    expect(output(result('a', undefined))).toEqual({ type: 'json', value: null });
    expect(output({ role: 'tool', toolCallId: 'a', toolName: 't', content: 'Tool "t" failed: boom', isError: true })).toEqual({ type: 'error-text', value: 'Tool "t" failed: boom' });
    expect(output({ role: 'tool', toolCallId: 'a', toolName: 't', content: { issues: ['q is required'] }, isError: true })).toEqual({ type: 'error-json', value: { issues: ['q is required'] } });
  });
});

describe('PromptConverter', () => {
  it('leads with the system prompt and merges consecutive tool results into one tool message', () => {
    const prompt = new PromptConverter().convert('sys', [user('q'), assistantCalls('a', 'b'), result('a'), result('b'), { role: 'assistant', content: 'done' }]);
    expect(prompt.map((message) => message.role)).toEqual(['system', 'user', 'assistant', 'tool', 'assistant']);
    expect(prompt[3]).toEqual({
      role: 'tool',
      content: [
        { type: 'tool-result', toolCallId: 'a', toolName: 'lookup', output: { type: 'json', value: { ok: 'a' } } },
        { type: 'tool-result', toolCallId: 'b', toolName: 'lookup', output: { type: 'json', value: { ok: 'b' } } },
      ],
    });
  });

  it('converts only new messages when the same array grows, without touching earlier prompts', () => {
    const converter = new PromptConverter();
    const messages: Message[] = [user('q'), assistantCalls('a')];
    const first = converter.convert('sys', messages);
    expect(converter.conversions).toBe(2);
    messages.push(result('a'), { role: 'assistant', content: 'answer' }, user('more'));
    const second = converter.convert('sys', messages);
    expect(converter.conversions).toBe(5);
    expect(first).toHaveLength(3);
    expect(second).toHaveLength(6);
    for (let i = 0; i < first.length; i++) expect(second[i]).toBe(first[i]);
    // Asking again for the same conversation converts nothing and returns the same prompt.
    expect(converter.convert('sys', messages)).toBe(second);
    expect(converter.conversions).toBe(5);
  });

  it('takes the fast path for a new array with the same prefix (immutable-state style)', () => {
    const converter = new PromptConverter();
    let messages: readonly Message[] = [user('q')];
    const prompts = [converter.convert(undefined, messages)];
    for (let step = 0; step < 50; step++) {
      messages = [...messages, { role: 'assistant', content: `a${step}` }, user(`u${step}`)];
      prompts.push(converter.convert(undefined, messages));
    }
    expect(converter.conversions).toBe(101);
    expect(prompts.at(-1)).toHaveLength(101);
    expect(prompts.at(-1)![0]).toBe(prompts[0]![0]);
  });

  it('costs one conversion per new message at any history length', () => {
    const converter = new PromptConverter();
    const messages: Message[] = [];
    for (let i = 0; i < 2_000; i++) messages.push(i % 2 === 0 ? user(`u${i}`) : { role: 'assistant', content: `a${i}` });
    converter.convert('sys', messages);
    const before = converter.conversions;
    messages.push(user('one more'));
    const prompt = converter.convert('sys', messages);
    expect(converter.conversions - before).toBe(1);
    expect(prompt).toHaveLength(2_002);
  });

  it('keeps interleaved conversations incremental', () => {
    const converter = new PromptConverter();
    const a: Message[] = [user('a0')];
    const b: Message[] = [user('b0')];
    for (let step = 1; step <= 10; step++) {
      a.push({ role: 'assistant', content: `a${step}` });
      converter.convert('sys', a);
      b.push({ role: 'assistant', content: `b${step}` });
      converter.convert('sys', b);
    }
    expect(converter.conversions).toBe(a.length + b.length);
  });

  it('stays correct when more conversations interleave than it keeps', () => {
    const converter = new PromptConverter({ maxParked: 1 });
    const conversations: Message[][] = [[user('a')], [user('b')], [user('c')]];
    for (let step = 0; step < 5; step++) {
      for (const messages of conversations) {
        messages.push({ role: 'assistant', content: `${step}` }, result(`t${step}`));
        expect(converter.convert('sys', messages)).toEqual(new PromptConverter().convert('sys', messages));
      }
    }
    // Evicted prompts are rebuilt from the per-message cache: still one conversion per message.
    expect(converter.conversions).toBe(conversations.reduce((sum, messages) => sum + messages.length, 0));
  });

  it('sees a rewritten history (a redacting hook) even when the last message is unchanged', () => {
    const converter = new PromptConverter();
    const secret = user('my password is hunter2');
    const last = user('what now?');
    const messages = [secret, { role: 'assistant', content: 'noted' } as const, last];
    converter.convert(undefined, messages);
    const redacted = [user('my password is [redacted]'), messages[1]!, last];
    const prompt = converter.convert(undefined, redacted);
    expect(prompt[0]).toEqual({ role: 'user', content: [{ type: 'text', text: 'my password is [redacted]' }] });
    // Only the replaced message was converted again.
    expect(converter.conversions).toBe(4);
  });

  it('rebuilds correctly when a conversation forks from an older prefix', () => {
    const converter = new PromptConverter();
    const base = [user('q'), { role: 'assistant', content: 'a1' } as const];
    converter.convert(undefined, base);
    converter.convert(undefined, [...base, user('branch one')]);
    const fork = converter.convert(undefined, [...base, user('branch two')]);
    expect(fork.map((message) => (message.role === 'user' || message.role === 'assistant' ? (message.content[0] as { text: string }).text : ''))).toEqual(['q', 'a1', 'branch two']);
  });

  it('merges a tool result that arrives in a later request into a copy of the open tool message', () => {
    const converter = new PromptConverter();
    const messages: Message[] = [user('q'), assistantCalls('a', 'b'), result('a')];
    const first = converter.convert(undefined, messages);
    const firstTool = first[2]!;
    messages.push(result('b'));
    const second = converter.convert(undefined, messages);
    expect(second).toHaveLength(3);
    expect(second[2]).not.toBe(firstTool);
    expect((second[2]!.content as unknown[]).length).toBe(2);
    expect((firstTool.content as unknown[]).length).toBe(1);
  });

  it('follows a system prompt that changes, appears or disappears between steps', () => {
    const converter = new PromptConverter();
    const messages: Message[] = [user('q')];
    expect(converter.convert('v1', messages)[0]).toEqual({ role: 'system', content: 'v1' });
    messages.push({ role: 'assistant', content: 'a' });
    const changed = converter.convert('v2', messages);
    expect(changed.map((message) => message.role)).toEqual(['system', 'user', 'assistant']);
    expect(changed[0]).toEqual({ role: 'system', content: 'v2' });
    messages.push(user('again'));
    expect(converter.convert(undefined, messages).map((message) => message.role)).toEqual(['user', 'assistant', 'user']);
    messages.push({ role: 'assistant', content: 'b' });
    expect(converter.convert('v3', messages).map((message) => message.role)).toEqual(['system', 'user', 'assistant', 'user', 'assistant']);
    expect(converter.conversions).toBe(4);
  });
});
