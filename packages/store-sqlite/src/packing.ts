import type { StreamChunkInput } from '@helix-agents/sdk/store';

/** A plain object without a toJSON of its own: its JSON is its own enumerable fields, so they can be split. */
function isPlainRecord(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as unknown;
  return (proto === Object.prototype || proto === null) && !Object.prototype.hasOwnProperty.call(value, 'toJSON');
}

/**
 * A chunk as a `stream_batches` row stores it: when it is a plain object whose `streamId`, `agentId`,
 * `agentType` and `runId` are all strings, `body` is its JSON without those four and `shared` theirs (one
 * JSON object, which the row stores once for all its chunks that have the same); otherwise `body` is its
 * whole JSON and `shared` undefined.
 */
export interface PackedChunk {
  readonly body: string;
  readonly shared: string | undefined;
}

/** The last run fields a writer packed, and their JSON: a run's chunks all have the same, so it is made once. */
export class SharedFields {
  #streamId = '';
  #agentId = '';
  #agentType = '';
  #runId = '';
  #json: string | undefined;

  /** The JSON object of the four fields, made anew only when they differ from the last chunk's. */
  of(streamId: string, agentId: string, agentType: string, runId: string): string {
    if (this.#json === undefined || streamId !== this.#streamId || agentId !== this.#agentId || agentType !== this.#agentType || runId !== this.#runId) {
      this.#streamId = streamId;
      this.#agentId = agentId;
      this.#agentType = agentType;
      this.#runId = runId;
      this.#json = JSON.stringify({ streamId, agentId, agentType, runId });
    }
    return this.#json;
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
 * The `bodies` and `shared` columns of a batch row for its chunks. Without a packed chunk, `bodies` is the
 * chunks' JSON array (the format of the rows written before migration 5) and `shared` NULL. Otherwise
 * `shared` is the first packed chunk's run fields; each chunk that has those is its packed body, and any
 * other chunk is a one-element array holding its whole JSON.
 */
export function batchColumns(chunks: readonly PackedChunk[]): { bodies: string; shared: string | null } {
  let shared: string | undefined;
  for (const chunk of chunks) {
    if (chunk.shared !== undefined) {
      shared = chunk.shared;
      break;
    }
  }
  if (shared === undefined) return { bodies: chunks.length === 1 ? `[${chunks[0]!.body}]` : `[${chunks.map((c) => c.body).join(',')}]`, shared: null };
  const parts = chunks.map((c) => (c.shared === shared ? c.body : c.shared === undefined ? `[${c.body}]` : `[${whole(c.body, c.shared)}]`));
  return { bodies: `[${parts.join(',')}]`, shared };
}

/** A packed chunk's whole JSON: its own fields, then the run fields (none of which it has itself). */
function whole(body: string, shared: string): string {
  return body === '{}' ? shared : `${body.slice(0, -1)},${shared.slice(1)}`;
}

/** The chunks of a batch row, as written (their fields in another order, the run fields last). */
export function unpackChunks(bodies: string, shared: string | null): StreamChunkInput[] {
  const parts = JSON.parse(bodies) as (StreamChunkInput | [StreamChunkInput])[];
  if (shared === null) return parts as StreamChunkInput[];
  const fields = JSON.parse(shared) as Pick<StreamChunkInput, 'streamId' | 'agentId' | 'agentType' | 'runId'>;
  return parts.map((part) => (Array.isArray(part) ? part[0] : Object.assign(part, fields)));
}
