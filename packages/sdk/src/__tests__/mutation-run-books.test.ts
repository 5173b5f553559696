// A run's books (runtime/run-books.ts) and the run metadata hooks read from them (runtime/run-metadata.ts,
// rule 203), as the mutation run of those files found them pinned only through whole runs: what a reply
// charges (tokens of each kind, the price with and without cached input), the usage summary, tool call
// counts, children per step and the usage entries waiting to be written.
import { describe, expect, it } from 'vitest';
import type { AgentHandle, StepResult, UsageEntry } from '../index.js';
import { RunBooks } from '../runtime/run-books.js';
import { tokenUsageOf } from '../runtime/run-metadata.js';

function reply(usage: StepResult['usage'], model = 'm-1'): StepResult {
  return { ok: true, text: '', toolCalls: [], finishReason: 'stop', model, ...(usage ? { usage } : {}) };
}

describe('RunBooks', () => {
  it('a reply without usage charges nothing; with usage every kind of token adds up across replies and the model is the last one', () => {
    const books = new RunBooks();
    const empty = books.spend;
    expect(books.charge(reply(undefined), { inputPerMillion: 1, outputPerMillion: 1 })).toBe(empty);
    expect(empty).toEqual({ tokens: 0, costUsd: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0, model: undefined });
    books.charge(reply({ promptTokens: 10, completionTokens: 5, totalTokens: 15, cachedTokens: 4, cacheWriteTokens: 3, reasoningTokens: 2 }, 'first'), undefined);
    const spend = books.charge(reply({ promptTokens: 100, completionTokens: 50, totalTokens: 160 }, 'second'), undefined);
    expect(spend).toEqual({ tokens: 175, costUsd: 0, input: 110, output: 55, cacheRead: 4, cacheWrite: 3, reasoning: 2, model: 'second' });
    expect(books.spend).toBe(spend);
  });

  it('the price: uncached input, cached input at its own price (or the input price) and output, per million tokens', () => {
    const books = new RunBooks();
    const usage = { promptTokens: 1_000_000, completionTokens: 2_000_000, totalTokens: 3_000_000, cachedTokens: 400_000 };
    expect(books.charge(reply(usage), { inputPerMillion: 3, outputPerMillion: 10, cachedInputPerMillion: 0.5 }).costUsd).toBeCloseTo(0.6 * 3 + 0.4 * 0.5 + 2 * 10, 10);
    const other = new RunBooks();
    expect(other.charge(reply(usage), { inputPerMillion: 3, outputPerMillion: 10 }).costUsd).toBeCloseTo(1 * 3 + 2 * 10, 10);
    const noCache = new RunBooks();
    expect(noCache.charge(reply({ promptTokens: 500_000, completionTokens: 0, totalTokens: 500_000 }), { inputPerMillion: 2, outputPerMillion: 10, cachedInputPerMillion: 1 }).costUsd).toBeCloseTo(1, 10);
    // Charges add up.
    expect(noCache.charge(reply({ promptTokens: 0, completionTokens: 100_000, totalTokens: 100_000 }), { inputPerMillion: 2, outputPerMillion: 10 }).costUsd).toBeCloseTo(2, 10);
  });

  it('summary: every kind of token, the cost only when priced, the model only when a reply named one', () => {
    const books = new RunBooks();
    expect(books.summary(false)).toStrictEqual({ inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 });
    expect(books.summary(true)).toStrictEqual({ inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0, costUsd: 0 });
    books.charge(reply({ promptTokens: 1_000_000, completionTokens: 2, totalTokens: 1_000_002, cachedTokens: 1, cacheWriteTokens: 4, reasoningTokens: 5 }, 'm-2'), { inputPerMillion: 1, outputPerMillion: 0 });
    expect(books.summary(false)).toEqual({ inputTokens: 1_000_000, outputTokens: 2, cacheReadTokens: 1, cacheWriteTokens: 4, reasoningTokens: 5, model: 'm-2' });
    expect(books.summary(true)).toMatchObject({ costUsd: 1, model: 'm-2' });
  });

  it('rule 203: tokenUsageOf shows the spend as a frozen token usage', () => {
    const books = new RunBooks();
    books.charge(reply({ promptTokens: 7, completionTokens: 3, totalTokens: 11, cachedTokens: 2, cacheWriteTokens: 1, reasoningTokens: 4 }), undefined);
    const usage = tokenUsageOf(books.spend);
    expect(usage).toEqual({ inputTokens: 7, outputTokens: 3, totalTokens: 11, cacheReadTokens: 2, cacheWriteTokens: 1, reasoningTokens: 4 });
    expect(Object.isFrozen(usage)).toBe(true);
  });

  it('rule 203: tool call counts by name, handed out as a copy', () => {
    const books = new RunBooks();
    expect(books.toolCallCounts()).toEqual({});
    books.countToolCall('a');
    books.countToolCall('b');
    books.countToolCall('a');
    const counts = books.toolCallCounts();
    expect(counts).toEqual({ a: 2, b: 1 });
    counts['a'] = 99;
    expect(books.toolCallCounts()).toEqual({ a: 2, b: 1 });
  });

  it('children: counted per step, kept in order, and the calls waiting on them counted up and down', () => {
    const books = new RunBooks();
    expect(books.countChild(0)).toBe(1);
    expect(books.countChild(0)).toBe(2);
    expect(books.countChild(1)).toBe(1);
    expect(books.countChild(0)).toBe(3);
    const first = { runId: 'a' } as unknown as AgentHandle;
    const second = { runId: 'b' } as unknown as AgentHandle;
    books.addChild(first);
    books.addChild(second);
    expect(books.children()).toEqual([first, second]);
    expect(books.childWaits).toBe(0);
    books.waitingOnChildren(1);
    books.waitingOnChildren(1);
    books.waitingOnChildren(-1);
    expect(books.childWaits).toBe(1);
  });

  it('usage entries wait until taken; taking them empties the list', () => {
    const books = new RunBooks();
    const a = { kind: 'llm', runId: 'r' } as unknown as UsageEntry;
    const b = { kind: 'tool', runId: 'r' } as unknown as UsageEntry;
    books.addUsage(a);
    books.addUsage(b);
    expect(books.pendingUsage).toEqual([a, b]);
    expect(books.takeUsage()).toEqual([a, b]);
    expect(books.pendingUsage).toEqual([]);
    expect(books.takeUsage()).toEqual([]);
  });
});
