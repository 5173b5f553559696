import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '@helix-agents/sdk';
import { assignToolNames, checkConnectionName, CONNECTION_NAME, helixToolName, TOOL_NAME } from './names.js';

const connection = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_-]{0,30}[A-Za-z0-9-]$/).filter((n) => CONNECTION_NAME.test(n));
const anyName = fc.oneof(fc.string({ maxLength: 300 }), fc.string({ unit: 'grapheme', maxLength: 80 }), fc.stringMatching(/^[A-Za-z0-9_-]{1,80}$/));

describe('helix names of MCP tools', () => {
  it('property: every server tool name maps to a valid helix tool name under "<connection>__", the same one every time', () => {
    fc.assert(
      fc.property(connection, anyName, (conn, name) => {
        const helix = helixToolName(conn, name);
        expect(helix).toMatch(TOOL_NAME);
        expect(helix.startsWith(`${conn}__`)).toBe(true);
        expect(helixToolName(conn, name)).toBe(helix);
      }),
      { numRuns: 500 },
    );
  });

  it('property: the connection name is recovered from a helix name (the first "__" ends it), so two connections never share a tool name', () => {
    fc.assert(
      fc.property(connection, connection, anyName, anyName, (a, b, x, y) => {
        const first = helixToolName(a, x);
        expect(first.slice(0, first.indexOf('__'))).toBe(a);
        if (a !== b) expect(helixToolName(b, y)).not.toBe(first);
      }),
      { numRuns: 500 },
    );
  });

  it('property: a listing either gets one distinct helix name per server name, or is a ConfigError when two would share one', () => {
    fc.assert(
      fc.property(connection, fc.array(fc.oneof(anyName, fc.constantFrom('a.b', 'a_b', 'a/b', 'same')), { maxLength: 12 }), (conn, names) => {
        const helixNames = names.map((n) => helixToolName(conn, n));
        const clash = new Set(helixNames).size < helixNames.length;
        if (clash) {
          expect(() => assignToolNames(conn, names)).toThrow(ConfigError);
          return;
        }
        const assigned = assignToolNames(conn, names);
        expect([...assigned.keys()].sort()).toEqual([...new Set(names)].sort());
        expect(new Set(assigned.values()).size).toBe(assigned.size);
      }),
      { numRuns: 500 },
    );
  });

  it('valid short names are kept after the prefix; others are cleaned and get 8 hex digits of their SHA-256, so near-identical names stay apart', () => {
    expect(helixToolName('files', 'read_file')).toBe('files__read_file');
    expect(helixToolName('files', 'read-file')).toBe('files__read-file');
    const dotted = helixToolName('files', 'read.file');
    const slashed = helixToolName('files', 'read/file');
    expect(dotted).toMatch(/^files__read_file_[0-9a-f]{8}$/);
    expect(slashed).toMatch(/^files__read_file_[0-9a-f]{8}$/);
    expect(dotted).not.toBe(slashed);
    expect(helixToolName('files', 'x'.repeat(100))).toHaveLength(64);
  });

  it('connection names: letters, digits, "-" and single "_" inside, 1-32 characters', () => {
    for (const good of ['a', 'files', 'my-server', 'my_server', 'a1_b2-c3', 'x'.repeat(32)]) expect(checkConnectionName(good)).toBe(good);
    for (const bad of ['', 'a__b', '_a', 'a_', '-a', 'x'.repeat(33), 'a b', 'a.b', 'ü', 42, undefined]) expect(() => checkConnectionName(bad)).toThrow(ConfigError);
  });
});
