import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createHookManager, defineTool, guardPolicy, type CustomChunk, type HookDecisionChunk, type Message, type ToolResultMessage } from '../index.js';
import { createScriptedModel } from '../testing/index.js';
import { setup, textAgent, throwing } from '../__tests__/harness.js';
import { createRedactionHook, createRedactor, ibanCheck, luhnCheck, REDACTION_EVENT, type RedactionEvent } from './redaction.js';

const OPENAI_KEY = 'sk-proj-4fG7hJ2kL9mN3pQ8rS1tV6wX0yZ5aB';
const PRIVATE_KEY = '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA4111111111111111abc\n-----END RSA PRIVATE KEY-----';

describe('checksums', () => {
  it('luhnCheck accepts valid card numbers and refuses others', () => {
    expect(luhnCheck('4111111111111111')).toBe(true);
    expect(luhnCheck('5555555555554444')).toBe(true);
    expect(luhnCheck('79927398713')).toBe(true);
    expect(luhnCheck('4111111111111112')).toBe(false);
    expect(luhnCheck('4111 1111 1111 1111')).toBe(false);
    expect(luhnCheck('')).toBe(false);
    expect(luhnCheck('0')).toBe(false);
  });

  it('ibanCheck runs the mod-97 check', () => {
    expect(ibanCheck('GB82 WEST 1234 5698 7654 32')).toBe(true);
    expect(ibanCheck('DE89370400440532013000')).toBe(true);
    expect(ibanCheck('GB82 WEST 1234 5698 7654 33')).toBe(false);
    expect(ibanCheck('GB82')).toBe(false);
  });
});

