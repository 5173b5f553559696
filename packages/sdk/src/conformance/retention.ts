import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, defineTool, type AgentConfig } from '../define.js';
import type { LLMAdapter, LLMStepRequest, StepResult } from '../llm.js';
import { JSAgentExecutor } from '../runtime/executor.js';
import { silentLogger } from '../runtime/logger.js';
import type { Commit, PruneReport, RetentionPolicy, StateStore } from '../store.js';
import type { StreamChunk, StreamChunkInput, StreamManager } from '../stream.js';
import { createScriptedModel } from '../testing/scripted-model.js';
import { beginRequest as begin, expectCode, rows, T0 } from './fixtures.js';

/** The stores a retention test runs on: a state store and a stream manager on one database, opened with a policy. */
export interface RetentionStores {
  readonly stateStore: StateStore;
  readonly streamManager: StreamManager;
  /** Runs the stores' prune as of `now` (what `openSqliteStores(...).prune` or the two memory stores' `prune` do). */
  prune(now?: number): Promise<PruneReport>;
}

/** How {@link runRetentionConformance} gets stores. */
export interface RetentionConformanceOptions {
  /** A display name for the describe block. */
  readonly name: string;
  /** Fresh, empty stores opened with `policy` (throws the policy's `config_invalid` for a bad one). */
  readonly create: (policy: RetentionPolicy) => RetentionStores | Promise<RetentionStores>;
  /** Called after each test with what `create` returned. */
  readonly destroy?: (stores: RetentionStores) => void | Promise<void>;
  /** Timeout of the tests that drive the executor, in ms (60 s by default). */
  readonly timeoutMs?: number;
}

function step(sessionId: string, runId: string, stepIndex: number, extra: Partial<Commit> = {}): Commit {
  return { sessionId, runId, epoch: 1, kind: 'step', stepIndex, committedAt: T0 + stepIndex, ...extra };
}

function chunk(runId: string, timestamp: number, type: 'custom' | 'end' | 'error' | 'suspended' = 'custom'): StreamChunkInput {
  const base = { streamId: 's', agentId: 's', agentType: 'agent', runId, timestamp };
  if (type === 'end') return { ...base, type: 'end', output: 'done' };
  if (type === 'error') return { ...base, type: 'error', status: 'failed', errorInfo: { code: 'x', layer: 'run', severity: 'fatal', message: 'x', retryable: false } };
  if (type === 'suspended') return { ...base, type: 'suspended', reason: 'client_tool', pendingToolCallIds: ['c1'] };
  return { ...base, type: 'custom', eventName: 'e', data: timestamp };
}

async function readAll(streams: StreamManager, streamId: string, options: { fromSeq?: number; untilRunEnds?: string } = {}): Promise<StreamChunk[]> {
  const out: StreamChunk[] = [];
  for await (const c of streams.read(streamId, { ...options, follow: false })) out.push(c);
  return out;
}

/**
 * An agent whose first step asks to `send` (a call that needs approval), so its run suspends; once
 * approved, the next step answers `sent`. Each later turn answers `ok` at once.
 */
function approvalAgent(): { adapter: LLMAdapter; agent: AgentConfig<unknown, unknown> } {
  const adapter: LLMAdapter = {
    async generateStep(request: LLMStepRequest): Promise<StepResult> {
      const last = request.messages.at(-1);
      if (last?.role === 'user' && last.content === 'send it') {
        return { ok: true, text: '', toolCalls: [{ id: 'call-send', name: 'send', arguments: { to: 'a@b.c' } }], finishReason: 'tool-calls', model: 'retention' };
      }
      return { ok: true, text: last?.role === 'tool' ? 'sent' : 'ok', toolCalls: [], finishReason: 'stop', model: 'retention' };
    },
  };
  const send = defineTool({ name: 'send', description: 'Sends a mail.', inputSchema: z.object({ to: z.string() }), needsApproval: true, sideEffects: true, execute: () => 'queued' });
  const agent = defineAgent({ name: 'mailer', llmConfig: { model: createScriptedModel([{ text: 'unused' }]) }, tools: [send], maxSteps: 5 }) as AgentConfig<unknown, unknown>;
  return { adapter, agent };
}

/**
 * The conformance suite of a store's {@link RetentionPolicy} (docs/retention.md): keepCheckpoints keeps
 * the newest N per session and a dropped one restores as `state_not_found`; a replaced run's journal goes
 * while a suspended current run keeps its own; prune drops the chunks of finished runs older than
 * chunkTtlMs and never a running or suspended owner's; pruned offsets read as a gap; sessions go on
 * (runs, resumes, new turns) after pruning. Every store runs the same tests.
 */
