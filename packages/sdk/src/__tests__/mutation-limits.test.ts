// The size limits and stop conditions the mutation run of runtime/limits.ts and stop-conditions.ts found
// loosely pinned: their errors' messages and details, budgets at their edge, the JSON length check at its
// boundary and for every value, the configuration check's message and details, and the input check's edge.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigError, type ToolResultMessage } from '../index.js';
import { checkInputText, checkResourceLimits, jsonLongerThan, resolveLimits, safeJsonLength, stateTooLarge, toolCallRefused, toolResultTooLarge, tooManyMessages } from '../runtime/limits.js';
import type { Spend } from '../runtime/run-books.js';
import { costBudget, emptyReplies, guardsFor, repeatedToolError, tokenBudget, type StepFacts, type StopCondition } from '../runtime/stop-conditions.js';

describe('jsonLongerThan and safeJsonLength', () => {
  it('property: jsonLongerThan(value, max) is the JSON length exactly when it is over max, else undefined, for any JSON value and limit', () => {
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue(), fc.string({ unit: 'binary' })), fc.integer({ min: 1, max: 400 }), (value, max) => {
        const size = JSON.stringify(value).length;
        expect(jsonLongerThan(value, max)).toBe(size > max ? size : undefined);
        expect(jsonLongerThan(value, size)).toBeUndefined();
      }),
    );
  });

  it('a string of control characters, whose JSON is six characters per character, is measured by its JSON, not its length', () => {
    expect(jsonLongerThan('\u0000', 5)).toBe(8);
    expect(jsonLongerThan('\u0001\u0002', 13)).toBe(14);
    expect(jsonLongerThan('\u0001\u0002', 14)).toBeUndefined();
  });

  it('safeJsonLength is 0 for undefined (nothing to store) and undefined for a value JSON cannot hold', () => {
    expect(safeJsonLength(undefined)).toBe(0);
    expect(safeJsonLength({ a: 1 })).toBe(7);
    expect(safeJsonLength({ n: 1n })).toBeUndefined();
  });
});