describe('createRedactor patterns', () => {
  const redactor = createRedactor();
  const kindsOf = (text: string) => redactor.redactText(text).kinds;

  it.each([
    ['api_key', `key: ${OPENAI_KEY}`],
    ['api_key', 'stripe sk_live_51HqLyjWDarjtT1zdp7dc'],
    ['api_key', 'google AIzaSyA1bC2dE3fG4hI5jK6lM7nO8pQ9rS0tU1v'],
    ['aws_access_key', 'AKIAIOSFODNN7EXAMPLE'],
    ['aws_secret_key', 'aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'],
    ['github_token', 'ghp_abcdefghijklmnopqrstuvwxyz0123456789'],
    ['slack_token', 'xoxb-123456789012-abcdefghij'],
    ['jwt', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U'],
    ['bearer_token', 'Authorization: Bearer abcdef0123456789abcdef'],
    ['private_key', PRIVATE_KEY],
    ['url_password', 'postgres://admin:s3cr3t-pw@db.internal:5432/app'],
    ['credential', 'password=hunter22'],
    ['credential', '{"api_key": "abc123def456"}'],
    ['email', 'write to jane.doe+work@example.co.uk please'],
    ['phone', 'call +44 20 7946 0958'],
    ['phone', 'call +1 (555) 123-4567'],
    ['phone', 'call (555) 123-4567 or'],
    ['phone', 'call 555-123-4567.'],
    ['credit_card', 'card 4111 1111 1111 1111 exp 12/29'],
    ['credit_card', 'card 5555-5555-5555-4444'],
    ['iban', 'IBAN GB82 WEST 1234 5698 7654 32'],
    ['ssn', 'SSN 123-45-6789'],
  ])('redacts %s in %j', (kind, text) => {
    const r = redactor.redactText(text);
    expect(r.kinds).toEqual({ [kind]: 1 });
    expect(r.count).toBe(1);
    expect(r.value).toContain('[REDACTED]');
  });

  it('keeps the prefix a lookbehind names: "Bearer ", the field name, the URL user', () => {
    expect(redactor.redactText('Bearer abcdef0123456789abcdef').value).toBe('Bearer [REDACTED]');
    expect(redactor.redactText('password: "hunter22"').value).toBe('password: "[REDACTED]"');
    expect(redactor.redactText('postgres://admin:s3cr3t-pw@db.internal/app').value).toBe('postgres://admin:[REDACTED]@db.internal/app');
  });

  it.each([
    ['a card number whose Luhn check fails', 'order 4111 1111 1111 1112'],
    ['a 10-digit id without separators', 'order 1234567890 shipped'],
    ['dates and times', 'on 2024-01-15 at 10:30:00'],
    ['an IPv4 address', 'host 192.168.100.123'],
    ['a version', 'v1.22.333'],
    ['an ISBN', 'ISBN 978-3-16-148410-0'],
    ['an email without a TLD', 'root@localhost'],
    ['a @mention', 'thanks @jane'],
    ['a short "sk-" word', 'we use sk-learn for that'],
    ['"sk-" inside a word', 'task-force-abcdefghijklmnopqrstuvwxyz'],
    ['"Bearer" as a word', 'Bearer of bad news'],
    ['password prose', 'Reset your password at the settings page'],
    ['a short assignment', 'password: none'],
    ['an invalid SSN area', '000-12-3456 and 666-12-3456'],
    ['an IBAN with a bad checksum', 'GB82 WEST 1234 5698 7654 33'],
    ['a 7-digit local number', 'call 555-1234'],
    ['a short plus number', 'score +1 2 3'],
  ])('leaves %s alone', (_what, text) => {
    expect(redactor.redactText(text)).toEqual({ value: text, count: 0, kinds: {} });
  });

  it('finds every pattern in the original text: an overlap is one redaction, a replacement is never matched again', () => {
    const r = redactor.redactText(`${PRIVATE_KEY}\napi_key=${OPENAI_KEY}`);
    expect(r.kinds).toEqual({ private_key: 1, api_key: 1 });
    expect(r.value).toBe('[REDACTED]\napi_key=[REDACTED]');
    expect(kindsOf('a@b.io, c@d.io and 4111111111111111')).toEqual({ email: 2, credit_card: 1 });
  });

  it('takes custom patterns first, a replacement function, and switches for secrets and PII', () => {
    const custom = createRedactor({ patterns: [/\bEMP-\d{5}\b/, { kind: 'ticket', pattern: /\bTCK-\d+/ }], replacement: (kind) => `<${kind}>` });
    expect(custom.redactText('EMP-12345 opened TCK-9 for jane@example.com').value).toBe('<custom> opened <ticket> for <email>');
    expect(createRedactor({ redactSecrets: false }).redactText(`${OPENAI_KEY} jane@example.com`).value).toBe(`${OPENAI_KEY} [REDACTED]`);
    expect(createRedactor({ redactPII: false }).redactText(`${OPENAI_KEY} jane@example.com`).value).toBe('[REDACTED] jane@example.com');
    expect(() => createRedactor({ patterns: ['nope' as never] })).toThrow(/RegExp/);
  });

  it('redactValue walks JSON, redacts secret-named fields whatever they hold, and keeps identity when nothing changed', () => {
    const clean = { a: [1, 'two', { three: null }] };
    expect(redactor.redactValue(clean).value).toBe(clean);
    const r = redactor.redactValue({ user: { email: 'jane@example.com', password: 'x', 'api-key': 'short' }, list: ['555-123-4567', 7], ok: true });
    expect(r.value).toEqual({ user: { email: '[REDACTED]', password: '[REDACTED]', 'api-key': '[REDACTED]' }, list: ['[REDACTED]', 7], ok: true });
    expect(r.kinds).toEqual({ email: 1, secret_field: 2, phone: 1 });
    expect(createRedactor({ redactSecrets: false }).redactValue({ password: 'x' }).count).toBe(0);
  });
});

describe('createRedactionHook in a run', () => {
  function lookupTool() {
    return defineTool({
      name: 'lookup',
      description: 'look a customer up',
      inputSchema: z.object({ id: z.string() }),
      execute: () => ({ email: 'jane@example.com', note: `uses key ${OPENAI_KEY}` }),
    });
  }

  it('redacts outgoing messages (this call only) and tool results (stored too), counting through redaction events', async () => {
    const { executor, stateStore, streamManager } = setup();
    const model = createScriptedModel([{ toolCalls: [{ name: 'lookup', args: { id: 'c-1' }, id: 'l1' }] }, { text: 'done' }]);
    const agent = textAgent([], { llmConfig: { model }, tools: [lookupTool()] });
    const input = 'I am bob@example.org, my card is 4111 1111 1111 1111';
    const handle = await executor.execute(agent, input, { hookManager: createHookManager(createRedactionHook(), { onError: guardPolicy }) });
    expect((await handle.result()).status).toBe('completed');

    const first = JSON.stringify(model.calls[0]!.prompt);
    expect(first).toContain('I am [REDACTED], my card is [REDACTED]');
    expect(first).not.toContain('bob@example.org');
    const second = JSON.stringify(model.calls[1]!.prompt);
    expect(second).not.toContain('jane@example.com');
    expect(second).not.toContain(OPENAI_KEY);
    expect(second).not.toContain('4111');

    const messages = (await stateStore.loadSession(handle.sessionId))!.messages;
    // C4: the user's words are stored as typed; the tool result is stored redacted (afterTool's { result }).
    expect(messages[0]).toEqual({ role: 'user', content: input } satisfies Message);
    expect(messages.find((m): m is ToolResultMessage => m.role === 'tool')!.content).toEqual({ email: '[REDACTED]', note: 'uses key [REDACTED]' });

    const chunks = streamManager.chunks(handle.sessionId);
    const events = chunks.filter((c): c is CustomChunk => c.type === 'custom' && c.eventName === REDACTION_EVENT).map((c) => c.data as RedactionEvent);
    expect(events).toEqual([
      { point: 'beforeLLMCall', count: 2, kinds: { email: 1, credit_card: 1 } },
      { point: 'afterTool', count: 2, kinds: { email: 1, api_key: 1 }, toolCallId: 'l1', toolName: 'lookup' },
      { point: 'beforeLLMCall', count: 2, kinds: { email: 1, credit_card: 1 } },
    ]);
    const audits = chunks.filter((c): c is HookDecisionChunk => c.type === 'hook_decision').map((d) => [d.hookPoint, d.hookName, d.decision]);
    expect(audits).toEqual([
      ['beforeLLMCall', 'redaction', 'rewrite'],
      ['afterTool', 'redaction', 'rewrite'],
      ['beforeLLMCall', 'redaction', 'rewrite'],
    ]);
    const toolEnd = chunks.find((c) => c.type === 'tool_end');
    expect(toolEnd).toMatchObject({ result: { email: '[REDACTED]', note: 'uses key [REDACTED]' } });
  });

  it('makes no rewrite and no event when there is nothing to redact', async () => {
    const { executor, streamManager } = setup();
    const model = createScriptedModel([{ text: 'hello' }]);
    const handle = await executor.execute(textAgent([], { llmConfig: { model } }), 'hi there', { hooks: createRedactionHook() });
    await handle.result();
    expect(streamManager.chunks(handle.sessionId).filter((c) => c.type === 'hook_decision' || c.type === 'custom')).toEqual([]);
  });

  it('fails closed even under guardPolicy: a redaction that throws fails the run before the text leaves', async () => {
    const { executor } = setup();
    const model = createScriptedModel([{ text: 'never' }]);
    const exploding = createRedactionHook({
      patterns: [{ kind: 'boom', pattern: /boom/, validate: throwing('redactor bug') }],
    });
    const result = await (await executor.execute(textAgent([], { llmConfig: { model } }), 'boom', { hookManager: createHookManager(exploding, { onError: guardPolicy }) })).result();
    expect(model.calls).toHaveLength(0);
    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({ code: 'hook_blocked', details: { hook: 'beforeLLMCall', name: 'redaction', threw: true, cause: 'redactor bug' } });
  });
});
