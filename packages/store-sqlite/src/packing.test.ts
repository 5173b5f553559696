import type { StreamChunkInput } from '@helix-agents/sdk/store';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { useTempDatabases } from './__tests__/temp-databases.js';
import { handleOf } from './database.js';
import { openSqliteStores } from './open.js';
import { batchColumns, packChunk, SharedFields, unpackChunks } from './packing.js';

const RUN = { streamId: 'st', agentId: 'session-1', agentType: 'agent', runId: 'r1' } as const;
const FIELDS = ['streamId', 'agentId', 'agentType', 'runId'] as const;

/** A run field as a chunk may have it: the run's value, another string, not a string at all, or absent. */
const fieldValue = (run: string) => fc.oneof(fc.constant(run), fc.constant(run), fc.string(), fc.jsonValue(), fc.constant(undefined));

/**
 * A chunk: a type, a timestamp, payload fields (some of them objects holding run-field names nested), and
 * each run field as {@link fieldValue} makes it. Most are plain run chunks; many are not.
 */
const chunkArb = fc
  .record({
    type: fc.constantFrom('text_delta', 'tool_start', 'end', 'step_start'),
    timestamp: fc.integer({ min: 0, max: 2 ** 40 }),
    payload: fc.dictionary(fc.constantFrom('delta', 'args', 'result', 'stepIndex', 'calls', 'toolName'), fc.jsonValue(), { maxKeys: 4 }),
    nested: fc.option(fc.record({ streamId: fc.string(), runId: fc.jsonValue(), agentType: fc.constant(RUN.agentType) }), { nil: undefined }),
    streamId: fieldValue(RUN.streamId),
    agentId: fieldValue(RUN.agentId),
    agentType: fieldValue(RUN.agentType),
    runId: fieldValue(RUN.runId),
  })
  .map(({ payload, nested, ...fields }) => {
    const chunk: Record<string, unknown> = { ...payload, type: fields.type, timestamp: fields.timestamp };
    if (nested !== undefined) chunk.nested = nested;
    for (const name of FIELDS) if (fields[name] !== undefined) chunk[name] = fields[name];
    return chunk;
  });

/** What a store gives back for a chunk: its JSON value. */
const asStored = (chunk: unknown): unknown => JSON.parse(JSON.stringify(chunk)) as unknown;

