// Issue 12, item 1 (model replies on a durable engine): with `journalModelReplies: 'always'`, a process
// killed after a step's model reply and before its commit (K3) leaves the reply in the journal, and the
// process that recovers the run replays it: the model is not called again for that step, the committed
// reply is the dead process's, and its tokens are counted once. With the default (`side-effects`) an
// agent without side-effecting tools calls the model again, which this test shows too.
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { AssistantMessage, UsageStore } from '@helix-agents/sdk';
import { lines, runChild } from './compare.js';
import { CRASH_STORES, useCrashTarget } from './crash-target.js';
import type { ModelCallLine } from './reply-agent.js';

const here = dirname(fileURLToPath(import.meta.url));
const sqlite = CRASH_STORES.find(([name]) => name === 'sqlite')![1];

describe('model replies journaled before K3 (journalModelReplies)', () => {
  const t = useCrashTarget('helix-reply-journal', sqlite, async () => undefined);

  async function scenario(sessionId: string, journal: 'always' | 'side-effects') {
    const callsFile = join(t.dir, `${sessionId}.calls.jsonl`);
    const args = [t.target, sessionId, callsFile, journal];
    const crashed = await runChild(join(here, 'reply-child.ts'), ['run', ...args], 'before_k3');
    const recovered = await runChild(join(here, 'reply-child.ts'), ['recover', ...args]);
    expect(crashed.signal, crashed.stderr).toBe('SIGKILL');
    expect(recovered.code, recovered.stderr).toBe(0);
    const session = (await t.stores.stateStore.loadSession(sessionId))!;
    const run = (await t.stores.stateStore.getRun(session.currentRunId!))!;
    const rollup = await (t.stores.stateStore as unknown as UsageStore).getRollup({ runId: run.runId });
    const firstReply = session.messages.find((m): m is AssistantMessage => m.role === 'assistant')!;
    return { calls: lines<ModelCallLine>(callsFile), session, run, rollup, firstReply, recoveredOutput: JSON.parse(recovered.stdout) as { result?: { status: string } } };
  }

  it("'always': SIGKILL after the model reply, before K3; the recovering process replays the reply (no second model call for that step, the committed reply is the dead process's) and counts its tokens once", async () => {
    const o = await scenario('always', 'always');
    expect(o.recoveredOutput.result?.status).toBe('completed');
    expect(o.run.status).toBe('completed');
    const [first, ...rest] = o.calls;
    // One model call per step in all: step 0 in the process that died, step 1 in the one that recovered.
    expect(o.calls.map((c) => c.turn)).toEqual([0, 1]);
    expect(rest.every((c) => c.pid !== first!.pid)).toBe(true);
    expect(o.firstReply.toolCalls?.[0]?.arguments).toEqual({ text: `asked in ${first!.pid}` });
    expect(o.session.state).toEqual({ notes: [`asked in ${first!.pid}`] });
    expect(o.session.stepCount).toBe(2);
    // The replayed reply's tokens (paid by the dead process, whose step never committed) are counted once.
    expect(o.rollup.tokens).toMatchObject({ prompt: 30, completion: 7, total: 37 });
    expect(o.rollup.modelCalls).toBe(2);
  }, 60_000);

  it("'side-effects' (the runtime-js default): the same crash calls the model again for the step, so the committed reply is the recovering process's", async () => {
    const o = await scenario('default', 'side-effects');
    expect(o.run.status).toBe('completed');
    expect(o.calls.map((c) => c.turn)).toEqual([0, 0, 1]);
    const [dead, again] = o.calls;
    expect(again!.pid).not.toBe(dead!.pid);
    expect(o.firstReply.toolCalls?.[0]?.arguments).toEqual({ text: `asked in ${again!.pid}` });
  }, 60_000);
});