export function runRetentionConformance(options: RetentionConformanceOptions): void {
  const timeout = options.timeoutMs ?? 60_000;
  const withStores = (policy: RetentionPolicy, fn: (stores: RetentionStores) => Promise<void>) => async () => {
    const stores = await options.create(policy);
    try {
      await fn(stores);
    } finally {
      await options.destroy?.(stores);
    }
  };

  describe(`Retention conformance: ${options.name}`, () => {
    it('a bad policy is refused with config_invalid', async () => {
      for (const policy of [{ keepCheckpoints: 0 }, { keepCheckpoints: 2.5 }, { chunkTtlMs: -1 }, { chunkTtlMs: Number.NaN }, { pruneIntervalMs: 0 }]) {
        await expectCode(Promise.resolve().then(() => options.create(policy)), 'config_invalid');
      }
    });

    describe('keepCheckpoints', () => {
      it('keeps the newest N checkpoints of each session; a dropped one loads as undefined and restores as state_not_found; a kept one restores', withStores({ keepCheckpoints: 3 }, async ({ stateStore: store }) => {
        await store.beginRun(begin('s1', 'r1'));
        await store.beginRun(begin('s2', 'r2'));
        const ids: string[] = [];
        for (let i = 0; i < 8; i++) {
          const receipt = await store.commit(step('s1', 'r1', i, { appendMessages: rows(`m${i}`, 1), state: { n: i }, checkpoint: 'step' }));
          ids.push(receipt.checkpointId!);
        }
        await store.commit(step('s2', 'r2', 0, { appendMessages: rows('other', 1), checkpoint: 'step' }));
        const kept = await store.listCheckpoints('s1');
        expect(kept.map((c) => c.checkpointId)).toEqual(ids.slice(-3));
        expect(kept.map((c) => c.stepCount)).toEqual([6, 7, 8]);
        // Another session's checkpoints are its own business.
        expect(await store.listCheckpoints('s2')).toHaveLength(1);
        expect(await store.loadCheckpoint('s1', ids[0]!)).toBeUndefined();
        expect((await store.loadCheckpoint('s1', ids[5]!))?.state).toEqual({ n: 5 });
        await store.commit({ sessionId: 's1', runId: 'r1', epoch: 1, kind: 'terminal', runStatus: 'completed', committedAt: T0 + 50 });
        await expectCode(store.beginRun({ ...begin('s1', 'r3', { newTurn: false }), restoreCheckpointId: ids[1]! }), 'state_not_found');
        expect((await store.loadSession('s1'))?.currentRunId).toBe('r1');
        const { session } = await store.beginRun({ ...begin('s1', 'r4', { newTurn: false }), restoreCheckpointId: ids[5]! });
        expect(session.state).toEqual({ n: 5 });
        expect(session.messages).toHaveLength(6);
        // The rewind dropped the later checkpoints; the ones trimmed before do not come back.
        expect((await store.listCheckpoints('s1')).map((c) => c.checkpointId)).toEqual([ids[5]]);
        expect(await store.loadCheckpoint('s1', ids[4]!)).toBeUndefined();
        // Genesis is always there.
        await store.commit({ sessionId: 's1', runId: 'r4', epoch: 1, kind: 'terminal', runStatus: 'completed', committedAt: T0 + 60 });
        const back = await store.beginRun({ ...begin('s1', 'r5', { newTurn: false }), restoreCheckpointId: 'genesis' });
        expect(back.session.messages).toEqual([]);
      }));

      it('the limit holds over many runs of one session, every run\'s last checkpoint being the newest', withStores({ keepCheckpoints: 2 }, async ({ stateStore: store }) => {
        let last: string | undefined;
        for (let r = 0; r < 6; r++) {
          await store.beginRun(begin('s1', `r${r}`));
          for (let i = 0; i < 3; i++) await store.commit(step('s1', `r${r}`, i, { appendMessages: rows(`r${r}m${i}`, 1), checkpoint: 'step' }));
          last = (await store.commit({ sessionId: 's1', runId: `r${r}`, epoch: 1, kind: 'terminal', runStatus: 'completed', checkpoint: 'state', committedAt: T0 + 99 })).checkpointId;
          const kept = await store.listCheckpoints('s1');
          expect(kept).toHaveLength(2);
          expect(kept.at(-1)?.checkpointId).toBe(last);
        }
      }));
    });

    describe('chunkTtlMs and prune()', () => {
      it('prune drops the chunks of finished runs older than the TTL and keeps the running run\'s, which read whole with their seqs', withStores({ chunkTtlMs: 1_000 }, async ({ streamManager: streams, prune }) => {
        const w1 = await streams.claim('s', 'r1');
        for (let i = 0; i < 4; i++) await w1.write(chunk('r1', T0 + i));
        await w1.write(chunk('r1', T0 + 5, 'end'));
        const w2 = await streams.claim('s', 'r2');
        expect(w2.startSeq).toBe(5);
        for (let i = 0; i < 3; i++) await w2.write(chunk('r2', T0 + 10 + i));
        // Too young: nothing goes.
        expect((await prune(T0 + 500)).chunks).toBe(0);
        const report = await prune(T0 + 10_000);
        expect(report.chunks).toBe(5);
        const left = await readAll(streams, 's');
        expect(left.map((c) => [c.runId, c.seq])).toEqual([['r2', 5], ['r2', 6], ['r2', 7]]);
        // A reader asking for a pruned offset goes on at the first kept chunk; one following the pruned run ends at once.
        expect((await readAll(streams, 's', { fromSeq: 2 })).map((c) => c.seq)).toEqual([5, 6, 7]);
        expect(await readAll(streams, 's', { untilRunEnds: 'r1' })).toEqual([]);
        // The running writer goes on where it was.
        await w2.write(chunk('r2', T0 + 20, 'end'));
        expect((await readAll(streams, 's')).map((c) => c.seq)).toEqual([5, 6, 7, 8]);
        // Now r2 has ended too: its chunks go as well, and the next claim continues the offsets.
        expect((await prune(T0 + 20_000)).chunks).toBe(4);
        expect(await readAll(streams, 's')).toEqual([]);
        const w3 = await streams.claim('s', 'r3');
        expect(w3.startSeq).toBe(9);
      }));

      it('a suspended run that owns its stream keeps its chunks; once a resume claims the stream they go; an error ends a run like end', withStores({ chunkTtlMs: 0 }, async ({ streamManager: streams, prune }) => {
        const w1 = await streams.claim('s', 'r1');
        await w1.write(chunk('r1', T0));
        await w1.write(chunk('r1', T0 + 1, 'suspended'));
        expect((await prune(T0 + 10_000)).chunks).toBe(0);
        expect(await readAll(streams, 's')).toHaveLength(2);
        const w2 = await streams.claim('s', 'r2');
        await w2.write(chunk('r2', T0 + 2));
        await w2.write(chunk('r2', T0 + 3, 'error'));
        expect((await prune(T0 + 10_000)).chunks).toBe(4);
        expect(await readAll(streams, 's')).toEqual([]);
      }));

      it('with pruneIntervalMs, a timer prunes without being asked', withStores({ chunkTtlMs: 0, pruneIntervalMs: 20 }, async ({ streamManager: streams }) => {
        const w1 = await streams.claim('s', 'r1');
        await w1.write(chunk('r1', T0, 'end'));
        await streams.claim('s', 'r2');
        const deadline = Date.now() + 5_000;
        while ((await readAll(streams, 's')).length > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
        expect(await readAll(streams, 's')).toEqual([]);
      }));

      it('without chunkTtlMs, prune drops no chunk', withStores({}, async ({ streamManager: streams, prune }) => {
        const w1 = await streams.claim('s', 'r1');
        await w1.write(chunk('r1', T0, 'end'));
        await streams.claim('s', 'r2');
        expect((await prune(T0 + 1e12)).chunks).toBe(0);
        expect(await readAll(streams, 's')).toHaveLength(1);
      }));

      it('for any sequence of claims, writes (one clock) and prunes, the stream keeps exactly the chunks the rule keeps, with their seqs', { timeout }, withStores({ chunkTtlMs: 100 }, async ({ streamManager: streams, prune }) => {
        type Op = { readonly op: 'claim' } | { readonly op: 'write'; readonly type: 'custom' | 'end' | 'error' | 'suspended'; readonly dt: number } | { readonly op: 'prune'; readonly dt: number };
        const op: fc.Arbitrary<Op> = fc.oneof(
          fc.constant<Op>({ op: 'claim' }),
          fc.record({ op: fc.constant('write' as const), type: fc.constantFrom('custom' as const, 'custom' as const, 'end' as const, 'error' as const, 'suspended' as const), dt: fc.integer({ min: 0, max: 80 }) }),
          fc.record({ op: fc.constant('prune' as const), dt: fc.integer({ min: 0, max: 300 }) }),
        );
        let case_ = 0;
        await fc.assert(
          fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), async (ops) => {
            const streamId = `p${++case_}`;
            // The model: every chunk ever written, which are pruned, and who owns the stream.
            const written: { seq: number; runId: string; timestamp: number; type: string; pruned: boolean }[] = [];
            let owner: string | undefined;
            let writer: Awaited<ReturnType<StreamManager['claim']>> | undefined;
            let clock = T0;
            let runs = 0;
            for (const step of ops) {
              if (step.op === 'claim') {
                owner = `${streamId}-r${++runs}`;
                writer = await streams.claim(streamId, owner);
                expect(writer.startSeq).toBe(written.length);
              } else if (step.op === 'write') {
                if (!writer || !owner) continue;
                clock += step.dt;
                const input = { ...chunk(owner, clock, step.type), streamId, agentId: streamId } as StreamChunkInput;
                expect(await writer.write(input)).toBe(true);
                written.push({ seq: written.length, runId: owner, timestamp: clock, type: step.type, pruned: false });
              } else {
                const now = clock + step.dt;
                await prune(now);
                const last = written.at(-1);
                const ownerEnded = last !== undefined && last.runId === owner && (last.type === 'end' || last.type === 'error');
                for (const w of written) if ((w.runId !== owner || ownerEnded) && w.timestamp <= now - 100) w.pruned = true;
              }
              const kept = (await readAll(streams, streamId)).map((c) => [c.seq, c.runId]);
              expect(kept).toEqual(written.filter((w) => !w.pruned).map((w) => [w.seq, w.runId]));
            }
          }),
          { numRuns: 25 },
        );
      }));

      it('a reader following a live run while prune runs over and over loses none of its chunks', withStores({ chunkTtlMs: 0 }, async ({ streamManager: streams, prune }) => {
        const old = await streams.claim('s', 'r0');
        await old.write(chunk('r0', T0, 'end'));
        const writer = await streams.claim('s', 'r1');
        const seen: number[] = [];
        const reading = (async () => {
          for await (const c of streams.read('s', { untilRunEnds: 'r1' })) seen.push(c.seq);
        })();
        for (let i = 0; i < 30; i++) {
          await writer.write(chunk('r1', T0 + i));
          if (i % 3 === 0) await prune(T0 + 1e9);
        }
        await writer.write(chunk('r1', T0 + 100, 'end'));
        await reading;
        expect(seen).toEqual(Array.from({ length: 31 }, (_, i) => i + 1));
      }));
    });

    describe('journals and sessions through the executor', () => {
      it('a suspended run keeps its journal and resumes; the resume drops the suspended run\'s journal; pruning leaves a session that goes on', { timeout }, withStores({ keepCheckpoints: 2, chunkTtlMs: 0 }, async ({ stateStore, streamManager, prune }) => {
        const { adapter, agent } = approvalAgent();
        const executor = new JSAgentExecutor(stateStore, streamManager, adapter, { logger: silentLogger, agents: [agent] });
        const first = await (await executor.execute(agent, 'send it', { sessionId: 'mail' })).result();
        expect(first.status).toBe('suspended');
        const suspendedJournal = await stateStore.loadJournal(first.runId);
        expect(suspendedJournal.length).toBeGreaterThan(0);
        // Prune runs: the suspended run owns its stream, so its chunks (the approval request) stay, and so does its journal.
        await prune(Date.now() + 60_000);
        expect(await stateStore.loadJournal(first.runId)).toEqual(suspendedJournal);
        const chunks = await readAll(streamManager, 'mail');
        expect(chunks.some((c) => c.type === 'tool_approval_request')).toBe(true);
        const second = await (await executor.approve('mail', 'call-send')).result();
        expect(second.status).toBe('completed');
        expect(second.output).toBe('sent');
        expect(await stateStore.loadJournal(first.runId)).toEqual([]);
        expect(await stateStore.loadJournal(second.runId)).toEqual([]);
        await prune(Date.now() + 60_000);
        expect(await readAll(streamManager, 'mail')).toEqual([]);
        // The session goes on: a new turn, and a rewind to its newest checkpoint.
        const third = await (await executor.send('mail', 'hello')).result();
        expect(third.status).toBe('completed');
        expect((await readAll(streamManager, 'mail')).at(-1)?.type).toBe('end');
        const checkpoints = await executor.listCheckpoints('mail');
        expect(checkpoints).toHaveLength(2);
        const session = await executor.getSession('mail');
        expect(session?.messages.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['send it', 'hello']);
        const rewound = await (await executor.resume('mail', { mode: 'from_checkpoint', checkpointId: checkpoints.at(-1)!.checkpointId })).result();
        expect(rewound.status).toBe('completed');
      }));
    });
  });
}
