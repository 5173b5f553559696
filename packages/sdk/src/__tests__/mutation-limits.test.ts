// The size limits the mutation run of runtime/limits.ts found loosely pinned: the JSON length check at its
// boundary and for every value, the configuration check's message and details, and the input check's edge.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../index.js';
import { checkInputText, checkResourceLimits, jsonLongerThan, resolveLimits, safeJsonLength } from '../runtime/limits.js';

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
