import { lstat, mkdir, mkdtemp, readdir, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, isAbsolute, join, relative, resolve } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeFileName, FileSystemToolResultStore, offloadKey } from './tool-result-offload.js';

// Issue 14 item 2: distinct sessions and keys never share a file, and no id reaches outside the folder.

const ADVERSARIAL = ['alice/1', 'alice?1', 'alice_1', 'alice%2F1', 'c a', 'c/a', 'c_a', '', '.', '..', '...', '%', '%~', '/', '\\', 'a\0b', '../x', 'A', 'a', 'é', 'e\u0301', '.hidden', 'x'.repeat(300), 'x'.repeat(301), '🙂'.repeat(100)];

const id = fc.oneof(fc.constantFrom(...ADVERSARIAL), fc.string({ unit: 'grapheme', maxLength: 12 }), fc.string({ unit: 'binary', maxLength: 12 }), fc.string({ maxLength: 400 }));

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
}

describe('FileSystemToolResultStore names are collision-free and confined', () => {
  let dir: string;
  let outside: string;

  beforeAll(async () => {
    const tmp = await realpath(await mkdtemp(join(tmpdir(), 'helix-offload-ids-')));
    dir = join(tmp, 'results');
    outside = join(tmp, 'outside');
    await mkdir(outside, { recursive: true });
  });
  afterAll(async () => rm(resolve(dir, '..'), { recursive: true, force: true }));

  it('encodeFileName is injective (also ignoring case), never navigation, and at most 255 bytes', () => {
    fc.assert(
      fc.property(id, id, (a, b) => {
        const ea = encodeFileName(a);
        const eb = encodeFileName(b);
        expect(ea === eb).toBe(a === b);
        expect(ea.toLowerCase() === eb.toLowerCase()).toBe(a === b);
        for (const e of [ea, eb]) {
          expect(e).not.toMatch(/^\.|[/\\\0]/);
          expect(Buffer.byteLength(e)).toBeLessThanOrEqual(255);
        }
      }),
      { numRuns: 2000 },
    );
    for (const a of ADVERSARIAL) for (const b of ADVERSARIAL) expect(encodeFileName(a) === encodeFileName(b)).toBe(a === b);
  });

  it('distinct (session, key) pairs never share a path, and every path is inside the folder', () => {
    const store = new FileSystemToolResultStore({ dir });
    fc.assert(
      fc.property(id, id, id, id, (s1, k1, s2, k2) => {
        const p1 = store.pathOf(k1, { sessionId: s1, runId: 'r' });
        const p2 = store.pathOf(k2, { sessionId: s2, runId: 'r' });
        expect(p1 === p2).toBe(s1 === s2 && k1 === k2);
        expect(inside(resolve(dir), p1)).toBe(true);
        expect(relative(resolve(dir), p1).split('/')).toHaveLength(2);
      }),
      { numRuns: 2000 },
    );
  });

  it('distinct (step, tool, call id) triples never share a key', () => {
    fc.assert(
      fc.property(fc.nat(20), id, id, fc.nat(20), id, id, (st1, t1, c1, st2, t2, c2) => {
        expect(offloadKey(st1, t1, c1) === offloadKey(st2, t2, c2)).toBe(st1 === st2 && t1 === t2 && c1 === c2);
      }),
      { numRuns: 2000 },
    );
    expect(offloadKey(0, 'c', 'a b')).not.toBe(offloadKey(0, 'c', 'a/b'));
    expect(offloadKey(0, 'a_b', 'c')).not.toBe(offloadKey(0, 'a', 'b_c'));
  });

  it('on disk, every adversarial session and key keeps its own result, all inside the folder', async () => {
    const store = new FileSystemToolResultStore({ dir: join(dir, 'disk') });
    const pairs = ADVERSARIAL.flatMap((sessionId) => ['c a', 'c/a', 'c_a', '..', '', 'k'].map((key) => ({ sessionId, key })));
    const refs = new Set<string>();
    for (const [i, { sessionId, key }] of pairs.entries()) refs.add(await store.write(key, `content-${i}`, { sessionId, runId: 'r' }));
    expect(refs.size).toBe(pairs.length);
    for (const [i, { sessionId }] of pairs.entries()) {
      const ref = [...refs][i]!;
      expect(inside(resolve(dir, 'disk'), ref)).toBe(true);
      expect(await store.read(ref, { sessionId, runId: 'r' })).toBe(`content-${i}`);
    }
    // alice/1 and alice?1 cannot read each other's results.
    const alice1 = await store.write('k', 'one', { sessionId: 'alice/1', runId: 'r' });
    await expect(store.read(alice1, { sessionId: 'alice?1', runId: 'r' })).rejects.toThrow(/not an offloaded result/);
    expect(await readdir(outside)).toEqual([]);
  });

  it('property on disk: random sessions and keys, each read back as written', async () => {
    let round = 0;
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(fc.tuple(id, id), { minLength: 1, maxLength: 8, selector: ([s, k]) => JSON.stringify([s, k]) }), async (pairs) => {
        const store = new FileSystemToolResultStore({ dir: join(dir, `round-${round++}`) });
        const refs: string[] = [];
        for (const [i, [sessionId, key]] of pairs.entries()) refs.push(await store.write(key, `v${i}`, { sessionId, runId: 'r' }));
        expect(new Set(refs).size).toBe(pairs.length);
        for (const [i, [sessionId]] of pairs.entries()) expect(await store.read(refs[i]!, { sessionId, runId: 'r' })).toBe(`v${i}`);
      }),
      { numRuns: 50 },
    );
  });

  it('does not follow symlinks out of the folder: a linked session folder, a linked result file, a linked read', async () => {
    const root = join(dir, 'links');
    const store = new FileSystemToolResultStore({ dir: root });
    await mkdir(root, { recursive: true });
    // A session folder that is a symlink to somewhere else.
    await symlink(outside, join(root, encodeFileName('victim')));
    await expect(store.write('k', 'leak', { sessionId: 'victim', runId: 'r' })).rejects.toThrow();
    // A result file planted as a symlink.
    await mkdir(join(root, encodeFileName('s')));
    await symlink(join(outside, 'planted.txt'), join(root, encodeFileName('s'), encodeFileName('k')));
    await expect(store.write('k', 'leak', { sessionId: 's', runId: 'r' })).rejects.toThrow();
    expect(await readdir(outside)).toEqual([]);
    // Reading through a link that points out is refused.
    await writeFile(join(outside, 'secret.txt'), 'secret');
    await symlink(join(outside, 'secret.txt'), join(root, encodeFileName('s'), 'peek'));
    await expect(store.read('peek', { sessionId: 's', runId: 'r' })).rejects.toThrow(/not an offloaded result/);
    await expect(store.read(join(root, encodeFileName('s'), 'peek'), { sessionId: 's', runId: 'r' })).rejects.toThrow(/not an offloaded result/);
    expect((await lstat(join(root, encodeFileName('s'), encodeFileName('k')))).isSymbolicLink()).toBe(true);
    expect(basename(await store.write('other', 'fine', { sessionId: 's', runId: 'r' }))).toBe('other');
    expect(await readFile(join(root, encodeFileName('s'), 'other'), 'utf8')).toBe('fine');
  });
});