describe('limit checks', () => {
  it('a limit that is not a positive integer or Infinity is a ConfigError naming where, the limit and the value', () => {
    for (const bad of [0, -1, 1.5, Number.NaN, '10' as unknown as number]) {
      let thrown: unknown;
      try {
        checkResourceLimits({ maxInputChars: bad }, 'Agent "a"');
      } catch (error) {
        thrown = error;
      }
      expect(ConfigError.isInstance(thrown)).toBe(true);
      expect((thrown as ConfigError).message).toBe(`Agent "a": limits.maxInputChars must be a positive integer (or Infinity to turn it off), got ${String(bad)}.`);
      expect((thrown as ConfigError).info.details).toEqual({ limit: 'maxInputChars' });
    }
    expect(() => checkResourceLimits({ maxInputChars: Infinity, maxStateChars: 1 }, 'x')).not.toThrow();
  });

  it('an input text exactly at maxInputChars passes; one character more is run_input_too_large with its message and details', () => {
    const limits = resolveLimits(undefined, { maxInputChars: 5 });
    expect(() => checkInputText('abcde', limits, 'input')).not.toThrow();
    let thrown: unknown;
    try {
      checkInputText('abcdef', limits, 'input');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toMatchObject({
      message: 'The input is 6 characters long, over the limit of 5 (limits.maxInputChars); nothing was written.',
      info: { code: 'run_input_too_large', details: { what: 'input', size: 6, max: 5, limit: 'maxInputChars' } },
    });
  });
});

describe('the errors of the size limits', () => {
  it('tool_result_too_large, tool_calls_exceeded, run_state_too_large and run_too_many_messages say what was over which limit', () => {
    expect(toolResultTooLarge('fetch', 12, 10).info).toMatchObject({
      code: 'tool_result_too_large',
      message: 'The result of tool "fetch" is 12 characters long, over the limit of 10; it was not stored.',
      details: { tool: 'fetch', size: 12, max: 10, limit: 'maxToolResultChars' },
    });
    expect(toolCallRefused({ id: 'c', name: 'fetch', arguments: {} }, 3, 4, 2).info).toMatchObject({
      code: 'tool_calls_exceeded',
      message: 'Call 3 of 4 ("fetch") was not run: one reply may make at most 2 tool calls. Make the rest in a later step.',
      details: { tool: 'fetch', position: 3, total: 4, max: 2, limit: 'maxToolCallsPerStep' },
    });
    expect(stateTooLarge(30, 20).info).toMatchObject({
      code: 'run_state_too_large',
      message: 'The state is 30 characters long as JSON, over the limit of 20 (limits.maxStateChars); the writes that grew it were not committed.',
      details: { size: 30, max: 20, limit: 'maxStateChars' },
    });
    expect(tooManyMessages(9, 8, true).info).toMatchObject({
      code: 'run_too_many_messages',
      message: 'A new turn would make the conversation 9 rows long, over the limit of 8 (limits.maxMessages); nothing was written.',
      details: { count: 9, max: 8, limit: 'maxMessages' },
    });
    expect(tooManyMessages(9, 8, false).message).toBe('The conversation is 9 rows long, over the limit of 8 (limits.maxMessages).');
  });
});

describe('stop conditions', () => {
  const spend = (tokens: number, costUsd: number) => ({ tokens, costUsd }) as unknown as Spend;
  const facts = (rows: StepFacts['rows'], emptyReply = false, spent = spend(0, 0)): StepFacts => ({ rows, emptyReply, spend: spent });
  const failing = (message: string, code = 'tool_failed'): ToolResultMessage => ({ role: 'tool', toolCallId: 'c', toolName: 'fetch', content: message, isError: true, errorInfo: { code, message, layer: 'tool', severity: 'error', retryable: false } });

  it('repeatedToolError trips at the limit-th identical tool error with its message, hint and details; run_stopped rows and other errors do not count', () => {
    const check = repeatedToolError(2);
    expect(check(facts([failing('boom'), failing('other'), failing('stopped', 'run_stopped')]))).toBeUndefined();
    expect(check(facts([failing('stopped', 'run_stopped')]))).toBeUndefined();
    const tripped = check(facts([failing('boom')]));
    expect(tripped?.info).toMatchObject({
      code: 'run_repeated_error',
      message: 'The same error came back 2 times: boom',
      hint: 'The agent kept repeating a failing action; check the tool or the instructions, then retry.',
      details: { code: 'tool_failed', tool: 'fetch', times: 2 },
    });
    expect(repeatedToolError(0)(facts([failing('x'), failing('x'), failing('x')]))).toBeUndefined();
  });

  it('emptyReplies trips at the limit-th empty reply in a row with its count; a reply with content resets it', () => {
    const check = emptyReplies(2);
    expect(check(facts([], true))).toBeUndefined();
    expect(check(facts([], false))).toBeUndefined();
    expect(check(facts([], true))).toBeUndefined();
    expect(check(facts([], true))?.info).toMatchObject({ code: 'run_empty_responses', message: 'The model returned 2 empty replies in a row.', details: { times: 2 } });
    const off = emptyReplies(0);
    for (let i = 0; i < 5; i++) expect(off(facts([], true))).toBeUndefined();
  });

  it('without limits the guards stop at the third identical tool error and the third empty reply in a row', () => {
    const [repeated, empty] = guardsFor(undefined).afterStep as [StopCondition, StopCondition];
    expect(repeated(facts([failing('boom'), failing('boom')]))).toBeUndefined();
    expect(repeated(facts([failing('boom')]))?.info.code).toBe('run_repeated_error');
    expect(empty(facts([], true))).toBeUndefined();
    expect(empty(facts([], true))).toBeUndefined();
    expect(empty(facts([], true))?.info.code).toBe('run_empty_responses');
  });

  it('the token and cost budgets trip only past the limit, with messages, hints and details', () => {
    expect(tokenBudget(100)(facts([], false, spend(100, 0)))).toBeUndefined();
    expect(tokenBudget(100)(facts([], false, spend(101, 0)))?.info).toMatchObject({
      code: 'run_hard_stop',
      message: 'The run used 101 tokens, over its budget of 100.',
      hint: 'Raise limits.maxTotalTokens or make the task smaller.',
      details: { budget: 'tokens', spent: 101, limit: 100 },
    });
    expect(costBudget(0.5)(facts([], false, spend(0, 0.5)))).toBeUndefined();
    expect(costBudget(0.5)(facts([], false, spend(0, 0.75)))?.info).toMatchObject({
      code: 'run_hard_stop',
      message: 'The run cost $0.7500, over its budget of $0.5.',
      hint: 'Raise limits.maxCostUsd or make the task smaller.',
      details: { budget: 'cost', spent: 0.75, limit: 0.5 },
    });
  });
});
