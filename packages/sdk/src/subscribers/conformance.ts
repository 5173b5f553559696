import { afterEach, describe, expect, it } from 'vitest';
import { HookStoreError } from './errors.js';
import type { FileStore, JsonValue, KVStore } from './ports.js';

/** How a hook store conformance suite gets fresh stores. */
export interface HookStoreConformanceOptions<TStore> {
  readonly name: string;
  /** A new, empty store for each test. */
  readonly create: () => TStore | Promise<TStore>;
  readonly destroy?: (store: TStore) => void | Promise<void>;
}

/** How the kv conformance suite gets fresh stores. */
export type KVStoreConformanceOptions = HookStoreConformanceOptions<KVStore>;

/** How the file conformance suite gets fresh stores. */
export type FileStoreConformanceOptions = HookStoreConformanceOptions<FileStore>;

/** The suite `<kind> conformance: <name>`; its tests call `fresh()` for a new store, destroyed after the test. */
function describeStoreSuite<TStore>(kind: string, options: HookStoreConformanceOptions<TStore>, tests: (fresh: () => Promise<TStore>) => void): void {
  describe(`${kind} conformance: ${options.name}`, () => {
    const made: TStore[] = [];
    afterEach(async () => {
      for (const store of made.splice(0)) await options.destroy?.(store);
    });
    tests(async () => {
      const store = await options.create();
      made.push(store);
      return store;
    });
  });
}

async function expectStoreError(promise: Promise<unknown>, code: string): Promise<void> {
  const error: unknown = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(HookStoreError.isInstance(error), `expected a HookStoreError ${code}, got ${String(error)}`).toBe(true);
  expect((error as HookStoreError).code).toBe(code);
}

/** The behaviour every {@link KVStore} must have (memory, SQLite, ...). */
export function runKVStoreConformance(options: KVStoreConformanceOptions): void {
  describeStoreSuite('KVStore', options, (fresh) => {
    it('stores JSON values and returns copies', async () => {
      const kv = await fresh();
      expect(await kv.get('a', 'missing')).toBeUndefined();
      const value: JsonValue = { n: 1, list: [true, null, 'x', 2.5], nested: { deep: 'yes' } };
      await kv.set('a', 'k', value);
      const read = await kv.get('a', 'k');
      expect(read).toEqual(value);
      (read as { n: number }).n = 99;
      expect(await kv.get('a', 'k')).toEqual(value);
      await kv.set('a', 'k', 'replaced');
      expect(await kv.get('a', 'k')).toBe('replaced');
      await kv.set('a', 'zero', 0);
      await kv.set('a', 'null', null);
      expect(await kv.get('a', 'zero')).toBe(0);
      expect(await kv.get('a', 'null')).toBeNull();
    });

    it('keeps namespaces apart', async () => {
      const kv = await fresh();
      await kv.set('agent/one', 'k', 1);
      await kv.set('agent/two', 'k', 2);
      expect(await kv.get('agent/one', 'k')).toBe(1);
      expect(await kv.get('agent/two', 'k')).toBe(2);
      expect(await kv.list('agent/one')).toEqual(['k']);
    });

    it('deletes and lists by prefix, sorted', async () => {
      const kv = await fresh();
      for (const key of ['s2:b', 's1:b', 's1:a', 'other', 's1:%', 's1_x']) await kv.set('n', key, key);
      expect(await kv.list('n', 's1:')).toEqual(['s1:%', 's1:a', 's1:b']);
      expect(await kv.list('n', 's1_')).toEqual(['s1_x']);
      expect(await kv.list('n')).toEqual(['other', 's1:%', 's1:a', 's1:b', 's1_x', 's2:b']);
      expect(await kv.delete('n', 's1:a')).toBe(true);
      expect(await kv.delete('n', 's1:a')).toBe(false);
      expect(await kv.get('n', 's1:a')).toBeUndefined();
    });

    it('refuses what is not JSON and bad keys', async () => {
      const kv = await fresh();
      const cyclic: Record<string, unknown> = {};
      cyclic['self'] = cyclic;
      for (const bad of [undefined, Number.NaN, Infinity, new Date(0), cyclic, { f: () => 1 }, [1, undefined]]) {
        await expectStoreError(kv.set('n', 'k', bad as JsonValue), 'hook_store_invalid_value');
      }
      await expectStoreError(kv.set('n', '', 1), 'hook_store_invalid_key');
      expect(await kv.list('n')).toEqual([]);
    });
  });
}

