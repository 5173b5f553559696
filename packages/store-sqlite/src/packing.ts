import type { StreamChunkInput } from '@helix-agents/sdk/store';

/** A plain object without a toJSON of its own: its JSON is its own enumerable fields, so they can be split. */
function isPlainRecord(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as unknown;
  return (proto === Object.prototype || proto === null) && !Object.prototype.hasOwnProperty.call(value, 'toJSON');
}

/**
 * The run fields a writer packed (`streamId`, `agentId`, `agentType`, `runId`), with the two ways a batch
 * row's `shared` column can hold them: `json`, the whole object, and `compact`, for a row of the same stream
 * and run (its stream and `run_id` column say those two), a JSON array of `agentType` and, when it is not the
 * stream's id, `agentId`.
 */
export interface RunFields {
  readonly streamId: string;
  readonly agentId: string;
  readonly agentType: string;
  readonly runId: string;
  readonly json: string;
  readonly compact: string;
}

/**
 * A chunk as a `stream_batches` row stores it: when it is a plain object whose `streamId`, `agentId`,
 * `agentType` and `runId` are all strings, `body` is its JSON without those four and `shared` theirs (which
 * the row stores once for all its chunks that have the same); otherwise `body` is its whole JSON and
 * `shared` undefined.
 */
export interface PackedChunk {
  readonly body: string;
  readonly shared: RunFields | undefined;
}

/** The last run fields a writer packed: a run's chunks all have the same, so they are made once. */
export class SharedFields {
  #last: RunFields | undefined;

  /** The four fields and their JSON, made anew only when they differ from the last chunk's. */
  of(streamId: string, agentId: string, agentType: string, runId: string): RunFields {
    const last = this.#last;
    if (last !== undefined && streamId === last.streamId && agentId === last.agentId && agentType === last.agentType && runId === last.runId) return last;
    const json = JSON.stringify({ streamId, agentId, agentType, runId });
    const compact = JSON.stringify(agentId === streamId ? [agentType] : [agentType, agentId]);
    return (this.#last = { streamId, agentId, agentType, runId, json, compact });
  }
}

/** Splits a chunk into its own fields and the run fields a batch row stores once (see {@link PackedChunk}). */
export function packChunk(chunk: object, fields: SharedFields): PackedChunk {
  const { streamId, agentId, agentType, runId, ...rest } = chunk as Record<string, unknown>;
  if (typeof streamId === 'string' && typeof agentId === 'string' && typeof agentType === 'string' && typeof runId === 'string' && isPlainRecord(chunk)) {
    return { body: JSON.stringify(rest), shared: fields.of(streamId, agentId, agentType, runId) };
  }
  return { body: JSON.stringify(chunk), shared: undefined };
}

/**
 * The `bodies` and `shared` columns of a batch row of stream `streamId` and run `runId` for its chunks.
 * Without a packed chunk, `bodies` is the chunks' JSON array (the format of the rows written before migration
 * 5) and `shared` NULL. Otherwise `shared` is the first packed chunk's run fields: their compact array when
 * they name this stream and run (since migration 6), else their JSON object. Each chunk that has those fields
 * is its packed body, and any other chunk is a one-element array holding its whole JSON.
 */
export function batchColumns(chunks: readonly PackedChunk[], streamId: string, runId: string): { bodies: string; shared: string | null } {
  let shared: RunFields | undefined;
  for (const chunk of chunks) {
    if (chunk.shared !== undefined) {
      shared = chunk.shared;
      break;
    }
  }
  if (shared === undefined) return { bodies: chunks.length === 1 ? `[${chunks[0]!.body}]` : `[${chunks.map((c) => c.body).join(',')}]`, shared: null };
  const json = shared.json;
  const parts = chunks.map((c) => (c.shared === undefined ? `[${c.body}]` : c.shared.json === json ? c.body : `[${whole(c.body, c.shared.json)}]`));
  return { bodies: `[${parts.join(',')}]`, shared: shared.streamId === streamId && shared.runId === runId ? shared.compact : shared.json };
}

/** A packed chunk's whole JSON: its own fields, then the run fields (none of which it has itself). */
function whole(body: string, shared: string): string {
  return body === '{}' ? shared : `${body.slice(0, -1)},${shared.slice(1)}`;
}

/**
 * The chunks of a batch row of stream `streamId` whose `run_id` is `runId`, as written (their fields in
 * another order, the run fields last).
 */
export function unpackChunks(bodies: string, shared: string | null, streamId: string, runId: string): StreamChunkInput[] {
  const parts = JSON.parse(bodies) as (StreamChunkInput | [StreamChunkInput])[];
  if (shared === null) return parts as StreamChunkInput[];
  let fields: Pick<StreamChunkInput, 'streamId' | 'agentId' | 'agentType' | 'runId'>;
  if (shared.charCodeAt(0) === 0x5b) {
    const [agentType, agentId] = JSON.parse(shared) as [string, string?];
    fields = { streamId, agentId: agentId ?? streamId, agentType, runId };
  } else fields = JSON.parse(shared) as typeof fields;
  return parts.map((part) => (Array.isArray(part) ? part[0] : Object.assign(part, fields)));
}
