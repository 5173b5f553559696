// A turn's input checked and converted (runtime/turn-input.ts), refusal by refusal, as the mutation run of
// that file found it: the existing tests checked that hostile arrays are refused, not which check refused
// them, so a check could go without a test failing (the next one refused the same input). Each case here
// names the exact place and problem; the accepted shapes pin each conversion.
import { describe, expect, it } from 'vitest';
import { AgentError, DEFAULT_RESOURCE_LIMITS, normalizeTurnInput, type ResolvedLimits } from '../index.js';

const HINT = 'Pass a string, or an array of AI SDK ModelMessages or UIMessages (user, assistant and tool messages, ending with a user message). See docs/input.md.';

async function refusal(input: unknown, limits: ResolvedLimits = DEFAULT_RESOURCE_LIMITS): Promise<AgentError> {
  const error = await normalizeTurnInput(input, limits).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!AgentError.isInstance(error)) throw new Error(`expected a refusal, got ${String(error)}`);
  return error;
}

const user = { role: 'user', content: 'hi' };
const call = (id: string, name = 'look') => ({ role: 'assistant', content: [{ type: 'tool-call', toolCallId: id, toolName: name, input: {} }] });
const result = (id: string, output: unknown = { type: 'json', value: 1 }, name = 'look') => ({ role: 'tool', content: [{ type: 'tool-result', toolCallId: id, toolName: name, output }] });
const uiUser = (parts: unknown[], role = 'user') => ({ id: 'u1', role, parts });

