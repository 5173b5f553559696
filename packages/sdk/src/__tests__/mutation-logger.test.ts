// The two ready loggers (runtime/logger.ts), which no SDK test looked at before the fifth mutation run:
// the default one writes warnings and errors to stderr with a `[helix]` prefix and its fields when given,
// and drops debug and info; the silent one drops everything.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { consoleLogger, silentLogger } from '../index.js';

afterEach(() => {
  vi.restoreAllMocks();
});

function spies() {
  return {
    debug: vi.spyOn(console, 'debug').mockImplementation(() => {}),
    info: vi.spyOn(console, 'info').mockImplementation(() => {}),
    log: vi.spyOn(console, 'log').mockImplementation(() => {}),
    warn: vi.spyOn(console, 'warn').mockImplementation(() => {}),
    error: vi.spyOn(console, 'error').mockImplementation(() => {}),
  };
}

describe('consoleLogger', () => {
  it('writes a warning to console.warn with the [helix] prefix, and its fields as a second argument only when given', () => {
    const s = spies();
    consoleLogger.warn('lease renewal failed');
    consoleLogger.warn('stream write failed', { runId: 'r1' });
    expect(s.warn.mock.calls).toEqual([['[helix] lease renewal failed'], ['[helix] stream write failed', { runId: 'r1' }]]);
    expect(s.error).not.toHaveBeenCalled();
  });

  it('writes an error to console.error with the [helix] prefix, and its fields as a second argument only when given', () => {
    const s = spies();
    consoleLogger.error('usage store write failed');
    consoleLogger.error('terminal commit failed', { runId: 'r2' });
    expect(s.error.mock.calls).toEqual([['[helix] usage store write failed'], ['[helix] terminal commit failed', { runId: 'r2' }]]);
    expect(s.warn).not.toHaveBeenCalled();
  });

  it('drops debug and info lines', () => {
    const s = spies();
    consoleLogger.debug('noise', { a: 1 });
    consoleLogger.info('more noise');
    for (const spy of Object.values(s)) expect(spy).not.toHaveBeenCalled();
  });
});

describe('silentLogger', () => {
  it('drops every level', () => {
    const s = spies();
    silentLogger.debug('a');
    silentLogger.info('b');
    silentLogger.warn('c', { x: 1 });
    silentLogger.error('d');
    for (const spy of Object.values(s)) expect(spy).not.toHaveBeenCalled();
  });
});