const text = (value: string): Uint8Array => new TextEncoder().encode(value);
const decode = (value: Uint8Array | undefined): string | undefined => (value === undefined ? undefined : new TextDecoder().decode(value));

/** The behaviour every {@link FileStore} must have (memory, SQLite, ...). */
export function runFileStoreConformance(options: FileStoreConformanceOptions): void {
  describeStoreSuite('FileStore', options, (fresh) => {
    it('writes, reads and replaces files, keeping createdAt and replacing metadata', async () => {
      const files = await fresh();
      expect(await files.read('b', 'missing.txt')).toBeUndefined();
      const first = await files.write('b', 'notes/a.txt', text('hello'), { kind: 'note' });
      expect(first).toMatchObject({ path: 'notes/a.txt', size: 5, metadata: { kind: 'note' } });
      const read = await files.read('b', 'notes/a.txt');
      expect(decode(read?.data)).toBe('hello');
      expect(read?.info).toEqual(first);
      const second = await files.write('b', 'notes/a.txt', text('bye'));
      expect(second.size).toBe(3);
      expect(second.createdAt).toBe(first.createdAt);
      expect(second.metadata).toBeUndefined();
      expect(decode((await files.read('b', 'notes/a.txt'))?.data)).toBe('bye');
    });

    it('keeps bytes exactly and hands out copies', async () => {
      const files = await fresh();
      const all = new Uint8Array(256).map((_, i) => i);
      await files.write('b', 'bin', all);
      all[0] = 42;
      const read = await files.read('b', 'bin');
      expect(read?.data.length).toBe(256);
      expect([...(read?.data ?? [])].every((byte, i) => byte === i)).toBe(true);
      read!.data[1] = 42;
      expect((await files.read('b', 'bin'))?.data[1]).toBe(1);
    });

    it('appends (creating the file) many times, keeping metadata', async () => {
      const files = await fresh();
      const expected: string[] = [];
      for (let i = 0; i < 300; i++) {
        const line = `entry ${i}\n`;
        expected.push(line);
        const info = await files.append('b', 'journal.md', text(line));
        expect(info.size).toBe(expected.join('').length);
      }
      expect(decode((await files.read('b', 'journal.md'))?.data)).toBe(expected.join(''));
      await files.write('b', 'meta.txt', text('a'), { tag: 'x' });
      const appended = await files.append('b', 'meta.txt', text('b'));
      expect(appended.metadata).toEqual({ tag: 'x' });
      expect(decode((await files.read('b', 'meta.txt'))?.data)).toBe('ab');
    });

    it('lists by prefix sorted, deletes, and keeps buckets apart', async () => {
      const files = await fresh();
      for (const path of ['z.txt', 'a/2.txt', 'a/1.txt', 'a_b.txt', 'a%.txt']) await files.write('one', path, text(path));
      await files.write('two', 'a/1.txt', text('other bucket'));
      expect((await files.list('one', 'a/')).map((f) => f.path)).toEqual(['a/1.txt', 'a/2.txt']);
      expect((await files.list('one', 'a_')).map((f) => f.path)).toEqual(['a_b.txt']);
      expect((await files.list('one')).map((f) => f.path)).toEqual(['a%.txt', 'a/1.txt', 'a/2.txt', 'a_b.txt', 'z.txt']);
      expect((await files.list('one', 'a/'))[0]?.size).toBe(7);
      expect(await files.delete('one', 'a/1.txt')).toBe(true);
      expect(await files.delete('one', 'a/1.txt')).toBe(false);
      expect(await files.read('one', 'a/1.txt')).toBeUndefined();
      expect(decode((await files.read('two', 'a/1.txt'))?.data)).toBe('other bucket');
    });

    it('refuses unsafe paths', async () => {
      const files = await fresh();
      for (const path of ['', '/abs', '../up', 'a/../b', 'a//b', './a', 'a\\b', 'trailing/']) {
        await expectStoreError(files.write('b', path, text('x')), 'hook_store_invalid_path');
      }
      expect(await files.list('b')).toEqual([]);
    });
  });
}
