// The runtime conformance suite on runtime-js over the in-memory stores.
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { describeRuntimeConformance, jsRuntimeFactory } from '../conformance/index.js';
import { InMemoryStateStore, InMemoryStreamManager } from '../index.js';

describeRuntimeConformance(
  'JSAgentExecutor on the in-memory stores',
  jsRuntimeFactory({
    llmAdapter: new VercelAIAdapter(),
    openStores: () => ({ stateStore: new InMemoryStateStore(), streamManager: new InMemoryStreamManager(), close: () => undefined }),
  }),
);
