import { describe, expect, it } from 'vitest';
import { createGate } from './gate.js';

describe('createGate', () => {
  it('holds whoever awaits it until open() is called; a second open() changes nothing', async () => {
    const gate = createGate();
    const passed: string[] = [];
    const waiters = [gate.opened.then(() => passed.push('a')), gate.opened.then(() => passed.push('b'))];
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(passed).toEqual([]);
    gate.open();
    gate.open();
    await Promise.all(waiters);
    expect(passed).toEqual(['a', 'b']);
    await gate.opened;
  });
});
