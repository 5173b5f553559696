// How a run ends when something goes wrong at its end (runtime/run-end.ts, runtime/run-loop.ts), as the
// mutation runs found it pinned by error code only: the messages of a failed terminal commit and of a
// terminal hook outcome that cannot be recorded, the log lines of a terminal commit that fails twice and of
// work after a commit (a stream write that fails), the message of a stop after tools and of a hand-off, the
// end chunk of a run whose onAgentComplete threw, and the log line of an onMessage that throws for a block
// note.
import { describe, expect, it } from 'vitest';
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { guard, InMemoryStateStore, JSAgentExecutor, InMemoryStreamManager, type StateStore, type StreamChunk, type StreamManager } from '../index.js';
import type { StreamWriter } from '../stream.js';
import { counterAgent, finish, gatedTool, memoryLogger, setup, textAgent, throwing } from './harness.js';

/** A state store whose terminal commits throw `new Error(message)` (a plain error, not a typed one). */
function failingTerminalCommits(store: InMemoryStateStore, message: string): StateStore {
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'commit') {
        return (c: Parameters<StateStore['commit']>[0]) => (c.kind === 'terminal' ? Promise.reject(new Error(message)) : target.commit(c));
      }
      const value: unknown = Reflect.get(target, prop);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** A stream manager whose writers fail to write chunks of type `type`. */
function failingChunks(inner: InMemoryStreamManager, type: StreamChunk['type'], message: string): StreamManager {
  return {
    async claim(streamId, runId) {
      const writer = await inner.claim(streamId, runId);
      const failing: StreamWriter = {
        get startSeq() {
          return writer.startSeq;
        },
        get owned() {
          return writer.owned;
        },
        write: (chunk: Parameters<StreamWriter['write']>[0]) => (chunk.type === type ? Promise.reject(new Error(message)) : writer.write(chunk)),
      } as StreamWriter;
      return failing;
    },
    read: (streamId, options) => inner.read(streamId, options),
    deleteStream: (streamId) => inner.deleteStream(streamId),
  };
}

describe('the end of a run when its last writes fail', () => {
  it('a completing run whose terminal commit throws fails with state_commit_failed naming the terminal commit, and the failed run\'s own terminal commit failing is logged', async () => {
    const stateStore = failingTerminalCommits(new InMemoryStateStore(), 'disk full');
    const { executor, logger } = setup({ stateStore });
    let failSeen: unknown;
    const agent = counterAgent([finish('done')], {
      hooks: {
        onAgentComplete: (_p, ctx) => ctx.updateState((d) => void (d.count = 99)),
        onAgentFail: (p) => void (failSeen = p.error.code),
      },
    });
    const result = await (await executor.execute(agent, 'go')).result();
    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({ code: 'state_commit_failed', message: 'The terminal commit failed: disk full' });
    // The complete hook's writes are rolled back with the failed commit.
    expect(result.state).toMatchObject({ count: 0 });
    expect(failSeen).toBe('state_commit_failed');
    expect(logger.lines).toContain('error: The terminal commit of a failed run failed: disk full');
  });

  it('a terminal hook outcome the journal refuses fails the run with a message naming the record', async () => {
    const inner = new InMemoryStateStore();
    const stateStore = new Proxy(inner, {
      get(target, prop) {
        if (prop === 'appendJournal') {
          return (entry: Parameters<StateStore['appendJournal']>[0]) => (entry.kind === 'terminal_hook' ? Promise.reject(new Error('journal down')) : target.appendJournal(entry));
        }
        const value: unknown = Reflect.get(target, prop);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const { executor } = setup({ stateStore });
    const result = await (await executor.execute(counterAgent([finish('done')]), 'go')).result();
    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({ code: 'state_commit_failed', message: "The terminal hook's outcome could not be recorded: journal down" });
  });

  it('an end chunk that cannot be written after the terminal commit is logged with the run id; the run stays completed', async () => {
    const stateStore = new InMemoryStateStore();
    const logger = memoryLogger();
    const executor = new JSAgentExecutor(stateStore, failingChunks(new InMemoryStreamManager(), 'end', 'stream gone'), new VercelAIAdapter(), { logger });
    const handle = await executor.execute(counterAgent([finish('done')]), 'go');
    const result = await handle.result();
    expect(result.status).toBe('completed');
    expect(logger.lines).toContain(`error: after the commit of run ${handle.runId}: stream gone`);
    expect((await stateStore.getRun(handle.runId))?.status).toBe('completed');
  });

  it('C5: an onAgentComplete that throws is logged with its message, and the end chunk carries no state', async () => {
    const { executor, logger, streamManager } = setup();
    const agent = counterAgent([finish('done')], { hooks: { onAgentComplete: throwing('tracer down') } });
    const handle = await executor.execute(agent, 'go');
    const result = await handle.result();
    expect(result.status).toBe('completed');
    expect(logger.lines.some((l) => l.startsWith('error: onAgentComplete threw; the run completes without its writes: ') && l.includes('tracer down'))).toBe(true);
    const end = streamManager.chunks(handle.sessionId).find((c) => c.type === 'end');
    expect(end).toBeDefined();
    expect(end && 'state' in end).toBe(false);
  });

  it('an end chunk of a run whose onAgentComplete did not throw carries the final state', async () => {
    const { executor, streamManager } = setup();
    const agent = counterAgent([{ toolCalls: [{ name: 'increment', args: { by: 2 } }] }, finish('done')]);
    const handle = await executor.execute(agent, 'go');
    await handle.result();
    const end = streamManager.chunks(handle.sessionId).find((c) => c.type === 'end') as (StreamChunk & { state?: unknown }) | undefined;
    expect(end?.state).toMatchObject({ count: 2 });
  });
});

describe('the messages of a stop and a hand-off', () => {
  it('a stop while a call runs ends the run interrupted with the message of a stop that keeps the finished calls\' results', async () => {
    const { tool: held, gate, entered } = gatedTool('held', 'done');
    const { executor } = setup();
    const handle = await executor.execute(counterAgent([{ toolCalls: [{ name: 'held', args: {} }] }, finish('x')], { tools: [held] }), 'go');
    await entered.opened;
    const stopped = handle.stop();
    gate.open();
    const result = await stopped;
    expect(result.status).toBe('interrupted');
    expect(result.error).toMatchObject({ code: 'run_interrupted', message: 'The run was stopped; the results of the calls that finished are kept.' });
  });
});

describe('the block note of a blocked model call', () => {
  it('an onMessage handler that throws for the block note is logged as a warning; the run fails hook_blocked with the note in its rows', async () => {
    const { executor, logger, stateStore } = setup();
    const agent = textAgent([{ text: 'never' }], {
      hooks: {
        beforeLLMCall: () => ({ block: true, reason: 'not today' }),
        onMessage: guard(
          (p: { message: { role: string } }) => {
            if (p.message.role === 'system') throw new Error('observer down');
          },
          { onError: 'fail-closed', name: 'strict-observer' },
        ),
      },
    });
    const handle = await executor.execute(agent, 'go');
    const result = await handle.result();
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('hook_blocked');
    expect(logger.lines.some((l) => l.startsWith('warn: onMessage for the block note threw: ') && l.includes('observer down'))).toBe(true);
    const session = await stateStore.loadSession(handle.sessionId);
    expect(session?.messages.at(-1)).toEqual({ role: 'system', content: 'Run blocked by an agent hook: not today' });
  });
});
