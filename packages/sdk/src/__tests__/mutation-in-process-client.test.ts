import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createHookManager, createInProcessAgentClient, defineAgent, InMemoryUsageStore, remoteSessionId, type RemoteStartRequest } from '../index.js';
import { createGate, createScriptedModel } from '../testing/index.js';
import { refusal, setup } from './harness.js';

// The in-process RemoteAgentClient (runtime/in-process-agent-client.ts) over a real executor: starts
// keyed by idempotency, results from the handle or the store, cursors, cancellation.

const request = (key: string, extra: Partial<RemoteStartRequest> = {}): RemoteStartRequest => ({ agentType: 'echo', input: 'go', idempotencyKey: key, parentSessionId: 'parent', parentToolCallId: 'call', depth: 1, ...extra });
/** A run that fails: an output schema and one step that does not finish (run_max_steps). */
const failingAgent = () => defineAgent({ name: 'echo', outputSchema: z.object({ x: z.number() }), maxSteps: 1, llmConfig: { model: createScriptedModel([{ text: 'no finish' }], { loop: true }) } });
const echo = (text = 'hi', delayMs = 0) => defineAgent({ name: 'echo', llmConfig: { model: createScriptedModel([{ text, delayMs }], { loop: true }) } });

describe('remoteSessionId', () => {
  it("is 'remote-' and 32 base64url characters of the key's hash: the same for the same key, another for another key", () => {
    const id = remoteSessionId('lead-1/c1');
    expect(id).toMatch(/^remote-[A-Za-z0-9_-]{32}$/);
    expect(remoteSessionId('lead-1/c1')).toBe(id);
    expect(remoteSessionId('lead-1/c2')).not.toBe(id);
  });
});

describe('createInProcessAgentClient: start', () => {
  it('an agent it does not serve is refused with agent_not_registered, naming it', async () => {
    const client = createInProcessAgentClient(setup().executor, [echo()]);
    const error = await refusal(client.start(request('k', { agentType: 'ghost' })));
    expect(error.info).toMatchObject({ code: 'agent_not_registered', message: 'No agent named "ghost" is served here.', details: { agentType: 'ghost' } });
  });

  it('a second client instance over the same runtime answers a start with a known key with the run already started, running nothing new', async () => {
    const { executor } = setup();
    const first = createInProcessAgentClient(executor, [echo()]);
    const ref = await first.start(request('same-key'));
    await first.result(ref);
    const again = await createInProcessAgentClient(executor, [echo()]).start(request('same-key'), {});
    expect(again).toEqual(ref);
    expect((await executor.getSession(ref.sessionId))?.currentRunId).toBe(ref.runId);
  });

  it('two starts with one key at once share one run: the first is not superseded by a second execute', async () => {
    const { executor } = setup();
    const client = createInProcessAgentClient(executor, [echo('slow', 50)]);
    const [a, b] = await Promise.all([client.start(request('at-once')), client.start(request('at-once'))]);
    expect(a).toEqual(b);
    expect((await client.result(a)).status).toBe('completed');
  });

  it('once its session was deleted, a start with the same key starts a new run (a finished start is not cached)', async () => {
    const { executor } = setup();
    const client = createInProcessAgentClient(executor, [echo()]);
    const ref = await client.start(request('reused'));
    await client.result(ref);
    await executor.deleteSession(ref.sessionId);
    const next = await client.start(request('reused'));
    expect(next.sessionId).toBe(ref.sessionId);
    expect(next.runId).not.toBe(ref.runId);
  });

  it("the remote run carries the request's user, tags and metadata, and the client's own hooks, hook manager and usage store", async () => {
    const seen: unknown[] = [];
    const usage = new InMemoryUsageStore();
    const { executor } = setup();
    const client = createInProcessAgentClient(executor, [echo()], {
      usageStore: usage,
      hooks: { onAgentStart: (_p, ctx) => void seen.push({ hooks: [ctx.userId, ctx.tags, ctx.metadata] }) },
      hookManager: createHookManager({ onAgentStart: () => void seen.push('manager') }),
    });
    const ref = await client.start(request('attributed', { userId: 'u-7', tags: ['night'], metadata: { team: 'red' } }));
    const result = await client.result(ref);
    expect(seen).toEqual(expect.arrayContaining(['manager', { hooks: ['u-7', ['night'], { team: 'red' }] }]));
    expect(seen).toHaveLength(2);
    expect((await usage.getRollup({ runId: ref.runId })).modelCalls).toBe(1);
    expect(result.usage?.modelCalls).toBe(1);
  });
});

