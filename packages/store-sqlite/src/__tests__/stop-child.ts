// A process that runs one agent on a SQLite file until another process asks it to stop through the
// store (see ../cross-process-stop.test.ts). Prints `started <runId>`, then one JSON line with the result.
// argv: <db path> <session id>
import { defineAgent, JSAgentExecutor, silentLogger } from '@helix-agents/sdk';
import type { LLMAdapter, LLMStepRequest, StepResult } from '@helix-agents/sdk';
import { createScriptedModel } from '@helix-agents/sdk/testing';
import { openSqliteStores } from '../open.js';

/** A model call that only ends when the run is stopped. */
class WaitingAdapter implements LLMAdapter {
  generateStep(request: LLMStepRequest): Promise<StepResult> {
    return new Promise((_resolve, reject) => {
      const onAbort = (): void => reject(request.abortSignal.reason instanceof Error ? request.abortSignal.reason : new Error('aborted'));
      if (request.abortSignal.aborted) onAbort();
      else request.abortSignal.addEventListener('abort', onAbort, { once: true });
    });
  }
}

const [path, sessionId] = process.argv.slice(2) as [string, string];
const stores = openSqliteStores({ path, busyTimeoutMs: 10_000, pollIntervalMs: 5 });
const fails: string[] = [];
const agent = defineAgent({ name: 'waiter', llmConfig: { model: createScriptedModel([]) }, hooks: { onAgentFail: (p) => void fails.push(p.error.code) } });
const executor = new JSAgentExecutor(stores.stateStore, stores.streamManager, new WaitingAdapter(), { logger: silentLogger, leaseMs: 300 });
// The lease timer does not keep a process alive (a real one has a server); this one waits for its run.
const keepAlive = setInterval(() => undefined, 1_000);
const handle = await executor.execute(agent, 'wait', { sessionId });
process.stdout.write(`started ${handle.runId}\n`);
const result = await handle.result();
process.stdout.write(`${JSON.stringify({ status: result.status, code: result.error?.code, fails, pid: process.pid })}\n`);
clearInterval(keepAlive);
stores.close();
