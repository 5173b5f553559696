// The runtime's small helpers, one describe each, as the mutation run of their files found them pinned
// only through whole runs: approval signatures, the reconciliation options, a tool's retry policy, model
// ids resolved through a registry, the JSON check of values, session ids, sleep, dry-run stubs and the
// lease a run keeps.
import { describe, expect, it } from 'vitest';
import { AgentError, defineAgent, InMemoryStateStore, type LanguageModel, type ModelRegistry } from '../index.js';
import { ApprovalSigner } from '../runtime/approval-signature.js';
import { jsonLength, unserializable } from '../runtime/json-value.js';
import { keepLease } from '../runtime/lease.js';
import { resolveModel } from '../runtime/model-registry.js';
import { DEFAULT_RECONCILE, resolveReconcile } from '../runtime/reconcile-options.js';
import { checkSessionId, MAX_SESSION_ID_LENGTH } from '../runtime/session-id.js';
import { sleep } from '../runtime/sleep.js';
import { dryRunStub } from '../runtime/tool-dry-run.js';
import { checkToolRetry, MAX_TOOL_ATTEMPTS, retryDelay, TOOL_RETRY_DEFAULTS, wantsRetry } from '../runtime/tool-retry-policy.js';
import { createScriptedModel } from '../testing/index.js';
import { memoryLogger } from './harness.js';