describe('createInProcessAgentClient: result', () => {
  it('the result of a run this client started has exactly the fields the run has (no output key on a failure)', async () => {
    const { executor } = setup();
    const broken = failingAgent();
    const client = createInProcessAgentClient(executor, [broken]);
    const result = await client.result(await client.start(request('fails')));
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('run_max_steps');
    expect(Object.keys(result).sort()).toEqual(['error', 'status']);
  });

  it('a run another client started is read from the store once it ended: its output, its error, its usage from this client\'s usage store', async () => {
    const { executor } = setup();
    const usage = new InMemoryUsageStore();
    const starter = createInProcessAgentClient(executor, [echo('from the store')], { usageStore: usage });
    const ref = await starter.start(request('stored'));
    await starter.result(ref);
    // Another run's usage in the same store is not counted.
    const other = await starter.start(request('stored-other'));
    await starter.result(other);
    const reader = createInProcessAgentClient(executor, [echo()], { usageStore: usage });
    const result = await reader.result(ref);
    expect(result.usage?.modelCalls).toBe(1);
    expect(result).toEqual({ status: 'completed', output: 'from the store', usage: await usage.getRollup({ runId: ref.runId }) });
    expect(Object.keys(await createInProcessAgentClient(executor, [echo()]).result(ref)).sort()).toEqual(['output', 'status']);

    const broken = failingAgent();
    const failing = createInProcessAgentClient(executor, [broken]);
    const failedRef = await failing.start(request('stored-failure'));
    await failing.result(failedRef);
    const failed = await createInProcessAgentClient(executor, [broken]).result(failedRef);
    expect(failed.status).toBe('failed');
    expect(Object.keys(failed).sort()).toEqual(['error', 'status']);
  });

  it('a run of another client that ends soon is noticed within a few polls (pollMs backing off from its start)', async () => {
    const { executor } = setup();
    const gate = createGate();
    const gated = defineAgent({ name: 'echo', llmConfig: { model: createScriptedModel([async () => (await gate.opened, { text: 'released' })]) } });
    const starter = createInProcessAgentClient(executor, [gated]);
    const ref = await starter.start(request('polled'));
    const reading = createInProcessAgentClient(executor, [gated], { pollMs: 10 }).result(ref);
    await new Promise((r) => setTimeout(r, 60));
    const openedAt = Date.now();
    gate.open();
    expect((await reading).status).toBe('completed');
    // Polls at 0, 10, 30, 70, 150 ms: the end is seen within ~100 ms; polls stuck at 500 ms would see it at 510.
    expect(Date.now() - openedAt).toBeLessThan(350);
  });

  it('a run id the store does not know, or one of another session, is refused with state_not_found naming both ids', async () => {
    const { executor } = setup();
    const client = createInProcessAgentClient(executor, [echo()]);
    const ref = await client.start(request('known'));
    await client.result(ref);
    const other = await refusal(client.result({ sessionId: 'someone-else', runId: ref.runId }));
    expect(other.info).toMatchObject({ code: 'state_not_found', message: `No run ${ref.runId} in session someone-else.`, details: { sessionId: 'someone-else', runId: ref.runId } });
    expect((await refusal(client.result({ sessionId: ref.sessionId, runId: 'no-such-run' }))).code).toBe('state_not_found');
  });

  it('a cancelled wait rejects at once: with the signal\'s Error reason, or run_interrupted for another reason; no abort listener is left behind', async () => {
    const { executor } = setup();
    const gate = createGate();
    const gated = defineAgent({ name: 'echo', llmConfig: { model: createScriptedModel([async () => (await gate.opened, { text: 'late' })], { loop: true }) } });
    const client = createInProcessAgentClient(executor, [gated], { pollMs: 5_000 });
    const mine = await client.start(request('cancel-own'));

    const byError = new AbortController();
    const waiting = client.result(mine, { signal: byError.signal });
    await new Promise((r) => setTimeout(r, 20));
    const before = Date.now();
    byError.abort(new Error('the caller left'));
    await expect(waiting).rejects.toThrow('the caller left');
    expect(Date.now() - before).toBeLessThan(1_000);

    // The handle was let go: the next wait reads the store, polling every 5 s; a string reason.
    const byString = new AbortController();
    const polling = client.result(mine, { signal: byString.signal });
    await new Promise((r) => setTimeout(r, 20));
    const t = Date.now();
    byString.abort('bored');
    await expect(polling).rejects.toBe('bored');
    expect(Date.now() - t).toBeLessThan(1_000);

    const other = await client.start(request('cancel-string'));
    const quiet = new AbortController();
    const stringWait = client.result(other, { signal: quiet.signal });
    await new Promise((r) => setTimeout(r, 20));
    quiet.abort('no longer needed');
    expect((await refusal(stringWait)).info).toMatchObject({ code: 'run_interrupted', message: 'The call was cancelled.' });

    const third = await client.start(request('finishes'));
    const kept = new AbortController();
    const finished = client.result(third, { signal: kept.signal });
    gate.open();
    expect((await finished).status).toBe('completed');
    expect(getEventListeners(kept.signal, 'abort')).toHaveLength(0);
  });

  it('an already cancelled start is refused before anything runs', async () => {
    const { executor } = setup();
    const client = createInProcessAgentClient(executor, [echo()]);
    const cancelled = AbortSignal.abort(new Error('too late'));
    await expect(client.start(request('never'), { signal: cancelled })).rejects.toThrow('too late');
    expect(await executor.getSession(remoteSessionId('never'))).toBeUndefined();
  });
});

