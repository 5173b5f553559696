import { describe, expect, it } from 'vitest';
import { walPagesByTree } from './wal-trees.js';

describe('bench/wal-trees: a step\'s log pages by B-tree (counted, not timed)', () => {
  it('the pages by tree add up to the total; a step writes its commits row, its index entry and its batch row', async () => {
    const { total, trees } = await walPagesByTree('NORMAL', 50, 1);
    const sum = Object.values(trees).reduce((a, b) => a + b, 0);
    expect(Math.abs(sum - total)).toBeLessThan(1e-9);
    expect(trees['commits']).toBeGreaterThanOrEqual(1);
    expect(trees['stream_batches']).toBeGreaterThanOrEqual(1);
    expect(trees['commits_by_session']).toBeGreaterThan(0);
    expect(total).toBeLessThan(5);
  }, 60_000);
});