function thrown(f: () => unknown): AgentError {
  try {
    f();
  } catch (error) {
    if (AgentError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('nothing was thrown');
}

describe('ApprovalSigner: a signature binds session, run, call, decision and the final input', () => {
  const signer = new ApprovalSigner('secret');
  const approval = { sessionId: 's', runId: 'r', toolCallId: 'c', decision: 'approve' as const, input: { b: [1, { y: 2, x: 1 }], a: 'x' } };

  it('the same approval signs the same whatever the key order of its input; each bound field changes it', () => {
    const sig = signer.sign(approval);
    expect(sig).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(signer.sign({ ...approval, input: { a: 'x', b: [1, { x: 1, y: 2 }] } })).toBe(sig);
    const others = [
      { ...approval, sessionId: 's2' },
      { ...approval, runId: 'r2' },
      { ...approval, toolCallId: 'c2' },
      { ...approval, input: { a: 'x', b: [{ y: 2, x: 1 }, 1] } },
      { ...approval, input: { a: 'x', b: [1, { y: 2, x: 1 }], c: null } },
      { ...approval, input: undefined },
      { sessionId: 's', runId: 'r', toolCallId: 'c', decision: 'reject' as const },
    ];
    const sigs = new Set([sig, ...others.map((o) => signer.sign(o))]);
    expect(sigs.size).toBe(others.length + 1);
    expect(new ApprovalSigner('other').sign(approval)).not.toBe(sig);
    // Inputs that JSON alone would not tell apart are told apart.
    expect(signer.sign({ ...approval, input: [1, 2] })).not.toBe(signer.sign({ ...approval, input: '[1,2]' }));
    expect(signer.sign({ ...approval, input: { a: [] } })).not.toBe(signer.sign({ ...approval, input: { a: {} } }));
    expect(signer.sign({ ...approval, input: undefined })).toBe(signer.sign({ ...approval, input: null }));
  });

  it('verify accepts the signature of the same approval only', () => {
    const sig = signer.sign(approval);
    expect(signer.verify(approval, sig)).toBe(true);
    expect(signer.verify({ ...approval, toolCallId: 'c2' }, sig)).toBe(false);
    expect(signer.verify(approval, undefined)).toBe(false);
    expect(signer.verify(approval, `${sig}x`)).toBe(false);
    expect(signer.verify(approval, sig.slice(0, -1))).toBe(false);
    expect(signer.verify(approval, `${sig.slice(0, -1)}${sig.endsWith('A') ? 'B' : 'A'}`)).toBe(false);
  });
});

describe('resolveReconcile (C2, C6, C16)', () => {
  it('each option is off unless set (interruptFiresOnAgentFail on unless set false); the result is frozen', () => {
    expect(resolveReconcile({})).toEqual(DEFAULT_RECONCILE);
    expect(DEFAULT_RECONCILE).toEqual({ afterLLMCallOnThrow: false, interruptFiresOnAgentFail: true, rewriteBeforeOnMessage: false });
    expect(Object.isFrozen(resolveReconcile({}))).toBe(true);
    expect(resolveReconcile({ afterLLMCallOnThrow: true, interruptFiresOnAgentFail: false, rewriteBeforeOnMessage: true })).toEqual({ afterLLMCallOnThrow: true, interruptFiresOnAgentFail: false, rewriteBeforeOnMessage: true });
    expect(resolveReconcile({ afterLLMCallOnThrow: false, interruptFiresOnAgentFail: true, rewriteBeforeOnMessage: false })).toEqual(DEFAULT_RECONCILE);
  });
});

describe('tool retry policy (rule 157)', () => {
  it('a valid policy passes; each bad field is config_invalid with its own message, naming the tool', () => {
    expect(() => checkToolRetry('t', {}, false)).not.toThrow();
    expect(() => checkToolRetry('t', { maxAttempts: 1, initialDelayMs: 0, maxDelayMs: 0, retryOn: () => true }, false)).not.toThrow();
    expect(() => checkToolRetry('t', { maxAttempts: MAX_TOOL_ATTEMPTS }, false)).not.toThrow();
    expect(() => checkToolRetry('t', { idempotent: true }, true)).not.toThrow();
    const cases: [unknown, boolean, string][] = [
      [null, false, 'retry.must be an object'],
      ['3', false, 'retry.must be an object'],
      [{ maxAttempts: 0 }, false, 'retry.maxAttempts must be an integer from 1 to 10'],
      [{ maxAttempts: MAX_TOOL_ATTEMPTS + 1 }, false, 'retry.maxAttempts must be an integer from 1 to 10'],
      [{ maxAttempts: 1.5 }, false, 'retry.maxAttempts must be an integer from 1 to 10'],
      [{ initialDelayMs: -1 }, false, 'retry.initialDelayMs must be a finite number >= 0'],
      [{ initialDelayMs: '5' }, false, 'retry.initialDelayMs must be a finite number >= 0'],
      [{ maxDelayMs: Infinity }, false, 'retry.maxDelayMs must be a finite number >= 0'],
      [{ retryOn: true }, false, 'retry.retryOn must be a function'],
      [{}, true, 'retry.is refused on a sideEffects: true tool unless it sets idempotent: true (running the call again must be safe)'],
      [{ idempotent: false }, true, 'retry.is refused on a sideEffects: true tool unless it sets idempotent: true'],
    ];
    for (const [policy, sideEffects, message] of cases) {
      const error = thrown(() => checkToolRetry('pay', policy as never, sideEffects));
      expect(error.info.code).toBe('config_invalid');
      expect(error.info.message).toContain(`Tool "pay": ${message}`);
      expect(error.info.details).toEqual({ tool: 'pay' });
    }
  });

  it('the delay before try n doubles from initialDelayMs and stops at maxDelayMs (defaults 200 and 5,000)', () => {
    expect(TOOL_RETRY_DEFAULTS).toEqual({ maxAttempts: 3, initialDelayMs: 200, maxDelayMs: 5_000 });
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((n) => retryDelay({}, n))).toEqual([200, 200, 400, 800, 1600, 3200, 5000, 5000]);
    expect([2, 3, 4].map((n) => retryDelay({ initialDelayMs: 10, maxDelayMs: 30 }, n))).toEqual([10, 20, 30]);
    expect(retryDelay({ initialDelayMs: 0 }, 5)).toBe(0);
  });

  it('retryOn decides when given (only a true answer retries); otherwise every error but a non-retryable AgentError', () => {
    const seen: [unknown, number][] = [];
    const policy = { retryOn: (error: unknown, attempt: number) => (seen.push([error, attempt]), attempt < 2) };
    expect(wantsRetry(policy, 'e', 1)).toBe(true);
    expect(wantsRetry(policy, 'e', 2)).toBe(false);
    expect(seen).toEqual([
      ['e', 1],
      ['e', 2],
    ]);
    expect(wantsRetry({ retryOn: () => 'yes' as unknown as boolean }, 'e', 1)).toBe(false);
    expect(wantsRetry({}, new Error('flaky'), 1)).toBe(true);
    expect(wantsRetry({}, new AgentError('provider_rate_limited', 'slow down'), 1)).toBe(true);
    expect(wantsRetry({}, new AgentError('tool_invalid_input', 'bad'), 1)).toBe(false);
  });
});

describe('resolveModel', () => {
  const model = createScriptedModel([{ text: 'x' }]) as unknown as LanguageModel;

  it('a model object is used as it is; an id goes through the registry', () => {
    expect(resolveModel(defineAgent({ name: 'a', llmConfig: { model } }) as never, undefined)).toBe(model);
    const asked: string[] = [];
    const registry = { languageModel: (id: string) => (asked.push(id), model) } as unknown as ModelRegistry;
    expect(resolveModel(defineAgent({ name: 'a', llmConfig: { model: 'p:m' } }) as never, registry)).toBe(model);
    expect(asked).toEqual(['p:m']);
  });

  it('an id without a registry, one the registry throws on, and one it answers with something else are config_invalid naming agent and model', () => {
    const agent = defineAgent({ name: 'named', llmConfig: { model: 'p:m' } }) as never;
    const none = thrown(() => resolveModel(agent, undefined));
    expect(none.info).toMatchObject({ code: 'config_invalid', details: { agent: 'named', model: 'p:m' } });
    expect(none.info.message).toBe(
      `Agent "named" names its model by id ('p:m'), but the executor has no providers registry: pass new JSAgentExecutor(..., { providers: createProviderRegistry({ ... }) }).`,
    );
    const throwing = thrown(() => resolveModel(agent, { languageModel: () => { throw new TypeError('no such provider'); } } as unknown as ModelRegistry));
    expect(throwing.info.message).toBe(`Agent "named": the model 'p:m' is not in the providers registry (no such provider).`);
    expect(throwing.info.details).toEqual({ agent: 'named', model: 'p:m', cause: 'TypeError' });
    const throwingString = thrown(() => resolveModel(agent, { languageModel: () => { throw 'nope'; } } as unknown as ModelRegistry));
    expect(throwingString.info.message).toBe(`Agent "named": the model 'p:m' is not in the providers registry (nope).`);
    expect(throwingString.info.details).toEqual({ agent: 'named', model: 'p:m' });
    for (const answer of [undefined, null, {}, { doStream: () => 0, doGenerate: () => 0 }, { doStream: () => 0, modelId: 'm' }, { doGenerate: () => 0, modelId: 'm' }, { doStream: 1, doGenerate: () => 0, modelId: 'm' }]) {
      const error = thrown(() => resolveModel(agent, { languageModel: () => answer } as unknown as ModelRegistry));
      expect(error.info.message).toBe(`Agent "named": the providers registry returned no language model for 'p:m'.`);
      expect(error.info.details).toEqual({ agent: 'named', model: 'p:m' });
    }
  });
});

describe('unserializable and jsonLength', () => {
  it('names the first value JSON cannot hold and its path; plain JSON, toJSON objects and repeated (not circular) objects pass', () => {
    expect(unserializable({ a: [1, 'x', null, { b: true }] })).toBeUndefined();
    expect(unserializable({ a: { b: 1n } })).toBe('a BigInt at $.a.b');
    expect(unserializable([0, () => 1])).toBe('a function at $.1');
    expect(unserializable({ s: Symbol('x') })).toBe('a symbol at $.s');
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic['self'] = { back: cyclic };
    expect(unserializable(cyclic)).toBe('a circular reference at $.self.back');
    expect(unserializable({ when: new Date(0), big: { toJSON: () => 'x', n: 1n } })).toBeUndefined();
    const shared = { v: 1 };
    expect(unserializable({ a: shared, b: [shared, shared] })).toBeUndefined();
    expect(unserializable({ ok: 1, bad: [1n], worse: () => 0 })).toBe('a BigInt at $.bad.0');
    // A value that is not an object is decided without a walk.
    expect(unserializable(5n)).toBe('a BigInt at $');
    expect(unserializable(() => 1)).toBe('a function at $');
    expect(unserializable(Symbol('s'))).toBe('a symbol at $');
    for (const fine of [0, 'x', true, null, undefined]) expect(unserializable(fine)).toBeUndefined();
    expect(unserializable([[], [{ deep: [[1, { x: [() => 0] }]] }]])).toBe('a function at $.1.0.deep.0.1.x.0');
  });

  it('jsonLength is the JSON length, 0 for what JSON leaves out', () => {
    expect(jsonLength({ a: 1 })).toBe(7);
    expect(jsonLength(undefined)).toBe(0);
    expect(jsonLength('\u0000')).toBe(8);
  });
});

describe('checkSessionId (ids are opaque keys)', () => {
  it('takes a string of 1 to 256 characters as it is; refuses others with run_invalid_input saying what it got', () => {
    expect(checkSessionId('a')).toBe('a');
    expect(checkSessionId('x'.repeat(MAX_SESSION_ID_LENGTH))).toBe('x'.repeat(256));
    expect(checkSessionId('../etc/passwd')).toBe('../etc/passwd');
    const cases: [unknown, string][] = [
      ['', 'an empty string'],
      ['x'.repeat(257), '257 characters'],
      [42, 'number'],
      [undefined, 'undefined'],
    ];
    for (const [id, got] of cases) {
      const error = thrown(() => checkSessionId(id));
      expect(error.info).toMatchObject({ code: 'run_invalid_input', message: `A session id must be a non-empty string of at most 256 characters, got ${got}.`, details: { maxLength: 256 }, hint: 'Pass a non-empty session id of at most 256 characters.' });
    }
    expect(thrown(() => checkSessionId('', 'parent session id')).info.message).toBe('A parent session id must be a non-empty string of at most 256 characters, got an empty string.');
  });
});

describe('sleep', () => {
  it('waits about the time asked, resolves at once for no time or an aborted signal, and early when the signal aborts', async () => {
    const signal = new AbortController().signal;
    let t = Date.now();
    await sleep(40, signal);
    expect(Date.now() - t).toBeGreaterThanOrEqual(35);
    t = Date.now();
    await sleep(0, signal);
    await sleep(-5, signal);
    const aborted = new AbortController();
    aborted.abort();
    await sleep(10_000, aborted.signal);
    const later = new AbortController();
    const waiting = sleep(10_000, later.signal);
    setTimeout(() => later.abort(), 20);
    await waiting;
    expect(Date.now() - t).toBeLessThan(5_000);
  });
});

describe('dryRunStub (rule 156)', () => {
  it('is the standard answer of a side-effecting tool in a dry run, naming the tool', () => {
    expect(dryRunStub('pay')).toEqual({ stubbed: true, tool: 'pay', message: 'Dry run: "pay" has side effects and was not run.' });
  });
});

describe('keepLease', () => {
  async function running(store: InMemoryStateStore, runId = 'r1', sessionId = 's1') {
    return store.beginRun({
      sessionId,
      runId,
      agentType: 'agent',
      signal: 'start',
      initialState: {},
      newTurn: { turnId: `t-${runId}`, input: [{ role: 'user', content: 'hello' }] },
      startedAt: Date.now(),
      leaseOwner: 'test',
      leaseMs: 60,
      options: {},
    });
  }
  const until = async (f: () => boolean): Promise<void> => {
    for (let i = 0; i < 200 && !f(); i++) await new Promise((r) => setTimeout(r, 10));
  };

  it('renews every third of the lease; a stop request aborts the run with run_interrupted carrying its reason; stopping it ends the renewals', async () => {
    const store = new InMemoryStateStore();
    const { lease } = await running(store);
    const abort = new AbortController();
    const logger = memoryLogger();
    const first = (await store.getRun('r1'))!.leaseExpiresAt;
    const kept = keepLease(store, lease, 60, abort, logger);
    let renewed = first;
    for (let i = 0; i < 200 && renewed <= first; i++) {
      await new Promise((r) => setTimeout(r, 10));
      renewed = (await store.getRun('r1'))!.leaseExpiresAt;
    }
    expect(renewed).toBeGreaterThan(first);
    await store.requestStop('r1', { reason: 'enough', requestedAt: Date.now() });
    await until(() => abort.signal.aborted);
    expect(AgentError.isInstance(abort.signal.reason)).toBe(true);
    expect((abort.signal.reason as AgentError).info.code).toBe('run_interrupted');
    expect((abort.signal.reason as AgentError).info.message).toContain('enough');
    expect(kept.lost).toBe(false);
    kept();
    // A renewal already on its way may still land; none starts after.
    await new Promise((r) => setTimeout(r, 20));
    const last = (await store.getRun('r1'))!.leaseExpiresAt;
    await new Promise((r) => setTimeout(r, 80));
    expect((await store.getRun('r1'))!.leaseExpiresAt).toBe(last);
    expect(logger.lines).toEqual([]);
  });

  it('a lease another run took is lost: the run is aborted with the supersede, and renewals stop', async () => {
    const store = new InMemoryStateStore();
    const { lease } = await running(store);
    const abort = new AbortController();
    const logger = memoryLogger();
    const kept = keepLease(store, lease, 30, abort, logger);
    await running(store, 'r2');
    await until(() => kept.lost);
    expect(kept.lost).toBe(true);
    expect(abort.signal.aborted).toBe(true);
    expect((abort.signal.reason as AgentError).info.code).toBe('state_run_superseded');
    expect(logger.lines).toEqual([]);
    kept();
  });

  it('a renewal that fails otherwise is logged as a warning and the run goes on', async () => {
    const store = new InMemoryStateStore();
    const { lease } = await running(store);
    const abort = new AbortController();
    const logger = memoryLogger();
    const broken = { renewLease: async () => Promise.reject(new Error('disk on fire')) } as unknown as InMemoryStateStore;
    const kept = keepLease(broken, lease, 30, abort, logger);
    await until(() => logger.lines.length > 0);
    kept();
    expect(logger.lines[0]).toBe('warn: lease renewal of run r1 failed: disk on fire');
    expect(abort.signal.aborted).toBe(false);
    expect(kept.lost).toBe(false);
  });
});
