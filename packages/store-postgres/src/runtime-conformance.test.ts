// The runtime conformance suite on runtime-js over the Postgres stores: one throwaway cluster for the
// file, a fresh schema for every scenario.
import { VercelAIAdapter } from '@helix-agents/llm-vercel';
import { describeRuntimeConformance, jsRuntimeFactory } from '@helix-agents/sdk/conformance';
import { useTestPostgres } from './__tests__/cluster.js';

const cluster = useTestPostgres();

describeRuntimeConformance(
  'JSAgentExecutor on the Postgres stores',
  jsRuntimeFactory({
    llmAdapter: new VercelAIAdapter(),
    openStores: async () => {
      const stores = await cluster.open();
      return { stateStore: stores.stateStore, streamManager: stores.streamManager, close: () => stores.close() };
    },
  }),
);