// [title, input, where, problem]
const refusals: [string, unknown, string, string][] = [
  ['null', null, 'the input', 'expected a string or an array of messages, got null'],
  ['a number', 42, 'the input', 'expected a string or an array of messages, got number'],
  ['an object', { role: 'user' }, 'the input', 'expected a string or an array of messages, got object'],
  ['an empty array', [], 'the input', 'the array holds no message'],
  ['more than 1,000 messages', Array.from({ length: 1001 }, () => user), 'the input', 'the array holds 1001 messages, more than 1000'],
  ['a message that is not an object', [user, 'hi'], 'message 1', 'a message must be an object'],
  ['a null message', [null], 'message 0', 'a message must be an object'],
  ['a message with neither content nor parts', [user, { role: 'user' }], 'message 1', 'a message needs `content` (a ModelMessage) or `parts` (a UIMessage)'],
  ['parts that are not an array and no content', [{ role: 'user', parts: 'x' }], 'message 0', 'a message needs `content` (a ModelMessage) or `parts` (a UIMessage)'],
  ['a mix of ModelMessages and UIMessages', [uiUser([{ type: 'text', text: 'a' }]), user], 'the input', 'the array mixes ModelMessages and UIMessages'],
  ['a mix the other way round', [user, uiUser([{ type: 'text', text: 'a' }])], 'the input', 'the array mixes ModelMessages and UIMessages'],
  ['a UIMessage of another role', [uiUser([{ type: 'text', text: 'a' }], 'tool')], 'message 0', 'a UIMessage\'s role must be user, assistant or system, got "tool"'],
  ['a UIMessage without a role', [{ id: 'x', parts: [{ type: 'text', text: 'a' }] }], 'message 0', "a UIMessage's role must be user, assistant or system, got nothing"],
  ['a UIMessage part that is not an object', [uiUser([{ type: 'text', text: 'a' }, 7])], 'message 0, part 1', 'a part must be an object with a string `type`'],
  ['a UIMessage part without a string type', [uiUser([{ type: 3 }])], 'message 0, part 0', 'a part must be an object with a string `type`'],
  ['a null UIMessage part', [uiUser([null])], 'message 0, part 0', 'a part must be an object with a string `type`'],
  ['a system message', [{ role: 'system', content: 'be nice' }, user], 'message 0', 'system messages are not taken'],
  ['an unknown role', [user, { role: 'robot', content: 'x' }, user], 'message 1', 'unknown role "robot"'],
  ['no role', [{ content: 'x' }, user], 'message 0', 'unknown role undefined'],
  ['content that is neither a string nor an array', [{ role: 'user', content: 5 }], 'message 0', '`content` must be a string or an array of parts'],
  ['a part that is not an object', [{ role: 'user', content: ['x'] }], 'message 0, part 0', 'a part must be an object with a string `type`'],
  ['a null part', [{ role: 'user', content: [{ type: 'text', text: 'a' }, null] }], 'message 0, part 1', 'a part must be an object with a string `type`'],
  ['a part without a string type', [{ role: 'user', content: [{ text: 'a' }] }], 'message 0, part 0', 'a part must be an object with a string `type`'],
  ['a text part without text', [{ role: 'user', content: [{ type: 'text', text: 1 }] }], 'message 0, part 0', 'a text part needs a string `text`'],
  ['an empty user message', [{ role: 'user', content: '  ' }], 'message 0', 'the user message is empty'],
  ['a user message with empty parts', [{ role: 'user', content: [{ type: 'text', text: ' ' }] }], 'message 0', 'the user message has no text and no image or file'],
  ['a user part of another type', [{ role: 'user', content: [{ type: 'reasoning', text: 'a' }] }], 'message 0, part 0', 'a user message takes text, image and file parts, not "reasoning"'],
  ['an assistant part of another type', [{ role: 'assistant', content: [{ type: 'image', image: 'x' }] }, user], 'message 0, part 0', 'an assistant message takes text, reasoning and tool-call parts, not "image"'],
  ['a provider-executed tool call', [{ role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c', toolName: 't', input: {}, providerExecuted: true }] }, user], 'message 0, part 0', 'an assistant message takes text, reasoning and tool-call parts, not "tool-call" (provider-executed)'],
  ['an assistant text part without text', [{ role: 'assistant', content: [{ type: 'text' }] }, user], 'message 0, part 0', 'a text part needs a string `text`'],
  ['a reasoning part without text', [{ role: 'assistant', content: [{ type: 'reasoning', text: null }] }, user], 'message 0, part 0', 'a text part needs a string `text`'],
  ['a tool call without an id', [{ role: 'assistant', content: [{ type: 'tool-call', toolName: 't' }] }, user], 'message 0, part 0', 'toolCallId must be a non-empty string of at most 256 characters'],
  ['a tool call with an empty id', [{ role: 'assistant', content: [{ type: 'tool-call', toolCallId: '', toolName: 't' }] }, user], 'message 0, part 0', 'toolCallId must be a non-empty string of at most 256 characters'],
  ['a tool call with an id of 257 characters', [{ role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'i'.repeat(257), toolName: 't' }] }, user], 'message 0, part 0', 'toolCallId must be a non-empty string of at most 256 characters'],
  ['a tool call without a name', [{ role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c', toolName: 5 }] }, user], 'message 0, part 0', 'toolName must be a non-empty string of at most 256 characters'],
  ['a tool call with an empty name', [{ role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c', toolName: '' }] }, user], 'message 0, part 0', 'toolName must be a non-empty string of at most 256 characters'],
  ['a tool call with a name of 257 characters', [{ role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c', toolName: 'n'.repeat(257) }] }, user], 'message 0, part 0', 'toolName must be a non-empty string of at most 256 characters'],
  ['a tool part of another type', [call('c1'), { role: 'tool', content: [{ type: 'text', text: 'x' }] }, user], 'message 1, part 0', 'a tool message takes tool-result parts, not "text"'],
  ['a tool result without an id', [call('c1'), { role: 'tool', content: [{ type: 'tool-result', toolName: 'look', output: { type: 'json', value: 1 } }] }, user], 'message 1, part 0', 'toolCallId must be a non-empty string of at most 256 characters'],
  ['a text output without a string', [call('c1'), result('c1', { type: 'text', value: 1 }), user], 'message 1, part 0', 'a text output needs a string value'],
  ['an error-text output without a string', [call('c1'), result('c1', { type: 'error-text' }), user], 'message 1, part 0', 'a error-text output needs a string value'],
  ['an output of another type', [call('c1'), result('c1', { type: 'content', value: [] }), user], 'message 1, part 0', 'a tool result output must be text, json, error-text, error-json or execution-denied'],
  ['no output', [call('c1'), result('c1', null), user], 'message 1, part 0', 'a tool result output must be text, json, error-text, error-json or execution-denied'],
  ['a result for no call', [result('c9'), user], 'row 0', 'the tool result for call "c9" (look) answers no open call of that tool'],
  ['a result naming another tool', [call('c1'), result('c1', { type: 'json', value: 1 }, 'other'), user], 'row 1', 'the tool result for call "c1" (other) answers no open call of that tool'],
  ['a second result for one call', [call('c1'), result('c1'), result('c1'), user], 'row 2', 'the tool result for call "c1" (look) answers no open call of that tool'],
  ['a call left open before the next message', [call('c1'), user], 'row 1', 'tool call(s) "c1" have no result before this message'],
  ['two calls left open', [{ role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'a', toolName: 't' }, { type: 'tool-call', toolCallId: 'b', toolName: 't' }] }, { role: 'assistant', content: 'x' }, user], 'row 1', 'tool call(s) "a", "b" have no result before this message'],
  ['a call id used twice', [call('c1'), result('c1'), call('c1'), result('c1'), user], 'row 2', 'tool call id "c1" is used twice'],
  ['no user message last', [user, { role: 'assistant', content: 'bye' }], 'the input', 'the last message must be a user message (the turn answers it)'],
  ['a tool row last', [call('c1'), result('c1')], 'the input', 'the last message must be a user message (the turn answers it)'],
  ['a BigInt in a tool call', [{ role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c', toolName: 't', input: { n: 1n } }] }, { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c', toolName: 't', output: { type: 'json', value: 1 } }] }, user], 'the input', 'the messages cannot be stored as JSON (a BigInt or a cycle in a tool call or result)'],
];

describe('normalizeTurnInput: every refusal names its place and problem', () => {
  it.each(refusals)('%s', async (_title, input, where, problem) => {
    const error = await refusal(input);
    expect(error.info.code).toBe('run_invalid_input');
    expect(error.info.message).toBe(`The turn input is invalid at ${where}: ${problem}; nothing was written.`);
    expect(error.info.details).toEqual({ where });
    expect(error.info.hint).toBe(problem === 'system messages are not taken' ? "Put instructions in the agent's system prompt; a turn's input holds user, assistant and tool messages." : HINT);
  });

  it('UIMessages the AI SDK cannot convert (a part whose text throws when read) are refused with its reason', async () => {
    const hostile = {
      type: 'text',
      get text(): string {
        throw new Error('hostile getter');
      },
    };
    const error = await refusal([uiUser([hostile])]);
    expect(error.info.code).toBe('run_invalid_input');
    expect(error.info.message).toBe('The turn input is invalid at the input: the AI SDK could not convert the UIMessages (hostile getter); nothing was written.');
  });
});

describe('normalizeTurnInput: sizes', () => {
  it('a string input may be maxInputChars long, not one more', async () => {
    const limits = { ...DEFAULT_RESOURCE_LIMITS, maxInputChars: 5 };
    expect(await normalizeTurnInput('12345', limits)).toEqual({ text: '12345' });
    const error = await refusal('123456', limits);
    expect(error.info).toMatchObject({ code: 'run_input_too_large', message: 'The input is 6 characters long, over the limit of 5 (limits.maxInputChars); nothing was written.', details: { what: 'input', size: 6, max: 5, limit: 'maxInputChars' } });
  });

  it('an array input is measured as the JSON of its rows, with attachments counted, not their data; it may be exactly at the limit', async () => {
    const input = [{ role: 'user', content: 'hello' }];
    const size = JSON.stringify([{ role: 'user', content: 'hello' }]).length;
    expect((await normalizeTurnInput(input, { ...DEFAULT_RESOURCE_LIMITS, maxInputChars: size })).rows).toEqual(input);
    const error = await refusal(input, { ...DEFAULT_RESOURCE_LIMITS, maxInputChars: size - 1 });
    expect(error.info).toMatchObject({ code: 'run_input_too_large', details: { what: 'input', size, max: size - 1, limit: 'maxInputChars' } });
    // A large attachment's bytes count toward maxInputFileBytes, not maxInputChars.
    const data = Buffer.alloc(3000, 1).toString('base64');
    const withFile = [{ role: 'user', content: [{ type: 'text', text: 'see' }, { type: 'file', data, mediaType: 'application/octet-stream' }] }];
    const rowJson = JSON.stringify([{ role: 'user', content: 'see', attachments: 1 }]).length;
    expect((await normalizeTurnInput(withFile, { ...DEFAULT_RESOURCE_LIMITS, maxInputChars: rowJson })).text).toBe('see');
    expect((await refusal(withFile, { ...DEFAULT_RESOURCE_LIMITS, maxInputChars: rowJson - 1 })).info.details).toMatchObject({ size: rowJson, limit: 'maxInputChars' });
  });

  it('the images and files may be maxInputFileBytes in all, not one byte more', async () => {
    const data = Buffer.alloc(100, 1).toString('base64');
    const input = [{ role: 'user', content: [{ type: 'file', data, mediaType: 'application/octet-stream' }, { type: 'file', data, mediaType: 'application/octet-stream' }] }];
    expect((await normalizeTurnInput(input, { ...DEFAULT_RESOURCE_LIMITS, maxInputFileBytes: 200 })).rows).toHaveLength(1);
    const error = await refusal(input, { ...DEFAULT_RESOURCE_LIMITS, maxInputFileBytes: 199 });
    expect(error.info).toMatchObject({
      code: 'run_input_too_large',
      message: "The input's images and files are 200 bytes, over the limit of 199 (limits.maxInputFileBytes); nothing was written.",
      details: { what: 'input files', size: 200, max: 199, limit: 'maxInputFileBytes' },
      hint: 'Send smaller or fewer files, pass a large file as an http(s) URL the provider fetches, or raise limits.maxInputFileBytes.',
    });
  });

  it('1,000 messages are taken', async () => {
    const input = Array.from({ length: 1000 }, (_, i) => (i % 2 === 0 ? { role: 'user', content: `u${i}` } : { role: 'assistant', content: `a${i}` }));
    input[999] = { role: 'user', content: 'last' };
    expect((await normalizeTurnInput(input, DEFAULT_RESOURCE_LIMITS)).rows).toHaveLength(1000);
  });
});

describe('normalizeTurnInput: conversions', () => {
  it('tool outputs of every kind become result rows; an assistant tool call without input gets {}', async () => {
    const calls = { role: 'assistant', content: ['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((id) => ({ type: 'tool-call', toolCallId: id, toolName: 't' })) };
    const outputs = [
      { type: 'text', value: 'plain' },
      { type: 'error-text', value: 'broke' },
      { type: 'json', value: { x: 1 } },
      { type: 'json' },
      { type: 'error-json', value: { why: 'no' } },
      { type: 'error-json' },
      { type: 'execution-denied', reason: 'the user said no' },
    ];
    const tool = { role: 'tool', content: outputs.map((output, i) => ({ type: 'tool-result', toolCallId: 'abcdefg'[i], toolName: 't', output })) };
    const denied = [{ role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'h', toolName: 't' }] }, { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'h', toolName: 't', output: { type: 'execution-denied' } }] }];
    const { rows } = await normalizeTurnInput([calls, tool, ...denied, user], DEFAULT_RESOURCE_LIMITS);
    expect(rows?.[0]).toEqual({ role: 'assistant', content: '', toolCalls: ['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((id) => ({ id, name: 't', arguments: {} })) });
    expect(rows?.slice(1, 8)).toEqual([
      { role: 'tool', toolCallId: 'a', toolName: 't', content: 'plain' },
      { role: 'tool', toolCallId: 'b', toolName: 't', content: 'broke', isError: true },
      { role: 'tool', toolCallId: 'c', toolName: 't', content: { x: 1 } },
      { role: 'tool', toolCallId: 'd', toolName: 't', content: null },
      { role: 'tool', toolCallId: 'e', toolName: 't', content: { why: 'no' }, isError: true },
      { role: 'tool', toolCallId: 'f', toolName: 't', content: null, isError: true },
      { role: 'tool', toolCallId: 'g', toolName: 't', content: 'the user said no', isError: true },
    ]);
    expect(rows?.[9]).toEqual({ role: 'tool', toolCallId: 'h', toolName: 't', content: 'The call was denied.', isError: true });
  });

  it('assistant messages: a string as it is; text and reasoning parts joined without separators; no toolCalls or reasoning when there are none', async () => {
    const { rows } = await normalizeTurnInput(
      [
        { role: 'assistant', content: 'plain' },
        { role: 'assistant', content: [{ type: 'text', text: 'a' }, { type: 'reasoning', text: 'r1' }, { type: 'text', text: 'b' }, { type: 'reasoning', text: 'r2' }] },
        { role: 'assistant', content: [{ type: 'text', text: 'only text' }] },
        { role: 'user', content: [{ type: 'text', text: 'x' }, { type: 'text', text: 'y' }] },
      ],
      DEFAULT_RESOURCE_LIMITS,
    );
    expect(rows).toEqual([
      { role: 'assistant', content: 'plain' },
      { role: 'assistant', content: 'ab', reasoning: 'r1r2' },
      { role: 'assistant', content: 'only text' },
      { role: 'user', content: 'x\ny' },
    ]);
    expect(Object.keys(rows?.[2] ?? {})).toEqual(['role', 'content']);
    expect(Object.keys(rows?.[3] ?? {})).toEqual(['role', 'content']);
  });

  it('a user message of only an image is taken; its text is empty', async () => {
    const { text, rows } = await normalizeTurnInput([{ role: 'user', content: [{ type: 'image', image: 'https://example.com/a.png' }] }], DEFAULT_RESOURCE_LIMITS);
    expect(text).toBe('');
    expect(rows).toEqual([{ role: 'user', content: '', attachments: [{ type: 'image', mediaType: 'image/*', url: 'https://example.com/a.png' }] }]);
  });

  it('ids and names of 256 characters are taken; a message with both content and parts is a ModelMessage; a system UIMessage is refused as a system message', async () => {
    const id = 'i'.repeat(256);
    const name = 'n'.repeat(256);
    const { rows } = await normalizeTurnInput([{ role: 'assistant', content: [{ type: 'tool-call', toolCallId: id, toolName: name, input: {} }] }, result(id, { type: 'json', value: 1 }, name), user], DEFAULT_RESOURCE_LIMITS);
    expect(rows?.[0]).toEqual({ role: 'assistant', content: '', toolCalls: [{ id, name, arguments: {} }] });
    expect((await normalizeTurnInput([{ role: 'user', content: 'as content', parts: [] }], DEFAULT_RESOURCE_LIMITS)).rows).toEqual([{ role: 'user', content: 'as content', parts: [] }].map(({ role, content }) => ({ role, content })));
    const system = await refusal([{ id: 's', role: 'system', parts: [{ type: 'text', text: 'be nice' }] }, uiUser([{ type: 'text', text: 'a' }])]);
    expect(system.info.message).toBe('The turn input is invalid at message 0: system messages are not taken; nothing was written.');
  });

  it('UIMessages are converted through the AI SDK: user text and an assistant reply', async () => {
    const { text, rows } = await normalizeTurnInput(
      [uiUser([{ type: 'text', text: 'first' }]), { id: 'a1', role: 'assistant', parts: [{ type: 'text', text: 'reply' }] }, { id: 'u2', role: 'user', parts: [{ type: 'text', text: 'second' }] }],
      DEFAULT_RESOURCE_LIMITS,
    );
    expect(text).toBe('second');
    expect(rows).toEqual([
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 'reply' },
      { role: 'user', content: 'second' },
    ]);
  });
});