describe('packed batch rows (the run fields stored once a row)', () => {
  const temp = useTempDatabases('helix-sqlite-pack-');

  it('a row of any chunks unpacks to exactly the chunks written: run fields equal to the row\'s, different, not strings, absent, or nested in the payload', () => {
    fc.assert(
      // The row's own stream and run: the chunks' (their run fields stored compact) or others (stored whole).
      fc.property(fc.array(chunkArb, { minLength: 1, maxLength: 8 }), fc.constantFrom([RUN.streamId, RUN.runId], [RUN.agentId, RUN.runId], [RUN.streamId, 'r2'], ['other', 'r3']), (chunks, [streamId, runId]) => {
        const fields = new SharedFields();
        const { bodies, shared } = batchColumns(chunks.map((c) => packChunk(c, fields)), streamId, runId);
        expect(unpackChunks(bodies, shared, streamId, runId)).toEqual(chunks.map(asStored));
      }),
      { numRuns: 500 },
    );
  });

  it('a row of a run\'s plain chunks stores the four run fields once, not once a chunk', () => {
    const fields = new SharedFields();
    const chunks = Array.from({ length: 5 }, (_, i) => ({ ...RUN, type: 'text_delta', stepIndex: 0, delta: `d${i}`, timestamp: i }));
    // A row of another stream and run than the chunks': the four fields, as one JSON object.
    const { bodies, shared } = batchColumns(chunks.map((c) => packChunk(c, fields)), 'other', 'r9');
    expect(JSON.parse(shared!)).toEqual(RUN);
    for (const value of Object.values(RUN)) expect(bodies.split(`"${value}"`).length - 1).toBe(0);
    // The row is the chunks without their run fields, and those fields once.
    expect(bodies).toBe(JSON.stringify(chunks.map(({ streamId: _s, agentId: _a, agentType: _t, runId: _r, ...rest }) => rest)));
  });

  it('a chunk that is not a plain object (a class instance, an own toJSON) is stored whole, as JSON.stringify gives it', () => {
    class Chunk {
      readonly type = 'text_delta';
      readonly streamId = RUN.streamId;
      readonly agentId = RUN.agentId;
      readonly agentType = RUN.agentType;
      readonly runId = RUN.runId;
      readonly timestamp = 1;
    }
    const withToJson = { ...RUN, type: 'text_delta', timestamp: 2, toJSON: () => ({ replaced: true }) };
    const fields = new SharedFields();
    const packed = [new Chunk(), withToJson].map((c) => packChunk(c, fields));
    expect(packed.map((p) => p.shared)).toEqual([undefined, undefined]);
    const { bodies, shared } = batchColumns(packed, RUN.streamId, RUN.runId);
    expect(unpackChunks(bodies, shared, RUN.streamId, RUN.runId)).toEqual([asStored(new Chunk()), { replaced: true }]);
  });

  it('a row of the chunks\' own stream and run stores only their agentType, and their agentId only when it is not the stream\'s id (schema version 6)', () => {
    const chunk = (agentId: string, i: number) => ({ ...RUN, agentId, type: 'text_delta', stepIndex: 0, delta: `d${i}`, timestamp: i });
    const own = Array.from({ length: 3 }, (_, i) => chunk(RUN.agentId, i));
    const packed = batchColumns(own.map((c) => packChunk(c, new SharedFields())), RUN.streamId, RUN.runId);
    expect(packed.shared).toBe(JSON.stringify([RUN.agentType, RUN.agentId]));
    expect(unpackChunks(packed.bodies, packed.shared, RUN.streamId, RUN.runId)).toEqual(own);
    // A session's own run: its agentId is the stream's id, so the row stores the agent type alone.
    const session = Array.from({ length: 3 }, (_, i) => chunk(RUN.streamId, i));
    const alone = batchColumns(session.map((c) => packChunk(c, new SharedFields())), RUN.streamId, RUN.runId);
    expect(alone.shared).toBe(JSON.stringify([RUN.agentType]));
    expect(unpackChunks(alone.bodies, alone.shared, RUN.streamId, RUN.runId)).toEqual(session);
    for (const value of [RUN.streamId, RUN.runId]) expect(`${alone.bodies}${alone.shared}`.split(`"${value}"`).length - 1).toBe(0);
  });

  it('through the stream manager: chunks written in one transaction (one row) and alone read back deep-equal, with their seqs', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(chunkArb, { minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 4 }), async (groups) => {
        const stores = openSqliteStores({ path: temp.path() });
        try {
          const writer = await stores.streamManager.claim(RUN.streamId, RUN.runId);
          // The writes of one tick share a transaction, so each group is one row.
          for (const group of groups) expect(await Promise.all(group.map((c) => writer.write(c as unknown as StreamChunkInput)))).toEqual(group.map(() => true));
          const read: unknown[] = [];
          for await (const c of stores.streamManager.read(RUN.streamId, { follow: false })) read.push(c);
          expect(read).toEqual(groups.flat().map((c, seq) => ({ ...(asStored(c) as object), seq })));
        } finally {
          stores.close();
        }
      }),
      { numRuns: 40 },
    );
  });

  it('rows written before migration 5 (whole chunks, no shared fields) read back as written, beside packed rows', async () => {
    const stores = openSqliteStores({ path: temp.path() });
    try {
      const writer = await stores.streamManager.claim(RUN.streamId, RUN.runId);
      const old = [
        { ...RUN, type: 'text_delta', delta: 'a', timestamp: 1 },
        { ...RUN, agentType: 'other', type: 'text_delta', delta: 'b', timestamp: 2 },
      ];
      // The version-4 format: a JSON array of the whole chunks, keyed sk * 2^32 + last seq.
      handleOf(stores.database)
        .prepare("INSERT INTO stream_batches (key, first_seq, run_id, bodies) SELECT sk * 4294967296 + 1, 0, 'r1', ? FROM stream_owners WHERE stream_id = 'st'")
        .run(JSON.stringify(old));
      const next = { ...RUN, type: 'text_delta', delta: 'c', timestamp: 3 } as unknown as StreamChunkInput;
      expect(await writer.write(next)).toBe(true);
      const read: unknown[] = [];
      for await (const c of stores.streamManager.read(RUN.streamId, { follow: false })) read.push(c);
      expect(read).toEqual([...old, next].map((c, seq) => ({ ...c, seq })));
    } finally {
      stores.close();
    }
  });

  it('rows written with schema version 5 (the run fields as one JSON object) read back as written, beside compact rows', async () => {
    const stores = openSqliteStores({ path: temp.path() });
    try {
      const writer = await stores.streamManager.claim(RUN.streamId, RUN.runId);
      const old = [0, 1].map((i) => ({ ...RUN, type: 'text_delta', delta: `v5-${i}`, timestamp: i }));
      const { bodies } = batchColumns(old.map((c) => packChunk(c, new SharedFields())), 'other', 'r9');
      handleOf(stores.database)
        .prepare("INSERT INTO stream_batches (key, first_seq, run_id, bodies, shared) SELECT sk * 4294967296 + 1, 0, 'r1', ?, ? FROM stream_owners WHERE stream_id = 'st'")
        .run(bodies, JSON.stringify(RUN));
      const next = { ...RUN, type: 'text_delta', delta: 'v6', timestamp: 3 } as unknown as StreamChunkInput;
      expect(await writer.write(next)).toBe(true);
      expect(handleOf(stores.database).prepare('SELECT shared FROM stream_batches ORDER BY key').pluck().all()).toEqual([JSON.stringify(RUN), JSON.stringify([RUN.agentType, RUN.agentId])]);
      const read: unknown[] = [];
      for await (const c of stores.streamManager.read(RUN.streamId, { follow: false })) read.push(c);
      expect(read).toEqual([...old, next].map((c, seq) => ({ ...c, seq })));
    } finally {
      stores.close();
    }
  });

  it('prune reads the last chunk of a packed row whether it is packed or stored whole: a finished run\'s old rows go, a running run\'s stay', async () => {
    const stores = openSqliteStores({ path: temp.path(), retention: { chunkTtlMs: 10 } });
    try {
      const db = handleOf(stores.database);
      const count = (): number => db.prepare('SELECT count(*) FROM stream_batches').pluck().get() as number;
      const a = await stores.streamManager.claim('a', 'r1');
      // Its last chunk, the end, has another agentType than the row's first: it is stored whole.
      await Promise.all([
        a.write({ streamId: 'a', agentId: 's', agentType: 'agent', runId: 'r1', type: 'text_delta', stepIndex: 0, delta: 'x', timestamp: 1 }),
        a.write({ streamId: 'a', agentId: 's', agentType: 'child', runId: 'r1', type: 'end', timestamp: 2 } as unknown as StreamChunkInput),
      ]);
      const b = await stores.streamManager.claim('b', 'r2');
      await b.write({ streamId: 'b', agentId: 's', agentType: 'agent', runId: 'r2', type: 'text_delta', stepIndex: 0, delta: 'y', timestamp: 1 });
      expect(db.prepare("SELECT count(*) FROM stream_batches WHERE shared IS NOT NULL AND json_type(bodies, '$[#-1]') = 'array'").pluck().get()).toBe(1);
      expect(count()).toBe(2);
      expect((await stores.streamManager.prune(100)).chunks).toBe(1);
      expect(count()).toBe(1);
      const left: unknown[] = [];
      for await (const c of stores.streamManager.read('b', { follow: false })) left.push(c);
      expect(left).toHaveLength(1);
    } finally {
      stores.close();
    }
  });
});
