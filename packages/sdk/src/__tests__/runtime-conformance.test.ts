// The runtime conformance suite on runtime-js over the in-memory stores, with the default model-reply
// journaling and with `journalModelReplies: 'always'` (what runtime-dbos uses).
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { describeRuntimeConformance, jsRuntimeFactory, runtimeScenarios } from '../conformance/index.js';
import { InMemoryStateStore, InMemoryStreamManager } from '../index.js';

const openStores = () => ({ stateStore: new InMemoryStateStore(), streamManager: new InMemoryStreamManager(), close: () => undefined });

describeRuntimeConformance('JSAgentExecutor on the in-memory stores', jsRuntimeFactory({ llmAdapter: new VercelAIAdapter(), openStores }));

// Two recovery scenarios expect the uncommitted step's model call to be made again (its beforeLLMCall,
// afterLLMCall and the reply's onMessage in the trace); with 'always' the recovered step replays the
// journaled reply instead, without those hooks (tests/crash/model-reply-journal.test.ts proves the replay
// with real processes). Every other scenario, the other recoveries included, holds unchanged.
const REPLAY_DIFFERS = ['recover/died-mid-step', 'recover/sub-agent-parent-reattaches'];

describeRuntimeConformance(
  "JSAgentExecutor on the in-memory stores, journalModelReplies 'always'",
  jsRuntimeFactory({ llmAdapter: new VercelAIAdapter(), openStores, executor: { journalModelReplies: 'always' } }),
  { scenarios: runtimeScenarios.filter((s) => !REPLAY_DIFFERS.includes(s.name)) },
);