describe('createInProcessAgentClient: stream', () => {
  it('cursors are stream offsets: a cursor resumes right after its chunk; anything but 1–15 digits is refused with run_invalid_input', async () => {
    const { executor } = setup();
    const client = createInProcessAgentClient(executor, [defineAgent({ name: 'echo', llmConfig: { model: createScriptedModel([{ textChunks: ['a', 'b', 'c'] }]) } })]);
    const ref = await client.start(request('cursors'));
    await client.result(ref);
    const all: string[] = [];
    for await (const item of client.stream(ref)) all.push(item.cursor);
    expect(all.length).toBeGreaterThan(3);
    const after: string[] = [];
    for await (const item of client.stream(ref, { after: all[1]! })) after.push(item.cursor);
    expect(after).toEqual(all.slice(2));
    for (const bad of ['abc', '12a', 'a12', '1234567890123456', '-1', '']) {
      const error = await refusal((async () => {
        for await (const _ of client.stream(ref, { after: bad })) void _;
      })());
      expect(error.info).toMatchObject({ code: 'run_invalid_input', message: "This client's cursors are stream offsets; the cursor given is not one." });
    }
    const long: string[] = [];
    for await (const item of client.stream(ref, { after: '000000000000001' })) long.push(item.cursor);
    expect(long).toEqual(all.slice(2));
  });

  it('a stream read with a signal ends when the signal aborts, while the run still runs', async () => {
    const { executor } = setup();
    const gate = createGate();
    const client = createInProcessAgentClient(executor, [defineAgent({ name: 'echo', llmConfig: { model: createScriptedModel([async () => (await gate.opened, { text: 'x' })]) } })]);
    const ref = await client.start(request('live'));
    const stop = new AbortController();
    const reading = (async () => {
      let n = 0;
      for await (const _ of client.stream(ref, { signal: stop.signal })) n++;
      return n;
    })();
    await new Promise((r) => setTimeout(r, 30));
    stop.abort();
    expect(await reading).toBeGreaterThan(0);
    gate.open();
    expect((await client.result(ref)).status).toBe('completed');
  });
});
